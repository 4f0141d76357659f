"""One evaluation of the plan against production (pure): drift, triggers, carry-over and advice from typed inputs.

Every entry point composes the same way: gather an `EvaluationInputs` (I/O at the edge: Prometheus, the
forecaster, the state store, a replay's own physics), call `evaluate` (pure), publish the `Evaluation`.
`check` and `report` run it once with no previous state; `serve` and a replay carry the state of one call into
the next (`Evaluation.open_triggers`, `Evaluation.advice_states`). Time is an input, so a run replays exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from monitor.advice import AdviceSettings, AdviceState, DemandOutlook, Recommendation, advise_fleet
from monitor.drift import DriftRow, Status, fleet_drift, tier_drift, worst_status
from monitor.observe.model import Measurement, TierObservation
from monitor.plan.hours import in_business_hours
from monitor.plan.model import FLEET, BusinessHours, Plan
from monitor.sizing.plan_sizing import PlanSizing, size_plan
from monitor.triggers import (
    EvalResult,
    Severity,
    TierInputs,
    TriggerInputs,
    TriggerRecord,
    TriggerState,
    evaluate_triggers,
    reconcile,
)

__all__ = ["Evaluation", "EvaluationInputs", "TierEvaluation", "TriggerKey", "evaluate", "ramp_lead_seconds"]

TriggerKey = tuple[str, str]  # (trigger id, tier)


@dataclass(frozen=True)
class TierEvaluation:
    tier: str
    observation: TierObservation
    drift: tuple[DriftRow, ...]
    recommendation: Recommendation | None


@dataclass(frozen=True)
class EvaluationInputs:
    """Everything one evaluation reads. Only the plan, the observations and `now` are required.

    - `observations`: one per tier of the plan (and `FLEET` for the fleet view), as an observer or a replay
      computed them; a tier missing here gets no drift, trigger or advice.
    - `outlooks`: each tier's demand forecast (mean and 80% upper bound); a tier without one gets reactive
      advice only (no schedule, no ramp-lead trigger).
    - `previous_triggers`, `advice_states`: what the previous call left (`Evaluation.open_triggers`,
      `Evaluation.advice_states`); empty for a one-shot run.
    - `held_since`: for a one-shot run without previous triggers, when a condition judged over the
      observation window is taken to have started; None = `now`.
    - `held_before`: per (trigger, tier) with no previous record, since when the history Prometheus holds shows
      the condition held without a break (`monitor.hold_history`); it wins over `held_since`, so a condition
      the history already shows is active at once, in `check` and `serve` alike.
    - `sizing`: the plan's sizing, computed from the plan when omitted (pass it to save the work per call).
    """

    plan: Plan
    observations: Mapping[str, TierObservation]
    now: float
    outlooks: Mapping[str, DemandOutlook] = field(default_factory=dict)
    previous_triggers: Mapping[TriggerKey, TriggerRecord] = field(default_factory=dict)
    advice_states: Mapping[str, AdviceState] = field(default_factory=dict)
    evals: tuple[EvalResult, ...] = ()
    settings: AdviceSettings = field(default_factory=AdviceSettings)
    held_since: float | None = None
    held_before: Mapping[TriggerKey, float] = field(default_factory=dict)
    sizing: PlanSizing | None = None


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
    # Of `triggers`: those held before whose inputs are unknown now, kept unchanged (not evidence they stopped).
    carried: tuple[TriggerRecord, ...] = ()
    resolved: tuple[TriggerKey, ...] = ()  # held before, stopped by the data (or their tier left the plan)
    outlooks: Mapping[str, DemandOutlook] = field(default_factory=dict)  # the forecasts the advice planned on

    @property
    def current_triggers(self) -> tuple[TriggerRecord, ...]:
        """The triggers whose condition holds now, by the data (`triggers` less `carried`)."""
        carried = {r.key for r in self.carried}
        return tuple(r for r in self.triggers if r.key not in carried)

    @property
    def open_triggers(self) -> dict[TriggerKey, TriggerRecord]:
        """The `previous_triggers` of the next call."""
        return {r.key: r for r in self.triggers}

    @property
    def advice_states(self) -> dict[str, AdviceState]:
        """The `advice_states` of the next call."""
        return {t.tier: t.recommendation.state for t in self.tiers if t.recommendation}

    @property
    def reactive_tiers(self) -> tuple[str, ...]:
        """Tiers advised without a demand forecast: their advice reacts to demand now, with no schedule."""
        return tuple(t.tier for t in self.tiers if t.recommendation and t.tier not in self.outlooks)

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


def evaluate(inputs: EvaluationInputs) -> Evaluation:
    """Drift per assumption, advice per tier (within the fleet's GPU budget), the triggers that hold now, and
    the previous ones carried over (inputs unknown) or resolved (the data says they stopped)."""
    plan, now, outlooks = inputs.plan, inputs.now, inputs.outlooks
    sizing = inputs.sizing if inputs.sizing is not None else size_plan(plan)
    hours = plan.workload.business_hours
    flags = {name: _business_flags(o.timestamps, hours) for name, o in outlooks.items()}
    fleet_obs = inputs.observations.get(FLEET)
    observations = {name: obs for name, obs in inputs.observations.items() if name != FLEET}
    advice = advise_fleet(plan, observations, outlooks, inputs.advice_states, now, flags, inputs.settings)
    by_tier = {r.tier: r for r in advice.recommendations}
    drift = {t.tier.name: tuple(tier_drift(plan, t, observations[t.tier.name]))
             for t in (s.sizing for s in sizing.tiers) if t.tier.name in observations}  # fmt: skip
    tier_inputs = {name: _tier_inputs(observations[name], rows, outlooks.get(name), by_tier.get(name))
                   for name, rows in drift.items()}  # fmt: skip
    fleet = None
    if fleet_obs is not None:
        fleet = TierEvaluation(FLEET, fleet_obs, tuple(fleet_drift(plan, fleet_obs)), None)
        tier_inputs[FLEET] = TierInputs(fleet_obs, fleet.drift)
    business_now = in_business_hours(now, hours)
    trigger_inputs = TriggerInputs(plan, sizing, tier_inputs, inputs.evals, now, business_now)
    previous = inputs.previous_triggers
    current = evaluate_triggers(trigger_inputs, previous, held_since=inputs.held_since, held_before=inputs.held_before)
    settled = reconcile(previous, current, trigger_inputs)
    tiers = tuple(TierEvaluation(n, observations[n], rows, by_tier.get(n)) for n, rows in drift.items())
    return Evaluation(plan, sizing, now, business_now, tiers, settled.holding, advice.warnings, fleet,
                      settled.carried, settled.resolved, dict(outlooks))  # fmt: skip


def _tier_inputs(
    obs: TierObservation, rows: tuple[DriftRow, ...], outlook: DemandOutlook | None, rec: Recommendation | None
) -> TierInputs:
    judged = outlook is not None and rec is not None and bool(rec.capacity_rps_now)
    return TierInputs(obs, rows, ramp_lead_seconds(outlook, rec), ramp_judged=judged)


@lru_cache(maxsize=64)
def _business_flags(timestamps: tuple[float, ...], hours: BusinessHours) -> tuple[bool, ...]:
    """Each outlook point inside business hours; an outlook is read once per evaluation until its refit."""
    return tuple(in_business_hours(t, hours) for t in timestamps)


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
