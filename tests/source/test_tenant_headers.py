"""Configured auth and tenant headers reach the server on every request `planwatch check` makes, through a
recording proxy in front of a real Prometheus (as a Mimir or Thanos tenant gateway would sit), and the check
still reads real values through it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from monitor.cli.main import build_app
from tests.harness.history import History, times
from tests.harness.proxy import RecordingProxy
from tests.harness.stack import Stack

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
END = 1_790_000_000.0


def _history() -> str:
    h = History(END - 3600, END, 15.0)
    target = {"job": "vllm", "instance": "copilot-0:8000", "namespace": "llm", "pod": "copilot-0", "tier": "copilot"}
    labels = target | {"model_name": "meta-llama/Llama-3.3-70B-Instruct", "engine": "0"}
    h.gauge("vllm:num_requests_running", labels, 5)
    h.counter("vllm:request_success", labels | {"finished_reason": "stop"}, 2.0)
    h.raw("up", target, [(t, 1.0) for t in times(END - 3600, END, 15.0)])
    return h.text()


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    stack = Stack(tmp_path_factory.mktemp("tenant"))
    try:
        yield stack.prometheus(openmetrics=_history()).url
    finally:
        stack.close()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(["--header", "X-Scope-OrgID: team-a"], {"x-scope-orgid": "team-a"},
                     id="a tenant header reaches the server on every request"),
        pytest.param(["--header", "X-Scope-OrgID: team-b", "--bearer-token-file", "{token}"],
                     {"x-scope-orgid": "team-b", "authorization": "Bearer s3cret-token"},
                     id="a tenant header and a bearer token from a file reach it together"),
    ],
)  # fmt: skip
def test_check_sends_the_configured_headers_through_a_proxy(
    upstream: str, tmp_path: Path, args: list[str], expected: dict[str, str]
) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    argv = [a.replace("{token}", str(token)) for a in args]
    with RecordingProxy(upstream) as proxy:
        result = CliRunner().invoke(build_app(), ["check", str(REPO / "examples" / "support-copilot.yaml"),
                                                  "--prometheus", proxy.url, "--at", str(END), "--window", "5m",
                                                  "--long-window", "1h", "--format", "json", *argv])  # fmt: skip
    assert result.exit_code in (0, 1), result.output  # a verdict, not a usage or connection error
    assert json.loads(result.stdout)["tiers"][0]["observations"]["request_rate"]["value"] == pytest.approx(2.0)
    assert len(proxy.requests) > 20
    for method, path, headers in proxy.requests:
        lowered = {k.lower(): v for k, v in headers.items()}
        assert {k: lowered.get(k) for k in expected} == expected, (method, path)
