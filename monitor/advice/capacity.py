"""How much demand N replicas of a tier can take within the SLO, calibrated on production when possible.

The sizing model predicts output tokens/s per replica at any batch. When production ran replicas at a
meaningful batch, the observed tokens/s over the predicted ones is a calibration factor that scales both
efficiencies; otherwise the sizing model is trusted as it is, and the advice says so.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from monitor.advice.model import AdviceSettings
from monitor.memo import IdentityMemo
from monitor.observe.model import STEADY_BATCH_RATIO, TierObservation
from monitor.plan.model import Plan, Tier
from monitor.sizing.capacity import ReplicaModel, max_batch_at_slo
from monitor.sizing.latency import ttft_p95
from monitor.sizing.tier import replica_model, replicas_for_ttft, ttft_floor_seconds

__all__ = ["Calibration", "CapacityTable", "calibrate", "capacity_table", "minute_quantile"]


@dataclass(frozen=True)
class Calibration:
    factor: float
    source: str  # a sentence: which was used and why
    steady: float | None = None  # the factor to remember: this one if a steady window gave it, else the earlier


def calibrate(
    plan: Plan, tier: Tier, obs: TierObservation, settings: AdviceSettings, remembered: float | None = None
) -> Calibration:
    """The factor from the window's tokens/s at its batch; where the window mixed batches (`unsteady_batch`)
    or ran above the SLO batch, the factor the last steady window gave (`remembered`), since the engine's
    efficiency does not change with the load: a ramp is such a window, and the sizing model alone reads a
    replica above what it serves.

    Why not above the SLO batch (past STEADY_BATCH_RATIO x it): a batch there is a queue's (demand above what
    the SLO allows, or a tier sized for throughput at night), and a queue's window mixes loads even where its
    ends agree: on the slow-cold-start replay an evening's hour that ended on one replica at 0.65-0.77 req/s,
    past its knee, read 91 tokens/s against 158 modelled at a batch of 4.4 (the SLO's is 2.4), a factor of
    0.58 that the next morning's ramp was sized on (18 replicas ready where 10 served)."""
    base = capacity_table(plan, tier, 1.0)  # the sizing model at the plan's efficiencies and its SLO batch
    model, slo_batch = base.model, base.batch
    batch, tps = obs.batch_per_replica.value, obs.output_tokens_per_second_per_replica.value
    if batch is None or tps is None:
        return Calibration(1.0, "sizing model (no observed batch and throughput to calibrate on)", remembered)
    if slo_batch == 0 or batch < settings.min_calibration_batch_fraction * slo_batch:
        return Calibration(1.0, f"sizing model (observed batch {batch:.1f} too small to calibrate on)", remembered)
    unsteady = obs.unsteady_batch(model.workload.output_mean) or _above_slo_batch(batch, slo_batch)
    if unsteady is not None:
        if remembered is None:
            return Calibration(1.0, f"sizing model ({unsteady})")
        return Calibration(remembered, f"calibrated on production earlier, on a steady window ({unsteady})", remembered)
    predicted = model.output_tokens_per_second(batch)
    low, high = settings.calibration_bounds
    # two decimals: finer is noise in a ratio of two measured rates, and equal factors share one table
    factor = round(min(high, max(low, tps / predicted)), 2)
    return Calibration(
        factor,
        f"calibrated on production: {tps:,.0f} tokens/s observed vs {predicted:,.0f} modelled at batch {batch:.1f}",
        factor,
    )


def _above_slo_batch(batch: float, slo_batch: float) -> str | None:
    if batch <= STEADY_BATCH_RATIO * slo_batch:
        return None
    return f"the window's mean batch {batch:.1f} per replica is a queue's, above the SLO batch {slo_batch:g}"


class CapacityTable:
    """How much demand n replicas of a tier serve within both SLOs: min(n x requests/s per replica, the
    highest demand whose TTFT p95 estimate still meets the SLO), and the replicas a demand needs. Computed
    lazily and remembered, since advice asks about a handful of replica counts, not every one up to a
    1,000-replica fleet. Where the SLO is below the TTFT floor (not `ttft_feasible`) both count throughput
    only, and the advice warns; where no batch meets the TPOT SLO (not `tpot_feasible`) the batch is 1 and
    the TTFT is not feasible either."""

    def __init__(
        self,
        model: ReplicaModel,
        batch: float,
        ttft_slo: float,
        feasible: bool,
        minute_z: float = 0.0,
        tpot_feasible: bool = True,
    ) -> None:
        self.model, self.batch, self.ttft_slo, self.ttft_feasible = model, batch, ttft_slo, feasible
        self.minute_z, self.tpot_feasible = minute_z, tpot_feasible
        self.requests_per_second_per_replica = model.requests_per_second(batch) if batch else 0.0
        self._known: dict[int, float] = {0: 0.0}
        self._demands: list[float] = []  # demands searched, ascending, and the replicas each needs
        self._needs: list[int] = []

    def capacity_of(self, replicas: int) -> float:
        if replicas not in self._known:
            throughput = replicas * self.requests_per_second_per_replica
            bound = throughput if not self.ttft_feasible else _ttft_bound(self.model, replicas, self.batch,
                                                                           throughput, self.ttft_slo)  # fmt: skip
            self._known[replicas] = bound
        return self._known[replicas]

    def minute_rate(self, demand_rps: float, upper_rps: float | None = None, bursts: float = 0.0) -> float:
        """The rate a minute of this mean demand reaches at the availability's quantile: r + z sqrt(r / 60);
        for a forecast point of mean r and upper bound u, r + sqrt((u - r)^2 + z^2 r / 60). Where production's
        minutes vary beyond Poisson's (`bursts`, alpha of `monitor.observe.dispersion`: a minute's rate is its
        mean times a factor of variance alpha), the minute's variance is r / 60 + alpha r^2, so its margin is
        z sqrt(r / 60 + alpha r^2); alpha = 0 (Poisson, or unmeasured) is the formula above exactly.

        Why the minute: the demand the advice reads (a 5-minute forecast bound, a rate over a window) is a
        mean, but the SLO is judged minute by minute, and a minute's request count is Poisson around 60 r with
        standard deviation sqrt(60 r), i.e. sqrt(r / 60) in req/s. Sized for the mean, a replica count is
        broken by the noisy minutes alone (a 20-minute cold-start replay lost morning minutes at 12.3-12.5
        req/s on replicas sized for 12.57); z is the normal quantile of the availability target, so a minute
        exceeds the sized rate about as often as the SLO allows minutes to fail.

        Why the root of the sum of squares with a forecast: a minute's rate is the forecast's mean, plus the
        forecast's error, plus the minute's count around the rate that comes, and the two errors are
        independent. At one confidence, the quantile of a sum of independent normal errors is the root of the
        sum of the squares of theirs, so the margins add in quadrature, each at its own confidence: the
        bound's, u - r (the plan's 80% bound), and the count's, z sqrt(r / 60) (its variance averages to the
        mean rate's over the forecast's error: the law of total variance). Added linearly, u + z sqrt(u / 60)
        as before, they sized for the forecast missing high and the minute landing in its availability tail
        at once; in quadrature each margin is still covered whole where the other is small. Measured on the
        14-day replays (`benchmarks/bench_replay.py`, one draw), linear to quadrature: ServeGen (plan
        lengths) 1.197x -> 1.149x the oracle's GPU-hours, SLO minutes 99.98% -> 99.87%; fleetsim's
        slow-cold-start profile 1.187x -> 1.157x, 99.85% at both. With no forecast bound (u = r) both read
        r + z sqrt(r / 60), exactly."""
        upper = demand_rps if upper_rps is None else max(upper_rps, demand_rps)
        if upper <= 0:
            return 0.0
        mean = max(demand_rps, 0.0)
        return mean + math.hypot(upper - mean, self.minute_z * math.sqrt(mean / 60.0 + bursts * mean * mean))

    def replicas_for_minutes(self, demand_rps: float, bursts: float = 0.0) -> int:
        """The advice's lookup: the fewest replicas whose capacity covers `minute_rate(demand)`."""
        return self.replicas_for(self.minute_rate(demand_rps, bursts=bursts))

    def serves_minutes(self, replicas: int, demand_rps: float, bursts: float = 0.0) -> bool:
        """Whether `replicas` hold every minute of this mean demand (the same rate `replicas_for_minutes` sizes)."""
        return self.minute_rate(demand_rps, bursts=bursts) <= self.capacity_of(replicas)

    def minute_rates(
        self,
        demands_rps: Sequence[float] | np.ndarray,
        uppers_rps: Sequence[float] | np.ndarray | None = None,
        bursts: float = 0.0,
    ) -> np.ndarray:
        """`minute_rate` of every demand (and upper bound) at once, the same float64 arithmetic (IEEE sqrt and
        hypot are exact-rounded in both math and numpy), so a schedule over hundreds of forecast points is one
        array operation."""
        demand = np.asarray(demands_rps, dtype=float)
        upper = demand if uppers_rps is None else np.maximum(np.asarray(uppers_rps, dtype=float), demand)
        mean = np.maximum(demand, 0.0)
        rates = mean + np.hypot(upper - mean, self.minute_z * np.sqrt(mean / 60.0 + bursts * mean * mean))
        rates[upper <= 0] = 0.0
        return rates

    def first_unserved(self, replicas: int, rates: np.ndarray, start: int) -> int | None:
        """The first index from `start` whose minute rate `replicas` do not hold (`serves_minutes` false, a
        NaN included), or None."""
        over = np.flatnonzero(~(rates[start:] <= self.capacity_of(replicas)))
        return start + int(over[0]) if over.size else None

    def replicas_for(self, demand_rps: float) -> int:
        """Smallest n that serves the demand within both SLOs: sizing's search (one algorithm for the plan's
        sizing and the advice), remembered as the demands it was asked at. The need never falls as demand
        grows (the throughput count does not, and TTFT rises with demand at any count), so a demand between
        two searched ones that need the same count needs that count too: a schedule over hundreds of forecast
        points, each a new float every refit, costs a search only near the few demands where the count steps."""
        if demand_rps <= 0:
            return 0
        i = bisect.bisect_left(self._demands, demand_rps)
        if i < len(self._demands) and (
            self._demands[i] == demand_rps or (i > 0 and self._needs[i - 1] == self._needs[i])
        ):
            return self._needs[i]
        need = replicas_for_ttft(self.model, self.batch, demand_rps, self.ttft_slo, self.ttft_feasible)[0]
        if len(self._demands) >= 4096:
            self._demands, self._needs, i = [], [], 0
        self._demands.insert(i, demand_rps)
        self._needs.insert(i, need)
        return need


_TABLES: IdentityMemo[CapacityTable] = IdentityMemo(512)


def capacity_table(plan: Plan, tier: Tier, calibration: float) -> CapacityTable:
    """The tier's table at this calibration, remembered per (plan, tier, factor) object: a table's entries
    are filled as they are asked for, so evaluations every minute (serve, a replay) reuse them."""
    return _TABLES.get((plan, tier), (calibration,), lambda: _capacity_table(plan, tier, calibration))


def _capacity_table(plan: Plan, tier: Tier, calibration: float) -> CapacityTable:
    eff = tier.efficiency
    model = replica_model(
        plan, tier, min(1.0, eff.bandwidth.expected * calibration), min(1.0, eff.compute.expected * calibration)
    )
    ttft_slo, tpot_slo = plan.slo_for(tier)
    slo_batch = max_batch_at_slo(model, tpot_slo).batch
    batch = max(slo_batch, 1)  # no batch meets the TPOT SLO: counted at batch 1, as sizing counts it (infeasible)
    # the same TTFT the bound and the search use (step in flight included), so feasible means some count meets it
    feasible = slo_batch > 0 and ttft_floor_seconds(model, batch) <= ttft_slo
    return CapacityTable(model, batch, ttft_slo, feasible, minute_quantile(plan.slo.availability), slo_batch > 0)


def minute_quantile(availability: float) -> float:
    """z of the per-minute sizing: the standard normal quantile of the availability (0.999 -> 3.09), at least 0."""
    return max(0.0, NormalDist().inv_cdf(availability))


def _ttft_bound(model: ReplicaModel, replicas: int, batch: float, upper: float, ttft_slo: float) -> float:
    """Largest demand in [0, upper] whose TTFT p95 estimate meets the SLO (bisection; TTFT rises with demand)."""
    if ttft_p95(model, replicas, batch, upper).seconds <= ttft_slo:
        return upper
    low, high = 0.0, upper
    for _ in range(30):
        mid = (low + high) / 2
        if ttft_p95(model, replicas, batch, mid).seconds <= ttft_slo:
            low = mid
        else:
            high = mid
    return low
