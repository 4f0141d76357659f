"""The seam between the pure core and Prometheus: what an observer must provide.

The real implementation lives next to the Prometheus adapter (`monitor.source`); tests and the demo can
pass any object with these methods.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from monitor.observe.model import TierObservation
from monitor.plan.model import Plan

__all__ = ["DemandHistory", "Observer", "SourceHealth"]


@dataclass(frozen=True)
class DemandHistory:
    """A tier's demand (model calls/s) at a regular step; None where Prometheus had no data."""

    tier: str
    step_seconds: float
    timestamps: tuple[float, ...]
    values: tuple[float | None, ...]
    query: str


@dataclass(frozen=True)
class SourceHealth:
    """Prometheus as one probe found it: the one type for its health, from the probe (`monitor.source.check`)
    through the observer to the service's /readyz and /metrics. `reachable` is None before the first probe
    (or when the check itself failed); `checked_at` is the evaluation time it was taken for."""

    reachable: bool | None
    url: str
    reason: str = ""
    newest_sample_age_seconds: float | None = None
    checked_at: float | None = None
    version: str | None = None  # the server's build info, where it serves one


class Observer(Protocol):
    def collect(self, plan: Plan, now: float, window: str) -> dict[str, TierObservation]:
        """One observation per tier over `window` ending at `now`. Raises PrometheusUnreachable."""
        ...

    def demand_history(self, plan: Plan, tier: str, start: float, end: float, step_seconds: float) -> DemandHistory:
        """Demand (finished requests plus queue growth) for forecasting. Raises PrometheusUnreachable."""
        ...

    def health(self, now: float) -> SourceHealth:
        """Prometheus's health for the cycle at `now`: after a `collect` at the same `now`, its probe is reused,
        so a cycle probes once. Never raises for an unreachable server (the answer says so)."""
        ...
