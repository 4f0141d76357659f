"""What every generator of a plan's rules shares: the plan, the tier label, the hold-time scale."""

from __future__ import annotations

from dataclasses import dataclass

from monitor.plan.model import Plan, Tier
from monitor.queries.selector import Selector, validate_label_name

__all__ = ["PLAN_LABEL", "Context"]

# Recorded series and alerts carry the plan's name, so two plans' rules can share one Prometheus.
PLAN_LABEL = "plan"


@dataclass(frozen=True)
class Context:
    """`tier_label` names the tier on recorded series and alerts, and is what a tier without its own
    `selector:` is found by. `hold_scale` multiplies every hold time (tests only; 1 in committed files)."""

    plan: Plan
    tier_label: str = "tier"
    hold_scale: float = 1.0

    def __post_init__(self) -> None:
        validate_label_name(self.tier_label)
        if self.tier_label == PLAN_LABEL:
            raise ValueError(f"the tier label cannot be {PLAN_LABEL!r}: the rules use it for the plan's name")
        if not self.hold_scale > 0:
            raise ValueError(f"hold_scale must be positive, got {self.hold_scale!r}")

    def selector(self, tier: Tier) -> Selector:
        """The matchers that find the tier's raw series (its own selector, else `<tier_label>="<name>"`)."""
        return Selector(tier.selector or {self.tier_label: tier.name})

    def labels(self, tier_name: str) -> dict[str, str]:
        """Labels of a recorded series or alert about one tier (or the fleet)."""
        return {self.tier_label: tier_name, PLAN_LABEL: self.plan.name}

    def recorded(self, record: str, tier_name: str) -> str:
        """A recorded series of this plan's tier: `record{plan="...",tier="..."}`."""
        return f"{record}{Selector(self.labels(tier_name))}"
