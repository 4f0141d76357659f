"""The physics of one engine step, shared by the sizing model and fleetsim's replicas.

An engine step runs as engines run it: the dense GEMMs (every linear layer once for all the step's
tokens), then attention, then the tensor-parallel all-reduces, plus a fixed per-step cost (scheduling,
sampling, kernel launches). The GEMMs read the weights once and do 2 x params FLOPs per token, so they
take whichever binds; attention runs in its own kernels and adds to them:

    step = max(weights / (TP x HBM bw x bw eff), tokens x 2 x params / (TP x peak x GEMM eff))
         + max(decode KV read / (TP x HBM bw x bw eff), decode attention FLOPs / (TP x attention peak))
         + prefill attention FLOPs / (TP x attention peak)
         + 2 x layers x (all-reduce latency + tokens x hidden x 2 bytes x 2 (TP - 1) / TP / link bandwidth)
         + per-step overhead

"Attention pairs" counts (query token, context token) pairs at 4 x layers x hidden FLOPs each: a decode
token at context c adds c; a prefill chunk of u tokens after k cached ones adds k x u + u^2 / 2 (causal).
Attention runs in BF16 whatever the weights (FlashAttention; the FP8 KV cache is upcast), at
`attention_efficiency` of the BF16 peak. The all-reduce is the ring bound: each GPU sends and receives
2 (TP - 1) / TP of the activations over its link (NVLink on SXM parts, PCIe without).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from monitor.plan.catalog import GPUSpec
from monitor.plan.model import ModelSpec, Tier
from monitor.sizing.memory import kv_bytes_per_token, weights_bytes

__all__ = ["ACTIVATION_BYTES", "Engine", "StepTime", "prefill_attention_pairs"]

ACTIVATION_BYTES = 2.0  # BF16 activations cross the all-reduce whatever the weights' format


@dataclass(frozen=True)
class StepTime:
    """One step's parts, in seconds; `seconds` is how long it takes."""

    weights_seconds: float  # the weights read
    gemm_seconds: float  # the dense GEMMs' FLOPs
    kv_read_seconds: float  # the decode KV read
    attention_seconds: float  # decode attention FLOPs
    prefill_attention_seconds: float
    communication_seconds: float = 0.0
    overhead_seconds: float = 0.0

    @property
    def seconds(self) -> float:
        return (
            max(self.weights_seconds, self.gemm_seconds)
            + max(self.kv_read_seconds, self.attention_seconds)
            + self.prefill_attention_seconds
            + self.communication_seconds
            + self.overhead_seconds
        )

    @property
    def memory_seconds(self) -> float:
        """HBM time: the weights and the KV read (what dcgm's DRAM-active counts)."""
        return self.weights_seconds + self.kv_read_seconds

    @property
    def compute_seconds(self) -> float:
        """Tensor-core time: GEMMs and attention."""
        return self.gemm_seconds + self.attention_seconds + self.prefill_attention_seconds

    @property
    def bound(self) -> str:
        """What dominates: "memory" (weights and KV reads) or "compute" (GEMM and attention FLOPs)."""
        return "memory" if self.memory_seconds >= self.compute_seconds else "compute"


@dataclass(frozen=True)
class Engine:
    """One replica's physics: what it must move and compute, and how fast it can. The derived rates are
    remembered per engine (it is immutable): a replay's capacity searches ask for them millions of times."""

    tensor_parallel: int
    weights_bytes: float
    kv_bytes_per_token: float
    params: float
    layers: int
    hidden_size: int
    bandwidth_bytes_per_second: float  # per GPU, peak
    peak_flops: float  # per GPU, peak, in the weights' compute format
    bandwidth_efficiency: float
    compute_efficiency: float  # of the GEMMs only
    attention_flops: float = 0.0  # per GPU, achieved (BF16 peak x attention efficiency); 0: peak x compute eff.
    link_bandwidth_bytes_per_second: float = 0.0  # per GPU per direction, for the all-reduce
    allreduce_latency_seconds: float = 0.0
    step_overhead_seconds: float = 0.0

    @classmethod
    def for_tier(cls, tier: Tier, model: ModelSpec, gpu: GPUSpec, bandwidth_eff: float, compute_eff: float) -> Engine:
        eff = tier.efficiency
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
            attention_flops=gpu.bf16_flops * eff.attention,
            link_bandwidth_bytes_per_second=gpu.link_bandwidth_bytes_per_second * eff.link,
            allreduce_latency_seconds=gpu.allreduce_latency_seconds,
            step_overhead_seconds=eff.step_overhead_seconds,
        )

    @cached_property
    def effective_bandwidth(self) -> float:
        """TP x HBM bandwidth x efficiency, bytes/s (4 x 3.35 TB/s x 0.7 = 9.38 TB/s)."""
        return self.tensor_parallel * self.bandwidth_bytes_per_second * self.bandwidth_efficiency

    @cached_property
    def effective_flops(self) -> float:
        """TP x peak x GEMM efficiency, FLOP/s (4 x 1979 TFLOPS x 0.4 = 3.17 PFLOP/s)."""
        return self.tensor_parallel * self.peak_flops * self.compute_efficiency

    @cached_property
    def effective_attention_flops(self) -> float:
        per_gpu = self.attention_flops or self.peak_flops * self.compute_efficiency
        return self.tensor_parallel * per_gpu

    @cached_property
    def flops_per_token(self) -> float:
        """2 x params: one multiply-add per weight per token."""
        return 2.0 * self.params

    @cached_property
    def attention_flops_per_pair(self) -> float:
        """4 x layers x hidden: QK^T and AV, 2 FLOPs each, per (query, context) pair."""
        return 4.0 * self.layers * self.hidden_size

    def weights_read_seconds(self) -> float:
        return self._weights_read_seconds

    @cached_property
    def _weights_read_seconds(self) -> float:
        return self.weights_bytes / self.effective_bandwidth

    def kv_read_seconds(self, kv_tokens: float) -> float:
        return kv_tokens * self.kv_bytes_per_token / self.effective_bandwidth

    def gemm_seconds(self, tokens: float) -> float:
        return tokens * self.flops_per_token / self.effective_flops

    def attention_seconds(self, attention_pairs: float) -> float:
        return attention_pairs * self.attention_flops_per_pair / self.effective_attention_flops

    def compute_seconds(self, tokens: float, attention_pairs: float) -> float:
        """GEMM and attention FLOPs of `tokens` new tokens with `attention_pairs` pairs, run alone."""
        return self.gemm_seconds(tokens) + self.attention_seconds(attention_pairs)

    def allreduce_seconds(self, tokens: float) -> float:
        """2 all-reduces per layer of tokens x hidden x 2 bytes: a latency each plus the ring's traffic."""
        tp = self.tensor_parallel
        if tp <= 1:
            return 0.0
        per = tokens * self.hidden_size * ACTIVATION_BYTES * 2.0 * (tp - 1) / tp
        link = self.link_bandwidth_bytes_per_second
        traffic = per / link if link > 0 else 0.0
        return 2.0 * self.layers * (self.allreduce_latency_seconds + traffic)

    def step(
        self, kv_tokens_read: float, tokens: float, attention_pairs: float, prefill_pairs: float = 0.0
    ) -> StepTime:
        """One engine step: `tokens` new tokens; decodes read `kv_tokens_read` cached tokens with
        `attention_pairs` pairs; prefill chunks add `prefill_pairs`."""
        return StepTime(
            weights_seconds=self.weights_read_seconds(),
            gemm_seconds=self.gemm_seconds(tokens),
            kv_read_seconds=self.kv_read_seconds(kv_tokens_read),
            attention_seconds=self.attention_seconds(attention_pairs),
            prefill_attention_seconds=self.attention_seconds(prefill_pairs),
            communication_seconds=self.allreduce_seconds(tokens),
            overhead_seconds=self.step_overhead_seconds,
        )

    def decode_step(
        self, batch: float, context_tokens: float, prefill_tokens: float = 0.0, prefill_context: float = 0.0
    ) -> StepTime:
        """A step for `batch` decoding sequences of `context_tokens` each, carrying `prefill_tokens` of a
        prompt chunk that attend to `prefill_context` tokens each on average (cached prefix + half the
        chunk's own tokens)."""
        kv = batch * context_tokens
        return self.step(kv, batch + prefill_tokens, kv, prefill_tokens * prefill_context)

    def prefill_seconds(self, uncached_tokens: float, cached_tokens: float = 0.0) -> float:
        """A prompt's uncached tokens in one step alone (the seed: 800 x 140 GFLOP / 3.2 PFLOP/s)."""
        pairs = prefill_attention_pairs(uncached_tokens, cached_tokens)
        return self.step(cached_tokens, uncached_tokens, 0.0, pairs).seconds


def prefill_attention_pairs(uncached_tokens: float, cached_tokens: float) -> float:
    """k x u + u^2 / 2: each new token attends to the cached prefix and, causally, to the new ones before it."""
    return cached_tokens * uncached_tokens + uncached_tokens**2 / 2.0
