"""The API's request bodies and its responses (OpenAPI): the evaluation's parts are `monitor.shapes`, the
models `planwatch check` writes too; what only the service has (the source, episodes, acknowledgements,
readiness) is here. The views build these instances and cache them serialised, so the docs are the bodies.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from monitor import shapes
from monitor.shapes import Shape as _Shape

__all__ = [
    "AckRequest",
    "AckResponse",
    "Acknowledgement",
    "DriftResponse",
    "EvalResponse",
    "EvalsResponse",
    "EvaluationResponse",
    "ForecastResponse",
    "ObservationsResponse",
    "Problem",
    "ReadinessResponse",
    "RecommendationsResponse",
    "ScheduleResponse",
    "ScheduleStep",
    "Source",
    "TriggerEntry",
    "TriggersResponse",
]


class Problem(_Shape):
    detail: Any = Field(description="What is wrong; for validation errors, one entry per field with its loc.")
    message: str | None = Field(default=None, description="The same, as one sentence per field.")


class AckRequest(_Shape):
    tier: str = Field(
        min_length=1,
        max_length=63,
        description="The tier the trigger holds on, or `fleet` for the fleet view.",
        examples=["standard"],
    )
    by: str = Field(min_length=1, max_length=200, description="Who acknowledges.", examples=["oncall@example.com"])
    comment: str = Field(default="", max_length=2000, examples=["prompt growth is the new RAG feature; sizing"])


class AckResponse(_Shape):
    trigger: str
    tier: str
    by: str
    comment: str
    at: float
    episode_id: int


class EvalResponse(_Shape):
    id: int
    eval: dict[str, Any]
    regression: float
    failed: bool


class EvalsResponse(_Shape):
    evals: list[dict[str, Any]]


class Source(_Shape):
    url: str
    reachable: bool | None
    reason: str | None
    checked_at: float | None
    newest_sample_age_seconds: float | None


class Acknowledgement(_Shape):
    by: str
    comment: str
    at: float


class TriggerEntry(shapes.Trigger):
    """A trigger as /v1/triggers lists it: the evaluation's trigger, then its episode in the service's state."""

    episode_id: int | None
    resolved_at: float | None = Field(description="null while the trigger holds.")
    held_over_unknown: bool = Field(description="Its inputs are unknown now: carried over, not resolved.")
    acknowledgements: list[Acknowledgement]


class _Header(_Shape):
    plan: str
    evaluated_at: float | None


class ObservationsResponse(_Header):
    source: Source
    tiers: list[shapes.TierObservations]


class DriftResponse(_Header):
    status: shapes.Status
    tiers: list[shapes.TierDrift]


class TriggersResponse(_Header):
    state: Literal["open", "active", "pending", "all"]
    triggers: list[TriggerEntry]


class RecommendationsResponse(_Header):
    stale: bool
    in_business_hours: bool
    recommendations: list[shapes.Recommendation]
    warnings: list[str]


class _TierKey(_Shape):
    tier: str


class ScheduleStep(shapes.ScaleStep, _TierKey):
    """A scale-up step with its tier, the tier first (pydantic orders the bases' fields from the last base)."""


class ScheduleResponse(_Header):
    steps: list[ScheduleStep]


class ForecastResponse(_Shape):
    plan: str
    refit_at: float | None
    tiers: list[shapes.TierForecast]
    errors: dict[str, str]


class EvaluationResponse(shapes.Evaluation):
    """The evaluation as `planwatch check --format json` has it, with the Prometheus it was read from."""

    source: Source


class ReadinessResponse(_Shape):
    status: Literal["ready", "starting", "degraded"]
    reasons: list[str]
    prometheus: Source
    last_outcome: Literal["ok", "unreachable", "error"] | None
    last_evaluation_at: float | None
    last_successful_evaluation_at: float | None
    data_age_seconds: float | None
    data_age_limit_seconds: float
    forecast_refit_at: float | None
    forecast_errors: dict[str, str]
