"""The JSON bodies of the API as their models (`monitor.service.schemas`, built on `monitor.shapes` by
`monitor.export`), so `planwatch check --format json` and `GET /v1/evaluation` say the same thing in the same
words, and the OpenAPI documents exactly what is sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from monitor import shapes
from monitor.export import (
    evaluation_shape,
    forecast_shape,
    recommendation_shape,
    schedule_step_shape,
    tier_drift,
    tier_observations,
    trigger_shape,
    without_nan,
)
from monitor.observe.observer import SourceHealth
from monitor.service import schemas
from monitor.service.results import Outcome, Snapshot
from monitor.service.state import Acknowledgement, Episode
from monitor.sizing.export import sizing_to_dict
from monitor.triggers import TriggerRecord, TriggerState

__all__ = [
    "STATIC_BODIES",
    "drift_body",
    "encode",
    "evaluation_body",
    "forecast_body",
    "history_body",
    "observations_body",
    "readiness",
    "recommendations_body",
    "render_bodies",
    "schedule_body",
    "source_shape",
    "triggers_body",
]

STATIC_BODIES = ("plan", "sizing")


def encode(data: shapes.Shape | dict[str, Any]) -> bytes:
    """Compact JSON (the C encoder; a third of the time and half the bytes of the CLI's indented form);
    NaN and infinities become null, as in every planwatch JSON."""
    plain = shapes.dump(data) if isinstance(data, shapes.Shape) else data
    return json.dumps(without_nan(plain), allow_nan=False, separators=(",", ":")).encode()


def render_bodies(s: Snapshot) -> dict[str, bytes]:
    """Every read route's default body; the plan and sizing never change, so they are rendered once."""
    bodies = {k: s.bodies[k] for k in STATIC_BODIES if k in s.bodies}
    bodies.setdefault("plan", encode(s.plan.model_dump(mode="json")))
    bodies.setdefault("sizing", encode(sizing_to_dict(s.sizing)))
    bodies["forecast"] = encode(forecast_body(s))
    if s.evaluation is not None:
        bodies["evaluation"] = encode(evaluation_body(s))
        bodies["observations"] = encode(observations_body(s))
        bodies["drift"] = encode(drift_body(s))
        bodies["triggers"] = encode(triggers_body(s, "open"))
        bodies["recommendations"] = encode(recommendations_body(s))
        bodies["schedule"] = encode(schedule_body(s))
    return bodies


def _header(s: Snapshot) -> dict[str, Any]:
    ev = s.evaluation
    return {"plan": s.plan.name, "evaluated_at": ev.evaluated_at if ev else None}


def evaluation_body(s: Snapshot) -> schemas.EvaluationResponse:
    assert s.evaluation is not None
    ev = evaluation_shape(s.evaluation)
    return schemas.EvaluationResponse(**dict(ev), source=source_shape(s.source))


def observations_body(s: Snapshot, tier: str | None = None) -> schemas.ObservationsResponse:
    assert s.evaluation is not None
    tiers = [tier_observations(t) for t in s.evaluation.sections if tier in (None, t.tier)]
    return schemas.ObservationsResponse(**_header(s), source=source_shape(s.source), tiers=tiers)


def drift_body(s: Snapshot, tier: str | None = None) -> schemas.DriftResponse:
    assert s.evaluation is not None
    tiers = [tier_drift(t) for t in s.evaluation.sections if tier in (None, t.tier)]
    return schemas.DriftResponse(**_header(s), status=s.evaluation.worst_drift.value, tiers=tiers)


def recommendations_body(s: Snapshot, tier: str | None = None) -> schemas.RecommendationsResponse:
    assert s.evaluation is not None
    recs = [t.recommendation for t in s.evaluation.tiers if t.recommendation and tier in (None, t.tier)]
    return schemas.RecommendationsResponse(
        **_header(s),
        stale=any(r.stale for r in recs),
        in_business_hours=s.evaluation.in_business_hours,
        recommendations=[recommendation_shape(r) for r in recs],
        warnings=list(s.evaluation.warnings),
    )


def schedule_body(s: Snapshot, tier: str | None = None) -> schemas.ScheduleResponse:
    """Every tier's upcoming scale-ups in the order they must start."""
    assert s.evaluation is not None
    steps = [
        schemas.ScheduleStep(tier=t.tier, **dict(schedule_step_shape(step)))
        for t in s.evaluation.tiers if t.recommendation and tier in (None, t.tier)
        for step in t.recommendation.schedule
    ]  # fmt: skip
    return schemas.ScheduleResponse(**_header(s), steps=sorted(steps, key=lambda d: (d.by, d.tier)))


def triggers_body(s: Snapshot, state: str, tier: str | None = None) -> schemas.TriggersResponse:
    """Open triggers: `open` is every one that holds (pending and active); `active` and `pending` filter."""
    wanted = {"open": set(TriggerState), "active": {TriggerState.ACTIVE}, "pending": {TriggerState.PENDING}}[state]
    chosen = [t for t in s.triggers if t.record.state in wanted and tier in (None, t.record.tier)]
    entries = [_trigger(t.record, t.episode_id, None, t.held_over_unknown, t.acknowledgements) for t in chosen]
    return schemas.TriggersResponse(**_header(s), state=state, triggers=entries)


def history_body(
    s: Snapshot, episodes: Iterable[Episode], acks: Mapping[int, list[Acknowledgement]]
) -> schemas.TriggersResponse:
    """Every stored episode, newest first, open or resolved."""
    held = {t.episode_id for t in s.triggers if t.held_over_unknown}
    entries = [_trigger(e.record, e.id, e.resolved_at, e.id in held, acks.get(e.id, ())) for e in episodes]
    return schemas.TriggersResponse(**_header(s), state="all", triggers=entries)


def _trigger(
    record: TriggerRecord, episode_id: int | None, resolved_at: float | None, held: bool,
    acks: Iterable[Acknowledgement],
) -> schemas.TriggerEntry:  # fmt: skip
    return schemas.TriggerEntry(
        **dict(trigger_shape(record)),
        episode_id=episode_id,
        resolved_at=resolved_at,
        held_over_unknown=held,
        acknowledgements=[schemas.Acknowledgement(by=a.by, comment=a.comment, at=a.at) for a in acks],
    )


def forecast_body(s: Snapshot, tier: str | None = None) -> schemas.ForecastResponse:
    tiers = [forecast_shape(f) for name, f in sorted(s.forecasts.items()) if tier in (None, name)]
    errors = {name: why for name, why in s.forecast_errors.items() if tier in (None, name)}
    return schemas.ForecastResponse(plan=s.plan.name, refit_at=s.forecast_refit_at, tiers=tiers, errors=errors)


def source_shape(source: SourceHealth) -> schemas.Source:
    return schemas.Source(
        url=source.url,
        reachable=source.reachable,
        reason=source.reason or None,
        checked_at=source.checked_at,
        newest_sample_age_seconds=source.newest_sample_age_seconds,
    )


def readiness(s: Snapshot, now: float, data_age_limit_seconds: float) -> tuple[bool, schemas.ReadinessResponse]:
    """Ready after the first evaluation with data; degraded while Prometheus is away, the observer fails
    or the data is older than the limit. Every reason is listed."""
    reasons = []
    if s.last_success_at is None:
        reasons.append("no evaluation with data yet")
    if s.source.reachable is False:
        reasons.append(f"Prometheus unreachable at {s.source.url}: {s.source.reason}")
    if s.outcome is Outcome.ERROR:
        reasons.append(f"the last evaluation failed: {s.last_error}")
    age = None if s.last_success_at is None else max(0.0, now - s.last_success_at)
    if age is not None and age > data_age_limit_seconds:
        reasons.append(f"the data is {age:.0f} s old (limit {data_age_limit_seconds:.0f} s)")
    status = "ready" if not reasons else ("starting" if s.last_attempt_at is None else "degraded")
    return not reasons, schemas.ReadinessResponse(
        status=status,
        reasons=reasons,
        prometheus=source_shape(s.source),
        last_outcome=s.outcome.value if s.outcome else None,
        last_evaluation_at=s.last_attempt_at,
        last_successful_evaluation_at=s.last_success_at,
        data_age_seconds=age,
        data_age_limit_seconds=data_age_limit_seconds,
        forecast_refit_at=s.forecast_refit_at,
        forecast_errors=dict(s.forecast_errors),
    )
