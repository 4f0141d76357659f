"""Evaluations as plain data with stable keys: the JSON of `planwatch check` and of the HTTP API alike."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from monitor.advice import Recommendation, ScaleStep
from monitor.drift import DriftRow
from monitor.evaluation import Evaluation, TierEvaluation
from monitor.histogram import QuantileBound
from monitor.observe.model import Measurement
from monitor.triggers import TriggerRecord, trigger_def

if TYPE_CHECKING:  # the forecasting stack takes a second to import; rendering a forecast needs none of it
    from monitor.forecasts import TierForecast

__all__ = [
    "bound_to_dict",
    "drift_row_to_dict",
    "evaluation_to_dict",
    "forecast_to_dict",
    "measurement_to_dict",
    "recommendation_to_dict",
    "schedule_step_to_dict",
    "tier_to_dict",
    "trigger_to_dict",
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


def evaluation_to_dict(ev: Evaluation) -> dict[str, Any]:
    return {
        "plan": ev.plan.name,
        "evaluated_at": ev.evaluated_at,
        "in_business_hours": ev.in_business_hours,
        "status": ev.worst_drift.value,
        "fleet": tier_to_dict(ev.fleet) if ev.fleet else None,
        "tiers": [tier_to_dict(t) for t in ev.tiers],
        "triggers": [trigger_to_dict(t) for t in ev.triggers],
        "warnings": list(ev.warnings),
    }


# A tier's parts, each written once: the evaluation carries them all; /v1/observations and /v1/drift one each.
_TIER_PARTS: dict[str, Callable[[TierEvaluation], Any]] = {
    "drift": lambda t: [drift_row_to_dict(r) for r in t.drift],
    "observations": lambda t: {k: measurement_to_dict(m) for k, m in t.observation.measurements().items()},
    "recommendation": lambda t: recommendation_to_dict(t.recommendation) if t.recommendation else None,
}
TierPart = Literal["drift", "observations", "recommendation"]


def tier_to_dict(
    t: TierEvaluation, parts: Sequence[TierPart] = ("drift", "observations", "recommendation")
) -> dict[str, Any]:
    """A tier's section: its name and window, then the parts asked for (all of them in the evaluation)."""
    return {"name": t.tier, "window": t.observation.window, **{part: _TIER_PARTS[part](t) for part in parts}}


def measurement_to_dict(m: Measurement) -> dict[str, Any]:
    return {"value": m.value, "window": m.window, "samples": m.samples, "query": m.query, "reason": m.reason or None,
            "bound": bound_to_dict(m.bound)}  # fmt: skip


def bound_to_dict(b: QuantileBound | None) -> dict[str, Any] | None:
    """A quantile read from an edge bucket, as a field of its own: the side ('at_most' the first bucket's bound,
    'above' the top finite bound) and the bound. null for a measurement (a rank inside a bounded bucket)."""
    return None if b is None else {"side": b.side.replace(" ", "_"), "value": b.bound}


def drift_row_to_dict(r: DriftRow) -> dict[str, Any]:
    return {
        "assumption": r.assumption,
        "plan": r.plan,
        "observed": r.observed.value,
        "bound": bound_to_dict(r.observed.bound),
        "ratio": r.ratio,
        "status": r.status.value,
        "unit": r.unit,
        "harmful": r.harmful,
        "window": r.observed.window,
        "samples": r.observed.samples,
        "query": r.observed.query,
        "reason": r.reason or None,
        "note": r.note,
    }


def trigger_to_dict(t: TriggerRecord) -> dict[str, Any]:
    d = trigger_def(t.trigger)
    return {
        "id": t.trigger,
        "tier": t.tier,
        "title": d.title,
        "severity": t.severity.value,
        "state": t.state.value,
        "first_seen": t.first_seen,
        "last_seen": t.last_seen,
        "invalidates": d.invalidates,
        "mitigation": d.mitigation,
        "revisit_when": d.revisit_when,
        "window": d.window,
        "hold_seconds": d.hold_seconds,
        "evidence": {
            "summary": t.evidence.summary,
            "observed": dict(t.evidence.observed),
            "plan": dict(t.evidence.plan),
            "queries": list(t.evidence.queries),
        },
    }


def recommendation_to_dict(r: Recommendation) -> dict[str, Any]:
    return {
        "tier": r.tier,
        "current_replicas": r.current.value,
        "recommended_replicas": r.recommended,
        "action": r.action.value,
        "reason": r.reason,
        "stale": r.stale,
        "confidence": r.confidence,
        "capacity_source": r.capacity_source,
        "calibration": r.calibration,
        "requests_per_second_per_replica": r.requests_per_second_per_replica,
        "demand_rps": r.demand_rps,
        "needed_now": r.needed_now,
        "needed_at_forecast_peak": r.needed_at_forecast_peak,
        "floor": r.floor,
        "sized_for": r.sized_for,
        "cost_per_hour_usd_now": r.cost_per_hour_usd_now,
        "cost_per_hour_usd_recommended": r.cost_per_hour_usd_recommended,
        "cost_per_request_usd_now": r.cost_per_request_usd(r.current.value),
        "cost_per_request_usd_recommended": r.cost_per_request_usd(r.recommended),
        "schedule": [schedule_step_to_dict(s) for s in r.schedule],
        "explanation": list(r.explanation),
        "warnings": list(r.warnings),
    }


def schedule_step_to_dict(s: ScaleStep) -> dict[str, Any]:
    return {
        "replicas": s.replicas,
        "by": s.by,
        "needed_at": s.needed_at,
        "demand_rps": s.demand_rps,
        "cold_start_seconds": s.cold_start_seconds,
        "margin_seconds": s.margin_seconds,
    }


def forecast_to_dict(f: TierForecast) -> dict[str, Any]:
    """A tier's forecast: the API's /v1/forecast entry and the body of `planwatch forecast --format json`."""
    o = f.outlook
    return {
        "name": f.tier,
        "model": f.model,
        "reason": f.reason,
        "fitted_at": f.fitted_at,
        "step_seconds": f.step_seconds,
        "history_points": f.history_points,
        "backtest_mase": f.backtest_mase,
        "next_peak": {
            "at": f.next_peak_at,
            "requests_per_second": f.next_peak_rps,
            "upper_requests_per_second": f.next_peak_upper_rps,
        },
        "interval": "80%",
        "timestamps": list(o.timestamps),
        "mean": list(o.mean),
        "lower": list(f.lower),
        "upper": list(o.upper),
    }
