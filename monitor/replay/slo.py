"""Which replayed minutes meet the SLO, judged on the latencies themselves (not on bucket estimates).

A minute of a tier meets the SLO when it had no traffic, or when its requests' p95 TTFT and p95 TPOT are
within the tier's SLO and the queue left at its end would not make the next requests late. A minute with
requests and no ready replica does not. The share of requests over the SLO counts, per minute, the larger of
the shares over TTFT and over TPOT (a lower bound of the share over either).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from monitor.plan.model import Plan, Tier
from monitor.replay.curve import TierCurve, meets_slo, p95_at, slo_rate
from monitor.replay.fleet import TierRecord

__all__ = ["MinuteSLO", "meets_slo", "minute_slo", "p95_at", "required_replicas", "slo_rate"]


@dataclass(frozen=True)
class MinuteSLO:
    ok: np.ndarray  # bool per minute
    ttft_p95: np.ndarray  # NaN where nothing was served
    tpot_p95: np.ndarray
    over: np.ndarray  # requests over the SLO per minute


def minute_slo(plan: Plan, tier: Tier, curve: TierCurve | None, r: TierRecord, minutes: int) -> MinuteSLO:
    served, queue, ready = r.served[:minutes], r.queue[:minutes], r.ready[:minutes]
    nan = np.full(minutes, np.nan)
    if curve is None:
        return MinuteSLO((served == 0) & (queue == 0), nan, nan, np.zeros(minutes))
    ttft_slo, tpot_slo = plan.slo_for(tier)
    from monitor.replay.observe import latency_samples

    ttft, tpot = latency_samples(curve, r.per_replica_rps[:minutes], r.wait_s[:minutes])
    ttft95, tpot95 = p95_at(ttft), p95_at(tpot)
    capacity = np.maximum(ready * curve.stable_rps, 1e-12)
    late_queue = (queue > 0) & ((ready == 0) | (queue / capacity > ttft_slo))
    busy = (served > 0) | (queue > 0)
    ok = ~busy | ((ready > 0) & (ttft95 <= ttft_slo) & (tpot95 <= tpot_slo) & ~late_queue)
    share = np.maximum((ttft > ttft_slo).mean(axis=1), (tpot > tpot_slo).mean(axis=1))
    served_any = served > 0
    return MinuteSLO(ok, np.where(served_any, ttft95, np.nan), np.where(served_any, tpot95, np.nan), served * share)


def required_replicas(
    plan: Plan, tier: Tier, curve: TierCurve | None, rps: np.ndarray, judged: np.ndarray
) -> np.ndarray:
    """Per minute, the fewest replicas (within min..max) that meet the SLO at that demand with no queue
    (minutes in `judged`), or that keep up with it (the others); max where none does."""
    low, high = tier.replicas.min, tier.replicas.max
    need = np.full(rps.size, high, dtype=np.int64)
    if curve is None:
        return np.full(rps.size, low, dtype=np.int64)
    found = np.zeros(rps.size, dtype=bool)
    for n in range(max(low, 0), high + 1):
        if n == 0:
            fits = rps <= 0
        else:
            x = rps / n
            fits = np.where(judged, meets_slo(plan, tier, curve, x) | (rps <= 0), x <= curve.stable_rps)
        new = fits & ~found
        need[new] = n
        found |= fits
    return need
