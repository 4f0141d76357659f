"""Step 5 of the seeds: what one replica can do at each batch size, and the largest batch the SLO allows.

Engines run chunked prefill as whole chunks: a step carries up to budget - B prompt tokens beside the B
decodes, so some steps are decode-only and some carry a chunk, and a streaming user sees a mix of the
two. In steady state with B sequences running, each holds its slot for ceil(u / room) chunk steps and
output - 1 decode steps, so the steps carry P = B x u / (output - 1 + chunks) prompt tokens on average,
in chunks of c = min(room, max(u / chunks, P)); a share f = P / c of the steps carries one. u, chunks and
the chunk step are the prompt mix's (32 equal-mass points): a mean prompt's equal split would run the
chunk steps of long prompts 20% short.

    mean TPOT = (1 - f) x decode step + f x chunk step + phi x the chunk steps queued behind a request's own
    slot      = prefill (+ phi x the fuller steps shared with the prompts queued next to it) + (output - 1) x TPOT
    p95 TPOT (per request): the chunk steps of the prompts prefilled while it decodes, a compound Poisson
              over the tier's prompt and output mixes (monitor.sizing.tpot_tail)

phi is the share of time the replica prefills. Why it enters the mean: a request starts to decode right
after its prefill, when the prompts that arrived meanwhile start theirs, so its gaps ride more chunk steps
than the steady share f gives; and vLLM fills a step's budget from the queue, so prompts back to back share
full steps. Without them the model read fleetsim's live engine (vLLM's scheduler step by step) 9% faster
than it runs on capstone's long-context tier, and the advice's calibration took that for slow engines
(tokens/s at the observed batch, live over model: 0.87-0.96 across 0.05-0.4 req/s; with them 0.99-1.02,
and 0.97-1.00 on standard).

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
    bunched: float = 0.0  # chunk steps per gap a request rides beyond f: the prompts queued behind its own

    @property
    def seconds(self) -> float:
        """Mean TPOT over a request's gaps (what throughput follows): the mean step, plus the chunk steps of
        the prompts that queued while it prefilled, which run as it starts to decode."""
        decode, chunk = self.decode.seconds, self.chunk.seconds
        return (1.0 - self.chunk_share) * decode + self.chunk_share * chunk + self.bunched * (chunk - decode)

    @property
    def bound(self) -> str:
        return (self.chunk if self.chunk_share >= 0.5 else self.decode).bound


@dataclass(frozen=True)
class PrefillMix:
    """Prompts of a tier's mix, as equal-mass points: the chunk steps each takes and their seconds."""

    chunks: tuple[float, ...]
    seconds: tuple[float, ...]
    last_seconds: tuple[float, ...]  # each prompt's last step, its remainder after full steps (0: one chunk)

    @property
    def mean_seconds(self) -> float:
        return math.fsum(self.seconds) / len(self.seconds)

    @property
    def mean_chunks(self) -> float:
        return math.fsum(self.chunks) / len(self.chunks)

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
    # (phi, slot seconds) and the prompt mix per batch: every TTFT estimate asks for them at the tier's batch
    # limit (tens of thousands of times in a replay's searches); the model is immutable, so a remembered value
    # is the computed one
    _slots: dict[float, tuple[float, float]] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )
    _mixes: dict[float, PrefillMix] = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

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
        """P = B x u / (output - 1 + chunks): prompt tokens the steps carry on average, u the mean uncached
        prompt and chunks the mean chunk steps a prompt of the mix takes."""
        u = self.workload.uncached_prompt_mean
        if u <= 0:
            return 0.0
        return batch * u / (self.gaps + self.prefill_mix(batch).mean_chunks)

    def chunk_tokens(self, batch: float) -> float:
        """A chunk-carrying step's prompt tokens: the mix's tokens per chunk step (each prompt's in
        ceil(u / room) steps), or several prompts' packed when they queue."""
        u = self.workload.uncached_prompt_mean
        if u <= 0:
            return 0.0
        own = u / self.prefill_mix(batch).mean_chunks
        return min(self.room(batch), max(own, self.interleaved_prefill_tokens(batch)))

    def chunk_share(self, batch: float) -> float:
        c = self.chunk_tokens(batch)
        return min(1.0, self.interleaved_prefill_tokens(batch) / c) if c > 0 else 0.0

    @cached_property
    def prefill_context(self) -> float:
        """Context a prefill token attends to, token-weighted over the mix: its cached prefix plus half its
        uncached prompt. Why token-weighted: a chunk step's attention is its tokens x their context, so the
        mix's mean step is the step at its mean tokens and this context (long prompts weigh more)."""
        tokens = math.fsum(u for u, _ in self._prompts)
        if tokens <= 0:
            return self.workload.cached_prompt_mean + self.workload.uncached_prompt_mean / 2
        return math.fsum(u * (k + u / 2) for u, k in self._prompts) / tokens

    def decode_step(self, batch: float) -> StepTime:
        """A decode-only step: B sequences at the mean context (prompt + output / 2)."""
        return self.engine.decode_step(batch, self.workload.decode_context_mean)

    def chunk_step(self, batch: float, chunk_tokens: float | None = None) -> StepTime:
        """A step that carries a prompt chunk beside the B decodes."""
        c = self.chunk_tokens(batch) if chunk_tokens is None else chunk_tokens
        return self.engine.decode_step(batch, self.workload.decode_context_mean, c, self.prefill_context)

    def tpot_step(self, batch: float) -> TPOT:
        """The steps a streaming user sees: decode-only ones, a share f of the time chunk ones, and (phi of
        the time) the chunk steps of the prompts queued behind its own."""
        decode, chunk, f = self.decode_step(batch), self.chunk_step(batch), self.chunk_share(batch)
        rides = self.prefilling(batch) * self._bunching(batch, decode.seconds, chunk.seconds, f)
        per_gap = rides / ((chunk.seconds - decode.seconds) * self.gaps) if self.gaps > 0 and rides > 0 else 0.0
        return TPOT(decode, chunk, f, per_gap)

    def tpot_p95(self, batch: float) -> float:
        """p95 over requests of their TPOT at batch B: what the SLO is held against (monitor.sizing.tpot_tail)."""
        from monitor.sizing.tpot_tail import tpot_p95  # numpy: every command's --help loads sizing

        mix = self.prefill_mix(batch)
        rate = self.requests_per_second(batch)
        gaps = tuple(o - 1.0 for o in self._output_points)
        return tpot_p95(self.decode_step(batch).seconds, self.chunk_step(batch).seconds, mix.chunks, mix.seconds,
                        rate, gaps)  # fmt: skip

    def prefill_mix(self, batch: float) -> PrefillMix:
        """The prefill of each of 32 equal-mass points of the tier's prompt mix at batch B, each prompt
        cached in the workload's mean proportion."""
        known = self._mixes.get(batch)
        if known is not None:
            return known
        prompts = self._prompts
        chunks = tuple(float(self.prompt_chunks(u, batch)) for u, _ in prompts)
        seconds = tuple(self.prefill_seconds(u, k, batch) for u, k in prompts)
        # a prompt of one chunk shares no step (`_sharing`): its last step is not asked for
        last = tuple(self._last_step(u, k, batch) if n > 1 else 0.0 for (u, k), n in zip(prompts, chunks, strict=True))
        mix = PrefillMix(chunks, seconds, last)
        if len(self._mixes) > 1024:
            self._mixes.clear()
        self._mixes[batch] = mix
        return mix

    @cached_property
    def _prompt_points(self) -> tuple[float, ...]:
        """Equal-mass points of the tier's prompt lengths (its p50 and p95 as a log-normal), scaled to its
        mean: the midpoints of 32 bins leave out the tail's mass, and throughput follows the mean."""
        return _points(self.workload.prompt_p50, self.workload.prompt_p95, self.workload.prompt_mean)

    @cached_property
    def _prompts(self) -> tuple[tuple[float, float], ...]:
        """(uncached, cached) tokens of each point of the prompt mix, cached in the workload's mean proportion."""
        wl = self.workload
        share = wl.uncached_prompt_mean / wl.prompt_mean if wl.prompt_mean > 0 else 0.0
        return tuple((p * share, p * (1.0 - share)) for p in self._prompt_points)

    @cached_property
    def _output_points(self) -> tuple[float, ...]:
        return _points(self.workload.output_p50, self.workload.output_p95, self.workload.output_mean)

    def prefill_seconds(self, uncached_tokens: float, cached_tokens: float, batch: float) -> float:
        """A prompt's own chunk steps: ceil(u / room) steps, each carrying u / chunks beside B decodes."""
        if uncached_tokens <= 0:
            return self.decode_step(batch).seconds
        chunks = self.prompt_chunks(uncached_tokens, batch)
        chunk = uncached_tokens / chunks
        context = cached_tokens + uncached_tokens / 2
        step = self.engine.decode_step(batch, self.workload.decode_context_mean, chunk, context)
        return chunks * step.seconds

    def _last_step(self, uncached_tokens: float, cached_tokens: float, batch: float) -> float:
        """A prompt's last chunk step as the engine runs it: its remainder after full steps of the room."""
        room = self.room(batch)
        rest = uncached_tokens - (self.prompt_chunks(uncached_tokens, batch) - 1) * room
        context = cached_tokens + uncached_tokens - rest / 2
        return self.engine.decode_step(batch, self.workload.decode_context_mean, max(rest, 0.0), context).seconds

    def _bunching(self, batch: float, decode: float, chunk: float, share: float) -> float:
        """Seconds a request's decode gains when prompts queued behind its own: their chunk steps (the mix's
        mean count, at most one per gap) run as it starts to decode, where a share 1 - f of steps would have
        been decode-only."""
        return min(self.prefill_mix(batch).mean_chunks, self.gaps) * (1.0 - share) * max(chunk - decode, 0.0)

    def _sharing(self, batch: float) -> float:
        """Seconds per unit of phi a prompt's prefill gains from the prompts queued next to it: vLLM fills a
        step's token budget from the waiting queue, so the steps of prompts back to back are full ones.

        - Before it: a prompt that arrives while a longer prompt has chunks to go (the share of the prefill
          time in chunks other than the last) starts in the leftover of that prompt's last step, a full step
          holding part of its own tokens: half a step more on average, and that step a full one:
          full - chunk / 2.
        - After it: a prompt that arrived during its earlier chunks (lambda x its (chunks - 1) chunk steps,
          lambda = phi / prefill) fills its last step: full, not its remainder.
        A prompt of one chunk has neither: one arriving during its step waits for the step's end."""
        mix = self.prefill_mix(batch)
        work = math.fsum(mix.seconds)
        if work <= 0:
            return 0.0
        full, chunk = self.chunk_step(batch, self.room(batch)).seconds, self.chunk_step(batch).seconds
        earlier = math.fsum((k - 1.0) / k * s for k, s in zip(mix.chunks, mix.seconds, strict=True)) / work
        after = (
            math.fsum((k - 1.0) * chunk * (full - last) for k, last in zip(mix.chunks, mix.last_seconds, strict=True))
            / work
        )  # per prompt of the mix: sum / n over the prefill's mean, work / n
        return earlier * max(full - chunk / 2.0, 0.0) + after

    def prefilling(self, batch: float) -> float:
        """phi: the share of time the replica prefills, requests/s x a prompt's prefill; Poisson arrivals see
        time averages, so it is also the chance that a prompt queues next to a given one."""
        return self._solved(batch)[0]

    def slot_prefill_seconds(self, batch: float) -> float:
        """A request's time running before its first token: its own chunk steps (the mix's mean), and phi of
        the time the fuller steps it shares with the prompts queued next to it (`_sharing`)."""
        return self.prefill_mix(batch).mean_seconds + self.prefilling(batch) * self._sharing(batch)

    def slot_seconds(self, batch: float) -> float:
        """How long a request holds its slot: `slot_prefill_seconds`, then output - 1 gaps at the mean TPOT."""
        return self._solved(batch)[1]

    def _solved(self, batch: float) -> tuple[float, float]:
        """(phi, slot seconds) at batch B. phi = B x prefill / slot, and the slot grows with phi (the shared
        steps and the bunched gaps, `extra` seconds at phi = 1): slot = base + extra x B x prefill / slot,
        whose positive root is (base + sqrt(base^2 + 4 extra B prefill)) / 2, phi at most 1. Remembered: every
        TTFT estimate asks for the slot at the tier's batch limit."""
        known = self._slots.get(batch)
        if known is not None:
            return known
        decode, chunk, f = self.decode_step(batch), self.chunk_step(batch), self.chunk_share(batch)
        prefill = self.prefill_mix(batch).mean_seconds
        base = prefill + self.gaps * ((1.0 - f) * decode.seconds + f * chunk.seconds)
        work = batch * prefill
        extra = self._bunching(batch, decode.seconds, chunk.seconds, f) + self._sharing(batch)
        seconds = (base + math.sqrt(base * base + 4.0 * extra * work)) / 2.0
        phi = work / seconds if seconds > 0 else 0.0
        if phi > 1.0:  # the replica prefills all the time
            phi, seconds = 1.0, base + extra
        if len(self._slots) > 1024:
            self._slots.clear()
        self._slots[batch] = (phi, seconds)
        return phi, seconds

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
    batch: float
    decode_step_seconds: float
    tpot_seconds: float
    output_tokens_per_second: float
    requests_per_second: float
    kv_occupancy: float
    bound: str
    tpot_p95_seconds: float = 0.0


def capacity_curve(replica: ReplicaModel, extra_batches: tuple[float, ...] = ()) -> list[CurvePoint]:
    """Powers of two up to max_num_seqs, plus any batch asked for (the SLO batch)."""
    batches: set[float] = {float(1 << i) for i in range(16) if 1 << i <= replica.max_num_seqs}
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
    batch: float  # the mean running batch at the limit, to a hundredth of a sequence (0: none meets the SLO)
    constraint: str  # "decode step" | "compute" | "memory" | "chunk budget" | "max_num_seqs"


def max_batch_at_slo(replica: ReplicaModel, tpot_slo_seconds: float) -> BatchLimit:
    """The largest mean batch whose p95 TPOT meets the (p95) SLO, whose KV fits, and whose prefill fits the
    chunk budget, to a hundredth of a sequence.

    Why not whole sequences: the batch is the mean of what runs at a rate (requests/s x slot time), and the
    p95 follows the rate, so a tier of long prompts whose SLO falls between 2 and 3 (capstone's long-context:
    2.4 where fleetsim's live engine meets it at 0.346 req/s, 2.37 running) would otherwise be sized 11%
    under what a replica serves. 0 means no batch meets the SLO (a single sequence is already too slow).
    The constraint names what stopped the batch from growing.
    """
    checks: tuple[tuple[str, Callable[[float], bool]], ...] = (
        ("decode step", lambda b: replica.tpot_p95(b) <= tpot_slo_seconds),
        ("memory", lambda b: replica.kv_occupancy(b) <= 1.0),
        ("chunk budget", lambda b: b + replica.interleaved_prefill_tokens(b) <= replica.chunk_budget_tokens),
    )
    best, limit = float(replica.max_num_seqs), "max_num_seqs"
    for name, ok in checks:
        b = _largest(ok, replica.max_num_seqs)
        if b < best:
            best, limit = b, name
    if limit == "decode step" and best > 0 and replica.tpot_step(best).bound == "compute":
        limit = "compute"
    return BatchLimit(best, limit)


def _largest(ok: Callable[[float], bool], upper: int) -> float:
    """Largest b in [0, upper], in hundredths from 1, with ok(b), for a predicate that holds up to a point
    and then fails: whole sequences by bisection, then the hundredths of the one past them."""
    if not ok(1.0):
        return 0.0
    lo, hi = 1, upper
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(float(mid)):
            lo = mid
        else:
            hi = mid - 1
    if lo >= upper:
        return float(upper)
    low, high = 100 * lo, 100 * lo + 99  # hundredths: ok at low, not at 100 (lo + 1)
    while low < high:
        mid = (low + high + 1) // 2
        if ok(mid / 100.0):
            low = mid
        else:
            high = mid - 1
    return low / 100.0


_POINTS = tuple((k + 0.5) / 32 for k in range(32))  # equal-mass points of a length mix


def _points(p50: float, p95: float, mean: float) -> tuple[float, ...]:
    if p50 <= 0:
        return tuple(0.0 for _ in _POINTS)
    shape = LogNormal.from_percentiles(p50, max(p95, p50))
    points = [shape.quantile(q) for q in _POINTS]
    scale = mean / math.fsum(points) * len(points) if mean > 0 else 1.0
    return tuple(p * scale for p in points)
