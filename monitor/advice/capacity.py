"""How much demand N replicas of a tier can take within the SLO, calibrated on production when possible.

The sizing model predicts output tokens/s per replica at any batch. When production ran replicas at a
meaningful batch, the observed tokens/s over the predicted ones is a calibration factor that scales both
efficiencies; otherwise the sizing model is trusted as it is, and the advice says so.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from monitor.advice.model import AdviceSettings
from monitor.observe.model import TierObservation
from monitor.plan.model import Plan, Tier
from monitor.sizing.capacity import ReplicaModel, max_batch_at_slo
from monitor.sizing.latency import ttft_p95
from monitor.sizing.tier import replica_model

__all__ = ["Calibration", "CapacityTable", "calibrate", "capacity_table"]


@dataclass(frozen=True)
class Calibration:
    factor: float
    source: str  # a sentence: which was used and why


def calibrate(plan: Plan, tier: Tier, obs: TierObservation, settings: AdviceSettings) -> Calibration:
    eff = tier.efficiency
    model = replica_model(plan, tier, eff.bandwidth.expected, eff.compute.expected)
    slo_batch = max_batch_at_slo(model, plan.slo_for(tier)[1]).batch
    batch, tps = obs.batch_per_replica.value, obs.output_tokens_per_second_per_replica.value
    if batch is None or tps is None:
        return Calibration(1.0, "sizing model (no observed batch and throughput to calibrate on)")
    if slo_batch == 0 or batch < settings.min_calibration_batch_fraction * slo_batch:
        return Calibration(1.0, f"sizing model (observed batch {batch:.1f} too small to calibrate on)")
    predicted = batch / model.tpot_step(batch).seconds
    low, high = settings.calibration_bounds
    factor = min(high, max(low, tps / predicted))
    return Calibration(
        factor,
        f"calibrated on production: {tps:,.0f} tokens/s observed vs {predicted:,.0f} modelled at batch {batch:.1f}",
    )


@dataclass(frozen=True)
class CapacityTable:
    """thresholds[n] = most model calls/s n replicas serve within both SLOs (thresholds[0] = 0)."""

    thresholds: tuple[float, ...]
    requests_per_second_per_replica: float
    ttft_feasible: bool

    def capacity_of(self, replicas: int) -> float:
        """Demand `replicas` serve within the SLO; past the table, extrapolated on throughput."""
        if replicas < len(self.thresholds):
            return self.thresholds[replicas]
        return self.thresholds[-1] + (replicas - len(self.thresholds) + 1) * self.requests_per_second_per_replica

    def replicas_for(self, demand_rps: float) -> int:
        """Smallest n whose threshold covers the demand; past the table, extrapolate on throughput."""
        if demand_rps <= 0:
            return 0
        n = bisect.bisect_left(self.thresholds, demand_rps)
        if n < len(self.thresholds):
            return n
        extra = (demand_rps - self.thresholds[-1]) / max(self.requests_per_second_per_replica, 1e-9)
        return len(self.thresholds) - 1 + int(extra) + 1


def capacity_table(plan: Plan, tier: Tier, calibration: float, up_to: int) -> CapacityTable:
    """For n = 1..up_to: min(n x requests/s per replica, the highest demand whose TTFT p95 meets the SLO)."""
    eff = tier.efficiency
    model = replica_model(
        plan, tier, min(1.0, eff.bandwidth.expected * calibration), min(1.0, eff.compute.expected * calibration)
    )
    ttft_slo, tpot_slo = plan.slo_for(tier)
    batch = max_batch_at_slo(model, tpot_slo).batch
    rps = model.requests_per_second(batch) if batch else 0.0
    feasible = batch > 0 and ttft_p95(model, 1, batch, 0.0).prefill_p95_seconds <= ttft_slo
    thresholds = [0.0]
    for n in range(1, max(up_to, 1) + 1):
        throughput = n * rps
        thresholds.append(throughput if not feasible else _ttft_bound(model, n, batch, throughput, ttft_slo))
    return CapacityTable(tuple(thresholds), rps, feasible)


def _ttft_bound(model: ReplicaModel, replicas: int, batch: int, upper: float, ttft_slo: float) -> float:
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
