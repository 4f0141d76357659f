"""check, report and serve make one evaluation: on the same Prometheus history they give the same advice.

History: four days of the support copilot with traffic 40% above its planned peak (fleetsim backfill,
60-second steps, the planned replicas: 4 since the step physics sized the copilot) ending at 07:30 New York
on a Tuesday, half an hour before the business morning ramps demand up, served by a real Prometheus; once
with the plan's 10-minute cold start, once with replicas that take 20 minutes. All three fit the demand
forecast on that history with the same defaults, so the advice plans on the same ramp: hold the planned
replicas now (demand is low before the morning), and a schedule that starts one more early enough for its
observed cold start plus the margin before the peak needs it. The service is checked twice: its jobs driven
one by one, and its own scheduler running them. `check --no-forecast` is the reactive baseline and says so.

Four days, so that the forecast has seen two business days (a Friday and the Monday): on three, Monday is
the only one, and the forecast put Tuesday's peak at 43 req/s with its 80% bound at 62, where 70 arrive.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fleetsim.promstack import PrometheusConfig, PrometheusProcess
from monitor.cli.main import build_app
from monitor.service.app import Services, build_services
from monitor.service.settings import Settings
from tests.check.test_scenarios import COPILOT, REPO
from tests.harness.stack import wait_for
from tests.service.conftest import AUTH, ApiClient, make_settings

pytestmark = pytest.mark.integration

END = "2026-12-01T12:30:00Z"
NOW = datetime.fromisoformat(END.replace("Z", "+00:00")).timestamp()
TIER = "copilot"
PLANNED = 4  # the copilot's planned replicas (examples/support-copilot.yaml)


SCENARIOS = {"planned cold start": ("over-peak", 600.0), "slow cold start": ("over-peak,slow-cold-start", 1200.0)}


@pytest.fixture(scope="module", params=list(SCENARIOS))
def history(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, float]]:
    """(the Prometheus URL, the cold start its replicas show) per scenario."""
    scenario, cold_start = SCENARIOS[request.param]
    tmp = tmp_path_factory.mktemp("one-evaluation")
    argv = [sys.executable, "-m", "fleetsim", "backfill", str(COPILOT), "--days", "4", "--step", "60s", "--end", END,
            "--scenario", scenario, "--prometheus-data", str(tmp / "data")]  # fmt: skip
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with PrometheusProcess.start(PrometheusConfig(data_dir=tmp / "data"), workdir=tmp / "prom") as prom:
        yield prom.url, cold_start


def _advice(rec: dict[str, Any]) -> dict[str, Any]:
    """What a recommendation tells the operator to do: replicas, action and each scheduled step."""
    steps = [(s["replicas"], round(s["by"]), round(s["needed_at"])) for s in rec["schedule"]]
    return {"recommended": rec["recommended_replicas"], "action": rec["action"], "schedule": steps}


def _check(url: str, *extra: str) -> dict[str, Any]:
    argv = ["check", str(COPILOT), "--prometheus", url, "--at", END, "--format", "json", *extra]
    result = CliRunner().invoke(build_app(), argv)
    assert result.exit_code in (0, 1), result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _check_advice(data: dict[str, Any]) -> dict[str, Any]:
    return _advice(next(t for t in data["tiers"] if t["name"] == TIER)["recommendation"])


class _Tables(HTMLParser):
    """Every <table> of a page as rows of cell texts (the header row first)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _report_tables(url: str, out: Path) -> dict[str, list[list[str]]]:
    argv = ["report", str(COPILOT), "--prometheus", url, "--at", END, "--out", str(out)]
    result = CliRunner().invoke(build_app(), argv)
    assert result.exit_code == 0, result.stderr
    parser = _Tables()
    parser.feed(out.read_text())
    return {t[0][0] + "|" + t[0][1]: t[1:] for t in parser.tables if t and len(t[0]) > 1}


def _serve_advice(url: str, tmp_path: Path) -> dict[str, Any]:
    """The service's two jobs driven one by one: refit the forecasts, then evaluate."""
    services = build_services(_serve_settings(url, tmp_path), clock=lambda: NOW, schedule=False)
    try:
        services.refit_now()
        services.evaluate_now()
        return _published(services)
    finally:
        services.close()


def _scheduled_advice(url: str, tmp_path: Path) -> dict[str, Any]:
    """The service's own scheduler: both jobs start at once, and the advice counts once an evaluation has run
    on the refitted forecast."""
    services = build_services(_serve_settings(url, tmp_path, evaluation_interval="1s"), clock=lambda: NOW)
    try:
        services.start()

        def planned_on_the_forecast() -> bool:
            ev = services.jobs.results.current().evaluation
            return ev is not None and TIER in ev.outlooks

        wait_for(planned_on_the_forecast, timeout=60, what="an evaluation on the refitted forecast")
        return _published(services)
    finally:
        services.close()


def _serve_settings(url: str, tmp_path: Path, **overrides: Any) -> Settings:
    tmp_path.mkdir(parents=True, exist_ok=True)
    return make_settings(tmp_path, prometheus={"url": url, "timeout": 30}, **overrides)


def _published(services: Services) -> dict[str, Any]:
    body = ApiClient(services.app).get("/v1/recommendations", headers=AUTH).json()
    return _advice(next(r for r in body["recommendations"] if r["tier"] == TIER))


def test_check_report_and_serve_give_the_same_advice(history: tuple[str, float], tmp_path: Path) -> None:
    url, cold_start = history
    checked = _check(url)
    advice = _check_advice(checked)
    assert checked["forecast"]["enabled"] and TIER in checked["forecast"]["models"]
    assert (advice["recommended"], advice["action"]) == (PLANNED, "hold")
    rec = next(t for t in checked["tiers"] if t["name"] == TIER)["recommendation"]
    [step] = rec["schedule"]
    assert step["replicas"] == PLANNED + 1 and step["needed_at"] > NOW
    assert step["cold_start_seconds"] == pytest.approx(cold_start, rel=0.1)
    assert step["by"] == pytest.approx(step["needed_at"] - step["cold_start_seconds"] - step["margin_seconds"])
    assert _serve_advice(url, tmp_path / "driven") == advice
    assert _scheduled_advice(url, tmp_path / "scheduled") == advice
    tables = _report_tables(url, tmp_path / "report.html")
    assert [int(row[0]) for row in tables["scale to|by"]] == [PLANNED + 1]
    assert tables["tier|$/h now"][0][2] == f"${rec['cost_per_hour_usd_recommended']:,.2f}"


def test_check_without_a_forecast_advises_reactively_and_says_so(history: tuple[str, float]) -> None:
    checked = _check(history[0], "--no-forecast")
    assert _check_advice(checked)["schedule"] == []
    assert checked["forecast"]["enabled"] is False
    assert checked["forecast"]["reactive_only"] == [TIER]
    assert any("reactive only" in note for note in checked["forecast"]["notes"])
