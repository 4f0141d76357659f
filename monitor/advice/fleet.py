"""Advice for the whole fleet: every tier, then the plan's GPU budget as a cap."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from monitor.advice.model import AdviceSettings, AdviceState, DemandOutlook, FleetAdvice, Recommendation
from monitor.advice.recommend import advise_tier
from monitor.observe.model import TierObservation
from monitor.plan.model import Plan

__all__ = ["advise_fleet"]


def advise_fleet(
    plan: Plan,
    observations: Mapping[str, TierObservation],
    outlooks: Mapping[str, DemandOutlook],
    states: Mapping[str, AdviceState],
    now: float,
    business_hours: Mapping[str, tuple[bool, ...]] | None = None,
    settings: AdviceSettings = AdviceSettings(),  # noqa: B008 - frozen, never mutated
) -> FleetAdvice:
    recs = [
        advise_tier(
            plan,
            tier,
            observations[tier.name],
            outlooks.get(tier.name),
            states.get(tier.name, AdviceState()),
            now,
            (business_hours or {}).get(tier.name),
            settings,
        )
        for tier in plan.tiers
        if tier.name in observations
    ]
    return _within_budget(plan, recs)


def _within_budget(plan: Plan, recs: list[Recommendation]) -> FleetAdvice:
    """Trim replicas beyond present need first, then from the largest tier, until the fleet fits max_gpus."""
    budget = plan.costs.max_gpus
    if budget is None or sum(r.recommended * r.gpus_per_replica for r in recs) <= budget:
        return FleetAdvice(tuple(recs))
    wanted = sum(r.recommended * r.gpus_per_replica for r in recs)
    recs = list(recs)
    while sum(r.recommended * r.gpus_per_replica for r in recs) > budget:
        i = max(range(len(recs)), key=lambda k: (recs[k].recommended - (recs[k].needed_now or 0), recs[k].recommended))
        if recs[i].recommended == 0:
            break
        recs[i] = replace(recs[i], recommended=recs[i].recommended - 1,
                          warnings=(*recs[i].warnings, f"capped by the fleet GPU budget of {budget}"))  # fmt: skip
    message = f"the SLO needs {wanted} GPUs but the plan's budget is {budget}: recommendations are capped"
    return FleetAdvice(tuple(recs), (message,))
