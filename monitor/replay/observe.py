"""What Prometheus would hold about a replayed fleet, as the Observer the service reads (monitor.observe).

`ReplayObserver` answers `collect`, `demand_history` and `health` from the replay's per-minute records up
to the minute the replay reached, never beyond it: a policy built on it cannot see the future. Latencies go
through histograms with vLLM's own bucket bounds (fleetsim.metrics), and their quantiles and SLO shares
through the histogram module's arithmetic (`FixedBounds`: `quantile` and `fraction_over` over many windows
at once), so the evaluation reads the numbers Prometheus would give, bucket interpolation included. What
the replay does not track (token-length histograms, prefix hits, GPU gauges) is unknown with that reason, as
a missing series would be.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from fleetsim.metrics import TPOT_BUCKETS, TTFT_BUCKETS
from monitor.histogram import FixedBounds
from monitor.observe.dispersion import REACH, TERMS, BurstFit, burst_terms, fit_of_sums, overdispersion
from monitor.observe.model import Measurement, TierObservation
from monitor.observe.observer import DemandHistory, SourceHealth
from monitor.observer import BURN_WINDOWS
from monitor.observer_fields import NOW_WINDOW
from monitor.plan.model import Plan
from monitor.replay.curve import TierCurve
from monitor.replay.fleet import TierFleet, TierRecord
from monitor.units import parse_duration

__all__ = ["MIN_REQUESTS", "ReplayObserver", "latency_samples"]

MIN_REQUESTS = 50  # the observer's default: per-request statistics from fewer requests are unknown
_QUERY = "replay"
_UNTRACKED = "not tracked by the replay (no token-length, prefix or GPU series)"


def latency_samples(curve: TierCurve, rps: np.ndarray, wait: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(minutes, Q) TTFT and TPOT points of each minute: the curve at its per-replica rate, TTFT shifted by
    the queue wait (a minute with no ready replica has an infinite wait and serves nothing)."""
    ttft, tpot = curve.at(rps)
    return ttft + np.where(np.isfinite(wait), wait, 0.0)[:, None], tpot


@dataclass
class ReplayObserver:
    """The Observer protocol over one policy's fleets; `minute()` is how far the replay has run."""

    plan: Plan
    fleets: Mapping[str, TierFleet]
    start: float
    minute: Callable[[], int]
    long_window: str = "7d"
    _hist: dict[str, _Cumulative] = field(default_factory=dict)
    _rates: dict[str, _Rates] = field(default_factory=dict)
    _bursts: dict[str, _Bursts] = field(default_factory=dict)

    def health(self, now: float) -> SourceHealth:
        return SourceHealth(True, "replay", newest_sample_age_seconds=0.0)

    def _visible(self, now: float) -> int:
        """Minutes fully recorded at `now` (never past the replay's own clock)."""
        return max(0, min(self.minute(), math.floor((now - self.start) / 60.0 + 1e-9)))

    def collect(self, plan: Plan, now: float, window: str) -> dict[str, TierObservation]:
        m = self._visible(now)
        return {name: self._tier(name, fleet, m, now, window) for name, fleet in self.fleets.items()}

    def demand_history(self, plan: Plan, tier: str, start: float, end: float, step_seconds: float) -> DemandHistory:
        r, m = self.fleets[tier].record, self._visible(end)
        first, last = start - start % step_seconds + step_seconds, end - end % step_seconds
        stamps = np.arange(first, last + 1e-9, step_seconds)
        served = np.concatenate([[0.0], np.cumsum(r.served[:m])])
        queue = np.concatenate([[0.0], r.queue[:m]])
        edge = np.floor((stamps - self.start) / 60.0 + 1e-9).astype(np.int64)  # minutes recorded at each stamp
        lo = edge - round(step_seconds / 60.0)
        known = (lo >= 0) & (edge <= m)
        e, b = np.clip(edge, 0, m), np.clip(lo, 0, m)
        demand = (served[e] - served[b] + queue[e] - queue[b]) / step_seconds
        # the known stamps are one run (those after the replay's start, up to its clock): the values as one
        # slice, None on either side, rather than a test per stamp of the four weeks' grid
        inside = np.flatnonzero(known)
        since, until = (int(inside[0]), int(inside[-1]) + 1) if inside.size else (0, 0)
        values = (None,) * since + tuple(demand[since:until].tolist()) + (None,) * (stamps.size - until)
        return DemandHistory(tier, step_seconds, tuple(stamps.tolist()), values, _QUERY)

    def _tier(self, name: str, fleet: TierFleet, m: int, now: float, window: str) -> TierObservation:
        minutes = max(1, round(_seconds(window) / 60.0))
        lo = max(0, m - minutes)
        if m == 0:
            return _unknown(name, now, window, "no minute recorded yet")
        r = fleet.record
        served = float(r.served[lo:m].sum())
        ready = r.ready[lo:m]
        values: dict[str, Measurement] = {
            **_rates(r, m, lo, window),
            **_rates(r, m, max(0, m - _NOW_MINUTES), NOW_WINDOW, "_now"),
            "replicas_ready": _m(float(r.ready[m - 1]), window),
            "replicas_up": _m(float(r.ready[m - 1]), window),
            "waiting": _m(fleet.waiting_now(m - 1), window),
            "cold_start_p95": _cold_start(fleet, self.long_window),
        }
        values.update(self._long(name, r, m))
        bad: dict[str, Measurement] = {}
        curve = fleet.curve
        if curve is not None and ready.max() > 0:
            values.update(_engine(curve, r.per_replica_rps[lo:m], ready, window))
            hist = self._hist.get(name)
            if hist is None:  # not setdefault: that would allocate the whole replay's buckets every minute
                hist = self._hist[name] = _Cumulative.empty(r.served.size)
            _latencies(self.plan, fleet, hist, lo, m, window, served, values, bad)
        return TierObservation(tier=name, evaluated_at=now, window=window, bad_fraction=bad, **values)  # type: ignore[arg-type]

    def _long(self, name: str, record: TierRecord, m: int) -> dict[str, Measurement]:
        minutes = round(_seconds(self.long_window) / 60.0)
        lo = max(0, m - minutes)
        bursts = self._bursts.get(name)
        if bursts is None:
            bursts = self._bursts[name] = _Bursts.empty(record.served.size)
        bursts.advance(record, m)
        fitted = {"minute_overdispersion": overdispersion(bursts.fit(lo, m), self.long_window)}
        if m - lo < 5:
            return fitted
        rates = self._rates.get(name)
        if rates is None:
            rates = self._rates[name] = _Rates.empty(record.served.size)
        rates.advance(record.served, m)
        one = rates.rates[lo:m]
        return {
            "peak_rate": _m(rates.peak(lo, m - 4), self.long_window),
            "burst_peak_rate": _m(float(one.max()), self.long_window),
            "average_rate": _m(float(one.mean()), self.long_window),
            **fitted,
        }


_NOW_MINUTES = round(parse_duration(NOW_WINDOW) / 60.0)


def _rates(r: TierRecord, m: int, lo: int, window: str, suffix: str = "") -> dict[str, Measurement]:
    """Request and demand rates over minutes [lo, m): served, and served plus the queue's growth."""
    span = (m - lo) * 60.0
    served = float(r.served[lo:m].sum())
    before = float(r.queue[lo - 1]) if lo > 0 else 0.0
    return {
        f"request_rate{suffix}": _m(served / span, window),
        f"demand_rate{suffix}": _m((served + float(r.queue[m - 1]) - before) / span, window),
    }


@dataclass
class _Rates:
    """One tier's per-minute rates (served / 60) and 5-minute means (`five[j]`: minutes j..j+4), extended as the
    replay advances: a minute's values never change once recorded, so the long window's peaks read them
    instead of dividing and convolving the whole window again every minute (a week of minutes per tier per
    decision). The same arithmetic as over the window's slice: elementwise, and `np.convolve` of 5 values
    does not depend on where they sit in the array. The highest 5-minute mean of a week is read from hourly
    block maxima (`hours[k]`: max of five[60k:60k+60], kept once the block is complete) and the two partial
    blocks at its ends: the max of the same values, a week read in about 290 values, not 10,080."""

    rates: np.ndarray
    five: np.ndarray
    hours: np.ndarray
    upto: int = 0

    @classmethod
    def empty(cls, minutes: int) -> _Rates:
        five = max(0, minutes - 4)
        return cls(np.zeros(minutes), np.zeros(five), np.zeros(five // _BLOCK))

    def advance(self, served: np.ndarray, m: int) -> None:
        if m <= self.upto:
            return
        self.rates[self.upto : m] = served[self.upto : m] / 60.0
        first = max(0, self.upto - 4)
        if m - first >= 5:
            self.five[first : m - 4] = np.convolve(self.rates[first:m], _FIVE, mode="valid")
            done, was = (m - 4) // _BLOCK, max(0, first // _BLOCK)
            if done > was:
                blocks = self.five[was * _BLOCK : done * _BLOCK].reshape(-1, _BLOCK)
                self.hours[was:done] = blocks.max(axis=1)
        self.upto = m

    def peak(self, lo: int, hi: int) -> float:
        """max(five[lo:hi]) for hi <= upto - 4 (every value in it final), lo < hi."""
        whole_lo, whole_hi = -(-lo // _BLOCK), hi // _BLOCK
        if whole_lo >= whole_hi:
            return float(self.five[lo:hi].max())
        ends = (self.five[lo : whole_lo * _BLOCK], self.five[whole_hi * _BLOCK : hi])
        return float(max([self.hours[whole_lo:whole_hi].max(), *(e.max() for e in ends if e.size)]))


_BLOCK = 60
_FIVE = np.ones(5) / 5.0


@dataclass
class _Bursts:
    """Running sums of each minute's terms in the burst fit (`monitor.observe.dispersion`) over one tier's
    minute demand (served plus the queue's growth, as `demand_history`), so a window's fit reads a few
    differences rather than a week of minutes per tier per decision. A minute's terms are final once the
    `REACH` minutes after it are recorded; the window [lo, m) counts the minutes at least `REACH` inside it,
    the same minutes `fit_bursts` counts over that window's series."""

    sums: np.ndarray  # (terms, minutes + 1): sums[:, i] over the minutes before i
    final: int = 0  # minutes whose terms are in `sums`

    @classmethod
    def empty(cls, minutes: int) -> _Bursts:
        return cls(np.zeros((TERMS, minutes + 1)))

    def advance(self, record: TierRecord, m: int) -> None:
        last = m - REACH  # minutes before this have the minutes they read recorded
        if last <= self.final:
            return
        lo = max(0, self.final - REACH)
        before = float(record.queue[lo - 1]) if lo > 0 else 0.0
        demand = record.served[lo:m] + np.diff(record.queue[lo:m], prepend=before)
        terms = burst_terms(demand)[:, self.final - lo : last - lo]
        self.sums[:, self.final + 1 : last + 1] = self.sums[:, self.final, None] + np.cumsum(terms, axis=1)
        self.final = last

    def fit(self, lo: int, m: int) -> BurstFit | None:
        first, end = lo + REACH, min(m - REACH, self.final)
        return fit_of_sums(self.sums[:, end] - self.sums[:, first]) if end > first else None


@lru_cache(maxsize=64)
def _seconds(window: str) -> float:
    """A window's length: the same few windows are parsed every minute of a replay."""
    return parse_duration(window)


def _m(value: float, window: str) -> Measurement:
    return Measurement.of(value, _QUERY, window)


def _unknown(name: str, now: float, window: str, reason: str) -> TierObservation:
    from monitor.service.jobs import unknown_observation

    return unknown_observation(name, now, window, reason)


def _cold_start(fleet: TierFleet, long_window: str) -> Measurement:
    if fleet.cold_starts_seen == 0:
        return Measurement.unknown(f"no replica started in {long_window}", _QUERY, long_window)
    return Measurement.of(fleet.cold_start_s, _QUERY, long_window)


def _engine(curve: TierCurve, rps: np.ndarray, ready: np.ndarray, window: str) -> dict[str, Measurement]:
    """Gauges and rates of the engines, averaged over the window's minutes with a ready replica."""
    up = ready > 0
    x = rps[up]
    running = np.interp(x, curve.rates, curve.running)
    kv = np.interp(x, curve.rates, curve.kv_usage)
    return {
        # now, as vllm:num_requests_running is read (an instant gauge), not the window's mean
        "running": _m(float(np.interp(rps[-1], curve.rates, curve.running) * ready[-1]), window),
        "batch_per_replica": _m(float(running.mean()), window),
        "output_tokens_per_second_per_replica": _m(float((x * curve.output_tokens).mean()), window),
        "kv_occupancy_mean": _m(float(kv.mean()), window),
        "kv_occupancy_max": _m(float(kv.max()), window),
        "error_ratio": _m(0.0, window),
        "preemption_rate": _m(0.0, window),
    }


@dataclass
class _Cumulative:
    """Per-minute bucket counts of one tier, summed from minute 0 (row k = minutes before k), filled as the
    replay advances: a window's histogram is the difference of two rows, as rate() over counters is."""

    ttft: np.ndarray
    tpot: np.ndarray
    upto: int = 0

    @classmethod
    def empty(cls, minutes: int) -> _Cumulative:
        return cls(np.zeros((minutes + 1, len(TTFT_BUCKETS) + 1)), np.zeros((minutes + 1, len(TPOT_BUCKETS) + 1)))

    def advance(self, curve: TierCurve, r: TierRecord, m: int) -> None:
        if m <= self.upto:
            return
        lo = self.upto
        ttft, tpot = latency_samples(curve, r.per_replica_rps[lo:m], r.wait_s[lo:m])
        weight = r.served[lo:m, None] / ttft.shape[1]
        self.ttft[lo + 1 : m + 1] = self.ttft[lo] + np.cumsum(_per_minute(ttft, weight, TTFT_BUCKETS), axis=0)
        self.tpot[lo + 1 : m + 1] = self.tpot[lo] + np.cumsum(_per_minute(tpot, weight, TPOT_BUCKETS), axis=0)
        self.upto = m

    def windows(self, m: int, starts: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """(TTFT, TPOT) cumulative bucket vectors, one row per window [start, m): the difference of two rows,
        as rate() over counters is, clipped at 0 per bucket, then accumulated over the bounds."""
        lo = np.asarray(starts)
        return _cumulative(self.ttft[m] - self.ttft[lo]), _cumulative(self.tpot[m] - self.tpot[lo])


def _per_minute(values: np.ndarray, weight: np.ndarray, bounds: tuple[float, ...]) -> np.ndarray:
    """(minutes, buckets + 1) counts per bucket (non-cumulative); v <= le counts in bucket le."""
    index = np.searchsorted(np.asarray(bounds), values, side="left")
    rows = np.repeat(np.arange(values.shape[0]), values.shape[1])
    width = len(bounds) + 1
    flat = np.bincount(rows * width + index.ravel(), np.broadcast_to(weight, values.shape).ravel(),
                       minlength=values.shape[0] * width)  # fmt: skip
    return flat.reshape(values.shape[0], width)


def _cumulative(counts: np.ndarray) -> np.ndarray:
    return np.cumsum(np.maximum(counts, 0.0), axis=1)


_TTFT, _TPOT = FixedBounds(TTFT_BUCKETS), FixedBounds(TPOT_BUCKETS)
_QS, _LABELS = (0.5, 0.95, 0.99), ("p50", "p95", "p99")


def _latencies(
    plan: Plan,
    fleet: TierFleet,
    hist: _Cumulative,
    lo: int,
    m: int,
    window: str,
    served: float,
    out: dict[str, Measurement],
    bad: dict[str, Measurement],
) -> None:
    """The burn windows' shares over the SLOs (into `bad`, keyed `ttft:5m`...), and the check window's quantiles
    and shares (into `out`): every window's bucket vector read at once through `FixedBounds` (the arithmetic of
    `fraction_over` and `quantile`)."""
    assert fleet.curve is not None
    hist.advance(fleet.curve, fleet.record, m)
    ttft_slo, tpot_slo = plan.slo_for(fleet.tier)
    starts = [max(0, m - minutes) for minutes in _burn_minutes()] + [lo]
    ttft, tpot = hist.windows(m, starts)
    over = {"ttft": _TTFT.fraction_over(ttft, ttft_slo), "tpot": _TPOT.fraction_over(tpot, tpot_slo)}
    for i, w in enumerate(BURN_WINDOWS):
        for name, shares in over.items():
            if not math.isnan(shares[i]):
                bad[f"{name}:{w}"] = Measurement(float(shares[i]), _QUERY, w)
    if served < MIN_REQUESTS:
        return
    for name, bounds, rows in (("ttft", _TTFT, ttft), ("tpot", _TPOT, tpot)):
        values = bounds.quantile(_QS, np.repeat(rows[-1:], len(_QS), axis=0))  # the check window's row
        for value, label in zip(values.tolist(), _LABELS, strict=True):
            out[f"{name}_{label}"] = Measurement.of(None if math.isnan(value) else value, _QUERY, window,
                                                    round(served))  # fmt: skip
    for name, shares in over.items():
        if not math.isnan(shares[-1]):
            out[f"{name}_over_slo"] = _m(float(shares[-1]), window)


@lru_cache(maxsize=1)
def _burn_minutes() -> tuple[int, ...]:
    return tuple(round(_seconds(w) / 60.0) for w in BURN_WINDOWS)
