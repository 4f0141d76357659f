"""Trigger types: a definition (what would invalidate the plan), its inputs, and what it found."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from monitor.drift import DriftRow
from monitor.observe.model import Measurement, TierObservation
from monitor.plan.model import Plan
from monitor.sizing.plan_sizing import PlanSizing

__all__ = [
    "Check",
    "EvalResult",
    "Evidence",
    "Needs",
    "Severity",
    "TierInputs",
    "TriggerDef",
    "TriggerInputs",
    "TriggerRecord",
    "TriggerState",
]


_NO_FORECAST = Measurement.unknown("no forecast")


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"


_MAX_SCORE = 1e6  # scores are fractions or percentages; past this a number is an accident, not a score


class EvalResult(BaseModel):
    """A quality evaluation posted by the team (FP8 against BF16, the 8B fallback on the task set)."""

    # Strict and finite: `true` is not 1.0, "0.8" is not a number, and NaN or 1e999 (valid JSON to Python)
    # would be stored as null and break every later evaluation.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    model: str = Field(min_length=1, max_length=200, description="A model key of the plan, e.g. llama-70b.")
    precision: str = Field(min_length=1, max_length=32, description="bf16, fp8, int8, int4 ...")
    task_set: str = Field(min_length=1, max_length=200)
    score: float = Field(ge=-_MAX_SCORE, le=_MAX_SCORE)
    baseline_score: float = Field(ge=-_MAX_SCORE, le=_MAX_SCORE)
    threshold: float = Field(ge=0, le=_MAX_SCORE, description="Largest acceptable drop from the baseline score.")
    submitted_at: float = Field(
        default=0.0, ge=0, le=1e11, description="Unix seconds; set by the service when omitted."
    )

    @property
    def regression(self) -> float:
        return self.baseline_score - self.score

    @property
    def failed(self) -> bool:
        return self.regression > self.threshold


@dataclass(frozen=True)
class Evidence:
    """Why a trigger holds: the numbers a reviewer needs to check it by hand."""

    summary: str
    observed: Mapping[str, float | None] = field(default_factory=dict)
    plan: Mapping[str, float | None] = field(default_factory=dict)
    queries: tuple[str, ...] = ()


@dataclass(frozen=True)
class TierInputs:
    observation: TierObservation
    drift: tuple[DriftRow, ...]
    # Time the forecast ramp takes from 80% to 100% of current capacity: what reactive autoscaling has.
    ramp_lead_seconds: Measurement = _NO_FORECAST
    # Whether the ramp could be judged at all (a forecast and the ready replicas' capacity were known): a
    # lead time that is unknown because no ramp comes is an answer, one unknown for want of a forecast is not.
    ramp_judged: bool = False

    def row(self, assumption: str) -> DriftRow | None:
        return next((r for r in self.drift if r.assumption == assumption), None)


@dataclass(frozen=True)
class Needs:
    """What a trigger is judged on, declared next to its check. While any of it is unknown, a trigger that
    held before cannot be judged stopped: it is carried over, not resolved (`monitor.triggers.carryover`)."""

    assumptions: tuple[str, ...] = ()  # drift rows (`prompt_p95`); one the plan no longer holds is not judged
    measurements: tuple[str, ...] = ()  # observation fields (`kv_occupancy_max`)
    bad_fractions: tuple[str, ...] = ()  # SLO shares per window (`ttft:1h`); absent counts as unknown
    ramp: bool = False  # the forecast ramp ahead against current capacity
    extras: tuple[str, ...] = ()  # key prefixes of readings in `extra` (a batch job's, keyed by the job's name)

    def unknown(self, tier: TierInputs) -> tuple[str, ...]:
        """The names of the inputs that are unknown on this tier now."""
        obs, rows = tier.observation, {r.assumption: r for r in tier.drift}
        measurements = obs.measurements()
        out = [a for a in self.assumptions if a in rows and rows[a].observed.value is None]
        out += [m for m in self.measurements if not measurements[m].known]
        out += [f"bad_fraction:{k}" for k in self.bad_fractions if k not in obs.bad_fraction
                or not obs.bad_fraction[k].known]  # fmt: skip
        out += ["ramp (no forecast or no current capacity)"] if self.ramp and not tier.ramp_judged else []
        for prefix in self.extras:  # none read at all is as unknown as one read without a value
            readings = [m for key, m in obs.extra.items() if key.startswith(prefix)]
            out += [f"{prefix}*"] if not readings or not all(m.known for m in readings) else []
        return tuple(out)


@dataclass(frozen=True)
class TriggerInputs:
    plan: Plan
    sizing: PlanSizing
    tiers: Mapping[str, TierInputs]
    evals: tuple[EvalResult, ...]
    now: float
    in_business_hours: bool


Check = Callable[[TriggerInputs, str], Evidence | None]


@dataclass(frozen=True)
class TriggerDef:
    """One revisit-the-design trigger: defined once, used by the evaluator, the API, the alerts and the docs."""

    id: str
    title: str
    invalidates: str
    severity: Severity
    window: str
    hold_seconds: float
    mitigation: str
    revisit_when: str
    check: Check = field(repr=False, compare=False)
    needs: Needs = Needs()


class TriggerState(StrEnum):
    PENDING = "pending"  # condition holds, hold time not yet elapsed
    ACTIVE = "active"


@dataclass(frozen=True)
class TriggerRecord:
    trigger: str
    tier: str
    severity: Severity
    state: TriggerState
    first_seen: float
    last_seen: float
    evidence: Evidence

    @property
    def key(self) -> tuple[str, str]:
        return (self.trigger, self.tier)
