"""The measurement plan judged from a real Prometheus holding a day of fleetsim history of the support copilot
with one replica failing at 12:00 UTC, through `planwatch measurements` and its SQLite record. No mocked
Prometheus here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fleetsim.promstack import PrometheusConfig, PrometheusProcess
from monitor.cli.main import build_app
from monitor.observer import PrometheusObserver
from monitor.service.app import build_services
from monitor.service.state import StateStore
from monitor.source import HttpPrometheusSource, SourceSettings
from monitor.triggers import EvalResult
from tests.check.test_scenarios import COPILOT, NOW, backfill
from tests.service.conftest import AUTH, ApiClient, make_settings

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Any:
    data = tmp_path_factory.mktemp("copilot-replica-down") / "data"
    backfill(COPILOT, "replica-down@2026-12-01T12:00:00Z", data)  # it ran before it failed
    with PrometheusProcess.start(PrometheusConfig(data_dir=data), workdir=tmp_path_factory.mktemp("work")) as p:
        yield p


def _run(prom: PrometheusProcess, *extra: str, at: float = NOW) -> dict[tuple[str, str], dict[str, Any]]:
    argv = ["measurements", str(COPILOT), "--prometheus", prom.url, "--at", str(at), "--window", "1d",
            "--format", "json", *extra]  # fmt: skip
    result = CliRunner().invoke(build_app(), argv)
    assert result.exit_code == 0, result.output
    return {(i["id"], i["tier"]): i for i in json.loads(result.output)["items"]}


@pytest.fixture(scope="module")
def record(prom: PrometheusProcess) -> dict[tuple[str, str], dict[str, Any]]:
    return _run(prom)


@pytest.mark.parametrize(
    ("item", "tier", "status"),
    [
        pytest.param("latency-at-load", "copilot", "partly",
                     id="a day at the planned peak measures latency at 1x but not at 2x or 3x"),
        pytest.param("prefix-hit-rate", "copilot", "measured", id="the prefix-cache hit rate is read off real traffic"),
        pytest.param("kv-at-p95-context", "copilot", "measured",
                     id="KV occupancy and preemptions at the planned prompt p95"),
        pytest.param("goodput-at-slo", "copilot", "partly", id="goodput from histograms is a lower bound by request"),
        pytest.param("failure-behaviour", "copilot", "partly",
                     id="a replica down is recognised, a 100K prompt is refused by max_model_len, no deploy seen"),
        pytest.param("cost-per-request", "copilot", "measured", id="cost per request at average and at peak"),
        pytest.param("quantization-quality", "fleet", "not yet", id="no eval posted for the FP8 tier"),
        pytest.param("tp-scaling", "fleet", "not yet", id="one model at one TP has nothing to compare"),
    ],
)  # fmt: skip
def test_each_item_is_judged_from_history(
    record: dict[tuple[str, str], dict[str, Any]], item: str, tier: str, status: str
) -> None:
    got = record[(item, tier)]
    assert got["status"] == status, got["evidence"]
    assert got["evidence"]


def test_results_are_written_down_with_dates_engine_and_hardware(
    record: dict[tuple[str, str], dict[str, Any]],
) -> None:
    item = record[("latency-at-load", "copilot")]
    assert item["from"] and item["to"] and item["first_seen"] < item["last_seen"] <= NOW
    assert "cache_dtype=" in item["engine"] and "H100" in item["hardware"]
    assert any(e.startswith("1x (") for e in item["evidence"])
    down = record[("failure-behaviour", "copilot")]
    [seen] = [e for e in down["evidence"] if e.startswith("one replica down: up to 1 replica(s) down at once")]
    assert "meanwhile (" in seen and "TTFT p95" in seen, "what the SLO did while the replica was down"


def test_the_record_outlives_retention_in_the_state_file(prom: PrometheusProcess, tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    store = StateStore.open(state)
    store.add_eval(EvalResult(model="llama-70b", precision="fp8", task_set="tickets", score=0.9,
                              baseline_score=0.91, threshold=0.02, submitted_at=NOW - 60))  # fmt: skip
    store.close()
    first = _run(prom, "--state", str(state))
    assert first[("quantization-quality", "fleet")]["status"] == "measured", "the posted eval answers it"
    later_at = NOW + 30 * 86_400  # the history is out of the window
    assert _run(prom, at=later_at)[("prefix-hit-rate", "copilot")]["status"] == "not yet", "without the record"
    later = _run(prom, "--state", str(state), at=later_at)
    kept = later[("prefix-hit-rate", "copilot")]
    assert kept["status"] == "measured" and kept["last_seen"] <= NOW


def test_the_service_keeps_and_serves_the_record(prom: PrometheusProcess, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, long_window="1d")
    source = HttpPrometheusSource(SourceSettings(url=prom.url, timeout=30))
    observer = PrometheusObserver(source, long_window="1d")
    services = build_services(settings, observer, clock=lambda: NOW, schedule=False)
    try:
        assert ApiClient(services.app).get("/v1/measurements", headers=AUTH).json()["items"] == []
        services.measure_now()
        body = ApiClient(services.app).get("/v1/measurements", headers=AUTH).json()
    finally:
        services.close()
        source.close()
    assert [i["id"] for i in body["items"]][:2] == ["latency-at-load", "goodput-at-slo"], "in the capstone's order"
    assert body["summary"]["measured"] >= 3
    assert {i["id"]: i["status"] for i in body["items"]}["prefix-hit-rate"] == "measured"


def test_the_report_has_the_measurement_section(prom: PrometheusProcess, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    argv = ["report", str(COPILOT), "--prometheus", prom.url, "--at", str(NOW), "--long-window", "1d",
            "--history", "1d", "--out", str(out)]  # fmt: skip
    result = CliRunner().invoke(build_app(), argv)
    assert result.exit_code == 0, result.output
    section = out.read_text()[out.read_text().index("<h2>Measurement plan</h2>") :]
    assert "Prefix-cache hit rate on real traffic" in section and '<span class="ok">measured</span>' in section


def test_the_table_names_each_item(prom: PrometheusProcess) -> None:
    argv = ["measurements", str(COPILOT), "--prometheus", prom.url, "--at", str(NOW), "--window", "1d"]
    result = CliRunner().invoke(build_app(), argv, env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    for text in ("measurement plan (capstone Step 6)", "Prefix-cache hit rate on real traffic", "not yet", "partly"):
        assert text in result.output


def test_an_unreachable_prometheus_exits_3() -> None:
    argv = ["measurements", str(COPILOT), "--prometheus", "http://127.0.0.1:9", "--window", "1d", "--timeout", "2"]
    result = CliRunner().invoke(build_app(), argv)
    assert result.exit_code == 3, result.output
