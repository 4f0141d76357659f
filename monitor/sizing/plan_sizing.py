"""The whole plan sized: every tier, then the fleet."""

from __future__ import annotations

from dataclasses import dataclass

from monitor.plan.model import Plan
from monitor.sizing.cost import FleetCost, TierCost, fleet_cost, tier_cost
from monitor.sizing.tier import TierSizing, size_tier

__all__ = ["PlanSizing", "SizedTier", "size_plan"]


@dataclass(frozen=True)
class SizedTier:
    sizing: TierSizing
    cost: TierCost


@dataclass(frozen=True)
class PlanSizing:
    plan: Plan
    tiers: tuple[SizedTier, ...]
    fleet: FleetCost

    def tier(self, name: str) -> SizedTier:
        for t in self.tiers:
            if t.sizing.tier.name == name:
                return t
        raise KeyError(name)


def size_plan(plan: Plan) -> PlanSizing:
    tiers = []
    for tier in plan.tiers:
        sizing = size_tier(plan, tier)
        tiers.append(SizedTier(sizing, tier_cost(plan, sizing)))
    return PlanSizing(plan, tuple(tiers), fleet_cost(plan, [t.cost for t in tiers]))
