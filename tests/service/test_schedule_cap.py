"""One schedule, three readers: the exported `planwatch_next_scale_up_replicas`, `/v1/schedule` and
`planwatch report` say the same thing when the forecast needs more replicas than `replicas.max`.

A day of the support copilot's fleetsim history, ending at 05:00 New York on a Tuesday (before business
hours: 4 replicas ready, almost no demand), read by a real Prometheus. The forecast's upper bound for the
coming morning needs more replicas than any of the capped plans allow; the service and the report each fit
that forecast on the same history, and each must stop the schedule at the tier's `replicas.max` and say so.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from fleetsim.promstack import PrometheusProcess
from monitor.service.app import build_services, default_observer
from tests.check.test_scenarios import COPILOT, REPO
from tests.harness.stack import Stack
from tests.service.conftest import ApiClient, make_settings

pytestmark = [pytest.mark.integration, pytest.mark.slow]

END = "2026-12-01T10:00:00Z"
NOW = datetime.fromisoformat(END.replace("Z", "+00:00")).timestamp()
READY = 4  # the copilot's planned replicas, which fleetsim's history runs


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    stack = Stack(tmp_path_factory.mktemp("schedule-cap"))
    try:
        # Pinned to baseline: the caps below are set against the regular week's forecast (the morning needs
        # more than 8); on fleetsim's default (irregular) day the forecast needs no more than 8: no warning.
        yield stack.fleet_history(COPILOT, days=1, step="15s", end=END, scenario="baseline")
    finally:
        stack.close()


def _plan_with_max(tmp_path: Path, most: int) -> Path:
    text, line = COPILOT.read_text(), "replicas: {min: 1, max: 5, planned: 4}"
    assert line in text, "the copilot plan's replicas line moved: update this test"
    capped = text.replace(line, f"replicas: {{min: 1, max: {most}, planned: 4}}")
    path = tmp_path / f"copilot-max-{most}.yaml"
    path.write_text(capped)
    return path


def _service_view(tmp_path: Path, plan: Path, url: str) -> tuple[dict[str, Any], list[int], float | None]:
    """The recommendation, the /v1/schedule steps' replicas and the exported next scale-up, one evaluation
    after one refit at NOW."""
    settings = make_settings(tmp_path, plan=str(plan), stale_after="1h",
                             prometheus={"url": url, "timeout": 30, "retries": 0})  # fmt: skip
    services = build_services(settings, default_observer(settings), clock=lambda: NOW, schedule=False)
    try:
        services.refit_now()
        services.evaluate_now()
        api = ApiClient(services.app)
        (rec,) = api.get("/v1/recommendations").json()["recommendations"]
        steps = [s["replicas"] for s in api.get("/v1/schedule").json()["steps"]]
        gauge = re.search(r'^planwatch_next_scale_up_replicas\{tier="copilot"\} (\S+)$', api.get("/metrics").text,
                          re.MULTILINE)  # fmt: skip
        return rec, steps, float(gauge.group(1)) if gauge else None
    finally:
        services.close()


def _report_view(plan: Path, url: str) -> tuple[list[int], str]:
    """The report's schedule ("scale to" per row) and its warnings, as text."""
    argv = [sys.executable, "-m", "monitor", "report", str(plan), "--prometheus", url, "--at", END, "--out", "-"]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    schedule = re.search(r"<h3>Schedule.*?<tbody>(.*?)</tbody>", done.stdout, re.DOTALL)
    rows = re.findall(r"<tr><td>copilot</td><td>(\d+)</td>", schedule.group(1)) if schedule else []
    warnings = re.search(r"<h3>Warnings</h3><ul>(.*?)</ul>", done.stdout, re.DOTALL)
    return [int(r) for r in rows], unescape(warnings.group(1)) if warnings else ""


@pytest.mark.parametrize(
    ("most", "capped"),
    [
        pytest.param(5, True, id="a max one above the ready replicas leaves one step, to the max, and a warning"),
        pytest.param(8, True, id="a max of 8 stops the schedule at 8 and says the forecast needs more"),
        pytest.param(40, False, id="a max above the forecast's need leaves the schedule whole, with no warning"),
    ],
)
def test_the_gauge_the_schedule_and_the_report_stop_at_replicas_max(
    tmp_path: Path, prometheus: PrometheusProcess, most: int, capped: bool
) -> None:
    plan = _plan_with_max(tmp_path, most)
    rec, steps, gauge = _service_view(tmp_path, plan, prometheus.url)
    report_steps, report_warnings = _report_view(plan, prometheus.url)

    peak = rec["needed_at_forecast_peak"]
    assert rec["current_replicas"] == READY and peak is not None and peak > 5  # the morning needs more than 5
    last = min(most, peak)
    assert steps == list(range(READY + 1, last + 1))  # one step per replica, up to the cap or the need
    assert gauge == steps[0]  # the next scale-up is the schedule's first step
    assert report_steps == steps  # the report's schedule is the service's
    warning = f"the forecast needs {peak} replicas but replicas.max is {most}: the schedule stops at {most}"
    assert (warning in rec["warnings"]) is capped
    assert (warning in report_warnings) is capped
