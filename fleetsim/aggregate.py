"""The aggregate replica: fleetsim.replica's scheduler and roofline, solved per scrape step instead of
stepped per engine iteration, so weeks of history take seconds.

What is kept exactly: the step physics (`Engine`, read as its linear coefficients), the prefill token budget
(chunks of budget - batch tokens), FIFO admission at step boundaries, and each replica's own arrival
sequence (round robin makes it more regular than Poisson, which matters for queueing).

What is approximated (fleetsim.aggregate_latency states the tolerances the tests hold):
- Decodes ride in every step as a per-cell average batch B (a cell is one replica x one scrape step),
  so a step costs Engine's step at B (a prompt chunk's GEMMs inside the max with the weights read, its
  attention and all-reduce traffic on top) with B solved by Little's law:
  B = rate x (output - 1) x ITL, ITL from the share of time spent in prefill-carrying steps.
- Prefill is FIFO per replica, each call's chunks back to back (`prefill_scan`, a vectorised max-plus
  scan F_i = max(x_i, F_{i-1}) + L_i solved with a cumulative maximum). A call already waiting when the
  last chunk step of the call ahead starts fills that step's budget, as the engine's scheduler does
  (`_packed`); more than one waiting call sharing a step is counted as consecutive steps.
- The batch limit (max_num_seqs, or KV blocks at the calls' time-weighted KV size) is a gate in front of
  the prefill scan: L slots, each held L / mu seconds by a call (`fifo` per slot), mu being the replica's
  throughput with a full batch, so a call waits there only while the batch is full. Calls not started
  within the client timeout give up.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from fleetsim.replica import BLOCK_SIZE, EngineConfig

__all__ = ["PrefillPlan", "Roofline", "ScanResult", "decode_itl", "fifo", "last_end", "prefill_scan", "spread"]

_BIG = 1e8  # separates replicas in one cumulative-maximum scan of window-relative seconds


@dataclass(frozen=True)
class Roofline:
    """Engine.step as linear coefficients, so arrays of cells are evaluated at once: a step is
    max(weights, tokens x GEMM) + max(KV read, decode attention) + prompt attention + all-reduce
    (fixed + per token) + overhead; memory = weights + kv_tokens x kv and compute = tokens x tok + pairs x
    pair are the HBM and tensor-core times dcgm sees."""

    weights_seconds: float
    kv_seconds_per_token: float
    seconds_per_token: float  # GEMM
    seconds_per_pair: float  # attention FLOPs
    budget_tokens: int
    max_num_seqs: int
    kv_capacity_tokens: int
    comm_seconds: float = 0.0  # all-reduce latency per step (2 x layers of them)
    comm_seconds_per_token: float = 0.0
    overhead_seconds: float = 0.0

    @classmethod
    def of(cls, config: EngineConfig) -> Roofline:
        e = config.engine
        fixed = e.allreduce_seconds(0.0)
        return cls(
            weights_seconds=e.weights_read_seconds(),
            kv_seconds_per_token=e.kv_read_seconds(1.0),
            seconds_per_token=e.gemm_seconds(1.0),
            seconds_per_pair=e.attention_seconds(1.0),
            budget_tokens=config.max_num_batched_tokens,
            max_num_seqs=config.max_num_seqs,
            kv_capacity_tokens=config.num_gpu_blocks * BLOCK_SIZE,
            comm_seconds=fixed,
            comm_seconds_per_token=e.allreduce_seconds(1.0) - fixed,
            overhead_seconds=e.step_overhead_seconds,
        )

    def memory(self, kv_tokens: np.ndarray) -> np.ndarray:
        return self.weights_seconds + kv_tokens * self.kv_seconds_per_token

    def compute(self, tokens: np.ndarray, pairs: np.ndarray) -> np.ndarray:
        return tokens * self.seconds_per_token + pairs * self.seconds_per_pair

    def decode_parts(self, batch: np.ndarray, context: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(memory, compute) seconds of `batch` decoding sequences of `context` tokens in one step."""
        kv = batch * context
        return self.memory(kv), self.compute(batch, kv)

    def per_step(self, batch: np.ndarray, context: np.ndarray) -> np.ndarray:
        """What every step with `batch` decodes adds to its GEMMs: decode attention (KV read or FLOPs),
        the all-reduces of the decode tokens and the fixed overhead."""
        kv = batch * context
        attention = np.maximum(kv * self.kv_seconds_per_token, kv * self.seconds_per_pair)
        return attention + self.comm_seconds + batch * self.comm_seconds_per_token + self.overhead_seconds

    def decode_step(self, batch: np.ndarray, context: np.ndarray) -> np.ndarray:
        """A decode-only step, as Engine.decode_step(batch, context).seconds."""
        return np.maximum(self.weights_seconds, batch * self.seconds_per_token) + self.per_step(batch, context)

    def prefill_work(self, uncached: np.ndarray) -> np.ndarray:
        """GEMM seconds of a prompt's own tokens: u x 2N (inside the steps' max with the weights read)."""
        return uncached * self.seconds_per_token

    def prefill_extra(self, uncached: np.ndarray, cached: np.ndarray) -> np.ndarray:
        """What a prompt adds on top of its steps: k u + u^2 / 2 attention pairs and its tokens' all-reduces."""
        pairs = cached * uncached + uncached**2 / 2.0
        return pairs * self.seconds_per_pair + uncached * self.comm_seconds_per_token


@dataclass(frozen=True)
class PrefillPlan:
    """One replica-sorted run of calls to scan: `segment` is the replica (calls sorted by segment, then
    by `ready`, the time each may first be admitted); per-call costs come from each call's cell."""

    segment: np.ndarray
    ready: np.ndarray
    tokens: np.ndarray  # uncached prompt tokens
    work: np.ndarray  # Roofline.prefill_work: the prompt's GEMM seconds
    memory: np.ndarray  # the weights read of one step
    overhead: np.ndarray  # GEMM seconds the decodes add to each step
    decode_step: np.ndarray  # a decode-only step at the cell's batch
    busy: np.ndarray  # probability the engine is decoding when the call arrives
    room: np.ndarray  # prefill tokens per step (budget - batch)
    residual: np.ndarray  # U(0, 1) draws for the step in progress at arrival
    carried_end: np.ndarray  # per segment: end of the last prefill step before this window
    arrival: np.ndarray  # when the client sent it: it gives up once not started `patience` after
    patience: float
    per_step: np.ndarray | None = None  # Roofline.per_step at the cell's batch (None: nothing)
    extra: np.ndarray | None = None  # Roofline.prefill_extra of the call (None: nothing)
    hbm: np.ndarray | None = None  # HBM seconds of one step (weights + decode KV; None: `memory`)


@dataclass(frozen=True)
class ScanResult:
    """Per call, in the plan's (sorted) order: when its prefill ran and what it cost."""

    scheduled: np.ndarray  # its first chunk is admitted (the step boundary after it became ready)
    first_token: np.ndarray  # the end of the step holding its last prompt token
    served: np.ndarray  # False: it gave up first (then scheduled = first_token = arrival + patience)
    steps: np.ndarray  # chunk steps
    segment: np.ndarray
    work: np.ndarray  # seconds of its own tokens: GEMMs, attention and all-reduce traffic
    memory: np.ndarray  # HBM seconds of its steps

    @property
    def length(self) -> np.ndarray:
        return self.first_token - self.scheduled


def prefill_scan(plan: PrefillPlan) -> ScanResult:
    """FIFO prefill per replica: a call starts at the first step boundary after it is ready (the residual
    of a decode step in progress, when anything decodes) or when the previous prefill ends, and takes
    ceil(tokens / room) steps of max(weights read, decodes' GEMM + its chunk's GEMM) + the decodes'
    attention, all-reduce and overhead, plus its own attention and all-reduce traffic; a call waiting
    behind another starts in the other's last step (`_packed`)."""
    steps = np.maximum(1.0, np.ceil(plan.tokens / plan.room))
    zero = np.zeros_like(plan.tokens)
    per_step = zero if plan.per_step is None else plan.per_step
    extra = zero if plan.extra is None else plan.extra
    hbm = plan.memory if plan.hbm is None else plan.hbm
    length = _steps_cost(plan, steps, plan.tokens, per_step) + extra
    decoding = plan.busy > plan.residual  # a decode step is in progress at arrival
    x = plan.ready + np.where(decoding, plan.residual * plan.decode_step, 0.0)
    # where each call's steps end if none is packed: nobody gives up in this pass (it only says who waits
    # behind whom, and the call-by-call loop for give-ups would run twice)
    start, served = fifo(x, length, plan.segment, plan.carried_end, plan.arrival, np.inf)
    steps, length = _packed(plan, x, start + length, served, steps, length, per_step, extra)
    start, served = fifo(x, length, plan.segment, plan.carried_end, plan.arrival, plan.patience)
    gave_up = plan.arrival + plan.patience
    steps = np.where(served, steps, 0.0)
    return ScanResult(
        np.where(served, start, gave_up),
        np.where(served, start + length, gave_up),
        served,
        steps,
        plan.segment,
        np.where(served, plan.work + extra, 0.0),
        steps * hbm,
    )


def _steps_cost(plan: PrefillPlan, steps: np.ndarray, tokens: np.ndarray, per_step: np.ndarray) -> np.ndarray:
    """`steps` steps carrying `tokens` prompt tokens beside the decodes: the GEMMs inside the max with the
    weights read, the decodes' attention, all-reduce and overhead on top (no step, no cost)."""
    gemm = _gemm_per_token(plan) * tokens
    return np.maximum(steps * plan.memory, steps * plan.overhead + gemm) + steps * per_step


def _gemm_per_token(plan: PrefillPlan) -> np.ndarray:
    return np.divide(plan.work, plan.tokens, out=np.zeros(plan.tokens.shape), where=plan.tokens > 0)


def _packed(
    plan: PrefillPlan,
    x: np.ndarray,
    end: np.ndarray,
    served: np.ndarray,
    steps: np.ndarray,
    length: np.ndarray,
    per_step: np.ndarray,
    extra: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Chunk steps and prefill lengths once a waiting call fills the last step of the call ahead (from a
    first scan's ends): vLLM's scheduler spends a step's whole token budget, running prompts first, then
    the queue. The last step of call i holds rem_i = tokens_i - (steps_i - 1) x room of its own tokens; a
    call i + 1 ready before that step starts puts f = min(room - rem_i, tokens_{i+1}) of its tokens in it.
    The step gets longer by their GEMM time (call i's first token comes that much later) and call i + 1
    keeps tokens_{i+1} - f for its own steps, one fewer when f fills one, none when the prompt fits: its
    first token then comes with call i's. Why it matters: with every step ending at its call's last token,
    a queue of prompts paid one partly empty step each, and the call ahead never waited for the budget it
    leaves: the standard tier's TTFT p95 came out 15-18% under fleetsim's live engine at 0.8-1.6 req/s per
    replica, 3-16% with this (`benchmarks/bench_aggregate_live.py`). Left as approximations, each measured
    against the live engine: live, 3% of prefill steps hold three to five prompts, and packing them all too
    moved that p95 by 1%; the room call i leaves is counted as if it had taken nothing from the call ahead
    (counting what it took packs more and put the p95 a further 4% under the live engine's at 1.4 req/s).
    What remains is likely the step times' own spread: live, a long prompt joining the batch slows the
    steps after it, which the aggregate's per-cell mean batch does not."""
    gemm_per_token = _gemm_per_token(plan)

    def gemm(tokens: np.ndarray) -> np.ndarray:
        return np.maximum(plan.memory, plan.overhead + tokens * gemm_per_token)

    behind = np.r_[plan.segment[1:] == plan.segment[:-1], False] & served & np.r_[served[1:], False]
    own = plan.tokens - (steps - 1.0) * plan.room  # tokens in the last step
    waiting = behind & (np.r_[x[1:], np.inf] <= end - gemm(own) - per_step)  # ready when the last step starts
    fill = np.where(waiting, np.clip(plan.room - own, 0.0, np.r_[plan.tokens[1:], 0.0]), 0.0)
    longer = gemm(own + fill) - gemm(own)
    got = np.r_[0.0, fill[:-1]]
    left = plan.tokens - got
    own_steps = np.where(left > 0, np.ceil(left / plan.room), 0.0)
    rest = _steps_cost(plan, own_steps, left, per_step) + extra
    return np.where(got > 0, own_steps, steps), np.where(got > 0, rest, length) + longer


def fifo(
    x: np.ndarray, length: np.ndarray, segment: np.ndarray, carried: np.ndarray, arrival: np.ndarray, patience: float
) -> tuple[np.ndarray, np.ndarray]:
    """Start times of a FIFO server per segment (calls sorted by segment, then x): start_i = max(x_i, end of
    the previous served call); a call whose start would come more than `patience` after its arrival
    leaves without being served (and takes no time). Returns (start, served).

    Without departures this is the max-plus recursion F_i = max(x_i, F_{i-1}) + L_i, solved for all
    segments at once with a cumulative maximum; segments where someone would leave are redone call by call
    (only overloaded replicas, so the loop runs rarely)."""
    if x.size == 0:
        return x.copy(), np.ones(0, dtype=bool)
    origin = float(x.min())
    seg_start = np.r_[True, segment[1:] != segment[:-1]]
    carry = np.maximum(carried - origin, -1e6)
    start = _max_plus(x - origin, length, segment, seg_start, carry) - length + origin
    served = np.ones(x.size, dtype=bool)
    late = start - arrival > patience
    if late.any():
        bounds = np.r_[np.flatnonzero(seg_start), x.size]
        for lo, hi in pairwise(bounds.tolist()):
            if late[lo:hi].any():
                _fifo_loop(x, length, arrival, patience, float(carried[segment[lo]]), start, served, lo, hi)
    return start, served


def _fifo_loop(
    x: np.ndarray,
    length: np.ndarray,
    arrival: np.ndarray,
    patience: float,
    free: float,
    start: np.ndarray,
    served: np.ndarray,
    lo: int,
    hi: int,
) -> None:
    xs, ls, arr = x[lo:hi].tolist(), length[lo:hi].tolist(), arrival[lo:hi].tolist()
    starts, keep = [0.0] * len(xs), [True] * len(xs)
    for i, (xi, li, ai) in enumerate(zip(xs, ls, arr, strict=True)):
        begin = xi if xi > free else free
        if begin - ai > patience:
            keep[i], starts[i] = False, ai + patience
            continue
        starts[i], free = begin, begin + li
    start[lo:hi], served[lo:hi] = starts, keep


def _max_plus(
    x: np.ndarray, length: np.ndarray, segment: np.ndarray, seg_start: np.ndarray, carried: np.ndarray
) -> np.ndarray:
    """F_g = max(x_g, F_{g-1}) + L_g per segment, F_0 = carried[segment]: with C_g the running sum of L,
    F_g - C_g = max(carried, max_{h <= g} (x_h - C_{h-1})), a cumulative maximum (offset per segment so
    segments do not see each other)."""
    seg_id = np.cumsum(seg_start) - 1
    csum = np.cumsum(length)
    seg_base = np.maximum.accumulate(np.where(seg_start, csum - length, 0.0))
    c = csum - seg_base  # running sum within the segment
    c_prev = c - length
    offset = seg_id * _BIG
    floor = np.where(seg_start, carried[segment], -np.inf)
    key = np.maximum(x - c_prev, floor) + offset
    best = np.maximum.accumulate(key) - offset
    return best + c


def spread(scan: ScanResult, totals: np.ndarray, edges: np.ndarray, segments: int) -> np.ndarray:
    """(segments, len(edges) - 1): each prefill's `totals` spread evenly over [scheduled, first token) and
    summed per interval between consecutive `edges` (a long prefill fills every step it spans)."""
    out = np.zeros((segments, edges.size - 1))
    start, end = scan.scheduled, scan.first_token
    density = np.where(scan.length > 0, totals / np.maximum(scan.length, 1e-12), 0.0)
    for seg in range(segments):
        mine = scan.segment == seg
        if mine.any():
            covered = _covered(start[mine], density[mine], edges) - _covered(end[mine], density[mine], edges)
            out[seg] = np.diff(covered)
    return out


def _covered(times: np.ndarray, density: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """sum over t_i < edge of density_i x (edge - t_i), at each edge (times sorted ascending)."""
    order = np.argsort(times, kind="stable")
    t, d = times[order], density[order]
    count = np.searchsorted(t, edges, side="left")
    d_sum = np.r_[0.0, np.cumsum(d)][count]
    dt_sum = np.r_[0.0, np.cumsum(d * t)][count]
    return d_sum * edges - dt_sum


def decode_itl(prefill_share: np.ndarray, prefill_step: np.ndarray, decode_step: np.ndarray) -> np.ndarray:
    """Mean gap between a decoding request's tokens: it spends `prefill_share` of its time in steps of mean
    length `prefill_step` and the rest in decode-only steps."""
    rate = prefill_share / np.maximum(prefill_step, 1e-12) + (1.0 - prefill_share) / np.maximum(decode_step, 1e-12)
    return 1.0 / rate


def last_end(
    start: np.ndarray, length: np.ndarray, served: np.ndarray, segment: np.ndarray, previous: np.ndarray
) -> np.ndarray:
    """Per segment, when the server is next free after these calls (carried to the next window)."""
    out = previous.copy()
    np.maximum.at(out, segment[served], (start + length)[served])
    return out
