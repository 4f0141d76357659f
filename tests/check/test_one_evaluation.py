"""check, report and serve make one evaluation: on the same Prometheus history they give the same advice.

History: three days of the support copilot with traffic 40% above its planned peak (fleetsim backfill,
60-second steps, the planned 3 replicas) ending at 07:30 New York on a Tuesday, half an hour before the business
morning ramps demand up, served by a real Prometheus. All three fit the demand forecast on that history with the
same defaults, so the advice plans on the same ramp: the same replicas, action and scale schedule (a fourth
replica before the peak). `check --no-forecast` is the reactive baseline and says so.
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
from monitor.service.app import build_services
from tests.check.test_scenarios import COPILOT, REPO
from tests.service.conftest import AUTH, ApiClient, make_settings

pytestmark = pytest.mark.integration

END = "2026-12-01T12:30:00Z"
NOW = datetime.fromisoformat(END.replace("Z", "+00:00")).timestamp()
TIER = "copilot"


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    tmp = tmp_path_factory.mktemp("one-evaluation")
    argv = [sys.executable, "-m", "fleetsim", "backfill", str(COPILOT), "--days", "3", "--step", "60s", "--end", END,
            "--scenario", "over-peak", "--prometheus-data", str(tmp / "data")]  # fmt: skip
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with PrometheusProcess.start(PrometheusConfig(data_dir=tmp / "data"), workdir=tmp / "prom") as prom:
        yield prom


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
    settings = make_settings(tmp_path, prometheus={"url": url, "timeout": 30})
    services = build_services(settings, clock=lambda: NOW, schedule=False)
    try:
        services.refit_now()
        services.evaluate_now()
        body = ApiClient(services.app).get("/v1/recommendations", headers=AUTH).json()
    finally:
        services.close()
    return _advice(next(r for r in body["recommendations"] if r["tier"] == TIER))


def test_check_report_and_serve_give_the_same_advice(prometheus: PrometheusProcess, tmp_path: Path) -> None:
    checked = _check(prometheus.url)
    advice = _check_advice(checked)
    assert checked["forecast"]["enabled"] and TIER in checked["forecast"]["models"]
    assert advice["schedule"], "the morning ramp ahead gives a scale schedule"
    assert _serve_advice(prometheus.url, tmp_path) == advice
    tables = _report_tables(prometheus.url, tmp_path / "report.html")
    schedule = tables["scale to|by"]
    assert [int(row[0]) for row in schedule] == [replicas for replicas, _, _ in advice["schedule"]]
    cost = next(t for t in checked["tiers"] if t["name"] == TIER)["recommendation"]["cost_per_hour_usd_recommended"]
    assert tables["tier|$/h now"][0][2] == f"${cost:,.2f}"


def test_check_without_a_forecast_advises_reactively_and_says_so(prometheus: PrometheusProcess) -> None:
    checked = _check(prometheus.url, "--no-forecast")
    assert _check_advice(checked)["schedule"] == []
    assert checked["forecast"]["enabled"] is False
    assert checked["forecast"]["reactive_only"] == [TIER]
    assert any("reactive only" in note for note in checked["forecast"]["notes"])
