"""The capacity plan: a written hypothesis, validated at load (pydantic v2, unknown keys rejected).

Quantities are stored in seconds and bytes; plan files may write them for people ("50ms", "30GB").
Cross-references (a tier's model, GPU and price) are checked in `monitor.plan.load`, so every problem
in a file is reported at once with its YAML path.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from monitor.plan.batch import BatchJob
from monitor.plan.catalog import BUILTIN_GPUS, DType, GPUSpec
from monitor.plan.constraints import Constraints
from monitor.plan.fields import MAX_LABEL_VALUE, Bytes, Count, NonNegativeSeconds, Seconds, Strict
from monitor.plan.workload import Arrival, BusinessHours, Percentiles, Weekday, Workload
from monitor.queries.selector import Selector

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


class KVDType(StrEnum):
    """KV-cache formats vLLM serves (`--kv-cache-dtype`); 4-bit KV is not offered."""

    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"

    @property
    def bytes(self) -> float:
        return DType(self.value).bytes


class SLO(Strict):
    ttft_p95_seconds: Seconds = Field(alias="ttft_p95")
    tpot_p95_seconds: Seconds = Field(alias="tpot_p95")
    availability: float = Field(default=0.999, gt=0, lt=1)
    availability_window: Literal["business_hours", "always"] = "business_hours"


class SLOOverride(Strict):
    """A tier may hold a different SLO (the capstone's long-context pool has a higher TTFT)."""

    ttft_p95_seconds: Seconds | None = Field(default=None, alias="ttft_p95")
    tpot_p95_seconds: Seconds | None = Field(default=None, alias="tpot_p95")


class ModelSpec(Strict):
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


class Span(Strict):
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


class Efficiency(Strict):
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


class Replicas(Strict):
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


class PromptRange(Strict):
    min: int = Field(default=0, ge=0)
    max: int | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.max is not None and self.max <= self.min:
            raise ValueError(f"max ({self.max}) is not above min ({self.min})")
        return self


class Routing(Strict):
    """Which traffic a tier takes: a share of the requests whose prompt length falls in [min, max)."""

    share: float = Field(default=1.0, ge=0, le=1)
    prompt_tokens: PromptRange = PromptRange()


_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


class Tier(Strict):
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


class Tolerance(Strict):
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


class Tolerances(Strict):
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


class Costs(Strict):
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


class Plan(Strict):
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
