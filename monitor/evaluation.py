"""One evaluation of the plan against production (pure): drift, triggers and advice from typed inputs.

The service's evaluation job is: collect observations (I/O), call `evaluate` (pure), publish. Time, the
previous trigger records and the advice state are inputs, so a run can be replayed exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from monitor.advice import AdviceSettings, AdviceState, DemandOutlook, Recommendation, advise_fleet
from monitor.drift import DriftRow, Status, fleet_drift, tier_drift, worst_status
from monitor.observe.model import Measurement, TierObservation
from monitor.plan.hours import in_business_hours
from monitor.plan.model import FLEET, Plan
from monitor.sizing.plan_sizing import PlanSizing
from monitor.triggers import (
    EvalResult,
    Severity,
    TierInputs,
    TriggerInputs,
    TriggerRecord,
    TriggerState,
    evaluate_triggers,
)

__all__ = ["Evaluation", "TierEvaluation", "evaluate", "ramp_lead_seconds"]


@dataclass(frozen=True)
class TierEvaluation:
    tier: str
    observation: TierObservation
    drift: tuple[DriftRow, ...]
    recommendation: Recommendation | None


@dataclass(frozen=True)
class Evaluation:
    plan: Plan
    sizing: PlanSizing
    evaluated_at: float
    in_business_hours: bool
    tiers: tuple[TierEvaluation, ...]
    triggers: tuple[TriggerRecord, ...]
    warnings: tuple[str, ...]
    fleet: TierEvaluation | None = None  # the plan's workload as written, all tiers together

    @property
    def sections(self) -> tuple[TierEvaluation, ...]:
        """The fleet view first (when observed), then each tier."""
        return ((self.fleet,) if self.fleet else ()) + self.tiers

    @property
    def worst_drift(self) -> Status:
        return worst_status([row for t in self.sections for row in t.drift])

    @property
    def critical_active(self) -> bool:
        return any(t.state is TriggerState.ACTIVE and t.severity is Severity.CRITICAL for t in self.triggers)


def evaluate(
    plan: Plan,
    sizing: PlanSizing,
    observations: Mapping[str, TierObservation],
    outlooks: Mapping[str, DemandOutlook],
    evals: tuple[EvalResult, ...],
    previous_triggers: Mapping[tuple[str, str], TriggerRecord],
    advice_states: Mapping[str, AdviceState],
    now: float,
    settings: AdviceSettings = AdviceSettings(),  # noqa: B008 - frozen, never mutated
    held_since: float | None = None,
) -> Evaluation:
    hours = plan.workload.business_hours
    flags = {name: tuple(in_business_hours(t, hours) for t in o.timestamps) for name, o in outlooks.items()}
    fleet_obs = observations.get(FLEET)
    observations = {name: obs for name, obs in observations.items() if name != FLEET}
    advice = advise_fleet(plan, observations, outlooks, advice_states, now, flags, settings)
    by_tier = {r.tier: r for r in advice.recommendations}
    drift = {t.tier.name: tuple(tier_drift(plan, t, observations[t.tier.name]))
             for t in (s.sizing for s in sizing.tiers) if t.tier.name in observations}  # fmt: skip
    tier_inputs = {
        name: TierInputs(observations[name], rows, ramp_lead_seconds(outlooks.get(name), by_tier.get(name)))
        for name, rows in drift.items()
    }
    fleet = None
    if fleet_obs is not None:
        fleet = TierEvaluation(FLEET, fleet_obs, tuple(fleet_drift(plan, fleet_obs)), None)
        tier_inputs[FLEET] = TierInputs(fleet_obs, fleet.drift)
    business_now = in_business_hours(now, hours)
    trigger_inputs = TriggerInputs(plan, sizing, tier_inputs, evals, now, business_now)
    triggers = evaluate_triggers(trigger_inputs, previous_triggers, held_since=held_since)
    tiers = tuple(TierEvaluation(n, observations[n], rows, by_tier.get(n)) for n, rows in drift.items())
    return Evaluation(plan, sizing, now, business_now, tiers, tuple(triggers), advice.warnings, fleet)


def ramp_lead_seconds(outlook: DemandOutlook | None, rec: Recommendation | None) -> Measurement:
    """Time the forecast's upper bound takes to climb from 80% to 100% of what the ready replicas serve: the
    warning reactive autoscaling gets. Judged only on a ramp ahead (an upward crossing of 80%); unknown
    without a forecast, when the ramp is already under way, or when it stays within capacity."""
    if outlook is None or rec is None or not rec.capacity_rps_now:
        return Measurement.unknown("no forecast or no current capacity")
    capacity, points = rec.capacity_rps_now, list(zip(outlook.timestamps, outlook.upper, strict=True))
    if points and points[0][1] >= 0.8 * capacity:
        return Measurement.unknown("the ramp is already under way (demand above 80% of capacity)")
    t80 = next((t for t, u in points if u >= 0.8 * capacity), None)
    t100 = next((t for t, u in points if u >= capacity), None)
    if t80 is None or t100 is None:
        return Measurement.unknown("the forecast stays within current capacity")
    return Measurement.of(t100 - t80, query=f"forecast ({outlook.model})", window="horizon")
