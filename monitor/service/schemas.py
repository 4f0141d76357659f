"""The API's request bodies and the documented shapes of its responses (OpenAPI).

Response bodies are rendered by `monitor.export` and cached as bytes, so these models are documentation
and a contract: the tests validate real bodies against them with unknown keys forbidden, so the docs
cannot drift from what the service sends.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AckRequest",
    "AckResponse",
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
    "TriggersResponse",
]


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid")


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


class Bound(_Shape):
    side: Literal["at_most", "above"] = Field(
        description="`at_most`: the quantile's rank is in the histogram's first bucket, so the truth is at most "
        "`value`; `above`: it is in the +Inf bucket, so the truth is above `value`, the top finite bound."
    )
    value: float = Field(description="The bucket bound, in the histogram's unit.", examples=[2560.0])


_BOUND = ("null for a measurement (a rank inside a bucket bounded on both sides); otherwise the quantile is only "
          "known to be at most or above a bucket bound, and this says which.")  # fmt: skip


class Measurement(_Shape):
    value: float | None = Field(
        description="null when unknown: never 0 for missing data. Where `bound` is set, what histogram_quantile "
        "answers (the attached query reproduces it), not a measurement."
    )
    window: str
    samples: int
    query: str
    reason: str | None
    bound: Bound | None = Field(description=_BOUND)


class Source(_Shape):
    url: str
    reachable: bool | None
    reason: str | None
    checked_at: float | None
    newest_sample_age_seconds: float | None


class DriftRow(_Shape):
    assumption: str
    plan: float | None
    observed: float | None = Field(description="Where `bound` is set, read the bound, not this number.")
    bound: Bound | None = Field(description=f"{_BOUND} The ratio is then a bound on the same side.")
    ratio: float | None
    status: Literal["ok", "warn", "breach", "unknown"]
    unit: str
    harmful: Literal["higher", "lower"]
    window: str
    samples: int
    query: str
    reason: str | None
    note: str


class ScaleStep(_Shape):
    replicas: int
    by: float = Field(description="Unix seconds: start scaling by then (needed_at - cold start - margin).")
    needed_at: float
    demand_rps: float
    cold_start_seconds: float
    margin_seconds: float


class Recommendation(_Shape):
    tier: str
    current_replicas: float | None
    recommended_replicas: int
    action: Literal["scale-up", "scale-down", "hold"]
    reason: str
    stale: bool = Field(description="True when holding on unknown data (Prometheus away, series missing).")
    confidence: str
    capacity_source: str
    calibration: float
    requests_per_second_per_replica: float
    demand_rps: float | None
    needed_now: int | None
    needed_at_forecast_peak: int | None
    floor: int
    sized_for: Literal["slo", "throughput"] | None = Field(
        description="The bound that sized the tier now: the SLO, or throughput outside the plan's availability "
        "window (slo.availability_window: business_hours, outside business hours); null when holding on "
        "unknown data."
    )
    cost_per_hour_usd_now: float | None
    cost_per_hour_usd_recommended: float
    cost_per_request_usd_now: float | None
    cost_per_request_usd_recommended: float | None
    schedule: list[ScaleStep]
    explanation: list[str]
    warnings: list[str]


class Evidence(_Shape):
    summary: str
    observed: dict[str, float | None] = {}
    plan: dict[str, float | None] = {}
    queries: list[str] = []


class Acknowledgement(_Shape):
    by: str
    comment: str
    at: float


class Trigger(_Shape):
    id: str
    tier: str
    title: str | None = None
    severity: Literal["info", "warning", "critical"]
    state: Literal["pending", "active"]
    first_seen: float
    last_seen: float
    invalidates: str | None = None
    mitigation: str | None = None
    revisit_when: str | None = None
    window: str | None = None
    hold_seconds: float | None = None
    evidence: Evidence
    episode_id: int | None
    resolved_at: float | None = Field(description="null while the trigger holds.")
    held_over_unknown: bool = Field(description="Its inputs are unknown now: carried over, not resolved.")
    acknowledgements: list[Acknowledgement]


class _Header(_Shape):
    plan: str
    evaluated_at: float | None


class TierObservations(_Shape):
    name: str
    window: str
    observations: dict[str, Measurement]


class ObservationsResponse(_Header):
    source: Source
    tiers: list[TierObservations]


class TierDrift(_Shape):
    name: str
    window: str
    drift: list[DriftRow]


class DriftResponse(_Header):
    status: Literal["ok", "warn", "breach", "unknown"]
    tiers: list[TierDrift]


class TriggersResponse(_Header):
    state: Literal["open", "active", "pending", "all"]
    triggers: list[Trigger]


class RecommendationsResponse(_Header):
    stale: bool
    in_business_hours: bool
    recommendations: list[Recommendation]
    warnings: list[str]


class ScheduleStep(ScaleStep):
    tier: str


class ScheduleResponse(_Header):
    steps: list[ScheduleStep]


class NextPeak(_Shape):
    at: float | None
    requests_per_second: float | None
    upper_requests_per_second: float | None


class TierForecast(_Shape):
    name: str
    model: str
    reason: str
    fitted_at: float
    step_seconds: float
    history_points: int
    backtest_mase: float | None
    next_peak: NextPeak
    interval: str
    timestamps: list[float]
    mean: list[float]
    lower: list[float]
    upper: list[float]


class ForecastResponse(_Shape):
    plan: str
    refit_at: float | None
    tiers: list[TierForecast]
    errors: dict[str, str]


class EvaluationTier(_Shape):
    name: str
    window: str
    drift: list[DriftRow]
    observations: dict[str, Measurement]
    recommendation: Recommendation | None


class EvaluationResponse(_Shape):
    plan: str
    evaluated_at: float
    in_business_hours: bool
    status: str
    fleet: EvaluationTier | None = Field(description="The plan's workload as written, all tiers together.")
    tiers: list[EvaluationTier]
    triggers: list[dict[str, Any]]
    warnings: list[str]
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
