"""`planwatch size --verify`: the plan at 1x, 2x and 3x its peak through fleetsim's aggregate model (the
seed's measurement plan asks for exactly these loads), next to what the sizing formulas say.

Each load runs the plan's planned replicas for `minutes` ending at the busiest point of its weekly
profile, the arrival rate scaled by the load (a `rate_multiplier` scenario), with a warm-up of the same
length first so the histograms start from a running fleet. Per tier it reads, as Prometheus would from
the emulated vLLM series: TTFT and TPOT p50/p95/p99 (histogram_quantile over the window's increase),
goodput at the SLO (the share of requests within both SLOs, from the two histograms taken as
independent), mean KV occupancy and preemptions per minute.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fleetsim.aggregate_series import TierTotals
from fleetsim.backfill_run import BackfillSpec, RunReport, _model, _windows, _world
from fleetsim.fleet import Fleet, FleetOptions
from fleetsim.scenarios import Effects, Scenario
from fleetsim.workload import rate_at
from monitor.plan.model import Plan

__all__ = ["EmulatedTier", "busiest_time", "emulate_load"]

_TTFT = "vllm:time_to_first_token_seconds"
_TPOT = "vllm:request_time_per_output_token_seconds"
_STEP = 15
_WINDOW = 300  # seconds per model window, so the judged span starts at a window boundary
_WEEK_START = 1_796_947_200.0  # Monday 2026-12-07 00:00 UTC: any week will do, the profile repeats weekly


@dataclass(frozen=True)
class EmulatedTier:
    tier: str
    load: float
    requests: float
    ttft: tuple[float, float, float]  # p50, p95, p99 seconds (nan without requests)
    tpot: tuple[float, float, float]
    ttft_p95_bucket: tuple[float, float]  # the histogram bucket the p95 falls in: its resolution
    tpot_p95_bucket: tuple[float, float]
    goodput: float  # share of requests within both SLOs
    kv_occupancy: float  # mean over the window
    preemptions_per_minute: float


def busiest_time(plan: Plan) -> float:
    """The stamp (on the emulator's 15 s grid) where the weekly profile peaks."""
    grid = _WEEK_START + np.arange(0, 7 * 86400, 300.0)
    rates = [rate_at(plan, float(t)) for t in grid]
    peak = float(grid[int(np.argmax(rates))])
    return peak - peak % _STEP


def emulate_load(plan: Plan, load: float, minutes: float = 20.0, seed: int = 0) -> list[EmulatedTier]:
    """Every routed tier of `plan` at `load` x its arrival profile, judged over `minutes` at the peak."""
    end = busiest_time(plan)
    span = minutes * 60.0
    warm = end - 2 * span
    scenario = Scenario(f"load-x{load:g}", "verify: the arrival profile scaled", Effects(rate_multiplier=load))
    spec = BackfillSpec(plan, (scenario,), warm, end, _STEP, seed, "v1", Path("/nonexistent"), "verify", _WINDOW)
    fleet = Fleet(plan, spec.start, spec.scenarios, FleetOptions(seed=seed))
    fleet.populate()
    world = _world(spec, fleet)
    rng = np.random.default_rng([seed, 0x5EEF1])
    judged_from = end - span
    snapshot: dict[str, dict[str, np.ndarray]] = {}
    kv: dict[str, list[float]] = {t.pods[0].tier.name: [] for t in world.tiers}
    for _, chunks in _windows(spec):
        for window in chunks:
            if window.start >= judged_from and not snapshot:
                snapshot = {t.pods[0].tier.name: _cumulative(t.totals) for t in world.tiers}
            _model(spec, world, window, rng, RunReport(), render=False)
            if window.start >= judged_from:
                for t in world.tiers:
                    if t.last is not None:
                        kv[t.pods[0].tier.name].append(float(np.mean(t.last.gauges["vllm:kv_cache_usage_perc"])))
    out = []
    for t in world.tiers:
        name = t.pods[0].tier.name
        before = snapshot.get(name) or _zero(t.totals)
        now = _cumulative(t.totals)
        out.append(_judge(plan, name, load, t.totals.bounds, before, now, kv[name], minutes))
    return out


def _cumulative(totals: TierTotals) -> dict[str, np.ndarray]:
    """The tier's cumulative histograms and preemptions, summed over its replicas."""
    return {
        _TTFT: totals.buckets[_TTFT].sum(axis=0).copy(),
        _TPOT: totals.buckets[_TPOT].sum(axis=0).copy(),
        "preemptions": np.array([totals.counters["vllm:num_preemptions"].sum()]),
    }


def _zero(totals: TierTotals) -> dict[str, np.ndarray]:
    return {k: np.zeros_like(v) for k, v in _cumulative(totals).items()}


def _judge(
    plan: Plan,
    name: str,
    load: float,
    bounds: dict[str, np.ndarray],
    before: dict[str, np.ndarray],
    now: dict[str, np.ndarray],
    kv: list[float],
    minutes: float,
) -> EmulatedTier:
    ttft_slo, tpot_slo = plan.slo_for(plan.tier(name))
    ttft = now[_TTFT] - before[_TTFT]
    tpot = now[_TPOT] - before[_TPOT]
    q = (0.5, 0.95, 0.99)
    good = _share_below(ttft, bounds[_TTFT], ttft_slo) * _share_below(tpot, bounds[_TPOT], tpot_slo)
    return EmulatedTier(
        tier=name,
        load=load,
        requests=float(ttft[-1]),
        ttft=tuple(_quantile(ttft, bounds[_TTFT], x) for x in q),  # type: ignore[arg-type]
        tpot=tuple(_quantile(tpot, bounds[_TPOT], x) for x in q),  # type: ignore[arg-type]
        ttft_p95_bucket=_bucket(ttft, bounds[_TTFT], 0.95),
        tpot_p95_bucket=_bucket(tpot, bounds[_TPOT], 0.95),
        goodput=good,
        kv_occupancy=float(np.mean(kv)) if kv else math.nan,
        preemptions_per_minute=float((now["preemptions"] - before["preemptions"])[0]) / minutes,
    )


def _quantile(cumulative: np.ndarray, bounds: np.ndarray, q: float) -> float:
    """histogram_quantile: linear inside the bucket that holds rank q x count (the last bound past it)."""
    total = float(cumulative[-1])
    if total <= 0:
        return math.nan
    rank = q * total
    i = int(np.searchsorted(cumulative, rank, side="left"))
    if i >= bounds.size:
        return float(bounds[-1])
    low = float(bounds[i - 1]) if i > 0 else 0.0
    below = float(cumulative[i - 1]) if i > 0 else 0.0
    return low + (float(bounds[i]) - low) * (rank - below) / max(float(cumulative[i]) - below, 1e-12)


def _bucket(cumulative: np.ndarray, bounds: np.ndarray, q: float) -> tuple[float, float]:
    """(lower, upper) bound of the bucket holding rank q x count."""
    if float(cumulative[-1]) <= 0:
        return (math.nan, math.nan)
    i = int(np.searchsorted(cumulative, q * float(cumulative[-1]), side="left"))
    if i >= bounds.size:
        return (float(bounds[-1]), math.inf)
    return (float(bounds[i - 1]) if i > 0 else 0.0, float(bounds[i]))


def _share_below(cumulative: np.ndarray, bounds: np.ndarray, limit: float) -> float:
    """The share of observations at or below `limit`, linear inside its bucket."""
    total = float(cumulative[-1])
    if total <= 0:
        return math.nan
    i = int(np.searchsorted(bounds, limit, side="left"))
    if i >= bounds.size:
        return float(cumulative[bounds.size - 1]) / total
    low = float(bounds[i - 1]) if i > 0 else 0.0
    below = float(cumulative[i - 1]) if i > 0 else 0.0
    inside = (limit - low) / (float(bounds[i]) - low) * (float(cumulative[i]) - below)
    return (below + inside) / total
