"""Carry-over per trigger: one that held before resolves only when the inputs it declares are known and no longer
meet its condition; while any of them is unknown it is carried over unchanged (missing data is not evidence
that it stopped). Each row makes exactly one trigger's declared inputs unknown on production that matches the
plan, through the one evaluation every entry point calls."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from monitor.advice import DemandOutlook
from monitor.evaluation import Evaluation, EvaluationInputs, evaluate
from monitor.observe.model import Measurement
from monitor.plan.model import FLEET
from monitor.sizing.plan_sizing import size_plan
from monitor.triggers import CATALOG, EvalResult, Evidence, Severity, TriggerRecord, TriggerState, trigger_def
from tests.builders import baseline_fleet_observation, copilot_plan
from tests.service.fakes import NOW, copilot_observation

PLAN = copilot_plan()
SIZING = size_plan(PLAN)
UNKNOWN = Measurement.unknown("no series")
# A forecast that stays well within what three replicas serve: the ramp is judged, and none comes.
FLAT = DemandOutlook(tuple(NOW + 300 * i for i in range(12)), (5.0,) * 12, (6.0,) * 12, "test")
PASSING_EVAL = EvalResult(model="llama-70b", precision="fp8", task_set="support", score=0.9, baseline_score=0.9,
                          threshold=0.02)  # fmt: skip


def _bad(slo: str) -> dict[str, Measurement]:
    """The copilot's SLO shares with every window of one SLO unknown."""
    shares = dict(copilot_observation().bad_fraction)
    return {k: (UNKNOWN if k.startswith(f"{slo}:") else v) for k, v in shares.items()}


# trigger id -> (tier it is held on, the observation change that makes its inputs unknown, drop the forecast)
UNKNOWING: dict[str, tuple[str, dict[str, Any], bool]] = {
    "prompt-p95-above-plan": ("copilot", {"prompt_p95": UNKNOWN}, False),
    "prefix-hit-below-plan": ("copilot", {"prefix_hit_rate": UNKNOWN}, False),
    "traffic-above-peak": ("copilot", {"peak_rate": UNKNOWN}, False),
    "burstier-than-planned": (FLEET, {"burst_peak_rate": UNKNOWN}, False),
    "throughput-below-model": ("copilot", {"output_tokens_per_second_per_replica": UNKNOWN}, False),
    "kv-pressure": ("copilot", {"preemption_rate": UNKNOWN}, False),
    "cold-start-too-slow": ("copilot", {}, True),
    "tool-call-fanout": ("copilot", {"calls_per_request": UNKNOWN}, False),
    "ttft-slo-burn-page": ("copilot", {"bad_fraction": _bad("ttft")}, False),
    "ttft-slo-burn-ticket": ("copilot", {"bad_fraction": _bad("ttft")}, False),
    "tpot-slo-burn-page": ("copilot", {"bad_fraction": _bad("tpot")}, False),
    "tpot-slo-burn-ticket": ("copilot", {"bad_fraction": _bad("tpot")}, False),
    "availability-burn-page": ("copilot", {"bad_fraction": _bad("errors")}, False),
    "availability-burn-ticket": ("copilot", {"bad_fraction": _bad("errors")}, False),
    "volume-below-dedicated-breakeven": ("copilot", {"tokens_rate_long": UNKNOWN}, False),
    "volume-above-dedicated-breakeven": ("copilot", {"tokens_rate_long": UNKNOWN}, False),
    "batch-job-will-miss-deadline": (FLEET, {"extra": {"batch_job:nightly:done": UNKNOWN}}, False),
    "batch-traffic-on-online-tier": ("copilot", {"extra": {"batch_job:nightly:rate": UNKNOWN}}, False),
}
# What the breakeven and batch triggers read, known: a week at the copilot's average volume on 12 GPUs (above
# the breakeven), and a nightly job's readings (the plan runs no such job, so nothing fires on them).
KNOWN = {"tokens_rate_long": Measurement.of(34_500.0, window="7d"), "gpus_mean_long": Measurement.of(12.0, window="7d")}
JOB = {"batch_job:nightly:done": Measurement.of(1e6), "batch_job:nightly:rate": Measurement.of(0.0)}
# Judged on posted evals only, which are stored: never unknown, so they resolve even with Prometheus away.
JUDGED_ON_EVALS = ("quantization-quality-regression", "fallback-fails-eval")


def _held(trigger: str, tier: str) -> TriggerRecord:
    d = trigger_def(trigger)
    return TriggerRecord(trigger, tier, d.severity, TriggerState.ACTIVE, NOW - 7200, NOW - 60, Evidence("held"))


def _evaluate(previous: TriggerRecord, change: dict[str, Any], drop_forecast: bool) -> Evaluation:
    field = "fleet" if previous.tier == FLEET else "copilot"
    fleet_change = change if field == "fleet" else {}
    copilot = replace(copilot_observation(), **KNOWN, extra={"batch_job:nightly:rate": JOB["batch_job:nightly:rate"]})
    fleet = replace(baseline_fleet_observation(PLAN), extra=JOB)
    observations = {"copilot": replace(copilot, **(change if field == "copilot" else {})),
                    FLEET: replace(fleet, **fleet_change)}  # fmt: skip
    outlooks = {} if drop_forecast else {"copilot": FLAT}
    previous_triggers = {previous.key: previous}
    inputs = EvaluationInputs(PLAN, observations, NOW, outlooks, previous_triggers, evals=(PASSING_EVAL,))
    return evaluate(replace(inputs, sizing=SIZING))


def test_every_trigger_of_the_catalog_has_a_row() -> None:
    assert set(UNKNOWING) | set(JUDGED_ON_EVALS) == {d.id for d in CATALOG}


@pytest.mark.parametrize(
    "trigger",
    [pytest.param(t, id=f"{t} resolves when its inputs are known and its condition stopped") for t in UNKNOWING],
)
def test_a_trigger_whose_inputs_are_known_resolves(trigger: str) -> None:
    tier = UNKNOWING[trigger][0]
    ev = _evaluate(_held(trigger, tier), {}, drop_forecast=False)
    assert ev.resolved == ((trigger, tier),)
    assert ev.triggers == ()


@pytest.mark.parametrize(
    "trigger",
    [
        pytest.param(t, id="cold-start-too-slow is held when its forecast disappears" if t == "cold-start-too-slow"
                     else f"{t} is held while its inputs are unknown")
        for t in UNKNOWING
    ],
)  # fmt: skip
def test_a_trigger_whose_inputs_are_unknown_is_carried_over(trigger: str) -> None:
    tier, change, drop_forecast = UNKNOWING[trigger]
    previous = _held(trigger, tier)
    ev = _evaluate(previous, change, drop_forecast)
    assert ev.carried == (previous,)
    assert ev.triggers == (previous,) and ev.resolved == ()


@pytest.mark.parametrize(
    "trigger",
    [pytest.param(t, id=f"{t} resolves on a passing eval even with Prometheus away") for t in JUDGED_ON_EVALS],
)
def test_a_trigger_judged_on_evals_resolves_on_a_passing_eval(trigger: str) -> None:
    unknown_all = {f: UNKNOWN for f in copilot_observation().measurements() if not f.startswith(("bad_", "peak_to"))}
    ev = _evaluate(_held(trigger, "copilot"), unknown_all, drop_forecast=True)
    assert ev.resolved == ((trigger, "copilot"),)


def test_a_trigger_another_input_of_which_went_unknown_still_resolves() -> None:
    """Only the declared inputs count: a missing prefix-hit series does not hold a prompt-length trigger."""
    ev = _evaluate(_held("prompt-p95-above-plan", "copilot"), {"prefix_hit_rate": UNKNOWN}, drop_forecast=False)
    assert ev.resolved == (("prompt-p95-above-plan", "copilot"),)


def test_severity_is_kept_on_a_carried_trigger() -> None:
    previous = _held("kv-pressure", "copilot")
    ev = _evaluate(previous, {"preemption_rate": UNKNOWN}, drop_forecast=False)
    assert ev.carried[0].severity is Severity.CRITICAL
