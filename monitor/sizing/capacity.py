"""Step 5 of the seeds: what one replica can do at each batch size, and the largest batch the SLO allows.

Engines run chunked prefill as whole chunks: a step carries up to budget - B prompt tokens beside the B
decodes, so some steps are decode-only and some carry a chunk, and a streaming user sees a mix of the
two. In steady state with B sequences running, each holds its slot for ceil(u / room) chunk steps and
output - 1 decode steps, so the steps carry P = B x u / (output - 1 + chunks) prompt tokens on average,
in chunks of c = min(room, max(u / chunks, P)); a share f = P / c of the steps carries one.

    mean TPOT = (1 - f) x decode step + f x chunk step
    p95 TPOT (per request): the chunk steps of the prompts prefilled while it decodes, a compound Poisson
              over the tier's prompt and output mixes (monitor.sizing.tpot_tail)

The SLO is a p95, so the batch limit compares the p95 TPOT with it; throughput uses the mean.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from monitor.sizing.roofline import Engine, StepTime
from monitor.sizing.shape import LogNormal
from monitor.sizing.workload import TierWorkload

__all__ = ["TPOT", "BatchLimit", "CurvePoint", "PrefillMix", "ReplicaModel", "capacity_curve", "max_batch_at_slo"]


@dataclass(frozen=True)
class TPOT:
    """The time per output token a batch sees: decode-only and chunk-carrying steps mixed."""

    decode: StepTime
    chunk: StepTime
    chunk_share: float  # f: share of steps that carry a prompt chunk

    @property
    def seconds(self) -> float:
        """Mean TPOT (the mean step): what throughput follows."""
        return (1.0 - self.chunk_share) * self.decode.seconds + self.chunk_share * self.chunk.seconds

    @property
    def bound(self) -> str:
        return (self.chunk if self.chunk_share >= 0.5 else self.decode).bound


@dataclass(frozen=True)
class PrefillMix:
    """Prompts of a tier's mix, as equal-mass points: the chunk steps each takes and their seconds."""

    chunks: tuple[float, ...]
    seconds: tuple[float, ...]

    @property
    def mean_seconds(self) -> float:
        return math.fsum(self.seconds) / len(self.seconds)

    @property
    def variation(self) -> float:
        """Squared coefficient of variation of a prompt's prefill, what its queue's waits grow with."""
        mean = self.mean_seconds
        spread = math.fsum((s - mean) ** 2 for s in self.seconds) / len(self.seconds)
        return spread / (mean * mean) if mean > 0 else 0.0


@dataclass(frozen=True)
class ReplicaModel:
    """One replica of a tier at one efficiency assumption, serving one tier's workload shape."""

    engine: Engine
    workload: TierWorkload
    kv_budget_tokens: float
    chunk_budget_tokens: int
    max_num_seqs: int
    # slot_seconds per batch: every TTFT estimate asks it at the tier's batch limit (tens of thousands of times
    # in a replay's searches); the model is immutable, so a remembered value is the computed one
    _slots: dict[float, float] = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    @cached_property
    def gaps(self) -> float:
        return max(self.workload.output_mean - 1.0, 0.0)

    @cached_property
    def admission_limit(self) -> int:
        """The sequences the engine runs at once: max_num_seqs or those whose KV fits, whichever is lower
        (at least one). A request waits in the engine's queue only past it: below it vLLM admits every
        request, whatever that does to TPOT (the SLO batch is a rate the advice keeps to, not a limit the
        engine enforces)."""
        return max(1, math.floor(min(float(self.max_num_seqs), self.kv_sequences)))

    @cached_property
    def kv_sequences(self) -> float:
        """Sequences whose KV fits the replica's budget at the workload's KV size per sequence."""
        one = self.kv_tokens(1.0)
        return self.kv_budget_tokens / one if one > 0 else math.inf

    def room(self, batch: float) -> float:
        """Prompt tokens a step can carry beside B decodes: budget - B."""
        return max(1.0, self.chunk_budget_tokens - batch)

    def prompt_chunks(self, uncached_tokens: float, batch: float) -> int:
        return max(1, math.ceil(uncached_tokens / self.room(batch)))

    def interleaved_prefill_tokens(self, batch: float) -> float:
        """P = B x u / (output - 1 + chunks): prompt tokens the steps carry on average."""
        u = self.workload.uncached_prompt_mean
        if u <= 0:
            return 0.0
        return batch * u / (self.gaps + self.prompt_chunks(u, batch))

    def chunk_tokens(self, batch: float) -> float:
        """A chunk-carrying step's prompt tokens: one prompt's chunk, or several packed when they queue."""
        u = self.workload.uncached_prompt_mean
        if u <= 0:
            return 0.0
        own = u / self.prompt_chunks(u, batch)
        return min(self.room(batch), max(own, self.interleaved_prefill_tokens(batch)))

    def chunk_share(self, batch: float) -> float:
        c = self.chunk_tokens(batch)
        return min(1.0, self.interleaved_prefill_tokens(batch) / c) if c > 0 else 0.0

    @cached_property
    def prefill_context(self) -> float:
        """Average context a prefill token attends to: the cached prefix plus half the uncached prompt."""
        return self.workload.cached_prompt_mean + self.workload.uncached_prompt_mean / 2

    def decode_step(self, batch: float) -> StepTime:
        """A decode-only step: B sequences at the mean context (prompt + output / 2)."""
        return self.engine.decode_step(batch, self.workload.decode_context_mean)

    def chunk_step(self, batch: float, chunk_tokens: float | None = None) -> StepTime:
        """A step that carries a prompt chunk beside the B decodes."""
        c = self.chunk_tokens(batch) if chunk_tokens is None else chunk_tokens
        return self.engine.decode_step(batch, self.workload.decode_context_mean, c, self.prefill_context)

    def tpot_step(self, batch: float) -> TPOT:
        """The steps a streaming user sees: decode-only ones and, a share f of the time, chunk ones."""
        return TPOT(self.decode_step(batch), self.chunk_step(batch), self.chunk_share(batch))

    def tpot_p95(self, batch: float) -> float:
        """p95 over requests of their TPOT at batch B: what the SLO is held against (monitor.sizing.tpot_tail)."""
        from monitor.sizing.tpot_tail import tpot_p95  # numpy: every command's --help loads sizing

        mix = self.prefill_mix(batch)
        rate = self.requests_per_second(batch)
        gaps = tuple(o - 1.0 for o in self._output_points)
        return tpot_p95(self.decode_step(batch).seconds, mix.chunks, mix.seconds, rate, gaps)

    def prefill_mix(self, batch: float) -> PrefillMix:
        """The prefill of each of 32 equal-mass points of the tier's prompt mix at batch B, each prompt
        cached in the workload's mean proportion."""
        wl = self.workload
        share = wl.uncached_prompt_mean / wl.prompt_mean if wl.prompt_mean > 0 else 0.0
        prompts = [(p * share, p * (1.0 - share)) for p in self._prompt_points]
        chunks = tuple(float(self.prompt_chunks(u, batch)) for u, _ in prompts)
        seconds = tuple(self.prefill_seconds(u, k, batch) for u, k in prompts)
        return PrefillMix(chunks, seconds)

    @cached_property
    def _prompt_points(self) -> tuple[float, ...]:
        """Equal-mass points of the tier's prompt lengths (its p50 and p95 as a log-normal)."""
        return _points(self.workload.prompt_p50, self.workload.prompt_p95)

    @cached_property
    def _output_points(self) -> tuple[float, ...]:
        return _points(self.workload.output_p50, self.workload.output_p95)

    def prefill_seconds(self, uncached_tokens: float, cached_tokens: float, batch: float) -> float:
        """A prompt's own chunk steps: ceil(u / room) steps, each carrying u / chunks beside B decodes."""
        if uncached_tokens <= 0:
            return self.decode_step(batch).seconds
        chunks = self.prompt_chunks(uncached_tokens, batch)
        chunk = uncached_tokens / chunks
        context = cached_tokens + uncached_tokens / 2
        step = self.engine.decode_step(batch, self.workload.decode_context_mean, chunk, context)
        return chunks * step.seconds

    def slot_seconds(self, batch: float) -> float:
        """How long a request holds its slot: its chunk steps, then output - 1 gaps at the mean TPOT."""
        known = self._slots.get(batch)
        if known is not None:
            return known
        wl = self.workload
        seconds = self.prefill_seconds(wl.uncached_prompt_mean, wl.cached_prompt_mean, batch) + (
            self.gaps * self.tpot_step(batch).seconds
        )
        if len(self._slots) > 1024:
            self._slots.clear()
        self._slots[batch] = seconds
        return seconds

    def kv_tokens(self, batch: float) -> float:
        """B x (mean context - cached prefix) + the cached prefix once: shared blocks are stored once."""
        wl = self.workload
        return batch * (wl.decode_context_mean - wl.cached_prompt_mean) + wl.cached_prompt_mean

    def kv_occupancy(self, batch: float) -> float:
        return self.kv_tokens(batch) / self.kv_budget_tokens if self.kv_budget_tokens > 0 else float("inf")

    def requests_per_second(self, batch: float) -> float:
        """B / slot time: completions per second when the batch stays full."""
        return batch / self.slot_seconds(batch)

    def output_tokens_per_second(self, batch: float) -> float:
        """Output tokens/s when the batch stays full: completions/s x the mean output.

        Why not B / TPOT: a slot also spends its prompt's chunk steps producing one token, so B / TPOT
        overstates what a replica generates, by more the longer the prompts; this is the rate
        `vllm:generation_tokens_total` advances at, the one production is held to."""
        return self.requests_per_second(batch) * self.workload.output_mean


@dataclass(frozen=True)
class CurvePoint:
    batch: int
    decode_step_seconds: float
    tpot_seconds: float
    output_tokens_per_second: float
    requests_per_second: float
    kv_occupancy: float
    bound: str
    tpot_p95_seconds: float = 0.0


def capacity_curve(replica: ReplicaModel, extra_batches: tuple[int, ...] = ()) -> list[CurvePoint]:
    """Powers of two up to max_num_seqs, plus any batch asked for (the SLO batch)."""
    batches = {1 << i for i in range(16) if 1 << i <= replica.max_num_seqs}
    batches |= {b for b in extra_batches if b > 0}
    points = []
    for b in sorted(batches):
        tpot = replica.tpot_step(b)
        rps = replica.requests_per_second(b)
        points.append(
            CurvePoint(
                batch=b,
                decode_step_seconds=replica.decode_step(b).seconds,
                tpot_seconds=tpot.seconds,
                output_tokens_per_second=replica.output_tokens_per_second(b),
                requests_per_second=rps,
                kv_occupancy=replica.kv_occupancy(b),
                bound=tpot.bound,
                tpot_p95_seconds=replica.tpot_p95(b),
            )
        )
    return points


@dataclass(frozen=True)
class BatchLimit:
    batch: int
    constraint: str  # "decode step" | "compute" | "memory" | "chunk budget" | "max_num_seqs"


def max_batch_at_slo(replica: ReplicaModel, tpot_slo_seconds: float) -> BatchLimit:
    """The largest batch whose p95 TPOT meets the (p95) SLO, whose KV fits, and whose prefill fits the
    chunk budget.

    0 means no batch meets the SLO (a single sequence is already too slow). The constraint names what
    stopped the batch from growing.
    """
    checks: tuple[tuple[str, Callable[[int], bool]], ...] = (
        ("decode step", lambda b: replica.tpot_p95(b) <= tpot_slo_seconds),
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


_POINTS = tuple((k + 0.5) / 32 for k in range(32))  # equal-mass points of a length mix


def _points(p50: float, p95: float) -> tuple[float, ...]:
    if p50 <= 0:
        return tuple(0.0 for _ in _POINTS)
    shape = LogNormal.from_percentiles(p50, max(p95, p50))
    return tuple(shape.quantile(q) for q in _POINTS)
