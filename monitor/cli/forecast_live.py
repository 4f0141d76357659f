"""The live half of `planwatch forecast`: a tier's demand history from Prometheus, and its replica steps.

Demand is finished requests plus queue growth (the catalog's DEMAND_RATE), so a saturated fleet's capped
throughput is not mistaken for demand. The default ramp thresholds are the demand each replica count
serves within the SLO, so the ramp answers "when will N replicas stop being enough".
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from forecasting import Series
from monitor.advice.capacity import capacity_table
from monitor.forecasts import history_series
from monitor.observe.observer import DemandHistory
from monitor.observer import PrometheusObserver
from monitor.plan.model import Plan, Tier
from monitor.source import PrometheusSource

__all__ = ["LiveDemand", "live_demand", "pick_tier", "replica_thresholds"]


@dataclass(frozen=True)
class LiveDemand:
    tier: Tier
    history: DemandHistory
    series: Series


def pick_tier(plan: Plan, name: str | None) -> Tier:
    """The named tier; without a name, the only tier that takes traffic."""
    if name is not None:
        return plan.tier(name)
    serving = [t for t in plan.tiers if t.routing.share > 0]
    if len(serving) != 1:
        raise KeyError(f"the plan has {len(serving)} tiers that take traffic: pick one with --tier "
                       f"({', '.join(t.name for t in serving)})")  # fmt: skip
    return serving[0]


def live_demand(
    source: PrometheusSource, plan: Plan, tier: Tier, history_seconds: float, step_seconds: float,
    now: float | None = None,
) -> LiveDemand:  # fmt: skip
    end = now if now is not None else time.time()
    end -= end % step_seconds  # whole steps, so repeated runs see the same grid
    observer = PrometheusObserver(source)
    history = observer.demand_history(plan, tier.name, end - history_seconds, end, step_seconds)
    return LiveDemand(tier, history, history_series(history))  # NaN marks a gap: the forecaster fills it


def replica_thresholds(plan: Plan, tier: Tier) -> tuple[float, ...]:
    """Demand n replicas serve within the SLO, for n = 1 .. replicas.max (the sizing model, uncalibrated)."""
    table = capacity_table(plan, tier, 1.0)
    return tuple(table.capacity_of(n) for n in range(1, tier.replicas.max + 1))
