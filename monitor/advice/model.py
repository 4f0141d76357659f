"""Advice types: the demand outlook advice reads, the state it carries between runs, and what it recommends."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

from monitor.advice.collapse import Collapse
from monitor.observe.model import Measurement

__all__ = ["Action", "AdviceSettings", "AdviceState", "DemandOutlook", "FleetAdvice", "Recommendation", "ScaleStep"]


@dataclass(frozen=True)
class DemandOutlook:
    """A tier's demand forecast (model calls/s): advice plans on the upper bound, not the mean."""

    timestamps: tuple[float, ...]
    mean: tuple[float, ...]
    upper: tuple[float, ...]
    model: str = ""
    # Fitted on at least a day of history. A forecast on less (a new tier, a replay's first day) has not seen a
    # morning, so it cannot schedule one: the advice then holds the plan's own peak in business hours.
    daily_cycle: bool = True

    def __post_init__(self) -> None:
        if not len(self.timestamps) == len(self.mean) == len(self.upper):
            raise ValueError("timestamps, mean and upper must have the same length")


@dataclass(frozen=True)
class AdviceSettings:
    safety_margin_seconds: float = 300.0
    # None: a replacement's lead in business hours (its cold start plus the margin), a cold start outside them
    # (`monitor.advice.recommend._cooldown` says why); set, it holds in business hours, capped outside them.
    scale_down_cooldown_seconds: float | None = None
    # Calibrate per-replica capacity on production only when replicas ran at least this share of the SLO batch.
    min_calibration_batch_fraction: float = 0.25
    calibration_bounds: tuple[float, float] = (0.3, 1.5)
    page_burn_factor: float = 14.4
    # GPU failures per GPU-hour, for `replicas.spare: auto`. Meta's Llama 3 paper (Dubey et al. 2024, sec.
    # 3.3.4) counts 419 unexpected interruptions in 54 days on 16,384 H100s: 419 / (16,384 x 54 x 24) = 2.0e-5,
    # about 78% of them hardware (GPUs, HBM, hosts), so a conservative rate for the GPUs a replica holds.
    gpu_failures_per_gpu_hour: float = 2e-5

    def __post_init__(self) -> None:
        if not 0.0 <= self.gpu_failures_per_gpu_hour < 1.0:
            raise ValueError(f"gpu_failures_per_gpu_hour must be in [0, 1), got {self.gpu_failures_per_gpu_hour}")


@dataclass(frozen=True)
class AdviceState:
    """Carried from one evaluation to the next: when demand first fell below current capacity, what was last
    recommended, the calibration factor the last steady window gave (`capacity.calibrate`), and the collapse
    of demand in force (`collapse`)."""

    low_since: float | None = None
    last_recommended: int | None = None
    calibration: float | None = None
    collapse: Collapse | None = None


class Action(StrEnum):
    SCALE_UP = "scale-up"
    SCALE_DOWN = "scale-down"
    HOLD = "hold"


@dataclass(frozen=True)
class ScaleStep:
    """Scale the tier to `replicas` by `by` (Unix s): the ramp needs them at `needed_at`."""

    replicas: int
    by: float
    needed_at: float
    demand_rps: float
    cold_start_seconds: float
    margin_seconds: float

    def late(self, now: float) -> bool:
        return self.by < now


@dataclass(frozen=True)
class Recommendation:
    tier: str
    current: Measurement
    recommended: int
    action: Action
    reason: str
    stale: bool
    confidence: str
    capacity_source: str
    calibration: float
    requests_per_second_per_replica: float
    needed_now: int | None
    needed_at_forecast_peak: int | None
    floor: int
    schedule: tuple[ScaleStep, ...]
    explanation: tuple[str, ...]
    warnings: tuple[str, ...]
    gpus_per_replica: int
    gpu_hour_usd: float
    demand_rps: float | None
    capacity_rps_now: float | None  # demand the ready replicas serve within the SLO
    state: AdviceState
    # the bound that sized now: "slo", "throughput" (outside the plan's availability window), None (held stale)
    sized_for: Literal["slo", "throughput"] | None = "slo"

    @property
    def cost_per_hour_usd_now(self) -> float | None:
        c = self.current.value
        return None if c is None else c * self.gpus_per_replica * self.gpu_hour_usd

    @property
    def cost_per_hour_usd_recommended(self) -> float:
        return self.recommended * self.gpus_per_replica * self.gpu_hour_usd

    def cost_per_request_usd(self, replicas: float | None) -> float | None:
        if replicas is None or not self.demand_rps:
            return None
        return replicas * self.gpus_per_replica * self.gpu_hour_usd / (self.demand_rps * 3600.0)

    @property
    def next_scale_up(self) -> ScaleStep | None:
        return self.schedule[0] if self.schedule else None


@dataclass(frozen=True)
class FleetAdvice:
    recommendations: tuple[Recommendation, ...]
    warnings: tuple[str, ...] = field(default=())

    @property
    def gpus_recommended(self) -> int:
        return sum(r.recommended * r.gpus_per_replica for r in self.recommendations)
