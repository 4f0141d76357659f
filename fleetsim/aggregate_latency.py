"""Latencies of a window's calls, per tier, from fleetsim.aggregate's scan and per-cell decode model.

Per tier and window (cells = replica x scrape step):
  1. the batch-limit gate: with a full batch L (max_num_seqs, or the KV blocks at the calls' time-weighted
     KV size) a replica admits mu = 1 / (S + t_d(L) x ((output - 1) / L - chunks)) calls/s (each admission
     costs its prefill S and its share of decode-only steps); a call takes one of L slots for L / mu seconds,
     FIFO, so it waits only while all L are held (an overloaded replica still admits mu calls/s);
  2. the decoding batch B per cell starts from the previous window's end and is refined OUTER_PASSES
     times: step costs at B -> prefill scan -> share of time in prefill steps per cell ->
     B = served rate x (output - 1) x ITL (Little's law);
  3. a call not started within the client timeout gives up (reason "abort", as the live clients do);
  4. its output - 1 gaps are the prefill-carrying steps its replica runs while it decodes
     (fleetsim.aggregate_decode; one drawn from the prefills that follow its first token feeds the ITL
     histogram) and decode-only steps t_d(B + 1) for the rest.
Moments are smoothed over SMOOTH_STEPS steps: the batch integrates arrivals over a request's lifetime.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fleetsim.aggregate import PrefillPlan, Roofline, ScanResult, decode_itl, fifo, last_end, prefill_scan, spread
from fleetsim.aggregate_calls import REASONS, CallArrays, Window
from fleetsim.aggregate_decode import decode_through
from fleetsim.replica import EngineConfig

__all__ = ["OUTER_PASSES", "SMOOTH_STEPS", "CellActivity", "TierLatency", "apply_latencies"]

SMOOTH_STEPS = 3
OUTER_PASSES = 3
_LOOKAHEAD = 12  # a decoding request's prefill gaps come from the prefills after its first token


@dataclass
class CellActivity:
    """What the GPUs and the step-level histograms see per (replica, step) cell, beyond single calls."""

    busy: np.ndarray  # engine-busy seconds
    memory: np.ndarray  # roofline memory-term seconds summed over steps
    compute: np.ndarray
    tokens: np.ndarray  # prompt + generated tokens processed
    decode_steps: np.ndarray  # decode-only engine steps
    decode_batch: np.ndarray  # sequences in them
    preemptions: np.ndarray


@dataclass
class TierLatency:
    """A tier's state carried from window to window: per replica, when each of the batch-limit gate's slots
    is next free (up to max_num_seqs of them), the end of the last prefill step and the decoding batch."""

    config: EngineConfig
    gate: np.ndarray
    prefill_end: np.ndarray
    batch: np.ndarray

    @classmethod
    def start(cls, config: EngineConfig, replicas: int) -> TierLatency:
        slots = max(1, config.max_num_seqs)
        return cls(config, np.full((replicas, slots), -np.inf), np.full(replicas, -np.inf), np.zeros(replicas))

    @property
    def replicas(self) -> int:
        return int(self.gate.shape[0])


@dataclass
class _Cells:
    rate: np.ndarray
    output_minus_one: np.ndarray
    context: np.ndarray  # KV tokens a decoding request reads per step, time-weighted
    kv_per_request: np.ndarray  # private KV tokens of a running request, time-weighted


def apply_latencies(
    state: TierLatency, calls: CallArrays, local: np.ndarray, window: Window, rng: np.random.Generator
) -> CellActivity:
    """Fill the calls' latency columns in place; `local` is each call's replica within the tier."""
    roof = Roofline.of(state.config)
    steps = window.steps
    cell = local * steps + np.clip(window.index(calls.arrival), 0, steps - 1)
    uncached = (calls.prompt - calls.hit).astype(float)
    work = roof.prefill_work(uncached)
    costs = (work, roof.prefill_extra(uncached, calls.hit.astype(float)))
    cells = _moments(calls, cell, state.replicas, window)
    limit = _limit(roof, cells, calls)
    capacity = _capacity(roof, calls, cell, cells, limit, uncached, costs, window, state.replicas)
    gap = np.where(np.isfinite(capacity), 1.0 / np.maximum(capacity, 1e-12), 0.0)[cell]
    timeout = state.config.client_timeout_seconds
    ready, admitted = _gate(state, calls, local, gap, limit[cell], timeout)
    batch = np.repeat(state.batch, steps)
    draws = rng.uniform(size=len(calls))
    parts = _costs(roof, batch, cells.context)
    for _ in range(OUTER_PASSES):
        plan, index = _plan(roof, calls, local, cell, uncached, costs, parts, batch, draws, admitted, state, ready)
        scan = prefill_scan(plan)
        prefill_time, prefill_steps = _prefill_per_cell(scan, window, state.replicas)
        parts = _costs(roof, batch, cells.context, prefill_time, prefill_steps, window.step)
        batch = _solve_batch(roof, cells, parts, limit, capacity)
        parts = _costs(roof, batch, cells.context, prefill_time, prefill_steps, window.step)
    _fill(calls, index, scan, timeout, parts, cell, local, batch, window, rng)
    state.batch = batch.reshape(state.replicas, steps)[:, -1]
    state.prefill_end = last_end(scan.scheduled, scan.length, scan.served, scan.segment, state.prefill_end)
    kv_bound = (cells.rate >= 0.9 * capacity) & (limit < roof.max_num_seqs)  # a full batch, limited by KV
    return _activity(roof, calls, cell, batch, cells, parts, scan, window, state.replicas, kv_bound, rng)


def _moments(calls: CallArrays, cell: np.ndarray, replicas: int, window: Window) -> _Cells:
    """Smoothed per-cell moments; cells without calls borrow the tier-wide means (their rate is 0)."""
    size = replicas * window.steps
    o = calls.target.astype(float)
    p = calls.prompt.astype(float)
    private = p - np.where(calls.shared, calls.hit, 0)
    weights = {"n": np.ones_like(o), "o1": o - 1.0, "o": o, "ctx": o * (p + o / 2.0), "kv": o * (private + o / 2.0)}
    sums = {k: _smooth(np.bincount(cell, w, minlength=size).reshape(replicas, -1)).ravel() for k, w in weights.items()}
    totals = {k: float(w.sum()) for k, w in weights.items()}

    def mean(key: str, per: str) -> np.ndarray:
        fallback = totals[key] / totals[per] if totals[per] > 0 else 1.0
        return np.where(sums[per] > 0, sums[key] / np.maximum(sums[per], 1e-12), fallback)

    return _Cells(
        rate=sums["n"] / (SMOOTH_STEPS * window.step),
        output_minus_one=mean("o1", "n"),
        context=mean("ctx", "o"),
        kv_per_request=mean("kv", "o"),
    )


def _smooth(rows: np.ndarray) -> np.ndarray:
    """Centred moving sum over SMOOTH_STEPS steps, scaled up at the window's edges."""
    half = SMOOTH_STEPS // 2
    both = np.vstack([rows, np.ones((1, rows.shape[1]))])
    csum = np.cumsum(np.pad(both, ((0, 0), (half + 1, half))), axis=1)
    moving = csum[:, SMOOTH_STEPS:] - csum[:, :-SMOOTH_STEPS]
    return moving[:-1] * (SMOOTH_STEPS / moving[-1])


def _costs(
    roof: Roofline,
    batch: np.ndarray,
    context: np.ndarray,
    prefill_time: np.ndarray | None = None,
    prefill_steps: np.ndarray | None = None,
    step_seconds: float = 1.0,
) -> dict[str, np.ndarray]:
    """Step costs at B + 1 sequences and, once a scan has run, the share of time in prefill steps."""
    hbm, _ = roof.decode_parts(batch + 1.0, context)
    decode = roof.decode_step(batch + 1.0, context)
    if prefill_time is None or prefill_steps is None:
        share, prefill_step = np.zeros_like(batch), decode
    else:
        share = np.minimum(prefill_time / step_seconds, 0.999)
        prefill_step = np.where(prefill_steps > 0, prefill_time / np.maximum(prefill_steps, 1e-12), decode)
    return {
        "hbm": hbm,
        "overhead": (batch + 1.0) * roof.seconds_per_token,  # the decodes' GEMMs
        "per_step": roof.per_step(batch + 1.0, context),
        "decode": decode,
        "share": share,
        "prefill_step": prefill_step,
    }


def _limit(roof: Roofline, cells: _Cells, calls: CallArrays) -> np.ndarray:
    """Running requests a replica can hold: max_num_seqs, or the KV blocks left beside the shared prefix."""
    pooled = calls.hit[calls.shared]
    pool = float(np.quantile(pooled, 0.99)) if pooled.size else 0.0
    by_kv = np.maximum(1.0, (roof.kv_capacity_tokens - pool) / np.maximum(cells.kv_per_request, 1.0))
    return np.minimum(float(roof.max_num_seqs), by_kv)


def _capacity(
    roof: Roofline,
    calls: CallArrays,
    cell: np.ndarray,
    cells: _Cells,
    limit: np.ndarray,
    uncached: np.ndarray,
    costs: tuple[np.ndarray, np.ndarray],
    window: Window,
    replicas: int,
) -> np.ndarray:
    """Calls/s a replica admits with a full batch (inf where prefill saturates before the batch fills).

    At the limit L each admission costs its prefill S (its chunk steps, as the scan costs them) and its
    share of decode-only steps: output - 1 tokens at L per step, minus the chunks it rode in:
    mu = 1 / (S + t_d(L) x ((output - 1) / L - chunks))."""
    work, extra = costs
    decode = roof.decode_step(limit + 1.0, cells.context)
    room = np.maximum(1.0, roof.budget_tokens - limit)
    # a full batch means a queue, and a queue packs prompts into steps (fleetsim.aggregate._packed): a call
    # owns u / room of the chunk steps, not ceil(u / room); with whole steps a short-prompt tier whose steps
    # carry several prompts looked prefill-bound (copilot 30% slow at peak: no gate, where the live
    # engine's full batch of decodes holds it to 8.6 calls/s a replica)
    chunks_i = np.maximum(uncached, 1.0) / room[cell]
    size = replicas * window.steps
    n = _smooth(np.bincount(cell, minlength=size).reshape(replicas, -1).astype(float)).ravel()

    def mean(values: np.ndarray) -> np.ndarray:
        total = _smooth(np.bincount(cell, values, minlength=size).reshape(replicas, -1)).ravel()
        return np.where(n > 0, total / np.maximum(n, 1e-12), 0.0)

    chunks = mean(chunks_i)
    gemm = np.maximum(chunks * roof.weights_seconds, chunks * (limit + 1.0) * roof.seconds_per_token + mean(work))
    service = gemm + chunks * roof.per_step(limit + 1.0, cells.context) + mean(extra)
    decode_steps = cells.output_minus_one / limit - chunks
    mu = 1.0 / np.maximum(service + decode * np.maximum(0.0, decode_steps), 1e-9)
    # with decode_steps <= 0 prefill saturates first (the batch peaks at (output - 1) / chunks < L): the
    # prefill scan queues those calls itself
    return np.where(decode_steps > 0, mu, np.inf)


def _gate(
    state: TierLatency, calls: CallArrays, local: np.ndarray, gap: np.ndarray, limit: np.ndarray, timeout: float
) -> tuple[np.ndarray, np.ndarray]:
    """The batch limit: L slots per replica (the median of its calls' limits), each call holding one for
    L x `gap` seconds (1 / mu at a full batch, so an overloaded replica admits mu calls/s), FIFO; calls
    that would wait past the client timeout give up there. Returns (ready time, admitted) per call.

    Why slots and not one server at 1 / mu: a batch far from full admits a call at once, as the engine
    does; a single server held 0.39 s per call queued the standard tier's calls at half its capacity (p95
    0.63 s of a 1.2 s TTFT SLO) where the live engine, with ~20 of 113 slots running, queues none. With
    equal holding times the slot freed earliest is the one taken L calls before, so calls in arrival order
    go round-robin over the slots and each slot is a FIFO server (`fifo`); the earliest-free slot takes
    the window's first call (`_slots_free`)."""
    order = np.lexsort((calls.arrival, local))
    segment = local[order]
    width = state.gate.shape[1]
    slots = np.full(state.replicas, width, dtype=np.int64)  # a replica without calls keeps every slot's end
    limits = limit[order]
    for replica in np.unique(segment):
        slots[replica] = int(np.clip(np.median(limits[segment == replica]), 1, width))
    first = np.searchsorted(segment, segment)  # each call's replica starts here in `order`
    chain = segment * width + (np.arange(segment.size) - first) % slots[segment]
    by_chain = order[np.argsort(chain, kind="stable")]  # arrival order kept within a slot
    chain = np.sort(chain, kind="stable")
    carried = _slots_free(state.gate, slots)
    arrival = calls.arrival[by_chain]
    hold = gap[by_chain] * slots[local[by_chain]]
    start, admitted = fifo(arrival, hold, chain, carried, arrival, timeout)
    state.gate = last_end(start, hold, admitted, chain, carried).reshape(state.replicas, width)
    ready, ok = np.empty(len(calls)), np.empty(len(calls), dtype=bool)
    ready[by_chain], ok[by_chain] = start, admitted
    return ready, ok


def _slots_free(gate: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """When each replica's L slots are next free, earliest first, flattened as (replica, slot): the L latest
    ends carried from the last window (a slot never held is free; a limit lower than the batch still running
    waits for all but L of it to finish)."""
    width = gate.shape[1]
    column = width - slots[:, None] + np.arange(width)[None, :]
    free = np.take_along_axis(np.sort(gate, axis=1), np.minimum(column, width - 1), axis=1)
    return np.where(column < width, free, -np.inf).ravel()


def _plan(
    roof: Roofline,
    calls: CallArrays,
    local: np.ndarray,
    cell: np.ndarray,
    uncached: np.ndarray,
    costs: tuple[np.ndarray, np.ndarray],
    parts: dict[str, np.ndarray],
    batch: np.ndarray,
    residual: np.ndarray,
    admitted: np.ndarray,
    state: TierLatency,
    ready: np.ndarray,
) -> tuple[PrefillPlan, np.ndarray]:
    """The scan's input: admitted calls sorted by replica, then by when each may start; returns it and
    the call index of each of its rows."""
    work, extra = costs
    chosen = np.nonzero(admitted)[0]
    index = chosen[np.lexsort((ready[chosen], local[chosen]))]
    c = cell[index]
    kv_reads = (calls.hit + uncached / 2.0)[index]
    plan = PrefillPlan(
        segment=local[index],
        ready=ready[index],
        tokens=uncached[index],
        work=work[index],
        memory=np.full(index.size, roof.weights_seconds),
        overhead=parts["overhead"][c],
        decode_step=parts["decode"][c],
        busy=1.0 - np.exp(-batch[c]),
        room=np.maximum(1.0, roof.budget_tokens - np.rint(batch[c])),
        residual=residual[index],
        carried_end=state.prefill_end,
        arrival=calls.arrival[index],
        patience=state.config.client_timeout_seconds,
        per_step=parts["per_step"][c],
        extra=extra[index],
        hbm=parts["hbm"][c] + kv_reads * roof.kv_seconds_per_token,
    )
    return plan, index


def _prefill_per_cell(scan: ScanResult, window: Window, replicas: int) -> tuple[np.ndarray, np.ndarray]:
    """Seconds of prefill-carrying steps and their number per cell (prefills spread over the steps they
    span), smoothed like the arrival moments."""
    edges = _edges(window)
    time = spread(scan, scan.length, edges, replicas)
    count = spread(scan, scan.steps, edges, replicas)
    return _smooth(time).ravel() / SMOOTH_STEPS, _smooth(count).ravel() / SMOOTH_STEPS


def _edges(window: Window) -> np.ndarray:
    """Cell j covers (stamp_j - step, stamp_j]."""
    return window.start + window.step * (np.arange(window.steps + 1) - 1.0)


def _solve_batch(
    roof: Roofline, cells: _Cells, parts: dict[str, np.ndarray], limit: np.ndarray, capacity: np.ndarray
) -> np.ndarray:
    """B = served rate x (output - 1) x ITL(B), damped fixed point with the prefill share held."""
    served = np.minimum(cells.rate, capacity)
    batch = np.zeros_like(served)
    for _ in range(25):
        decode = roof.decode_step(batch + 1.0, cells.context)
        itl = decode_itl(parts["share"], np.maximum(parts["prefill_step"], decode), decode)
        batch = 0.5 * batch + 0.5 * np.minimum(served * cells.output_minus_one * itl, limit)
    return batch


def _fill(
    calls: CallArrays,
    index: np.ndarray,
    scan: ScanResult,
    timeout: float,
    parts: dict[str, np.ndarray],
    cell: np.ndarray,
    local: np.ndarray,
    batch: np.ndarray,
    window: Window,
    rng: np.random.Generator,
) -> None:
    """Queue, prefill and decode per call; a call that gave up waited the timeout and got nothing."""
    n = len(calls)
    served = np.zeros(n, dtype=bool)
    scheduled, first = calls.arrival + timeout, calls.arrival + timeout
    served[index], scheduled[index], first[index] = scan.served, scan.scheduled, scan.first_token
    give_up = ~served
    calls.queue = np.where(give_up, timeout, scheduled - calls.arrival)
    calls.prefill = np.where(give_up, 0.0, first - scheduled)
    calls.batch = batch[cell]
    gaps = np.where(give_up, 0, np.maximum(calls.target - 1, 0))
    decode, prefill_step = parts["decode"][cell], parts["prefill_step"][cell]
    decode_cells = parts["decode"].reshape(-1, window.steps)
    calls.prefill_gaps, calls.decode = decode_through(scan, local, first, gaps, decode_cells, window)
    calls.itl_prefill = _prefill_gap(scan, local, first, prefill_step, rng)
    calls.itl_decode = decode
    calls.chunks = np.ones(n)
    calls.chunks[index] = np.maximum(scan.steps, 1.0)
    calls.reason = np.where(give_up, REASONS.index("abort"), calls.reason)


def _prefill_gap(
    scan: ScanResult, local: np.ndarray, first: np.ndarray, fallback: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """The length of one prefill-carrying step among the prefills of the same replica that follow the
    call's first token (the steps its decode will ride through)."""
    if not scan.served.any():
        return fallback
    starts, segment, step = (
        scan.scheduled[scan.served],
        scan.segment[scan.served],
        (scan.length / np.maximum(scan.steps, 1))[scan.served],
    )
    origin = float(min(starts.min(), first.min()))
    keys = segment * 1e8 + (starts - origin)
    pick = np.searchsorted(keys, local * 1e8 + (first - origin)) + rng.integers(0, _LOOKAHEAD, first.size)
    pick = np.minimum(pick, keys.size - 1)
    same = segment[pick] == local
    return np.where(same, step[pick], fallback)


def _activity(
    roof: Roofline,
    calls: CallArrays,
    cell: np.ndarray,
    batch: np.ndarray,
    cells: _Cells,
    parts: dict[str, np.ndarray],
    scan: ScanResult,
    window: Window,
    replicas: int,
    kv_bound: np.ndarray,
    rng: np.random.Generator,
) -> CellActivity:
    """Busy, memory and compute seconds per cell: prefills over the steps they span, then
    decode-only steps for the rest of the time anything is decoding (probability 1 - e^-B)."""
    size = replicas * window.steps
    edges = _edges(window)
    head_cell = scan.segment * window.steps + np.clip(window.index(scan.scheduled), 0, window.steps - 1)
    prefill_compute = scan.steps * parts["overhead"][head_cell] + scan.work
    prefill_time = np.minimum(spread(scan, scan.length, edges, replicas).ravel(), window.step)
    decode_time = (window.step - prefill_time) * (1.0 - np.exp(-batch))
    steps = decode_time / np.maximum(parts["decode"], 1e-12)
    memory, compute = roof.decode_parts(batch + 1.0, cells.context)
    live = ~calls.aborted
    tokens = np.bincount(cell, np.where(live, calls.prompt - calls.hit + calls.target, 0), minlength=size)
    growth = np.minimum(1.0, cells.output_minus_one / 2.0 / np.maximum(cells.kv_per_request, 1.0))
    served = np.bincount(cell, live.astype(float), minlength=size)
    return CellActivity(
        busy=prefill_time + decode_time,
        memory=spread(scan, scan.memory, edges, replicas).ravel() + steps * memory,
        compute=spread(scan, prefill_compute, edges, replicas).ravel() + steps * compute,
        tokens=tokens.astype(float),
        decode_steps=np.rint(steps),
        decode_batch=np.maximum(1.0, np.rint(batch)),
        preemptions=rng.poisson(np.where(kv_bound, served * growth, 0.0)).astype(float),
    )
