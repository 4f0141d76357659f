"""SLO arithmetic: the fraction of requests over a latency threshold, error budgets and burn rates.

A latency SLO "p95 TTFT under 1.2 s" is read as an objective: 95% of requests get their first token within
1.2 s, so the error budget is 5% of requests. A burn rate is the bad fraction over the budget: 1 spends the
budget exactly over the SLO period, 14.4 spends 2% of a 30-day budget in one hour.

Alerts use the multi-window, multi-burn-rate policy of the Google SRE workbook: a long window for
significance and a short one (1/12 of it) so the alert stops soon after the burn does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from monitor.units import parse_duration

__all__ = [
    "SRE_POLICY",
    "BurnWindow",
    "budget_spent",
    "burn_rate",
    "error_budget",
    "latency_objective",
]

Severity = Literal["page", "ticket"]


@dataclass(frozen=True)
class BurnWindow:
    long: str
    short: str
    factor: float
    severity: Severity

    @property
    def long_seconds(self) -> float:
        return parse_duration(self.long)


SRE_POLICY: tuple[BurnWindow, ...] = (
    BurnWindow("1h", "5m", 14.4, "page"),
    BurnWindow("6h", "30m", 6.0, "page"),
    BurnWindow("1d", "2h", 3.0, "ticket"),
    BurnWindow("3d", "6h", 1.0, "ticket"),
)


def latency_objective(percentile: float = 0.95) -> float:
    """A p95 latency SLO promises that 95% of requests are under the threshold."""
    return percentile


def error_budget(objective: float) -> float:
    """1 - objective: 0.1% of requests for 99.9% availability, 5% for a p95 latency SLO."""
    if not 0 < objective < 1:
        raise ValueError(f"objective must be between 0 and 1, got {objective}")
    return 1.0 - objective


def burn_rate(bad_fraction: float, objective: float) -> float:
    """bad fraction / error budget."""
    return bad_fraction / error_budget(objective)


def budget_spent(factor: float, window: str, period: str = "30d") -> float:
    """Share of the period's budget a burn of `factor` spends over `window` (14.4 x 1h / 30d = 2%)."""
    return factor * parse_duration(window) / parse_duration(period)
