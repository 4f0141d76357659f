"""The roofline of one engine step, shared by the sizing model and fleetsim's replicas.

An engine step reads the weights once and every running sequence's KV cache (bandwidth-bound), and
does about 2 x params FLOPs per token it processes, plus attention over the context (compute-bound).
The two overlap as a roofline does: step time = max(memory time, compute time).

    memory  = (weights + KV tokens read x KV bytes/token) / (TP x HBM bandwidth x bandwidth efficiency)
    compute = (2 x params x tokens + 4 x layers x hidden x attention pairs) / (TP x peak x compute eff.)

"Attention pairs" counts (query token, context token) pairs: a decode token at context c adds c; a
prefill chunk of u tokens after k cached ones adds k x u + u^2 / 2 (causal).
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.plan.catalog import GPUSpec
from monitor.plan.model import ModelSpec, Tier
from monitor.sizing.memory import kv_bytes_per_token, weights_bytes

__all__ = ["Engine", "StepTime", "prefill_attention_pairs"]


@dataclass(frozen=True)
class StepTime:
    memory_seconds: float
    compute_seconds: float

    @property
    def seconds(self) -> float:
        return max(self.memory_seconds, self.compute_seconds)

    @property
    def bound(self) -> str:
        return "memory" if self.memory_seconds >= self.compute_seconds else "compute"


@dataclass(frozen=True)
class Engine:
    """One replica's physics: what it must move and compute, and how fast it can."""

    tensor_parallel: int
    weights_bytes: float
    kv_bytes_per_token: float
    params: float
    layers: int
    hidden_size: int
    bandwidth_bytes_per_second: float  # per GPU, peak
    peak_flops: float  # per GPU, peak, in the weights' compute format
    bandwidth_efficiency: float
    compute_efficiency: float

    @classmethod
    def for_tier(cls, tier: Tier, model: ModelSpec, gpu: GPUSpec, bandwidth_eff: float, compute_eff: float) -> Engine:
        return cls(
            tensor_parallel=tier.tensor_parallel,
            weights_bytes=weights_bytes(model, tier.weight_dtype),
            kv_bytes_per_token=kv_bytes_per_token(model, tier.kv_cache_dtype),
            params=model.parameters,
            layers=model.layers,
            hidden_size=model.hidden_size,
            bandwidth_bytes_per_second=gpu.hbm_bandwidth_bytes_per_second,
            peak_flops=gpu.peak_flops(tier.weight_dtype.compute_format),
            bandwidth_efficiency=bandwidth_eff,
            compute_efficiency=compute_eff,
        )

    @property
    def effective_bandwidth(self) -> float:
        """TP x HBM bandwidth x efficiency, bytes/s (4 x 3.35 TB/s x 0.7 = 9.38 TB/s)."""
        return self.tensor_parallel * self.bandwidth_bytes_per_second * self.bandwidth_efficiency

    @property
    def effective_flops(self) -> float:
        """TP x peak x efficiency, FLOP/s (4 x 1979 TFLOPS x 0.4 = 3.17 PFLOP/s)."""
        return self.tensor_parallel * self.peak_flops * self.compute_efficiency

    @property
    def flops_per_token(self) -> float:
        """2 x params: one multiply-add per weight per token."""
        return 2.0 * self.params

    @property
    def attention_flops_per_pair(self) -> float:
        """4 x layers x hidden: QK^T and AV, 2 FLOPs each, per (query, context) pair."""
        return 4.0 * self.layers * self.hidden_size

    def weights_read_seconds(self) -> float:
        return self.weights_bytes / self.effective_bandwidth

    def kv_read_seconds(self, kv_tokens: float) -> float:
        return kv_tokens * self.kv_bytes_per_token / self.effective_bandwidth

    def compute_seconds(self, tokens: float, attention_pairs: float) -> float:
        flops = tokens * self.flops_per_token + attention_pairs * self.attention_flops_per_pair
        return flops / self.effective_flops

    def step(self, kv_tokens_read: float, tokens: float, attention_pairs: float) -> StepTime:
        """One engine step that reads `kv_tokens_read` cached tokens and processes `tokens` new ones."""
        return StepTime(
            memory_seconds=self.weights_read_seconds() + self.kv_read_seconds(kv_tokens_read),
            compute_seconds=self.compute_seconds(tokens, attention_pairs),
        )

    def decode_step(
        self, batch: float, context_tokens: float, prefill_tokens: float = 0.0, prefill_context: float = 0.0
    ) -> StepTime:
        """A decode step for `batch` sequences of `context_tokens` each, with `prefill_tokens` of other
        requests' prompts interleaved (chunked prefill), each attending to `prefill_context` tokens on
        average (cached prefix + half the uncached prompt)."""
        pairs = batch * context_tokens + prefill_tokens * prefill_context
        return self.step(batch * context_tokens, batch + prefill_tokens, pairs)

    def prefill_seconds(self, uncached_tokens: float, cached_tokens: float = 0.0) -> float:
        """Compute time of a prompt's uncached tokens alone (the seed: 800 x 140 GFLOP / 3.2 PFLOP/s)."""
        return self.compute_seconds(uncached_tokens, prefill_attention_pairs(uncached_tokens, cached_tokens))


def prefill_attention_pairs(uncached_tokens: float, cached_tokens: float) -> float:
    """k x u + u^2 / 2: each new token attends to the cached prefix and, causally, to the new ones before it."""
    return cached_tokens * uncached_tokens + uncached_tokens**2 / 2.0
