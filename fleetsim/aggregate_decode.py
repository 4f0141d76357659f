"""How long each call decodes, through the prefills its replica runs meanwhile (fleetsim.aggregate's scan).

A decoding request gets one token per engine step. Steps that carry a prompt chunk last as long as the
chunk makes them; the others are decode-only steps t_d at the batch of the moment. So per replica there
is a token clock: the tokens a request decoding all along would have had by time t, rising by one per
chunk step through each prefill the scan placed (its steps spread evenly over it) and by 1 / t_d between
them. A call whose first token comes at f and which needs g more tokens decodes until the clock has moved
g past where it stood at f: one interpolation of the clock and one of its inverse, for every call at once.

Why the replica's own prefills and not the cell's average share of them: a request's TPOT is its own
decode span over its tokens, and what makes one request slow is the long prompts that happen to be
prefilled while it decodes. With every call given the same mean number of prefill steps, TPOT p95 came out
under fleetsim's live engine by 10% on the standard tier and by 21% on long-context (medians over the rates
below saturation; up to half of it), while the means agreed (`benchmarks/bench_aggregate_live.py`).
Prefills of the next window are not known yet, so a call still decoding at a window's end sees only
decode-only steps past it (blocks are two hours).
"""

from __future__ import annotations

import numpy as np

from fleetsim.aggregate import ScanResult
from fleetsim.aggregate_calls import Window

__all__ = ["decode_through"]

_TIME = 1e8  # separates replicas in one sorted key of window-relative seconds
_TOKENS = 1e12  # and of clock tokens (a decode step of a microsecond for a day is 1e11)


def decode_through(
    scan: ScanResult,
    replica: np.ndarray,
    first_token: np.ndarray,
    gaps: np.ndarray,
    decode_cells: np.ndarray,
    window: Window,
) -> tuple[np.ndarray, np.ndarray]:
    """Per call: (prefill-carrying steps among its `gaps` inter-token gaps, its decode span in seconds),
    `replica` being its replica within the tier and `decode_cells` t_d per (replica, scrape step)."""
    if first_token.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    replicas, cells = decode_cells.shape
    ok = scan.served
    seg, start, end = scan.segment[ok], scan.scheduled[ok], scan.first_token[ok]
    rate = np.maximum(scan.steps[ok], 1.0) / np.maximum(end - start, 1e-12)  # chunk steps per second
    origin = float(min(first_token.min(), start.min() if start.size else np.inf, window.start - window.step))
    last = float(max(first_token.max(), end.max() if end.size else -np.inf, window.end))
    horizon = last + float(gaps.max()) * float(decode_cells.max()) + 1.0  # past every call's last token
    # per replica the clock's corners: each prefill's start and end and each scrape step's edge (where t_d
    # changes), an origin and a tail far out; the clock runs at the prefill's chunk steps per second inside
    # a prefill and at 1 / t_d of the step outside
    edges = window.start + window.step * (np.arange(cells) - 1.0)  # cell j covers (stamp_j - step, stamp_j]
    rows, cols = np.divmod(np.arange(replicas * cells), cells)
    corner_seg = np.concatenate([np.arange(replicas), rows, seg, seg, np.arange(replicas)])
    corner_t = np.concatenate([np.full(replicas, origin), edges[cols], start, end, np.full(replicas, horizon)])
    # kinds sort an end before a start at one instant (the next prefill begins where the last one ended)
    kind = np.concatenate(
        [np.zeros(replicas + rows.size), np.full(seg.size, 2), np.ones(seg.size), np.full(replicas, 3)]
    )
    prefill = np.concatenate([np.zeros(replicas + rows.size), rate, rate, np.zeros(replicas)])
    at = np.lexsort((kind, corner_t, corner_seg))
    corner_seg, corner_t, kind, prefill = corner_seg[at], corner_t[at], kind[at], prefill[at]
    first_row = np.r_[True, corner_seg[1:] != corner_seg[:-1]]
    # inside a prefill after a corner: starts open one and ends close one (counted, not paired: one may
    # start a rounding error before the last one ends); at the last start's rate
    inside = np.cumsum(np.where(kind == 2, 1, np.where(kind == 1, -1, 0))) > 0
    last_open = np.maximum.accumulate(np.where(kind == 2, np.arange(kind.size), -1))
    cell = np.clip(window.index(corner_t + 1e-6), 0, cells - 1)  # the step the stretch after the corner is in
    speed = np.where(inside, prefill[np.maximum(last_open, 0)], 1.0 / np.maximum(decode_cells[corner_seg, cell], 1e-9))
    rise = np.r_[0.0, speed[:-1] * np.diff(corner_t)]
    rise[first_row] = 0.0
    chunk = np.r_[0.0, np.where(inside, speed, 0.0)[:-1] * np.diff(corner_t)]
    chunk[first_row] = 0.0
    clock = _per_replica_cumsum(rise, corner_seg)
    chunks = _per_replica_cumsum(chunk, corner_seg)
    time_key = corner_seg * _TIME + (corner_t - origin)
    token_key = corner_seg * _TOKENS + clock
    own = replica * _TIME + (first_token - origin)
    now = np.interp(own, time_key, clock)
    g = gaps.astype(float)
    done = np.interp(replica * _TOKENS + now + g, token_key, time_key) - replica * _TIME + origin
    decode_span = np.where(g > 0, np.maximum(done - first_token, 0.0), 0.0)
    through = np.interp(replica * _TIME + (done - origin), time_key, chunks) - np.interp(own, time_key, chunks)
    prefill_steps = np.where(g > 0, np.minimum(np.rint(through), g), 0).astype(np.int64)
    return prefill_steps, decode_span


def _per_replica_cumsum(values: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """Cumulative sum of `values` restarting at each segment's first row (which contributes nothing)."""
    total = np.cumsum(values)
    first = np.r_[True, segment[1:] != segment[:-1]]
    return total - np.maximum.accumulate(np.where(first, total, -np.inf))
