"""The JSON shapes of `planwatch check`, `planwatch forecast` and the HTTP API, as pydantic models: the one
place their keys are named. `monitor.export` builds these from the core's values; the CLI and the service
serialise the instances (`dump`), and the service's OpenAPI documents the same classes (`monitor.service.schemas`
adds what only the service has). Unknown keys are forbidden, so a body that validates has exactly these keys.

Field order is the order of the keys in the JSON. Numbers are written as the core computed them: NaN and
infinities become null (`monitor.export.without_nan`), never 0.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "BacktestScore",
    "Bound",
    "CheckDocument",
    "CheckForecast",
    "DriftRow",
    "Evaluation",
    "EvaluationTier",
    "Evidence",
    "ForecastDocument",
    "Measurement",
    "NextPeak",
    "RampCrossing",
    "Recommendation",
    "ScaleStep",
    "Shape",
    "Status",
    "TierDrift",
    "TierForecast",
    "TierObservations",
    "TierSection",
    "Trigger",
    "dump",
]

Status = Literal["ok", "warn", "breach", "unknown"]


class Shape(BaseModel):
    model_config = ConfigDict(extra="forbid")


def dump(shape: Shape, exclude: set[str] | None = None) -> dict[str, Any]:
    """The instance as JSON-ready data, keys in field order (NaN left for the writer to turn into null)."""
    return shape.model_dump(mode="json", exclude=exclude)


class Bound(Shape):
    side: Literal["at_most", "above"] = Field(
        description="`at_most`: the quantile's rank is in the histogram's first bucket, so the truth is at most "
        "`value`; `above`: it is in the +Inf bucket, so the truth is above `value`, the top finite bound."
    )
    value: float = Field(description="The bucket bound, in the histogram's unit.", examples=[2560.0])


_BOUND = ("null for a measurement (a rank inside a bucket bounded on both sides); otherwise the quantile is only "
          "known to be at most or above a bucket bound, and this says which.")  # fmt: skip


class Measurement(Shape):
    value: float | None = Field(
        description="null when unknown: never 0 for missing data. Where `bound` is set, what histogram_quantile "
        "answers (the attached query reproduces it), not a measurement."
    )
    window: str
    samples: int
    query: str
    reason: str | None
    bound: Bound | None = Field(description=_BOUND)


class DriftRow(Shape):
    assumption: str
    plan: float | None
    observed: float | None = Field(description="Where `bound` is set, read the bound, not this number.")
    bound: Bound | None = Field(description=f"{_BOUND} The ratio is then a bound on the same side.")
    ratio: float | None
    status: Status
    unit: str
    harmful: Literal["higher", "lower"]
    window: str
    samples: int
    query: str
    reason: str | None
    note: str


class ScaleStep(Shape):
    replicas: int
    by: float = Field(description="Unix seconds: start scaling by then (needed_at - cold start - margin).")
    needed_at: float
    demand_rps: float
    cold_start_seconds: float
    margin_seconds: float


class Recommendation(Shape):
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


class Evidence(Shape):
    summary: str
    observed: dict[str, float | None] = {}
    plan: dict[str, float | None] = {}
    queries: list[str] = []


_PAST = "null for an episode stored by a release whose catalog had this trigger."


class Trigger(Shape):
    id: str
    tier: str
    title: str | None = Field(description=_PAST)
    severity: Literal["info", "warning", "critical"]
    state: Literal["pending", "active"]
    first_seen: float
    last_seen: float
    invalidates: str | None = Field(description=_PAST)
    mitigation: str | None = Field(description=_PAST)
    revisit_when: str | None = Field(description=_PAST)
    window: str | None = Field(description=_PAST)
    hold_seconds: float | None = Field(description=_PAST)
    evidence: Evidence


class TierSection(Shape):
    """A tier's section: its name and window; the evaluation carries every part, some routes one."""

    name: str
    window: str


class TierObservations(TierSection):
    observations: dict[str, Measurement]


class TierDrift(TierSection):
    drift: list[DriftRow]


class EvaluationTier(TierSection):
    drift: list[DriftRow]
    observations: dict[str, Measurement]
    recommendation: Recommendation | None


class Evaluation(Shape):
    plan: str
    evaluated_at: float
    in_business_hours: bool
    status: Status
    fleet: EvaluationTier | None = Field(description="The plan's workload as written, all tiers together.")
    tiers: list[EvaluationTier]
    triggers: list[Trigger]
    warnings: list[str]


class CheckForecast(Shape):
    enabled: bool = Field(description="False with --no-forecast: the advice is reactive only.")
    models: dict[str, str] = Field(description="Each forecast tier's model.")
    reactive_only: list[str] = Field(description="Tiers advised on demand now only (no forecast).")
    notes: list[str]


class CheckDocument(Evaluation):
    """`planwatch check --format json`: the evaluation, as `/v1/evaluation` has it, and what it forecast on."""

    forecast: CheckForecast


class NextPeak(Shape):
    at: float | None
    requests_per_second: float | None
    upper_requests_per_second: float | None


class TierForecast(Shape):
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


class RampCrossing(Shape):
    threshold: float
    timestamp: float | None = Field(description="The mean crosses the threshold; null if not within the horizon.")
    earliest: float | None = Field(description="The upper bound crosses: the earliest plausible time.")
    latest: float | None = Field(description="The lower bound crosses; null if it never does.")


class BacktestScore(Shape):
    model: str
    mae: float | None
    mase: float | None = Field(description="null against a perfect naive baseline (infinite).")
    coverage_80: float | None
    coverage_95: float | None
    peak_error: float | None


class ForecastDocument(TierForecast):
    """`planwatch forecast --format json`: the tier's forecast as /v1/forecast has it, then the ramp and, with
    `--backtest`, every model's backtest (the key is absent without it)."""

    ramp: list[RampCrossing]
    backtest: list[BacktestScore] | None = None
