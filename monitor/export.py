"""Evaluations and forecasts as their JSON shapes (`monitor.shapes`): what `planwatch check --format json`,
`planwatch forecast --format json` and the HTTP API write, built here once from the core's values."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from monitor import shapes
from monitor.advice import Recommendation, ScaleStep
from monitor.drift import DriftRow
from monitor.evaluation import Evaluation, TierEvaluation
from monitor.histogram import QuantileBound
from monitor.observe.model import Measurement
from monitor.triggers import TriggerDef, TriggerRecord, trigger_def

if TYPE_CHECKING:  # the forecasting stack takes a second to import; rendering a forecast needs none of it
    from monitor.forecasts import TierForecast

__all__ = [
    "bound_shape",
    "drift_row_shape",
    "evaluation_shape",
    "evaluation_tier",
    "forecast_shape",
    "measurement_shape",
    "recommendation_shape",
    "schedule_step_shape",
    "tier_drift",
    "tier_observations",
    "trigger_shape",
    "without_nan",
]


def without_nan(value: Any) -> Any:
    """JSON has no NaN or Infinity: an unknown or unbounded number is written as null, in every planwatch JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: without_nan(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [without_nan(v) for v in value]
    return value


def evaluation_shape(ev: Evaluation) -> shapes.Evaluation:
    return shapes.Evaluation(
        plan=ev.plan.name,
        evaluated_at=ev.evaluated_at,
        in_business_hours=ev.in_business_hours,
        status=ev.worst_drift.value,
        fleet=evaluation_tier(ev.fleet) if ev.fleet else None,
        tiers=[evaluation_tier(t) for t in ev.tiers],
        triggers=[trigger_shape(t) for t in ev.triggers],
        warnings=list(ev.warnings),
    )


# A tier's parts, each built once: the evaluation carries them all; /v1/observations and /v1/drift one each.
def _observations(t: TierEvaluation) -> dict[str, shapes.Measurement]:
    return {k: measurement_shape(m) for k, m in t.observation.measurements().items()}


def _drift(t: TierEvaluation) -> list[shapes.DriftRow]:
    return [drift_row_shape(r) for r in t.drift]


def evaluation_tier(t: TierEvaluation) -> shapes.EvaluationTier:
    """A tier's section of the evaluation: its name and window, drift, observations and recommendation."""
    return shapes.EvaluationTier(
        name=t.tier, window=t.observation.window, drift=_drift(t), observations=_observations(t),
        recommendation=recommendation_shape(t.recommendation) if t.recommendation else None,
    )  # fmt: skip


def tier_observations(t: TierEvaluation) -> shapes.TierObservations:
    return shapes.TierObservations(name=t.tier, window=t.observation.window, observations=_observations(t))


def tier_drift(t: TierEvaluation) -> shapes.TierDrift:
    return shapes.TierDrift(name=t.tier, window=t.observation.window, drift=_drift(t))


def measurement_shape(m: Measurement) -> shapes.Measurement:
    return shapes.Measurement(value=m.value, window=m.window, samples=m.samples, query=m.query,
                              reason=m.reason or None, bound=bound_shape(m.bound))  # fmt: skip


def bound_shape(b: QuantileBound | None) -> shapes.Bound | None:
    """A quantile read from an edge bucket, as a field of its own: the side ('at_most' the first bucket's bound,
    'above' the top finite bound) and the bound. None for a measurement (a rank inside a bounded bucket)."""
    return None if b is None else shapes.Bound(side="at_most" if b.side == "at most" else "above", value=b.bound)


def drift_row_shape(r: DriftRow) -> shapes.DriftRow:
    return shapes.DriftRow(
        assumption=r.assumption,
        plan=r.plan,
        observed=r.observed.value,
        bound=bound_shape(r.observed.bound),
        ratio=r.ratio,
        status=r.status.value,
        unit=r.unit,
        harmful=r.harmful,
        window=r.observed.window,
        samples=r.observed.samples,
        query=r.observed.query,
        reason=r.reason or None,
        note=r.note,
    )


def trigger_shape(t: TriggerRecord) -> shapes.Trigger:
    """A trigger with its catalog entry; a trigger the catalog no longer has (an episode stored by an older
    release) keeps what its record says and nulls for the rest."""
    try:
        d: TriggerDef | None = trigger_def(t.trigger)
    except KeyError:
        d = None
    return shapes.Trigger(
        id=t.trigger,
        tier=t.tier,
        title=d.title if d else None,
        severity=t.severity.value,
        state=t.state.value,
        first_seen=t.first_seen,
        last_seen=t.last_seen,
        invalidates=d.invalidates if d else None,
        mitigation=d.mitigation if d else None,
        revisit_when=d.revisit_when if d else None,
        window=d.window if d else None,
        hold_seconds=d.hold_seconds if d else None,
        evidence=shapes.Evidence(
            summary=t.evidence.summary,
            observed=dict(t.evidence.observed),
            plan=dict(t.evidence.plan),
            queries=list(t.evidence.queries),
        ),
    )


def recommendation_shape(r: Recommendation) -> shapes.Recommendation:
    return shapes.Recommendation(
        tier=r.tier,
        current_replicas=r.current.value,
        recommended_replicas=r.recommended,
        action=r.action.value,
        reason=r.reason,
        stale=r.stale,
        confidence=r.confidence,
        capacity_source=r.capacity_source,
        calibration=r.calibration,
        requests_per_second_per_replica=r.requests_per_second_per_replica,
        demand_rps=r.demand_rps,
        needed_now=r.needed_now,
        needed_at_forecast_peak=r.needed_at_forecast_peak,
        floor=r.floor,
        sized_for=r.sized_for,
        cost_per_hour_usd_now=r.cost_per_hour_usd_now,
        cost_per_hour_usd_recommended=r.cost_per_hour_usd_recommended,
        cost_per_request_usd_now=r.cost_per_request_usd(r.current.value),
        cost_per_request_usd_recommended=r.cost_per_request_usd(r.recommended),
        schedule=[schedule_step_shape(s) for s in r.schedule],
        explanation=list(r.explanation),
        warnings=list(r.warnings),
    )


def schedule_step_shape(s: ScaleStep) -> shapes.ScaleStep:
    return shapes.ScaleStep(
        replicas=s.replicas,
        by=s.by,
        needed_at=s.needed_at,
        demand_rps=s.demand_rps,
        cold_start_seconds=s.cold_start_seconds,
        margin_seconds=s.margin_seconds,
    )


def forecast_shape(f: TierForecast) -> shapes.TierForecast:
    """A tier's forecast: the API's /v1/forecast entry and the body of `planwatch forecast --format json`."""
    o = f.outlook
    return shapes.TierForecast(
        name=f.tier,
        model=f.model,
        reason=f.reason,
        fitted_at=f.fitted_at,
        step_seconds=f.step_seconds,
        history_points=f.history_points,
        backtest_mase=f.backtest_mase,
        next_peak=shapes.NextPeak(
            at=f.next_peak_at,
            requests_per_second=f.next_peak_rps,
            upper_requests_per_second=f.next_peak_upper_rps,
        ),
        interval="80%",
        timestamps=list(o.timestamps),
        mean=list(o.mean),
        lower=list(f.lower),
        upper=list(o.upper),
    )
