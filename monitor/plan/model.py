"""The capacity plan: a written hypothesis, validated at load (pydantic v2, unknown keys rejected).

Quantities are stored in seconds and bytes; plan files may write them for people ("50ms", "30GB").
Cross-references (a tier's model, GPU and price) are checked in `monitor.plan.load`, so every problem
in a file is reported at once with its YAML path.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Literal, Self
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from monitor.plan.batch import BatchJob
from monitor.plan.catalog import BUILTIN_GPUS, DType, GPUSpec
from monitor.plan.constraints import Constraints
from monitor.queries.selector import Selector
from monitor.units import parse_bytes, parse_duration

__all__ = [
    "ASSUMPTIONS",
    "FLEET",
    "SLO",
    "Arrival",
    "BusinessHours",
    "Costs",
    "Efficiency",
    "KVDType",
    "ModelSpec",
    "Percentiles",
    "Plan",
    "Replicas",
    "Routing",
    "SLOOverride",
    "Span",
    "Tier",
    "Tolerance",
    "Tolerances",
    "Weekday",
    "Workload",
]

# The fleet-wide view (all tiers together) is reported under this name, so no tier may take it.
FLEET = "fleet"
# Bounds on plan numbers and labels: far past any real fleet, so a typo or a hostile file is refused at load
# instead of becoming a 300-digit GPU count or a query too long for Prometheus to take.
MAX_RPS = 1e7
MAX_TOKENS = 1e8
MAX_LABEL_VALUE = 1024

Seconds = Annotated[float, BeforeValidator(parse_duration), Field(gt=0)]
NonNegativeSeconds = Annotated[float, BeforeValidator(parse_duration), Field(ge=0)]
Bytes = Annotated[float, BeforeValidator(parse_bytes), Field(ge=0)]

_COUNT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([KMBT]?)\s*$", re.IGNORECASE)
_SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}


def _parse_count(value: object) -> object:
    """'70B' -> 70e9, '8B' -> 8e9: parameter counts as model cards write them."""
    if isinstance(value, str):
        match = _COUNT.match(value)
        if not match:
            raise ValueError(f"{value!r} is not a parameter count (examples: 70B, 8B, 70e9)")
        return float(match.group(1)) * _SCALE[match.group(2).upper()]
    return value


Count = Annotated[float, BeforeValidator(_parse_count), Field(gt=0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False)


class Weekday(StrEnum):
    MON = "mon"
    TUE = "tue"
    WED = "wed"
    THU = "thu"
    FRI = "fri"
    SAT = "sat"
    SUN = "sun"

    @property
    def day_index(self) -> int:
        """Monday is 0, as datetime.weekday() counts."""
        return list(Weekday).index(self)


class KVDType(StrEnum):
    """KV-cache formats vLLM serves (`--kv-cache-dtype`); 4-bit KV is not offered."""

    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"

    @property
    def bytes(self) -> float:
        return DType(self.value).bytes


class Percentiles(_Strict):
    """A length distribution as discovery reports it: the median and the 95th percentile."""

    p50: float = Field(gt=0, le=MAX_TOKENS)
    p95: float = Field(gt=0, le=MAX_TOKENS)

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.p95 < self.p50:
            raise ValueError(f"p95 ({self.p95:g}) is below p50 ({self.p50:g})")
        return self


class Arrival(_Strict):
    """Arrival rate of user requests (req/s) at peak and on average, and how long the peak lasts each day."""

    peak_rps: float = Field(gt=0, le=MAX_RPS)
    average_rps: float = Field(gt=0, le=MAX_RPS)
    peak_hours_per_day: float = Field(default=8.0, gt=0, le=24)

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.average_rps > self.peak_rps:
            raise ValueError(f"average_rps ({self.average_rps:g}) is above peak_rps ({self.peak_rps:g})")
        return self


class BusinessHours(_Strict):
    """When the availability SLO applies and when the morning ramp happens, in local time."""

    timezone: str = "UTC"
    weekdays: tuple[Weekday, ...] = (Weekday.MON, Weekday.TUE, Weekday.WED, Weekday.THU, Weekday.FRI)
    start: str = "08:00"
    end: str = "18:00"

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{value!r} is not an IANA timezone (examples: UTC, Europe/Berlin)") from None
        return value

    @field_validator("start", "end")
    @classmethod
    def _clock(cls, value: str) -> str:
        if not re.fullmatch(r"([01][0-9]|2[0-4]):[0-5][0-9]", value) or value > "24:00":
            raise ValueError(f"{value!r} is not a time of day as HH:MM")
        return value

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.end <= self.start:
            raise ValueError(f"end ({self.end}) is not after start ({self.start})")
        return self

    @property
    def start_hour(self) -> float:
        hours, minutes = self.start.split(":")
        return int(hours) + int(minutes) / 60

    @property
    def end_hour(self) -> float:
        hours, minutes = self.end.split(":")
        return int(hours) + int(minutes) / 60


class Workload(_Strict):
    """What the product sends: rate, shape and shared prefix, per user request."""

    arrival: Arrival
    business_hours: BusinessHours = BusinessHours()
    prompt_tokens: Percentiles
    output_tokens: Percentiles
    shared_prefix_tokens: int = Field(default=0, ge=0, description="System prompt shared by every request.")
    prefix_cache_hit_rate: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Expected share of prompt tokens served from the prefix cache (vLLM: hits/queries in "
        "tokens). Default: shared_prefix_tokens / mean prompt tokens.",
    )
    calls_per_request: float = Field(
        default=1.0, ge=1, le=1000, description="Model calls per user request (tool calls)."
    )


class SLO(_Strict):
    ttft_p95_seconds: Seconds = Field(alias="ttft_p95")
    tpot_p95_seconds: Seconds = Field(alias="tpot_p95")
    availability: float = Field(default=0.999, gt=0, lt=1)
    availability_window: Literal["business_hours", "always"] = "business_hours"


class SLOOverride(_Strict):
    """A tier may hold a different SLO (the capstone's long-context pool has a higher TTFT)."""

    ttft_p95_seconds: Seconds | None = Field(default=None, alias="ttft_p95")
    tpot_p95_seconds: Seconds | None = Field(default=None, alias="tpot_p95")


class ModelSpec(_Strict):
    """What sizing needs from a model's config.json."""

    parameters: Count
    layers: int = Field(gt=0)
    attention_heads: int = Field(gt=0)
    kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    max_context: int = Field(default=131_072, gt=0)
    served_name: str = Field(default="", description="The model_name label vLLM reports.")

    @model_validator(mode="after")
    def _gqa(self) -> Self:
        if self.attention_heads % self.kv_heads:
            raise ValueError(
                f"attention_heads ({self.attention_heads}) is not a multiple of kv_heads ({self.kv_heads})"
            )
        return self

    @property
    def hidden_size(self) -> int:
        return self.attention_heads * self.head_dim


class Span(_Strict):
    """An assumption known only within a range: sizing reports low / expected / high."""

    low: float = Field(gt=0, le=1)
    expected: float = Field(gt=0, le=1)
    high: float = Field(gt=0, le=1)

    @model_validator(mode="before")
    @classmethod
    def _scalar(cls, value: object) -> object:
        return {"low": value, "expected": value, "high": value} if isinstance(value, int | float) else value

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if not self.low <= self.expected <= self.high:
            raise ValueError(f"needs low <= expected <= high, got {self.low}, {self.expected}, {self.high}")
        return self


class Efficiency(_Strict):
    """Share of peak the engine reaches. Defaults: 50-80% of HBM bandwidth, 30-50% of dense peak FLOPs in
    the GEMMs; attention kernels at half the BF16 peak (FlashAttention on Hopper reaches 35-75%); 80% of
    the link's bandwidth in the all-reduce (NCCL's bus bandwidth on NVLink); a per-step cost for the
    scheduler, sampling and launches."""

    bandwidth: Span = Span(low=0.5, expected=0.7, high=0.8)
    compute: Span = Span(low=0.45, expected=0.6, high=0.7)
    attention: float = Field(default=0.5, gt=0, le=1, description="Share of the BF16 peak attention reaches.")
    link: float = Field(default=0.8, gt=0, le=1, description="Share of the GPU link bandwidth all-reduce reaches.")
    step_overhead_seconds: NonNegativeSeconds = Field(
        default=1e-3, alias="step_overhead", description="Fixed cost of every engine step (scheduler, sampling)."
    )


class Replicas(_Strict):
    min: int = Field(default=1, ge=0)
    max: int = Field(gt=0)
    planned: int = Field(ge=0, description="Replicas the plan expects at peak.")
    spare: Literal["auto", "always", "never"] = Field(
        default="auto",
        description="A replica kept beyond the business-hours need for a GPU failure: always, never, or auto "
        "(only when replicas x GPUs x the GPU failure rate x the cold start exceeds 1 - availability).",
    )

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if not self.min <= self.planned <= self.max:
            raise ValueError(f"needs min <= planned <= max, got {self.min}, {self.planned}, {self.max}")
        return self


class PromptRange(_Strict):
    min: int = Field(default=0, ge=0)
    max: int | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.max is not None and self.max <= self.min:
            raise ValueError(f"max ({self.max}) is not above min ({self.min})")
        return self


class Routing(_Strict):
    """Which traffic a tier takes: a share of the requests whose prompt length falls in [min, max)."""

    share: float = Field(default=1.0, ge=0, le=1)
    prompt_tokens: PromptRange = PromptRange()


_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


class Tier(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=63)  # a label value and a DNS-1123 label
    model: str
    gpu: str
    tensor_parallel: int = Field(default=1, ge=1, le=16)
    weight_dtype: DType = DType.BF16
    kv_cache_dtype: KVDType = KVDType.BF16
    replicas: Replicas
    routing: Routing = Routing()
    selector: dict[str, str] = Field(
        default_factory=dict, description="Label matchers that find this tier's series; default {tier: name}."
    )
    cold_start_seconds: Seconds = Field(default=600.0, alias="cold_start")
    efficiency: Efficiency = Efficiency()
    chunked_prefill_tokens: int = Field(default=8192, gt=0, description="vLLM max_num_batched_tokens.")
    max_num_seqs: int = Field(default=256, gt=0, description="vLLM's cap on the running batch.")
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    runtime_overhead_per_gpu_bytes: Bytes = Field(
        default=2e9,
        alias="runtime_overhead_per_gpu",
        description=(
            "What vLLM reserves inside gpu_memory_utilization besides weights and KV: the profiled activations "
            "of a max_num_batched_tokens step and NCCL/cuBLAS buffers. CUDA graphs are captured after the KV "
            "cache is sized, in the 1 - gpu_memory_utilization headroom, so they are not counted here."
        ),
    )
    max_model_len: int | None = Field(default=None, gt=0)
    slo: SLOOverride = SLOOverride()
    surface: Literal["dedicated", "serverless"] = Field(
        default="dedicated", description="How the path is served: per GPU-hour, or per token on a shared API."
    )

    @field_validator("selector")
    @classmethod
    def _label_names(cls, value: dict[str, str]) -> dict[str, str]:
        bad = [k for k in value if not _LABEL_NAME.match(k)]
        if bad:
            raise ValueError(f"{', '.join(map(repr, bad))} not a Prometheus label name")
        long = [k for k, v in value.items() if len(v) > MAX_LABEL_VALUE]
        if long:
            raise ValueError(f"the value of {', '.join(long)} is over {MAX_LABEL_VALUE} characters")
        if value:
            Selector(value)  # the query builder's own rules: no empty value, no __name__, no lone surrogate
        return value

    @property
    def label_selector(self) -> dict[str, str]:
        return self.selector or {"tier": self.name}


class Tolerance(_Strict):
    """Relative drift allowed before an observation counts: |observed/plan - 1| in the harmful direction."""

    warn: float = Field(default=0.10, ge=0)
    breach: float = Field(default=0.25, ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.breach < self.warn:
            raise ValueError(f"breach ({self.breach}) is below warn ({self.warn})")
        return self


# The plan assumptions drift is judged on; tolerances may be set per name.
ASSUMPTIONS = (
    "peak_rate",
    "peak_to_average",
    "prompt_p50",
    "prompt_p95",
    "output_p50",
    "output_p95",
    "prefix_hit_rate",
    "ttft_p95",
    "tpot_p95",
    "kv_occupancy",
    "throughput_per_replica",
    "cold_start",
    "calls_per_request",
    "availability",
)


class Tolerances(_Strict):
    default: Tolerance = Tolerance()
    per_assumption: dict[str, Tolerance] = Field(default_factory=dict, alias="assumptions")

    @field_validator("per_assumption")
    @classmethod
    def _known(cls, value: dict[str, Tolerance]) -> dict[str, Tolerance]:
        unknown = sorted(set(value) - set(ASSUMPTIONS))
        if unknown:
            raise ValueError(f"unknown assumption(s) {', '.join(unknown)}; known: {', '.join(ASSUMPTIONS)}")
        return value

    def for_assumption(self, name: str) -> Tolerance:
        return self.per_assumption.get(name, self.default)


class Costs(_Strict):
    gpu_hour_usd: dict[str, float] = Field(default_factory=dict, description="Price per GPU-hour by GPU name.")
    serverless_usd_per_million_tokens: float | None = Field(default=None, gt=0)
    max_gpus: int | None = Field(default=None, gt=0, description="GPU budget for the whole fleet; advice caps at it.")

    @field_validator("gpu_hour_usd")
    @classmethod
    def _positive(cls, value: dict[str, float]) -> dict[str, float]:
        bad = [k for k, v in value.items() if v <= 0]
        if bad:
            raise ValueError(f"price must be above 0 for {', '.join(bad)}")
        return value


class Plan(_Strict):
    version: Literal[1] = 1
    name: str = Field(min_length=1)
    description: str = ""
    workload: Workload
    slo: SLO
    models: dict[str, ModelSpec] = Field(min_length=1)
    gpus: dict[str, GPUSpec] = Field(default_factory=dict, description="Added to or replacing the catalog.")
    tiers: tuple[Tier, ...] = Field(min_length=1)
    tolerances: Tolerances = Tolerances()
    costs: Costs = Costs()
    constraints: Constraints = Constraints()
    batch_jobs: tuple[BatchJob, ...] = ()

    def gpu(self, name: str) -> GPUSpec:
        return self.gpus.get(name) or BUILTIN_GPUS[name]

    def model_of(self, tier: Tier) -> ModelSpec:
        return self.models[tier.model]

    def tier(self, name: str) -> Tier:
        for tier in self.tiers:
            if tier.name == name:
                return tier
        raise KeyError(f"no tier named {name!r}; tiers: {', '.join(t.name for t in self.tiers)}")

    def slo_for(self, tier: Tier) -> tuple[float, float]:
        """(TTFT p95, TPOT p95) in seconds for a tier, its override taking precedence."""
        return (
            tier.slo.ttft_p95_seconds or self.slo.ttft_p95_seconds,
            tier.slo.tpot_p95_seconds or self.slo.tpot_p95_seconds,
        )
