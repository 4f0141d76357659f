"""The process harness against the real binaries: start, scrape, reload, alert, stop, fail loudly."""

from __future__ import annotations

import os
import socket
import urllib.request
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Gauge

from fleetsim import promstack
from fleetsim.promstack import (
    INSTALL_HINT,
    RESTORE_VLLM_COLONS,
    AlertmanagerProcess,
    BinaryNotFound,
    ProcessStartError,
    PrometheusConfig,
    PrometheusProcess,
    ScrapeJob,
    find_binary,
)
from tests.conftest import ExporterFactory, PrometheusFactory
from tests.harness.stack import Stack, api_query, require_binaries, wait_for

pytestmark = pytest.mark.integration


def _get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.status, response.read()


def test_prometheus_scrapes_static_and_file_sd_targets(
    prometheus_factory: PrometheusFactory, exporter_factory: ExporterFactory, tmp_path: Path
) -> None:
    registry = CollectorRegistry()
    Gauge("harness_answer", "A known value.", registry=registry).set(42)
    exporter = exporter_factory(registry)
    sd = tmp_path / "targets.json"
    sd.write_text(f'[{{"targets": ["{exporter.target}"], "labels": {{"tier": "standard", "pod": "p-0"}}}}]')
    prom = prometheus_factory(targets=[exporter.target], jobs=[ScrapeJob("sd", file_sd=(sd,))])

    def ups() -> dict[str, dict[str, str]]:
        return {r["metric"]["job"]: r["metric"] for r in api_query(prom.url, "up == 1")}

    up = wait_for(lambda: len(ups()) == 2 and ups(), what="both targets scraped")
    assert up["test"]["instance"] == exporter.target
    assert (up["sd"]["tier"], up["sd"]["pod"]) == ("standard", "p-0")
    answer = wait_for(lambda: api_query(prom.url, 'harness_answer{job="test"}'), what="the exporter's gauge")
    assert answer[0]["value"][1] == "42"


def test_stop_leaves_no_process_and_no_workdir(tmp_path: Path) -> None:
    require_binaries()
    prom = PrometheusProcess.start(PrometheusConfig())
    pid, workdir = prom.pid, prom.workdir
    assert _get(f"{prom.url}/-/ready")[0] == 200
    prom.stop()
    prom.stop()  # idempotent
    assert not prom.running()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not workdir.exists()
    assert prom not in list(promstack.running_processes())


def test_an_outage_keeps_the_url_and_the_data_for_the_restart(
    prometheus_factory: PrometheusFactory, exporter_factory: ExporterFactory
) -> None:
    """What the service's outage tests rely on: stopped, the URL refuses; restarted, it serves what it had."""
    registry = CollectorRegistry()
    Gauge("harness_answer", "A known value.", registry=registry).set(42)
    exporter = exporter_factory(registry)
    prom = prometheus_factory(targets=[exporter.target])
    scraped = wait_for(lambda: api_query(prom.url, "harness_answer"), what="the gauge scraped")
    at = float(scraped[0]["value"][0])
    prom.stop_keeping_data()
    assert not prom.running()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{prom.url}/-/ready", timeout=2)
    prom.restart()
    assert prom.running() and _get(f"{prom.url}/-/ready")[0] == 200
    kept = api_query(prom.url, "harness_answer", at=at)
    assert [r["value"][1] for r in kept] == ["42"]


def test_a_bad_config_fails_with_the_servers_own_words(tmp_path: Path) -> None:
    require_binaries()
    rules = tmp_path / "broken.yml"
    rules.write_text("groups:\n- name: x\n  rules:\n  - record: a:b\n    expr: sum(\n")
    with pytest.raises(ProcessStartError, match=r"(?s)exited with status.*broken\.yml"):
        PrometheusProcess.start(PrometheusConfig(rule_files=(rules,)), timeout=20)


def test_a_port_taken_between_probe_and_start_is_retried(monkeypatch: pytest.MonkeyPatch, stack: Stack) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        ports = iter([taken])
        real = promstack.free_port
        monkeypatch.setattr(promstack, "free_port", lambda host="127.0.0.1": next(ports, None) or real(host))
        prom = stack.prometheus()
        assert prom.port != taken
        assert _get(f"{prom.url}/-/ready")[0] == 200


def test_reload_picks_up_a_new_rule_file(prometheus: PrometheusProcess, tmp_path: Path) -> None:
    rules = tmp_path / "rules.yml"
    rules.write_text("groups:\n- name: t\n  rules:\n  - record: harness:answer\n    expr: vector(7)\n")
    prometheus.reload(PrometheusConfig(rule_files=(rules,)))
    got = wait_for(lambda: api_query(prometheus.url, "harness:answer"), what="the recorded series")
    assert got[0]["value"][1] == "7"


def test_alertmanager_is_ready_and_receives_prometheus_alerts(stack: Stack, tmp_path: Path) -> None:
    am = stack.alertmanager()
    assert _get(f"{am.url}/-/ready")[0] == 200
    rules = tmp_path / "alerts.yml"
    rules.write_text("groups:\n- name: t\n  rules:\n  - alert: HarnessAlwaysFiring\n    expr: vector(1)\n")
    stack.prometheus(rule_files=[rules], alertmanagers=[am.address], extra_args=["--rules.alert.resend-delay=1s"])

    def alerts() -> bytes:
        return _get(f"{am.url}/api/v2/alerts")[1]

    assert b"HarnessAlwaysFiring" in wait_for(lambda: b"HarnessAlwaysFiring" in alerts() and alerts(), 20)


@pytest.mark.parametrize(
    ("tool", "names"),
    [
        pytest.param("prometheus", "`prometheus`", id="a missing prometheus names itself and the install command"),
        pytest.param(
            "alertmanager",
            "`alertmanager` or `prometheus-alertmanager`",
            id="alertmanager is looked up under both its upstream and its Debian name",
        ),
    ],
)
def test_missing_binaries_say_how_to_install_them(monkeypatch: pytest.MonkeyPatch, tool: str, names: str) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(BinaryNotFound) as err:
        find_binary(tool)
    assert names in str(err.value)
    assert INSTALL_HINT in str(err.value)
    assert "apt-get install prometheus prometheus-alertmanager" in INSTALL_HINT


def test_the_fixture_fails_rather_than_skips_without_binaries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(pytest.fail.Exception, match="apt-get install"):
        require_binaries()


def test_config_renders_scrape_rules_and_alerting(tmp_path: Path) -> None:
    cfg = PrometheusConfig(
        jobs=(
            ScrapeJob("vllm", targets=("127.0.0.1:1",), labels={"tier": "a"}, honor_labels=True),
            ScrapeJob("sd", file_sd=(tmp_path / "t.json",)),
        ),
        rule_files=(tmp_path / "r.yml",),
        alertmanagers=("127.0.0.1:9093",),
        scrape_interval="15s",
    )
    text = cfg.render()
    for expected in ("scrape_interval: 15s", "honor_labels: true", "tier: a", "t.json", "127.0.0.1:9093", "r.yml"):
        assert expected in text


def test_alertmanager_process_exposes_an_address_for_prometheus(alertmanager: AlertmanagerProcess) -> None:
    assert alertmanager.address == f"127.0.0.1:{alertmanager.port}"
    assert alertmanager.running()


def test_prometheus_client_mangles_vllm_colons_for_a_prometheus_2_scrape(exporter_factory: ExporterFactory) -> None:
    """Why RESTORE_VLLM_COLONS exists: Prometheus 2.x asks for OpenMetrics without an `escaping` parameter,
    and prometheus_client answers with `vllm_...` sample names (client_python #1177)."""
    registry = CollectorRegistry()
    Gauge("vllm:num_requests_running", "Running.", registry=registry).set(3)
    exporter = exporter_factory(registry)
    accept = (
        "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
        "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
    )
    request = urllib.request.Request(f"http://{exporter.target}/metrics", headers={"Accept": accept})
    with urllib.request.urlopen(request, timeout=5) as response:
        samples = [ln for ln in response.read().decode().splitlines() if not ln.startswith("#")]
    assert samples == ["vllm_num_requests_running 3.0"]
    assert RESTORE_VLLM_COLONS["replacement"] == "vllm:$1"
