"""From calls with latencies to what each replica's /metrics would read at every scrape of a window.

Events are recorded when the live replica records them (fleetsim.replica, §1.4 of the metric catalog):
  admitted      prefix_cache_queries / hits (tokens)
  first token   TTFT; prompt_tokens, prompt_tokens_cached, prompt_tokens_by_source; one iteration-tokens
                observation of B + prompt + 1 (B for each further chunk step of its prompt)
  finished      request_success{reason}; e2e, queue, prefill, decode, inference, prompt / generation /
                prefill-KV-computed tokens, max tokens, n, per-request TPOT; its inter-token latencies
A counter sampled at stamp t includes every event at or before t. Counters and histograms continue from
`TierTotals` (the end of the previous window); calls not finished by the window's end are carried.

Approximations: inter-token latencies are recorded when the call finishes (live: token by token); the
generation-token counter grows linearly from each call's first token to its last; KV usage counts each
running call at its prompt plus half its output (live: the exact blocks); the shared prefix pool once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fleetsim.aggregate_calls import REASONS, CallArrays, Window
from fleetsim.aggregate_latency import CellActivity
from fleetsim.metrics import FINISHED_REASONS, VLLM_FAMILIES, Family

__all__ = ["HISTOGRAM_VALUES", "TierTotals", "TierWindow", "tier_window"]

_HISTOGRAMS = tuple(f for f in VLLM_FAMILIES if f.kind == "histogram")
# per-request histograms recorded at finish, and the value each call contributes
HISTOGRAM_VALUES = (
    "vllm:e2e_request_latency_seconds",
    "vllm:request_queue_time_seconds",
    "vllm:request_prefill_time_seconds",
    "vllm:request_decode_time_seconds",
    "vllm:request_inference_time_seconds",
    "vllm:request_prompt_tokens",
    "vllm:request_generation_tokens",
    "vllm:request_prefill_kv_computed_tokens",
    "vllm:request_max_num_generation_tokens",
    "vllm:request_params_max_tokens",
    "vllm:request_params_n",
)


@dataclass
class TierTotals:
    """Cumulative values at the end of the last window, per replica of one tier (canonical V1 keys)."""

    replicas: int
    bounds: dict[str, np.ndarray]
    counters: dict[str, np.ndarray] = field(default_factory=dict)  # key or "key|label" -> (R,)
    buckets: dict[str, np.ndarray] = field(default_factory=dict)  # key -> (R, nb + 1) cumulative per le
    sums: dict[str, np.ndarray] = field(default_factory=dict)
    pending: CallArrays = field(default_factory=CallArrays.empty)

    @classmethod
    def start(cls, replicas: int, max_model_len: int) -> TierTotals:
        bounds = {f.key: np.asarray(f.bucket_bounds(max_model_len)) for f in _HISTOGRAMS}
        totals = cls(replicas, bounds)
        for f in VLLM_FAMILIES:
            if f.kind == "counter":
                for label in _labels(f):
                    totals.counters[_key(f.key, label)] = np.zeros(replicas)
            elif f.kind == "histogram":
                totals.buckets[f.key] = np.zeros((replicas, bounds[f.key].size + 1))
                totals.sums[f.key] = np.zeros(replicas)
        return totals


@dataclass
class TierWindow:
    """Values at every stamp of a window: (R, T) per counter / gauge key, (R, T, nb + 1) cumulative buckets."""

    counters: dict[str, np.ndarray]
    gauges: dict[str, np.ndarray]
    buckets: dict[str, np.ndarray]
    sums: dict[str, np.ndarray]


def _labels(f: Family) -> tuple[str | None, ...]:
    if f.label == "finished_reason":
        return FINISHED_REASONS
    return f.label_values if f.label else (None,)


def _key(key: str, label: str | None) -> str:
    return key if label is None else f"{key}|{label}"


def tier_window(
    totals: TierTotals,
    calls: CallArrays,
    local: np.ndarray,
    activity: CellActivity,
    window: Window,
    kv_capacity_tokens: float,
) -> TierWindow:
    """Record the window's events (new calls plus those carried), advance the totals, carry the rest."""
    pending_local = totals.pending.replica  # carried calls keep their local replica index in `replica`
    every = CallArrays.concat([totals.pending, calls])
    where = np.concatenate([pending_local, local])
    rec = _Recorder(totals, where, window)
    served = ~every.aborted
    rec.counter("vllm:prefix_cache_queries", every.started, np.where(served, every.prompt, 0))
    rec.counter("vllm:prefix_cache_hits", every.started, np.where(served, every.hit, 0))
    _first_token_events(rec, every, served)
    _finish_events(rec, every, served)
    rec.counter_cells("vllm:num_preemptions", activity.preemptions)
    _iteration_steps(rec, activity)
    counters = rec.close_counters()
    counters["vllm:generation_tokens"] = counters["vllm:generation_tokens"] + _generating(every, where, window, totals)
    gauges = _gauges(every, where, window, totals.replicas, kv_capacity_tokens)
    keep = window.index(every.finished) >= window.steps
    totals.pending = every.take(np.nonzero(keep)[0])
    totals.pending.replica = where[keep]
    buckets, sums = rec.close_histograms()
    return TierWindow(counters, gauges, buckets, sums)


def _first_token_events(rec: _Recorder, calls: CallArrays, served: np.ndarray) -> None:
    at = calls.first_token
    hit = np.where(served, calls.hit, 0)
    prompt = np.where(served, calls.prompt, 0)
    rec.counter("vllm:prompt_tokens", at, prompt)
    rec.counter("vllm:prompt_tokens_cached", at, hit)
    rec.counter("vllm:prompt_tokens_by_source|local_compute", at, prompt - hit)
    rec.counter("vllm:prompt_tokens_by_source|local_cache_hit", at, hit)
    rec.observe("vllm:time_to_first_token_seconds", at[served], (calls.queue + calls.prefill)[served], served)
    batch = np.rint(calls.batch)
    rec.observe("vllm:iteration_tokens_total", at[served], (batch + calls.prompt + 1)[served], served)
    more = served & (calls.chunks > 1) & (batch >= 1)
    rec.observe("vllm:iteration_tokens_total", at[more], batch[more], more, count=(calls.chunks - 1)[more])


def _finish_events(rec: _Recorder, calls: CallArrays, served: np.ndarray) -> None:
    at = calls.finished
    everyone = np.ones(len(calls), dtype=bool)
    for code, reason in enumerate(REASONS):
        rec.counter(f"vllm:request_success|{reason}", at, (calls.reason == code).astype(float))
    generated = np.where(served, calls.target, 0)
    rec.counter("vllm:generation_tokens", at, generated.astype(float))
    values = {
        "vllm:e2e_request_latency_seconds": calls.queue + calls.prefill + calls.decode,
        "vllm:request_queue_time_seconds": calls.queue,
        "vllm:request_prefill_time_seconds": calls.prefill,
        "vllm:request_decode_time_seconds": calls.decode,
        "vllm:request_inference_time_seconds": calls.prefill + calls.decode,
        "vllm:request_prompt_tokens": calls.prompt,
        "vllm:request_generation_tokens": generated,
        "vllm:request_prefill_kv_computed_tokens": np.where(served, calls.prompt - calls.hit, 0),
        "vllm:request_max_num_generation_tokens": calls.max_tokens,
        "vllm:request_params_max_tokens": calls.max_tokens,
        "vllm:request_params_n": np.ones(len(calls)),
    }
    for key, value in values.items():
        rec.observe(key, at, value.astype(float), everyone)
    many = served & (calls.target > 1)
    gaps = np.maximum(calls.target - 1, 1)
    rec.observe("vllm:request_time_per_output_token_seconds", at[many], (calls.decode / gaps)[many], many)
    itl = "vllm:inter_token_latency_seconds"
    decode_gaps = np.where(served, calls.target - 1 - calls.prefill_gaps, 0)
    rec.observe(itl, at[served], calls.itl_decode[served], served, count=decode_gaps[served])
    rec.observe(itl, at[served], calls.itl_prefill[served], served, count=calls.prefill_gaps[served])


def _iteration_steps(rec: _Recorder, activity: CellActivity) -> None:
    """Decode-only engine steps, one observation of their batch each, in the cell they ran in."""
    steps = activity.decode_steps.reshape(rec.replicas, -1)
    batch = activity.decode_batch.reshape(rec.replicas, -1)
    rec.observe_cells("vllm:iteration_tokens_total", batch, steps)


class _Recorder:
    """Per-stamp increments (bincount on replica x stamp), then cumulative from the carried totals."""

    def __init__(self, totals: TierTotals, where: np.ndarray, window: Window) -> None:
        self.totals, self.where, self.window = totals, where, window
        self.replicas, self.steps = totals.replicas, window.steps
        self.increments: dict[str, np.ndarray] = {}
        self.hist: dict[str, np.ndarray] = {}
        self.hist_sums: dict[str, np.ndarray] = {}

    def _cells(self, at: np.ndarray, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        where = self.where if mask is None else self.where[mask]
        step = self.window.index(at)
        inside = (step >= 0) & (step < self.steps)
        return where * self.steps + step, inside

    def counter(self, key: str, at: np.ndarray, amount: np.ndarray) -> None:
        cell, inside = self._cells(at)
        add = np.bincount(cell[inside], amount[inside], minlength=self.replicas * self.steps)
        self.increments[key] = self.increments.get(key, 0.0) + add

    def counter_cells(self, key: str, amount: np.ndarray) -> None:
        self.increments[key] = self.increments.get(key, 0.0) + amount

    def observe(
        self, key: str, at: np.ndarray, value: np.ndarray, mask: np.ndarray, count: np.ndarray | None = None
    ) -> None:
        cell, inside = self._cells(at, mask)
        weight = np.ones(value.size) if count is None else count.astype(float)
        self._add(key, cell[inside], value[inside], weight[inside])

    def observe_cells(self, key: str, value: np.ndarray, count: np.ndarray) -> None:
        cell = np.arange(self.replicas * self.steps)
        self._add(key, cell, value.ravel(), count.ravel())

    def _add(self, key: str, cell: np.ndarray, value: np.ndarray, weight: np.ndarray) -> None:
        bounds = self.totals.bounds[key]
        width = bounds.size + 1
        bucket = np.searchsorted(bounds, value, side="left")
        size = self.replicas * self.steps
        counts = np.bincount(cell * width + bucket, weight, minlength=size * width)
        self.hist[key] = self.hist.get(key, 0.0) + counts
        self.hist_sums[key] = self.hist_sums.get(key, 0.0) + np.bincount(cell, value * weight, minlength=size)

    def _per_step(self, flat: np.ndarray | None, width: int = 0) -> np.ndarray:
        shape = (self.replicas, self.steps, width) if width else (self.replicas, self.steps)
        return np.zeros(shape) if flat is None else np.reshape(flat, shape)

    def close_counters(self) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for key, carried in self.totals.counters.items():
            flat = self._per_step(self.increments.get(key))
            out[key] = carried[:, None] + np.cumsum(flat, axis=1)
            self.totals.counters[key] = out[key][:, -1].copy()
        return out

    def close_histograms(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        buckets, sums = {}, {}
        for key, carried in self.totals.buckets.items():
            per = self._per_step(self.hist.get(key), carried.shape[1])
            cumulative = carried[:, None, :] + np.cumsum(np.cumsum(per, axis=1), axis=2)
            buckets[key] = cumulative
            self.totals.buckets[key] = cumulative[:, -1, :].copy()
            flat = self._per_step(self.hist_sums.get(key))
            sums[key] = self.totals.sums[key][:, None] + np.cumsum(flat, axis=1)
            self.totals.sums[key] = sums[key][:, -1].copy()
        return buckets, sums


def _generating(calls: CallArrays, where: np.ndarray, window: Window, totals: TierTotals) -> np.ndarray:
    """Tokens generated so far by calls still decoding at each stamp: 1 at the first token, then k per
    second up to output - 1 more by the last: sum over active calls of (1 - k f) + t x sum of k."""
    served = ~calls.aborted
    first = calls.first_token - window.start
    rate = np.where(served & (calls.decode > 0), (calls.target - 1) / np.maximum(calls.decode, 1e-12), 0.0)
    level = _occupancy(
        where, calls.first_token, calls.finished, np.where(served, 1.0 - rate * first, 0.0), window, totals.replicas
    )
    slope = _occupancy(where, calls.first_token, calls.finished, rate, window, totals.replicas)
    return level + slope * (window.stamps() - window.start)[None, :]


def _gauges(
    calls: CallArrays, where: np.ndarray, window: Window, replicas: int, kv_capacity_tokens: float
) -> dict[str, np.ndarray]:
    """running: admitted and not finished at the stamp; waiting: arrived and not admitted; KV usage."""
    served = ~calls.aborted
    running = _occupancy(where, calls.started, calls.finished, served.astype(float), window, replicas)
    waiting = _occupancy(where, calls.arrival, calls.started, np.ones(len(calls)), window, replicas)
    private = calls.prompt - np.where(calls.shared, calls.hit, 0) + calls.target / 2.0
    kv = _occupancy(where, calls.started, calls.finished, np.where(served, private, 0.0), window, replicas)
    pooled = calls.hit[calls.shared & served]
    pool = float(pooled.max()) if pooled.size else 0.0
    usage = np.minimum(1.0, (kv + np.where(running > 0, pool, 0.0)) / max(kv_capacity_tokens, 1.0))
    return {
        "vllm:num_requests_running": running,
        "vllm:num_requests_waiting": waiting,
        "vllm:kv_cache_usage_perc": usage,
    }


def _occupancy(
    where: np.ndarray, begin: np.ndarray, end: np.ndarray, weight: np.ndarray, window: Window, replicas: int
) -> np.ndarray:
    """sum of weight over calls with begin <= stamp < end, per replica and stamp (difference arrays)."""
    steps = window.steps
    b = np.clip(window.index(begin), 0, steps)
    e = np.clip(window.index(end), 0, steps)
    live = e > b
    size = replicas * (steps + 1)
    diff = np.bincount(where[live] * (steps + 1) + b[live], weight[live], minlength=size)
    diff -= np.bincount(where[live] * (steps + 1) + e[live], weight[live], minlength=size)
    return np.cumsum(diff.reshape(replicas, steps + 1), axis=1)[:, :steps]
