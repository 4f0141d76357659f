"""A trace as per-minute model calls per tier, placed in the plan's timezone and routed as the plan routes.

Request-level traces (the Azure CSV, fleetsim's JSONL) are read by `fleetsim.traces.load_trace`: each request
keeps its arrival minute and is routed by its own prompt length (`fleetsim.workload.route`). Rate-level CSV
(a `window_start_s` in seconds from the start, or a `timestamp` as ISO 8601 or Unix seconds; a rate
`rate_rps` / `rate` in requests/s, or a count `requests` / `count` / `value` per window; optional
`prompt_p50`, `prompt_p95` token columns; read by `fleetsim.rate_trace`, the emulator's reader too) becomes
arrivals: Poisson within each window at its rate, or its count spread uniformly over the window's minutes;
windows route by the lognormal of their own prompt percentiles where the file has them, else by the plan's.
`fleetsim` as the trace is the plan's own weekly profile (with the scenarios' rate, bursts) as fleetsim
draws it.

Placement: timestamps without a zone are wall-clock time in the plan's timezone (business days line up);
traces with no calendar date start at `start` (default: Monday 2026-01-05 00:00 in the plan's zone).
`scale_to_peak` scales arrivals so the highest 5-minute rate equals the plan's peak (model calls/s).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np

from fleetsim.rate_trace import RATE_TIME_COLUMNS, RateWindows, default_start, read_rate_windows
from fleetsim.scenarios import Scenario
from fleetsim.traces import TraceError, load_trace
from fleetsim.workload import LengthDistribution, prompt_distribution, rates_at, route
from monitor.plan.model import Plan
from monitor.sizing.shape import LogNormal

__all__ = ["MIN_MINUTES", "Demand", "TraceError", "default_start", "load_demand", "profile_demand"]

MIN_MINUTES = 10  # a replay shorter than this says nothing about scaling
_QUANTILES = (np.arange(400) + 0.5) / 400  # prompt lengths a window's lognormal is routed at


@dataclass(frozen=True)
class Demand:
    """Model calls arriving per minute per tier (tiers in plan order), from minute-aligned `start`."""

    source: str
    start: float
    arrivals: np.ndarray  # (tiers, minutes) int
    tiers: tuple[str, ...]
    scale: float = 1.0

    @property
    def minutes(self) -> int:
        return int(self.arrivals.shape[1])

    def total_rps(self) -> np.ndarray:
        return self.arrivals.sum(axis=0) / 60.0

    def head(self, minutes: int) -> Demand:
        return Demand(self.source, self.start, self.arrivals[:, :minutes], self.tiers, self.scale)


def load_demand(
    plan: Plan,
    path: str | Path,
    rng: np.random.Generator,
    start: float | None = None,
    days: float | None = None,
    scale_to_peak: bool = False,
    trace_lengths: bool = True,
) -> Demand:
    """Read a request- or rate-level trace (see the module docstring); TraceError names the file and line.
    With `trace_lengths` False a rate-level trace routes by the plan's lengths (its shape, the plan's mix)."""
    p = Path(path)
    try:
        first = p.read_text(encoding="utf-8").splitlines()[:1]
    except OSError as exc:
        raise TraceError(p, None, f"cannot read: {exc.strerror or exc}") from None
    if not first:
        raise TraceError(p, None, "empty trace")
    header = [h.strip() for h in first[0].split(",")]
    if any(c in header for c in RATE_TIME_COLUMNS) and p.suffix.lower() != ".jsonl":
        demand = _rate_level(plan, p, rng, start, trace_lengths)
    else:
        demand = _request_level(plan, p, rng, start)
    return _finish(plan, demand, days, scale_to_peak, rng)


def profile_demand(
    plan: Plan, scenarios: Sequence[Scenario], days: float, rng: np.random.Generator, start: float | None = None
) -> Demand:
    """fleetsim's weekly profile (x the scenarios' rate and bursts), Poisson per minute, routed by the plan."""
    t0 = default_start(plan) if start is None else start
    minutes = round(days * 1440)
    mids = t0 + 60.0 * np.arange(minutes) + 30.0
    expected = np.maximum(rates_at(plan, mids, scenarios), 0.0) * 60.0 * plan.workload.calls_per_request
    shares = _plan_shares(plan, rng)
    arrivals = rng.poisson(shares[:, None] * expected[None, :])
    return Demand("fleetsim:profile", t0, arrivals, _names(plan))


def _names(plan: Plan) -> tuple[str, ...]:
    return tuple(t.name for t in plan.tiers)


def _finish(plan: Plan, demand: Demand, days: float | None, scale_to_peak: bool, rng: np.random.Generator) -> Demand:
    if days is not None:
        demand = demand.head(round(days * 1440))
    if demand.minutes < MIN_MINUTES:
        raise TraceError(demand.source, None, f"too short: {demand.minutes} minute(s), need at least {MIN_MINUTES}")
    if not scale_to_peak:
        return demand
    peak = peak_5m_rps(demand.total_rps())
    if peak <= 0:
        raise TraceError(demand.source, None, "no requests to scale to the plan's peak")
    factor = plan.workload.arrival.peak_rps * plan.workload.calls_per_request / peak
    return Demand(demand.source, demand.start, rng.poisson(demand.arrivals * factor), demand.tiers, factor)


def peak_5m_rps(rps: np.ndarray) -> float:
    """The highest 5-minute mean rate (the plan's peak is sustained, not a 1-minute burst)."""
    if rps.size < 5:
        return float(rps.mean()) if rps.size else 0.0
    window = np.convolve(rps, np.ones(5) / 5.0, mode="valid")
    return float(window.max())


def _plan_shares(plan: Plan, rng: np.random.Generator) -> np.ndarray:
    return _shares(plan, prompt_distribution(plan), rng)


def _shares(plan: Plan, prompts: LogNormal | LengthDistribution, rng: np.random.Generator) -> np.ndarray:
    """Share of calls each tier takes when prompts follow `prompts`: `route` at the distribution's quantiles."""
    from statistics import NormalDist

    z = np.array([NormalDist().inv_cdf(float(q)) for q in _QUANTILES])
    lengths = np.exp(prompts.mu + prompts.sigma * z)
    picks = route(plan, lengths, rng)
    return np.bincount(picks, minlength=len(plan.tiers)) / lengths.size


def _request_level(plan: Plan, path: Path, rng: np.random.Generator, start: float | None) -> Demand:
    trace = load_trace(path)
    t0 = start if start is not None else _first_local_time(plan, path)
    t0 = math.floor(t0 / 60.0) * 60.0
    minute = np.floor(trace.offsets / 60.0).astype(np.int64)
    tier = route(plan, trace.prompt_tokens.astype(float), rng)
    arrivals = np.zeros((len(plan.tiers), int(minute.max()) + 1), dtype=np.int64)
    np.add.at(arrivals, (tier, minute), 1)
    return Demand(str(path), t0, arrivals, _names(plan))


def _first_local_time(plan: Plan, path: Path) -> float:
    """The Azure CSV's first TIMESTAMP read as wall-clock time in the plan's zone; else the default start."""
    if path.suffix.lower() != ".csv":
        return default_start(plan)
    with path.open(encoding="utf-8") as f:
        rows = csv.reader(f)
        next(rows, None)
        times = [r[0] for r, _ in zip(rows, range(1), strict=False) if r]
    if not times:
        return default_start(plan)
    local = datetime.strptime(times[0].split(".")[0].strip(), "%Y-%m-%d %H:%M:%S")
    return local.replace(tzinfo=ZoneInfo(plan.workload.business_hours.timezone)).timestamp()


def _rate_level(plan: Plan, path: Path, rng: np.random.Generator, start: float | None, lengths: bool) -> Demand:
    w = read_rate_windows(path, plan.workload.business_hours.timezone)
    if not lengths:
        w = replace(w, p50=None, p95=None)
    t0 = start if start is not None else (w.first if w.first is not None else default_start(plan))
    t0 = math.floor(t0 / 60.0) * 60.0
    widths = w.widths
    minutes = max(1, round(float(w.starts[-1] + widths[-1]) / 60.0))
    edges = 60.0 * np.arange(minutes + 1)
    cumulative = np.concatenate([[0.0], np.cumsum(w.expected)])
    at_edges = np.interp(edges, np.append(w.starts, w.starts[-1] + widths[-1]), cumulative)
    expected = np.diff(at_edges)  # calls per minute, each window's spread uniformly over its span
    window_of = np.clip(np.searchsorted(w.starts, edges[:-1] + 30.0, side="right") - 1, 0, w.starts.size - 1)
    shares = _window_shares(plan, w, rng)[:, window_of]
    if w.counted:
        totals = np.rint(expected).astype(np.int64)
        arrivals = np.stack([rng.binomial(totals, np.clip(s, 0.0, 1.0)) for s in _conditional(shares)])
        arrivals = _multinomial_fix(totals, arrivals)
    else:
        arrivals = rng.poisson(shares * expected[None, :])
    return Demand(str(path), t0, arrivals.astype(np.int64), _names(plan))


def _conditional(shares: np.ndarray) -> np.ndarray:
    """Sequential binomial split probabilities: tier k's share of what the tiers before it left."""
    left = 1.0 - np.concatenate([np.zeros((1, shares.shape[1])), np.cumsum(shares, axis=0)[:-1]])
    return np.where(left > 1e-12, shares / np.maximum(left, 1e-12), 0.0)


def _multinomial_fix(totals: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """Turn sequential binomials on the whole count into a split of it: each draws from what is left."""
    out = np.zeros_like(draws)
    left = totals.copy()
    for k in range(draws.shape[0]):
        out[k] = np.minimum(draws[k], left)
        left = left - out[k]
    out[-1] += left
    return out


def _window_shares(plan: Plan, w: RateWindows, rng: np.random.Generator) -> np.ndarray:
    if w.p50 is None or w.p95 is None:
        return np.repeat(_plan_shares(plan, rng)[:, None], w.starts.size, axis=1)
    cache: dict[tuple[float, float], np.ndarray] = {}
    fallback = _plan_shares(plan, rng)
    out = np.empty((len(plan.tiers), w.starts.size))
    for i, (a, b) in enumerate(zip(w.p50.tolist(), w.p95.tolist(), strict=True)):
        if not (a > 0 and b > 0):
            out[:, i] = fallback
            continue
        key = (round(a), round(max(a, b)))
        if key not in cache:
            cache[key] = _shares(plan, LogNormal.from_percentiles(max(key[0], 1), max(key[1], key[0], 1)), rng)
        out[:, i] = cache[key]
    return out
