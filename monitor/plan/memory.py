"""Step 1 and Step 4 of the seeds: weights, KV cache per token, and the KV budget of one replica.

Facts of a model on a GPU, kept with the plan's types because plan validation (does it fit?) reads them too.
"""

from __future__ import annotations

from monitor.plan.catalog import DType, GPUSpec
from monitor.plan.model import KVDType, ModelSpec, Tier

__all__ = ["kv_budget_bytes", "kv_bytes_per_token", "weights_bytes"]


def weights_bytes(model: ModelSpec, dtype: DType) -> float:
    """parameters x bytes per parameter (70B in FP8 is 70 GB; in BF16, 140 GB)."""
    return model.parameters * dtype.bytes


def kv_bytes_per_token(model: ModelSpec, kv_dtype: KVDType | DType) -> float:
    """2 (K and V) x layers x KV heads x head dim x bytes per element."""
    return 2 * model.layers * model.kv_heads * model.head_dim * kv_dtype.bytes


def kv_budget_bytes(tier: Tier, model: ModelSpec, gpu: GPUSpec) -> float:
    """HBM x TP x gpu_memory_utilization - weights - runtime overhead x TP (may be negative: nothing fits).

    As vLLM sizes it: the overhead (activations of a full chunk step, communication buffers) is inside
    the utilization share, and what lives outside it (CUDA graphs, the CUDA context) is the headroom."""
    tp = tier.tensor_parallel
    usable = gpu.hbm_bytes * tp * tier.gpu_memory_utilization
    return usable - weights_bytes(model, tier.weight_dtype) - tier.runtime_overhead_per_gpu_bytes * tp
