"""Step 5 of the seeds: what one replica can do at each batch size, and the largest batch the SLO allows.

With chunked prefill, each decode step also carries other requests' prompt chunks: a sequence brings
its uncached prompt once over its output tokens, so a batch of B interleaves about
B x uncached prompt / output tokens of prefill per step. For long-prompt, short-output workloads this
prefill work, not the decode, dominates TPOT.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from monitor.sizing.roofline import Engine, StepTime
from monitor.sizing.workload import TierWorkload

__all__ = ["BatchLimit", "CurvePoint", "ReplicaModel", "capacity_curve", "max_batch_at_slo"]


@dataclass(frozen=True)
class ReplicaModel:
    """One replica of a tier at one efficiency assumption, serving one tier's workload shape."""

    engine: Engine
    workload: TierWorkload
    kv_budget_tokens: float
    chunk_budget_tokens: int
    max_num_seqs: int

    def interleaved_prefill_tokens(self, batch: float) -> float:
        """B x uncached prompt / output tokens: prefill carried by each decode step."""
        return batch * self.workload.uncached_prompt_mean / self.workload.output_mean

    @property
    def prefill_context(self) -> float:
        """Average context a prefill token attends to: the cached prefix plus half the uncached prompt."""
        return self.workload.cached_prompt_mean + self.workload.uncached_prompt_mean / 2

    def decode_step(self, batch: float) -> StepTime:
        return self.engine.decode_step(batch, self.workload.context_mean)

    def tpot_step(self, batch: float) -> StepTime:
        """The step a streaming user sees: decode plus interleaved prefill chunks."""
        prefill = self.interleaved_prefill_tokens(batch)
        return self.engine.decode_step(batch, self.workload.context_mean, prefill, self.prefill_context)

    def kv_tokens(self, batch: float) -> float:
        """B x (context - cached prefix) + the cached prefix once: shared blocks are stored once per replica."""
        wl = self.workload
        return batch * (wl.context_mean - wl.cached_prompt_mean) + wl.cached_prompt_mean

    def kv_occupancy(self, batch: float) -> float:
        return self.kv_tokens(batch) / self.kv_budget_tokens if self.kv_budget_tokens > 0 else float("inf")

    def requests_per_second(self, batch: float) -> float:
        """B / (TPOT x output tokens): completions per second when the batch stays full."""
        return batch / (self.tpot_step(batch).seconds * self.workload.output_mean)


@dataclass(frozen=True)
class CurvePoint:
    batch: int
    decode_step_seconds: float
    tpot_seconds: float
    output_tokens_per_second: float
    requests_per_second: float
    kv_occupancy: float
    bound: str


def capacity_curve(replica: ReplicaModel, extra_batches: tuple[int, ...] = ()) -> list[CurvePoint]:
    """Powers of two up to max_num_seqs, plus any batch asked for (the SLO batch)."""
    batches = {1 << i for i in range(16) if 1 << i <= replica.max_num_seqs}
    batches |= {b for b in extra_batches if b > 0}
    points = []
    for b in sorted(batches):
        tpot = replica.tpot_step(b)
        points.append(
            CurvePoint(
                batch=b,
                decode_step_seconds=replica.decode_step(b).seconds,
                tpot_seconds=tpot.seconds,
                output_tokens_per_second=b / tpot.seconds,
                requests_per_second=replica.requests_per_second(b),
                kv_occupancy=replica.kv_occupancy(b),
                bound=tpot.bound,
            )
        )
    return points


@dataclass(frozen=True)
class BatchLimit:
    batch: int
    constraint: str  # "decode step" | "compute" | "memory" | "chunk budget" | "max_num_seqs"


def max_batch_at_slo(replica: ReplicaModel, tpot_slo_seconds: float) -> BatchLimit:
    """The largest batch whose TPOT meets the SLO, whose KV fits, and whose prefill fits the chunk budget.

    0 means no batch meets the SLO (a single sequence is already too slow). The constraint names what
    stopped the batch from growing.
    """
    checks: tuple[tuple[str, Callable[[int], bool]], ...] = (
        ("decode step", lambda b: replica.tpot_step(b).seconds <= tpot_slo_seconds),
        ("memory", lambda b: replica.kv_occupancy(b) <= 1.0),
        ("chunk budget", lambda b: b + replica.interleaved_prefill_tokens(b) <= replica.chunk_budget_tokens),
    )
    best, limit = replica.max_num_seqs, "max_num_seqs"
    for name, ok in checks:
        b = _largest(ok, replica.max_num_seqs)
        if b < best:
            best, limit = b, name
    if limit == "decode step" and best > 0 and replica.tpot_step(best).bound == "compute":
        limit = "compute"
    return BatchLimit(best, limit)


def _largest(ok: Callable[[int], bool], upper: int) -> int:
    """Largest b in [0, upper] with ok(b), for a predicate that holds up to a point and then fails."""
    if not ok(1):
        return 0
    lo, hi = 1, upper
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo
