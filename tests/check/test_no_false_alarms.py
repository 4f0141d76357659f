"""A fleet that matches its plan raises no trigger and breaches no assumption, at any hour of a simulated week:
nights (few requests, judged unknown rather than zero), morning ramps, peaks and the weekend. Real Prometheus,
eight days of backfilled fleetsim history, one evaluation every six hours over the last seven days."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fleetsim.promstack import PrometheusConfig, PrometheusProcess
from monitor.drift import Status
from monitor.evaluation import EvaluationInputs, evaluate
from monitor.observer import PrometheusObserver
from monitor.plan import load_plan
from monitor.sizing.plan_sizing import size_plan
from monitor.source import HttpPrometheusSource, SourceSettings
from tests.check.test_scenarios import COPILOT, END, NOW, REPO

pytestmark = pytest.mark.integration


def test_baseline_over_a_week_fires_no_trigger(tmp_path: Path) -> None:
    data = tmp_path / "data"
    argv = [sys.executable, "-m", "fleetsim", "backfill", str(COPILOT), "--days", "8", "--step", "60s", "--end", END,
            "--scenario", "baseline", "--prometheus-data", str(data)]  # fmt: skip
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr
    plan = load_plan(COPILOT)
    sizing = size_plan(plan)
    alarms: list[str] = []
    with (
        PrometheusProcess.start(PrometheusConfig(data_dir=data), workdir=tmp_path / "prom") as prom,
        HttpPrometheusSource(SourceSettings(url=prom.url, timeout=60)) as source,
    ):
        for hours_back in range(0, 7 * 24, 6):
            # Each hour of the week against its own day; the last one also against the whole week (burstiness).
            observer = PrometheusObserver(source, long_window="7d" if hours_back == 0 else "1d")
            at = NOW - hours_back * 3600
            ev = evaluate(
                EvaluationInputs(plan, observer.collect(plan, at, "1h"), at, held_since=at - 3600, sizing=sizing)
            )
            alarms += [f"-{hours_back}h: trigger {t.trigger} on {t.tier}" for t in ev.triggers]
            alarms += [f"-{hours_back}h: {s.tier}.{r.assumption} breach ({r.observed.value})"
                       for s in ev.sections for r in s.drift if r.status is Status.BREACH]  # fmt: skip
    assert alarms == [], "\n".join(alarms)
