"""Sizing and its emulator agree: a plan sizing says holds breaches nothing and fires no trigger for a
business day of fleetsim's `baseline`, on every tier; the capstone as written, which sizing finds
under-provisioned, breaches its TTFT SLO on the standard and long-context tiers. Real Prometheus over
backfilled fleetsim history, judged over the capstone's business day (Los Angeles 08:00-18:00)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

from fleetsim.promstack import PrometheusConfig, PrometheusProcess
from monitor.drift import Status
from monitor.evaluation import Evaluation, EvaluationInputs, evaluate
from monitor.observer import PrometheusObserver
from monitor.plan import load_plan
from monitor.sizing.plan_sizing import size_plan
from monitor.source import HttpPrometheusSource, SourceSettings

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
CAPSTONE = REPO / "examples" / "capstone.yaml"
RESIZED = REPO / "examples" / "capstone-resized.yaml"
END = "2026-12-02T02:00:00Z"  # Tuesday 18:00 in Los Angeles
NOW = datetime.fromisoformat(END.replace("Z", "+00:00")).timestamp()
BUSINESS_DAY = "10h"


def backfill_day(plan: Path, data: Path) -> None:
    argv = [sys.executable, "-m", "fleetsim", "backfill", str(plan), "--days", "1", "--step", "60s", "--end", END,
            "--scenario", "baseline", "--prometheus-data", str(data)]  # fmt: skip
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path], Evaluation]:
    """The evaluation of a day of baseline history per plan, as `planwatch check --window 10h` makes it."""
    cache: dict[Path, Evaluation] = {}

    def run(plan_path: Path) -> Evaluation:
        if plan_path not in cache:
            data = tmp_path_factory.mktemp(plan_path.stem) / "data"
            backfill_day(plan_path, data)
            plan = load_plan(plan_path)
            with (
                PrometheusProcess.start(PrometheusConfig(data_dir=data), workdir=tmp_path_factory.mktemp("prom")) as p,
                HttpPrometheusSource(SourceSettings(url=p.url, timeout=30)) as source,
            ):
                observations = PrometheusObserver(source, long_window="1d").collect(plan, NOW, BUSINESS_DAY)
            cache[plan_path] = evaluate(EvaluationInputs(plan, observations, NOW, held_since=NOW - 3600))
        return cache[plan_path]

    return run


def _breaches(ev: Evaluation) -> set[tuple[str, str]]:
    return {(s.tier, r.assumption) for s in ev.sections for r in s.drift if r.status is Status.BREACH}


def test_a_plan_sizing_says_holds_breaches_nothing_and_fires_no_trigger_on_any_tier(
    judged: Callable[[Path], Evaluation],
) -> None:
    plan = load_plan(RESIZED)
    for sized in size_plan(plan).tiers:
        assert sized.sizing.expected.replicas <= sized.sizing.tier.replicas.planned, sized.sizing.tier.name
    ev = judged(RESIZED)
    assert {t.tier for t in ev.tiers} == {t.name for t in plan.tiers}
    assert _breaches(ev) == set()
    assert ev.triggers == ()


def test_the_capstone_as_written_breaches_ttft_on_its_standard_and_long_context_tiers(
    judged: Callable[[Path], Evaluation],
) -> None:
    sizing = size_plan(load_plan(CAPSTONE))
    for name in ("standard", "long-context"):
        tier = sizing.tier(name).sizing
        assert tier.expected.replicas > tier.tier.replicas.planned, name
    breaches = _breaches(judged(CAPSTONE))
    assert {("standard", "ttft_p95"), ("long-context", "ttft_p95")} <= breaches
