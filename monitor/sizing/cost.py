"""Step 7 of the seeds: cost at peak and on average, per request, per token, and against serverless.

A day is `peak_hours_per_day` at the peak replica count and the rest at the replicas average traffic
needs (never below the tier's minimum): the seed's "peak 12 GPUs x 6 h + floor 4 GPUs x 18 h".
A month is 30 days (2.592e6 s), as the seed counts it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from monitor.plan.model import Plan
from monitor.sizing.tier import TierSizing
from monitor.units import SECONDS_PER_MONTH

__all__ = ["FleetCost", "TierCost", "fleet_cost", "tier_cost"]


@dataclass(frozen=True)
class TierCost:
    gpu_hour_usd: float
    replicas_at_peak: int
    replicas_at_average: int
    gpus_at_peak: int
    gpu_hours_per_day: float
    cost_per_hour_usd_at_peak: float
    cost_per_hour_usd_at_average: float
    cost_per_month_usd: float
    requests_per_month: float
    tokens_per_month: float

    @property
    def cost_per_request_usd(self) -> float:
        return self.cost_per_month_usd / self.requests_per_month if self.requests_per_month else math.nan


def tier_cost(plan: Plan, sizing: TierSizing) -> TierCost:
    tier, wl, point = sizing.tier, sizing.workload, sizing.expected
    tp, price = tier.tensor_parallel, plan.costs.gpu_hour_usd[tier.gpu]
    peak = max(point.replicas, tier.replicas.min)
    rps = point.requests_per_second_per_replica
    average = max(math.ceil(wl.average_rps / rps - 1e-9) if rps > 0 and wl.average_rps > 0 else 0, tier.replicas.min)
    peak_hours = plan.workload.arrival.peak_hours_per_day
    gpu_hours = tp * (peak * peak_hours + average * (24.0 - peak_hours))
    requests = wl.average_rps * SECONDS_PER_MONTH
    return TierCost(
        gpu_hour_usd=price,
        replicas_at_peak=peak,
        replicas_at_average=average,
        gpus_at_peak=peak * tp,
        gpu_hours_per_day=gpu_hours,
        cost_per_hour_usd_at_peak=peak * tp * price,
        cost_per_hour_usd_at_average=average * tp * price,
        cost_per_month_usd=gpu_hours * price * SECONDS_PER_MONTH / 86_400.0,
        requests_per_month=requests,
        tokens_per_month=requests * wl.context_mean,
    )


@dataclass(frozen=True)
class FleetCost:
    gpus_at_peak: int
    gpu_hours_per_day: float
    cost_per_hour_usd_at_peak: float
    cost_per_month_usd: float
    user_requests_per_month: float
    tokens_per_month: float
    serverless_usd_per_million_tokens: float | None

    @property
    def cost_per_user_request_usd(self) -> float:
        return self.cost_per_month_usd / self.user_requests_per_month

    @property
    def cost_per_million_tokens_usd(self) -> float:
        """Effective dedicated price: monthly cost / monthly tokens ($17k / 89B = $0.19 per 1M in the seed)."""
        return self.cost_per_month_usd / (self.tokens_per_month / 1e6)

    @property
    def serverless_cost_per_month_usd(self) -> float | None:
        p = self.serverless_usd_per_million_tokens
        return None if p is None else self.tokens_per_month / 1e6 * p

    @property
    def breakeven_tokens_per_month(self) -> float | None:
        """Monthly tokens at which serverless would cost what this dedicated fleet costs."""
        p = self.serverless_usd_per_million_tokens
        return None if p is None else self.cost_per_month_usd / p * 1e6


def fleet_cost(plan: Plan, costs: list[TierCost]) -> FleetCost:
    return FleetCost(
        gpus_at_peak=sum(c.gpus_at_peak for c in costs),
        gpu_hours_per_day=sum(c.gpu_hours_per_day for c in costs),
        cost_per_hour_usd_at_peak=sum(c.cost_per_hour_usd_at_peak for c in costs),
        cost_per_month_usd=sum(c.cost_per_month_usd for c in costs),
        user_requests_per_month=plan.workload.arrival.average_rps * SECONDS_PER_MONTH,
        tokens_per_month=sum(c.tokens_per_month for c in costs),
        serverless_usd_per_million_tokens=plan.costs.serverless_usd_per_million_tokens,
    )
