"""Real /metrics bodies (tests/fixtures/expositions, sources in its README) served to a real Prometheus with
their counters advancing and the labels a Kubernetes scrape adds; `planwatch check` reads what each dump
implies and says why the rest is unknown."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fleetsim.promstack import RESTORE_VLLM_COLONS, ScrapeJob
from monitor.cli.main import build_app
from tests.harness.replay import ReplayExporter
from tests.harness.stack import Stack, api_query, wait_for

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "expositions"
PERIOD = 100.0  # cumulative values grow by their recorded value every PERIOD seconds
TIERS = {"v0": "vllm-v0-aibrix-runtime.txt", "docs": "vllm-docs-usage-metrics.txt"}


@pytest.fixture(scope="module")
def scraped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Every fixture behind its own target, one Prometheus scraping them all each second."""
    stack = Stack(tmp_path_factory.mktemp("golden"))
    exporters = {tier: ReplayExporter((FIXTURES / name).read_text(), PERIOD) for tier, name in TIERS.items()}
    try:
        jobs = [ScrapeJob(f"vllm-{tier}", targets=(e.target,), metric_relabel_configs=[RESTORE_VLLM_COLONS],
                          labels={"tier": tier, "namespace": "llm", "pod": f"{tier}-0"})
                for tier, e in exporters.items()]  # fmt: skip
        prom = stack.prometheus(jobs, scrape_interval="1s")
        wait_for(lambda: api_query(prom.url, "min(count_over_time(up[1m])) >= 12"), 40, "twelve scrapes")
        yield prom.url
    finally:
        stack.close()
        for e in exporters.values():
            e.close()


@pytest.fixture(scope="module")
def checked(scraped: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """One `planwatch check` per fixture, at the same moment."""
    work = tmp_path_factory.mktemp("plans")
    return {tier: _check(scraped, tier, work) for tier in TIERS}


def _check(url: str, tier: str, tmp_path: Path) -> dict[str, Any]:
    plan = tmp_path / f"{tier}.yaml"
    plan.write_text(
        (REPO / "examples" / "support-copilot.yaml").read_text().replace("- name: copilot", f"- name: {tier}")
    )
    argv = ["check", str(plan), "--prometheus", url, "--at", str(time.time()), "--window", "10s",
            "--long-window", "1h", "--format", "json"]  # fmt: skip
    result = CliRunner().invoke(build_app(), argv)
    assert result.exit_code in (0, 1), result.output
    observations: dict[str, Any] = json.loads(result.stdout)["tiers"][0]["observations"]
    return observations


@pytest.mark.parametrize(
    ("tier", "field", "value", "reason"),
    [
        pytest.param("v0", "request_rate", 4 / PERIOD, None, id="V0: 4 finished requests per period"),
        pytest.param("v0", "prompt_tokens_rate", 148 / PERIOD, None, id="V0: 148 prompt tokens per period"),
        pytest.param("v0", "running", 0.0, None, id="V0: nothing running"),
        pytest.param("v0", "waiting", 0.0, None, id="V0: nothing waiting"),
        pytest.param("v0", "kv_occupancy_mean", 0.0, None, id="V0: gpu_cache_usage_perc is read as KV occupancy"),
        pytest.param("v0", "error_ratio", 0.0, None, id="V0: only stop requests, no errors"),
        pytest.param("v0", "replicas_up", 1.0, None, id="V0: one replica up"),
        pytest.param("v0", "replicas_ready", 1.0, "kube-state-metrics absent: replicas up",
                     id="V0: no kube-state-metrics, ready is the replica up"),
        pytest.param("v0", "prefix_hit_rate", None, "no data", id="V0: prefix caching off (-1) is unknown, not -1"),
        pytest.param("v0", "ttft_p95", None, "no observations", id="V0: the dump holds no TTFT histogram"),
        pytest.param("v0", "gpu_utilization", None, "no data", id="V0: no dcgm-exporter, no GPU values"),
        pytest.param("docs", "replicas_up", None, "no vllm:num_requests_running series",
                     id="docs: a dump without the key series says what keys on it"),
        pytest.param("docs", "request_rate", None, "no data", id="docs: no request counters, no request rate"),
    ],
)  # fmt: skip
def test_check_reads_what_a_real_dump_implies(
    checked: dict[str, dict[str, Any]], tier: str, field: str, value: float | None, reason: str | None
) -> None:
    m = checked[tier][field]
    if value is None:
        assert m["value"] is None and reason in m["reason"], m
    else:
        assert m["value"] == pytest.approx(value, rel=0.05, abs=1e-9), m
        if reason:
            assert reason in m["reason"], m
