"""Batch jobs watched live against a real Prometheus holding fleetsim's batch-job history: a run on pace, a run
too slow for its deadline, and a run whose engines sit in the online tier. No mocked Prometheus here.

The plan: the support copilot (New York) with a nightly job of 600,000 items (2,000 input tokens with a
1,200-token instruction block, 100 output) in 22:00-06:00. Sized, one TP4 replica does it in about 7 h of the
8 h window. Judged at 02:00 local, four hours into the run.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from typer.testing import CliRunner

from fleetsim.batch import batch_history, batch_run
from monitor.batch_progress import batch_key
from monitor.cli.main import build_app
from monitor.evaluation import Evaluation, EvaluationInputs, evaluate
from monitor.observer import PrometheusObserver
from monitor.plan import Plan, parse_plan
from monitor.plan.model import FLEET
from monitor.source import HttpPrometheusSource, SourceSettings
from tests.conftest import BackfillFactory

pytestmark = pytest.mark.integration

COPILOT = Path(__file__).resolve().parents[2] / "examples" / "support-copilot.yaml"
JOB = """
batch_jobs:
  - name: nightly
    model: llama-70b
    items: 600000
    input_tokens: 1.2B
    output_tokens: 60M
    shared_prefix_tokens: 1200
    window: {{start: "22:00", end: "06:00"}}
    batch_usd_per_million_tokens: 0.45
    runs_on: {runs_on}
"""
NOW = datetime(2026, 12, 2, 2, 0, tzinfo=ZoneInfo("America/New_York")).timestamp()
DEADLINE, ON_TIER = "batch-job-will-miss-deadline", "batch-traffic-on-online-tier"


def _plan(runs_on: str = "batch-api") -> Plan:
    return parse_plan(COPILOT.read_text() + JOB.format(runs_on=runs_on))


def _judge(factory: BackfillFactory, plan: Plan, speed: float, tier_label: str = "") -> Evaluation:
    run = batch_run(plan, "nightly", speed=speed, tier_label=tier_label)
    prom = factory(batch_history(run, NOW - 6 * 3600, NOW, step=60))
    with HttpPrometheusSource(SourceSettings(url=prom.url, timeout=30)) as source:
        observations = PrometheusObserver(source, long_window="1h").collect(plan, NOW, "5m")
    return evaluate(EvaluationInputs(plan, observations, NOW, held_since=NOW - 3600))


@pytest.mark.parametrize(
    ("runs_on", "speed", "tier_label", "expected"),
    [
        pytest.param("batch-api", 1.0, "", set(), id="a run on pace in its own pool raises nothing"),
        pytest.param("batch-api", 0.5, "", {DEADLINE}, id="a run at half the sized speed will miss its deadline"),
        pytest.param("batch-api", 1.0, "copilot", {ON_TIER},
                     id="a job whose engines sit in the online tier is batch traffic on that tier"),
        pytest.param("copilot", 1.0, "copilot", set(),
                     id="a job the plan runs on the online tier, inside its window, is not flagged"),
    ],
)  # fmt: skip
def test_batch_triggers(
    backfilled_prometheus: BackfillFactory, runs_on: str, speed: float, tier_label: str, expected: set[str]
) -> None:
    ev = _judge(backfilled_prometheus, _plan(runs_on), speed, tier_label)
    assert {t.trigger for t in ev.triggers} & {DEADLINE, ON_TIER} == expected


def test_progress_is_read_from_the_jobs_own_series(backfilled_prometheus: BackfillFactory) -> None:
    plan = _plan()
    run = batch_run(plan, "nightly", speed=0.5)
    ev = _judge(backfilled_prometheus, plan, 0.5)
    fleet = next(s for s in ev.sections if s.tier == FLEET).observation
    done = fleet.extra[batch_key("nightly", "done")]
    expected = run.items_done(NOW) * 2100
    assert done.value == pytest.approx(expected, rel=0.02)
    (record,) = [t for t in ev.triggers if t.trigger == DEADLINE]
    assert "batch job nightly will miss its deadline by" in record.evidence.summary
    assert 'batch_job="nightly"' in record.evidence.queries[0]


def test_check_shows_each_runs_progress(backfilled_prometheus: BackfillFactory, tmp_path: Path) -> None:
    plan = _plan()
    path = tmp_path / "plan.yaml"
    path.write_text(COPILOT.read_text() + JOB.format(runs_on="batch-api"))
    prom = backfilled_prometheus(batch_history(batch_run(plan, "nightly", speed=0.5, tier_label="copilot"),
                                               NOW - 6 * 3600, NOW, step=60))  # fmt: skip
    argv = ["check", str(path), "--prometheus", prom.url, "--at", str(NOW), "--window", "5m", "--long-window", "1h"]
    result = CliRunner().invoke(build_app(), argv, env={"COLUMNS": "300"})
    # The tokens done follow the sized speed (the step physics), so only the share and the run's total are fixed.
    assert "batch job nightly (run from 22:00, deadline 06:00): 29% done (" in result.output
    assert " M of 1,260.0 M tokens) at " in result.output
    assert "(late)" in result.output and "tokens/s on online tier copilot" in result.output
