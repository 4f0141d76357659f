"""The numbers the drift alerts compare against: the same ones planwatch's Python drift judges with.

The plan values come from `monitor.drift` itself: `tier_drift` and `fleet_drift` are called with an empty
observation, and each row carries the plan value exactly as the advisor reads it (a prompt p95 pushed
through vLLM's 1-2-5 buckets, a tier's share of the peak after routing, the prefix-hit rate the plan
implies). `judge` calls an assumption in breach when its relative drift in the harmful direction exceeds
the breach tolerance, so the alert threshold is

    higher is harmful:  observed > plan x (1 + breach)
    lower is harmful:   observed < plan x (1 - breach)

Worked example (capstone, tier fast): the plan's prompt band [0, 2,000) has p95 1,952 tokens; through the
1-2-5 buckets (1,000, 2,000] histogram_quantile reads it as 1,939.5; the prompt_p95 tolerance is breach 0.40,
so the alert fires when the observed p95 exceeds 1,939.5 x 1.4 = 2,715 tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from monitor.drift import DriftRow, Harm, fleet_drift, tier_drift
from monitor.observe.model import TierObservation
from monitor.plan.model import FLEET, Plan
from monitor.rules.promql import number
from monitor.sizing.plan_sizing import size_plan

__all__ = ["KV_FULL_RATIO", "MIN_REQUESTS", "DriftThreshold", "fleet_thresholds", "tier_thresholds"]

# monitor.triggers.catalog `_kv_pressure`: KV cache at least 95% full while preemptions happen.
KV_FULL_RATIO = 0.95
# monitor.observer.PrometheusObserver.min_requests: per-request statistics need this many requests in the
# window before planwatch judges them (fewer is "unknown", never a breach).
MIN_REQUESTS = 50


@dataclass(frozen=True)
class DriftThreshold:
    """Where one assumption of one tier (or the fleet) turns from warn into breach."""

    assumption: str
    tier: str
    plan: float
    harmful: Harm  # as monitor.drift fixes it per assumption
    breach: float
    unit: str
    note: str = ""

    @property
    def value(self) -> float:
        """The observed value at which `judge` starts to say breach."""
        return self.plan * (1 + self.breach) if self.harmful == "higher" else self.plan * (1 - self.breach)

    @property
    def can_breach(self) -> bool:
        """A plan value of 0 cannot drift lower; everything else can."""
        return self.harmful == "higher" or self.plan > 0

    def comparison(self) -> str:
        """`> plan * (1 + breach)` or `< plan * (1 - breach)`: PromQL that shows where the number comes from."""
        sign, op = ("+", ">") if self.harmful == "higher" else ("-", "<")
        return f"{op} {number(self.plan)} * (1 {sign} {number(self.breach)})"


def _threshold(plan: Plan, tier: str, row: DriftRow) -> DriftThreshold:
    breach = plan.tolerances.for_assumption(row.assumption).breach
    return DriftThreshold(row.assumption, tier, row.plan, row.harmful, breach, row.unit, row.note)


def tier_thresholds(plan: Plan) -> dict[str, Mapping[str, DriftThreshold]]:
    """tier name -> assumption -> threshold, for every tier of the plan."""
    sizing = size_plan(plan)
    out: dict[str, Mapping[str, DriftThreshold]] = {}
    for sized in sizing.tiers:
        name = sized.sizing.tier.name
        rows = tier_drift(plan, sized.sizing, TierObservation(name, 0.0, "1h"))
        out[name] = {r.assumption: _threshold(plan, name, r) for r in rows}
    return out


def fleet_thresholds(plan: Plan) -> Mapping[str, DriftThreshold]:
    """assumption -> threshold for the plan's workload as written (all tiers together)."""
    rows = fleet_drift(plan, TierObservation(FLEET, 0.0, "1h"))
    return {r.assumption: _threshold(plan, FLEET, r) for r in rows}
