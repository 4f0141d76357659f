"""`planwatch check` against a real Prometheus whose histograms put a quantile in the first or the top bucket:
the table shows a bound ("at most 1 token", "above 2560 s"), not a measurement, and says why it judged it so;
`check --format json`, `/v1/observations` and `/v1/drift` carry it as a field of its own (`bound`).

An hour of two copilot replicas finishing 1 request/s each: every output is 1 token (vLLM's first generation
bucket), every prompt 1,000-2,000 tokens (a bucket with a bound on each side: a measurement), every first token
later than TTFT's top finite bound (the +Inf bucket).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from fleetsim.promstack import PrometheusProcess
from monitor.cli.main import build_app
from monitor.service import schemas
from monitor.service.app import build_services, default_observer
from monitor.sizing.buckets import TTFT_BOUNDS
from tests.harness.history import copilot_pods
from tests.harness.stack import Stack
from tests.service.conftest import ApiClient, make_settings

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
COPILOT = REPO / "examples" / "support-copilot.yaml"
END = 1_790_000_000.0
START = END - 3600.0
TTFT = (*(f"{b:g}" for b in TTFT_BOUNDS), "+Inf")


def _history() -> str:
    """Every output 1 token (the first bucket) and every TTFT above the top finite bound (the +Inf bucket)."""
    return copilot_pods(START, END, output=("1", 1.0), ttft=(TTFT, "+Inf", 3000.0))


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    stack = Stack(tmp_path_factory.mktemp("edge-buckets"))
    try:
        yield stack.prometheus(openmetrics=_history())
    finally:
        stack.close()


def _check(url: str, *extra: str) -> str:
    argv = ["check", str(COPILOT), "--prometheus", url, "--at", str(END), "--window", "1h",
            "--long-window", "1h", "--no-forecast", "--raw-series", *extra]  # fmt: skip
    result = CliRunner().invoke(build_app(), argv, env={"COLUMNS": "200"})
    assert result.exit_code in (0, 1), result.output
    return result.stdout


@pytest.fixture(scope="module")
def table(prometheus: PrometheusProcess) -> str:
    return _check(prometheus.url)


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


@pytest.fixture(scope="module")
def bodies(prometheus: PrometheusProcess, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """`check --format json`, and `/v1/observations` and `/v1/drift` of one service evaluation at END, each
    validated against its documented model (unknown keys forbidden)."""
    out = {"check": json.loads(_check(prometheus.url, "--format", "json"))}
    source = {"url": prometheus.url, "timeout": 30, "retries": 0}
    state = tmp_path_factory.mktemp("edge-buckets-service")
    settings = make_settings(state, observation_window="1h", long_window="1h", prometheus=source)
    services = build_services(settings, default_observer(settings), clock=lambda: END, schedule=False)
    try:
        services.evaluate_now()
        api = ApiClient(services.app)
        shapes: dict[str, type[BaseModel]] = {"observations": schemas.ObservationsResponse,
                                              "drift": schemas.DriftResponse}  # fmt: skip
        for route, shape in shapes.items():
            response = api.get(f"/v1/{route}")
            assert response.status_code == 200, response.text
            out[route] = shape.model_validate(response.json()).model_dump()
    finally:
        services.close()
    return out


def _sections(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tier's section and the fleet's (each route lists the fleet with the tiers or beside them)."""
    return [*body["tiers"], *([body["fleet"]] if body.get("fleet") else [])]


# Each quantile's bound as the JSON carries it: TTFT p95 above the top finite bound, the output quantiles at most
# the first bucket's 1 token, the prompt median inside a bounded bucket (a measurement: no bound).
BOUNDS = {
    "ttft_p95": {"side": "above", "value": TTFT_BOUNDS[-1]},
    "output_p50": {"side": "at_most", "value": 1.0},
    "output_p95": {"side": "at_most", "value": 1.0},
    "prompt_p50": None,
}


@pytest.mark.parametrize("source", ["check", "observations"])
@pytest.mark.parametrize("field", BOUNDS)
def test_an_observation_in_an_edge_bucket_carries_its_bound_as_a_field(
    bodies: dict[str, dict[str, Any]], source: str, field: str
) -> None:
    collected = [s for s in _sections(bodies[source]) if s["observations"][field]["reason"] != "not collected"]
    assert collected  # the tier's and (for token lengths) the fleet's; the fleet collects no TTFT
    for section in collected:
        m = section["observations"][field]
        assert m["value"] is not None and m["bound"] == BOUNDS[field], (section["name"], m)
        if m["bound"] and m["bound"]["side"] == "above":  # histogram_quantile answers the top finite bound there
            assert m["value"] == m["bound"]["value"]


@pytest.mark.parametrize("source", ["check", "drift"])
@pytest.mark.parametrize(
    ("assumption", "status"),
    [
        pytest.param("ttft_p95", "breach", id="a TTFT p95 above the top bound is a breach, judged at its bound"),
        pytest.param("output_p50", "ok", id="a median output of at most 1 token is ok at its bound"),
        pytest.param("prompt_p50", "ok", id="a median prompt inside a bounded bucket has no bound"),
    ],
)
def test_a_drift_row_judged_at_a_bound_says_so_in_its_bound_field(
    bodies: dict[str, dict[str, Any]], source: str, assumption: str, status: str
) -> None:
    rows = [r for s in _sections(bodies[source]) for r in s["drift"] if r["assumption"] == assumption]
    assert rows
    for r in rows:
        assert (r["bound"], r["status"]) == (BOUNDS[assumption], status), r
        if r["bound"]:  # judged at the bound: the observed number is the bound, the ratio its ratio to the plan
            assert r["observed"] == r["bound"]["value"] and r["ratio"] == pytest.approx(r["observed"] / r["plan"])


@pytest.fixture(scope="module")
def report(prometheus: PrometheusProcess) -> str:
    argv = ["report", str(COPILOT), "--prometheus", prometheus.url, "--at", str(END), "--window", "1h",
            "--long-window", "1h", "--history", "1h", "--out", "-"]  # fmt: skip
    result = CliRunner().invoke(build_app(), argv)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize(
    ("assumption", "observed", "ratio"),
    [
        pytest.param("ttft_p95", "above 2560 s", "&gt;5120.00x", id="the report shows a TTFT p95 in the top bucket "
                     "as check does: above the bound, the ratio a bound too"),
        pytest.param("output_p50", "at most 1 token", "&lt;=0.0029x", id="and a median output in the first bucket"),
        pytest.param("prompt_p50", "1,500 tokens", "1.00x", id="and a measurement as a measurement"),
    ],
)  # fmt: skip
def test_the_report_shows_an_edge_bucket_quantile_as_check_does(
    report: str, assumption: str, observed: str, ratio: str
) -> None:
    rows = re.findall(rf"<tr><td>{assumption}</td><td>[^<]*</td><td>([^<]*)</td><td>([^<]*)</td>", report)
    assert rows, report[:2000]
    assert all(row == (observed, ratio) for row in rows), rows
