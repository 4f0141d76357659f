"""`planwatch check` against a real Prometheus whose histograms put a quantile in the first or the top bucket:
the table shows a bound ("at most 1 token", "above 2560 s"), not a measurement, and says why it judged it so.

An hour of two copilot replicas finishing 1 request/s each: every output is 1 token (vLLM's first generation
bucket), every prompt 1,000-2,000 tokens (a bucket with a bound on each side: a measurement), every first token
later than TTFT's top finite bound (the +Inf bucket).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from monitor.cli.main import build_app
from monitor.sizing.buckets import TTFT_BOUNDS
from tests.harness.history import History, times
from tests.harness.stack import Stack

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
COPILOT = REPO / "examples" / "support-copilot.yaml"
END = 1_790_000_000.0
START = END - 3600.0
TOKENS = ("1", "2", "5", "10", "20", "50", "100", "200", "500", "1000", "2000", "5000", "+Inf")
TTFT = (*(f"{b:g}" for b in TTFT_BOUNDS), "+Inf")


def _history() -> str:
    h = History(START, END, 15.0)
    for pod in ("copilot-0", "copilot-1"):
        labels = {"job": "vllm", "instance": f"{pod}:8000", "namespace": "llm", "pod": pod, "tier": "copilot",
                  "model_name": "meta-llama/Llama-3.3-70B-Instruct", "engine": "0"}  # fmt: skip
        h.gauge("vllm:num_requests_running", labels, 4)
        h.counter("vllm:request_success", labels | {"finished_reason": "stop"}, 1.0)
        h.histogram("vllm:request_prompt_tokens", labels, dict.fromkeys(TOKENS, 0.0) | {"2000": 1.0}, 1500.0)
        h.histogram("vllm:request_generation_tokens", labels, dict.fromkeys(TOKENS, 0.0) | {"1": 1.0}, 1.0)
        h.histogram("vllm:time_to_first_token_seconds", labels, dict.fromkeys(TTFT, 0.0) | {"+Inf": 1.0}, 3000.0)
        target = {k: labels[k] for k in ("job", "instance", "namespace", "pod", "tier")}
        h.raw("up", target, [(t, 1.0) for t in times(START, END, 15.0)])
    return h.text()


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    stack = Stack(tmp_path_factory.mktemp("edge-buckets"))
    try:
        prom = stack.prometheus(openmetrics=_history())
        argv = ["check", str(COPILOT), "--prometheus", prom.url, "--at", str(END), "--window", "1h",
                "--long-window", "1h", "--no-forecast", "--raw-series"]  # fmt: skip
        result = CliRunner().invoke(build_app(), argv, env={"COLUMNS": "200"})
        assert result.exit_code in (0, 1), result.output
        yield result.stdout
    finally:
        stack.close()


def _rows(table: str, assumption: str) -> list[tuple[list[str], str]]:
    """Every table row of `assumption` (the tier's and the fleet's): its first line's cells, and the text of all
    its lines (a note wraps onto lines whose first cell is blank)."""
    lines, rows = table.splitlines(), []
    for i, line in enumerate(lines):
        if re.match(rf"^│ {assumption}\s+│", line):
            more = [x for x in lines[i + 1 : i + 4] if x.startswith("│")]
            wrapped = [line, *(x for x in more[: next((k for k, x in enumerate(more) if x[2] != " "), len(more))])]
            text = " ".join(" ".join(c.strip() for c in x.strip("│").split("│")) for x in wrapped)
            rows.append(([c.strip() for c in line.strip("│").split("│")], " ".join(text.split())))
    return rows


@pytest.mark.parametrize(
    ("assumption", "observed", "ratio", "status", "says"),
    [
        pytest.param("output_p50", "at most 1 token", "<=0.0029x", "ok", "first bucket: at most 1 token, a bound",
                     id="a median output of at most 1 token is a bound, certainly not longer than planned"),
        pytest.param("output_p95", "at most 1 token", "<=0.0021x", "ok", "first bucket",
                     id="so is the p95 in the same bucket"),
        pytest.param("ttft_p95", "above 2560 s", ">5120.00x", "breach", "top bucket: above 2560 s, a bound",
                     id="a TTFT p95 above the top bound breaches the SLO, as a bound, not a measured 42.7 min"),
        pytest.param("prompt_p50", "1,500 tokens", "1.00x", "", "",
                     id="a median inside a bounded bucket is a measurement"),
    ],
)  # fmt: skip
def test_check_shows_an_edge_bucket_quantile_as_a_bound(
    table: str, assumption: str, observed: str, ratio: str, status: str, says: str
) -> None:
    rows = _rows(table, assumption)
    assert rows, table
    for cells, text in rows:
        assert (cells[2], cells[3]) == (observed, ratio), text  # a ratio at a bound is a bound too
        assert cells[4] == status or not status, text
        assert says in text if says else ("bound" not in text and "at most" not in text), text
