"""What one replica of a tier does at a steady arrival rate, measured on fleetsim's aggregate physics.

For each tier the replay runs fleetsim's own call drawing (`draw_calls`: the plan's prompt and output
distributions, prefix reuse, routing, the replica's intake rules) and latency model (`apply_latencies`:
roofline steps, chunked prefill, the batch-limit gate, client timeouts) on one replica at a grid of
Poisson rates, and keeps per rate the TTFT and TPOT quantiles, the running and waiting requests, KV use
and the mean output. The per-minute replay reads this curve at each minute's per-replica rate; above
the highest stable rate the excess waits in a queue (monitor.replay.fleet), so the curve itself is
never extrapolated.

Measured, not modelled twice: the capacity is the rate the replica admits when overloaded (what the
gate lets through), and the grid spans 2%..95% of it.

`live_curve` measures the same on fleetsim's live step engine (fleetsim.replica: vLLM's scheduler step by
step, chunked prefill, the paged KV cache), the finer model the aggregate approximates: same workload, same
rates, so the two curves and the SLO rate each gives (`slo_rate`) can be compared
(`benchmarks/bench_aggregate_live.py`, tests/replay/test_curve_live.py). Too slow for the whole grid (about
0.4 s a rate against milliseconds), it measures the rates around the SLO knee (`_knee_rates`), where the
replay judges minutes: there the aggregate's tails run 5-12% short of the live engine's (TTFT p95 on the
standard tier, TPOT p95 on long-context), and since latency climbs steeply there, the aggregate put one
replica's SLO rate 9-15% above the live engine's. The coarse grid's chords hid that by erring the other
way; measured densely, the replay judged with the aggregate alone would have been as generous.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from fleetsim.aggregate_calls import CallArrays, Serving, Window, draw_calls
from fleetsim.aggregate_latency import TierLatency, apply_latencies
from fleetsim.fleet import engine_config
from fleetsim.metrics import VllmMetrics
from fleetsim.replica import Replica, Request
from fleetsim.scenarios import Effects
from fleetsim.workload import WorkloadModel, arrival_times
from monitor.advice.capacity import capacity_table
from monitor.plan.model import Arrival, Plan, Tier

__all__ = ["QUANTILES", "TierCurve", "live_curve", "meets_slo", "p95_at", "slo_rate", "tier_curve"]

QUANTILES = (np.arange(40) + 0.5) / 40  # the latency distribution at each rate, as 40 equal-mass points
_FRACTIONS = (0.02, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95)
_WARMUP_S, _STEP_S = 180.0, 15.0
_KNEE_SPAN, _KNEE_POINTS = (0.5, 1.5), 11  # the dense part of the grid around the SLO knee (`_knee_rates`)
_CALLS = 3000  # measured calls per rate (the span grows at low rates, within these bounds)
_SPAN_S = (120.0, 6 * 3600.0)
_T0 = 1_767_600_000.0  # any instant: the rate is flat


@dataclass(frozen=True)
class TierCurve:
    """Per-replica behaviour at `rates` (req/s, ascending; the last is the highest stable rate)."""

    tier: str
    rates: np.ndarray
    ttft: np.ndarray  # (rates, QUANTILES) seconds
    tpot: np.ndarray
    running: np.ndarray  # mean requests running per replica
    waiting: np.ndarray  # mean requests waiting inside the engine per replica
    kv_usage: np.ndarray  # mean KV cache usage 0..1
    output_tokens: float  # mean generated tokens per request
    saturated_rps: float  # what one overloaded replica admits

    @property
    def stable_rps(self) -> float:
        return float(self.rates[-1])

    def at(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """TTFT and TPOT quantile rows at per-replica rates x (clipped to the grid): (len(x), Q) each."""
        x = np.clip(x, self.rates[0], self.rates[-1])
        i = np.clip(np.searchsorted(self.rates, x, side="right") - 1, 0, self.rates.size - 2)
        w = ((x - self.rates[i]) / (self.rates[i + 1] - self.rates[i]))[:, None]
        return (1 - w) * self.ttft[i] + w * self.ttft[i + 1], (1 - w) * self.tpot[i] + w * self.tpot[i + 1]

    def scalar(self, name: str, x: float) -> float:
        values: np.ndarray = getattr(self, name)
        return float(np.interp(x, self.rates, values))


def tier_curve(
    plan: Plan,
    tier: Tier,
    effects: Effects = Effects(),  # noqa: B008
    seed: int = 0,
    calls: int = _CALLS,
    knee_engine: Literal["live", "aggregate"] = "live",
) -> TierCurve:
    """The curve of one tier that takes traffic (see the module docstring), `calls` per rate of the grid;
    the rates around the SLO knee on `knee_engine` (the aggregate's alone to compare the two models)."""
    index = [t.name for t in plan.tiers].index(tier.name)
    share = _share(plan, index, seed)
    guess = max(capacity_table(plan, tier, 1.0).requests_per_second_per_replica, 0.05)
    overload = _run(plan, index, share, 4.0 * guess, effects, seed, _CALLS)
    saturated = overload.admitted_rps
    if overload.admitted_rps >= 3.5 * guess:  # the guess was far too low: measure again above it
        saturated = _run(plan, index, share, 4.0 * overload.admitted_rps, effects, seed, _CALLS).admitted_rps
    runs = [_run(plan, index, share, f * saturated, effects, seed + k, calls) for k, f in enumerate(_FRACTIONS)]
    knee = _knee_rates(plan, tier, _assemble(tier, runs, saturated, _rising))
    if knee.size:  # the knee's span is the knee engine's alone: two models' draws do not mix there
        runs = [r for r in runs if not knee[0] <= r.rate <= knee[-1]]
    more = 2 * calls  # a p95 at the knee is a few hundred calls' worth of tail: the SLO is decided there
    for k, rate in enumerate(knee, start=len(_FRACTIONS)):
        if knee_engine == "live":
            runs.append(_live_run(plan, tier, share, float(rate), effects, seed + k, more))
        else:
            runs.append(_run(plan, index, share, float(rate), effects, seed + k, more))
    return _assemble(tier, sorted(runs, key=lambda r: r.rate), saturated, _rising)


def _knee_rates(plan: Plan, tier: Tier, coarse: TierCurve) -> np.ndarray:
    """Rates between half and one and a half times the SLO knee the coarse grid shows, every tenth of it,
    below the highest stable rate: where the replay judges minutes and reads the engines' gauges.

    Why: the coarse grid steps by a tenth of saturation, and a long-context replica saturates at 2.2x its SLO
    knee, so its operating rates fell between 0.169, 0.253 and 0.338 req/s, and everything the replay read
    there (latencies, the engines' gauges) was a chord of a convex curve, latency overstated between the
    points. None where the replica meets the SLO up to its highest stable rate (throughput, not the SLO,
    limits it)."""
    knee = slo_rate(plan, tier, coarse)
    if knee <= 0.0 or knee >= coarse.stable_rps:  # no knee below the stable rate: throughput limits it
        return np.array([])
    rates = knee * np.linspace(_KNEE_SPAN[0], _KNEE_SPAN[1], _KNEE_POINTS)
    return rates[(rates > coarse.rates[0]) & (rates < coarse.stable_rps)]


def _assemble(
    tier: Tier, runs: list[_Run], saturated: float, column: Callable[[list[np.ndarray] | list[float]], np.ndarray]
) -> TierCurve:
    return TierCurve(
        tier=tier.name,
        rates=np.array([r.rate for r in runs]),
        ttft=column([r.ttft for r in runs]),
        tpot=column([r.tpot for r in runs]),
        running=column([r.running for r in runs]),
        waiting=column([r.waiting for r in runs]),
        kv_usage=column([r.kv for r in runs]),
        output_tokens=float(np.mean([r.output for r in runs])),
        saturated_rps=saturated,
    )


def _rising(rows: list[np.ndarray] | list[float]) -> np.ndarray:
    """Latency and occupancy rise with load in expectation; a sample's dip below a lower rate is noise, so
    each column is fitted by the closest non-decreasing sequence (least squares: isotonic regression, the
    pool-adjacent-violators algorithm). Why not the running maximum over the rates below: on a grid dense
    near the knee, every high draw would raise all the rates above it, the noise ratcheting the curve up."""
    from scipy.optimize import isotonic_regression  # scipy's import is slow; only a replay measures curves

    values = np.array(rows, dtype=float)
    flat = values.reshape(values.shape[0], -1)
    fitted = np.column_stack([isotonic_regression(flat[:, j]).x for j in range(flat.shape[1])])
    # a row's quantile points stay in order: isotonic regression is monotone in its data, and each column
    # lies below the next
    return fitted.reshape(values.shape)


def _share(plan: Plan, index: int, seed: int) -> float:
    from monitor.replay.demand import _plan_shares  # one routing estimate for both

    return float(_plan_shares(plan, np.random.default_rng(seed))[index])


@dataclass(frozen=True)
class _Run:
    rate: float
    admitted_rps: float
    ttft: np.ndarray
    tpot: np.ndarray
    running: float
    waiting: float
    kv: float
    output: float


def _flat(plan: Plan, rps: float) -> Plan:
    arrival = Arrival(peak_rps=rps, average_rps=rps, peak_hours_per_day=24)
    workload = plan.workload.model_copy(update={"arrival": arrival, "calls_per_request": 1.0})
    return plan.model_copy(update={"workload": workload})


def _run(plan: Plan, index: int, share: float, rate: float, effects: Effects, seed: int, count: int) -> _Run:
    """One replica at `rate` calls/s for the warm-up plus the measured span (about `count` calls);
    statistics on the measured part."""
    configs = tuple(engine_config(plan, t, effects) for t in plan.tiers)
    replicas = tuple((0,) if i == index else () for i in range(len(plan.tiers)))
    span = float(np.clip(count / max(rate, 1e-9), *_SPAN_S))
    window = Window(_T0, round((_WARMUP_S + span) / _STEP_S), _STEP_S)
    rng = np.random.default_rng([seed, index, 0x5EED])
    calls = draw_calls(_flat(plan, rate / max(share, 1e-9)), (), window, Serving(replicas, configs), rng, seed, 0.0)
    mine = calls.take(np.nonzero((calls.tier == index) & (calls.replica >= 0))[0])
    local = np.zeros(len(mine), dtype=np.int64)
    apply_latencies(TierLatency.start(configs[index], 1), mine, local, window, rng)
    return _measure(mine, window, rate, configs[index].num_gpu_blocks * 16)


def _measure(calls: CallArrays, window: Window, rate: float, kv_tokens: float) -> _Run:
    begin, end = window.start - window.step + _WARMUP_S, window.end - window.step
    span = end - begin
    measured = (calls.arrival >= begin) & (calls.arrival < end)
    served = measured & ~calls.aborted
    admitted = ((calls.started >= begin) & (calls.started < end) & ~calls.aborted).sum() / span
    ttft = (calls.queue + calls.prefill)[served]
    many = served & (calls.target > 1)
    tpot = (calls.decode / np.maximum(calls.target - 1, 1))[many]
    running = float((calls.prefill + calls.decode)[served].sum()) / span
    waiting = float(calls.queue[measured].sum()) / span
    per_request = (calls.prompt - calls.hit + calls.target / 2.0)[served]
    kv = min(1.0, running * float(per_request.mean()) / kv_tokens) if per_request.size else 0.0
    return _Run(
        rate=rate,
        admitted_rps=float(admitted),
        ttft=np.quantile(ttft, QUANTILES) if ttft.size else np.zeros(QUANTILES.size),
        tpot=np.quantile(tpot, QUANTILES) if tpot.size else np.zeros(QUANTILES.size),
        running=running,
        waiting=waiting,
        kv=kv,
        output=float(calls.target[served].mean()) if served.any() else 0.0,
    )


def live_curve(
    plan: Plan,
    tier: Tier,
    rates: np.ndarray,
    effects: Effects = Effects(),  # noqa: B008
    seed: int = 0,
    calls: int = 20_000,
) -> TierCurve:
    """The tier's curve at `rates` (req/s per replica, ascending) on the live engine, `calls` per rate."""
    index = [t.name for t in plan.tiers].index(tier.name)
    share = _share(plan, index, seed)
    runs = [_live_run(plan, tier, share, float(r), effects, seed + k, calls) for k, r in enumerate(rates)]
    return _assemble(tier, runs, float(rates[-1]), _as_measured)


def _as_measured(rows: list[np.ndarray] | list[float]) -> np.ndarray:
    return np.array(rows, dtype=float)


def _live_run(plan: Plan, tier: Tier, share: float, rate: float, effects: Effects, seed: int, calls: int) -> _Run:
    """One replica at `rate` calls/s for the warm-up plus the measured span (as `tier_curve`'s runs)."""
    config = engine_config(plan, tier, effects)
    flat = _flat(plan, rate / max(share, 1e-9))
    rng = np.random.default_rng([seed, 0x11FE])
    workload = WorkloadModel(flat, ())
    replica = Replica(config, VllmMetrics(config.max_model_len, _T0, "v1"), _T0, np.random.default_rng([seed, 1]))
    span = float(np.clip(calls / max(rate, 1e-9), *_SPAN_S))
    begin, end = _T0 + _WARMUP_S, _T0 + _WARMUP_S + span
    done: list[Request] = []
    t = _T0
    while t < end:  # calls are handed over a scrape step at a time, as the fleet does
        t1 = min(end, t + _STEP_S)
        for call in workload.calls(arrival_times(flat, t, t1, (), rng, seed), rng):
            if call.tier == tier.name:
                replica.submit(call)
        done.extend(replica.advance(t1))
        t = t1
    held = [*replica.running, *replica.waiting, *replica.inbox]
    return _live_measure(rate, done, held, begin, end, config.num_gpu_blocks * 16)


def _live_measure(
    rate: float, done: list[Request], held: list[Request], begin: float, end: float, kv_tokens: float
) -> _Run:
    """As `_measure` does for the aggregate's calls: the requests that arrived in the measured span."""
    span = end - begin
    ok = [r for r in done if r.arrival >= begin and r.first_token_at >= 0 and r.finish_reason in ("stop", "length")]
    ttft = np.array([r.first_token_at - r.arrival for r in ok])
    tpot = np.array([(r.finished_at - r.first_token_at) / (r.generated - 1) for r in ok if r.generated > 1])

    def inside(a: float, b: float) -> float:
        return max(0.0, min(b, end) - max(a, begin))

    every = [*done, *held]
    running = sum(
        inside(r.scheduled_at, r.finished_at if r.finished_at >= 0 else end) for r in every if r.scheduled_at >= 0
    )
    waiting = sum(inside(r.arrival, r.scheduled_at if r.scheduled_at >= 0 else end) for r in every)
    per_request = np.mean([r.prompt - r.cached + r.target / 2.0 for r in ok]) if ok else 0.0
    started = sum(1 for r in every if begin <= r.scheduled_at < end)
    return _Run(
        rate=rate,
        admitted_rps=started / span,
        ttft=np.quantile(ttft, QUANTILES) if ttft.size else np.zeros(QUANTILES.size),
        tpot=np.quantile(tpot, QUANTILES) if tpot.size else np.zeros(QUANTILES.size),
        running=running / span,
        waiting=waiting / span,
        kv=min(1.0, running / span * float(per_request) / kv_tokens),
        output=float(np.mean([r.target for r in ok])) if ok else 0.0,
    )


# Reading the SLO off a curve: the knee places the curve's own dense rates, so these live here
# (monitor.replay.slo, which judges the replayed minutes, imports them from this module).


def p95_at(points: np.ndarray) -> np.ndarray:
    """p95 of each row of equal-mass quantile points (linear between the two points around 0.95)."""
    i = int(np.searchsorted(QUANTILES, 0.95)) - 1
    w = (0.95 - QUANTILES[i]) / (QUANTILES[i + 1] - QUANTILES[i])
    out: np.ndarray = (1 - w) * points[:, i] + w * points[:, i + 1]
    return out


def meets_slo(plan: Plan, tier: Tier, curve: TierCurve, per_replica_rps: np.ndarray) -> np.ndarray:
    """Whether a replica at each rate keeps up and meets the tier's p95 TTFT and TPOT SLOs, no queue ahead."""
    ttft_slo, tpot_slo = plan.slo_for(tier)
    ttft, tpot = curve.at(per_replica_rps)
    meets: np.ndarray = (per_replica_rps <= curve.stable_rps) & (p95_at(ttft) <= ttft_slo) & (p95_at(tpot) <= tpot_slo)
    return meets


def slo_rate(plan: Plan, tier: Tier, curve: TierCurve, points: int = 4001) -> float:
    """The highest rate one replica takes within the SLO by the curve (on a grid up to its stable rate; 0
    where even its lowest rate misses)."""
    rates = np.linspace(curve.rates[0], curve.stable_rps, points)
    ok = meets_slo(plan, tier, curve, rates)
    return float(rates[ok].max()) if ok.any() else 0.0
