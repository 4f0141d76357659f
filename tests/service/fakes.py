"""In-test stand-ins for the service's edges: a clock the test moves and an observer the test feeds."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from monitor.observe.model import Measurement, TierObservation
from monitor.observe.observer import DemandHistory, SourceHealth
from monitor.plan import Plan
from monitor.source import PrometheusUnreachable
from tests.builders import baseline_observation

NOW = 1_800_000_000.0  # Fri 2027-01-15 08:00 UTC: 03:00 in New York, outside the copilot's business hours


@dataclass
class Clock:
    """Time as the test says: `clock()` reads it, `advance()` moves it."""

    now: float = NOW

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now


def copilot_observation(demand_rps: float = 30.0, replicas: float = 3.0, **change: Any) -> TierObservation:
    """The support copilot as its plan expects it, at a given demand and replica count."""
    m = Measurement.of
    base = baseline_observation()
    return replace(base, demand_rate=m(demand_rps), request_rate=m(demand_rps), replicas_ready=m(replicas), **change)


@dataclass
class FakeObserver:
    """Returns the observations it was given; raises PrometheusUnreachable while `reachable` is False."""

    observations: dict[str, TierObservation] = field(default_factory=lambda: {"copilot": copilot_observation()})
    reachable: bool = True
    history: dict[str, DemandHistory] = field(default_factory=dict)
    url: str = "http://fake-prometheus:9090"
    calls: int = 0

    # When reality became `observations`: before it, production was as the plan expects. None: when the test
    # set them (the first collect that sees them), so history does not show a breach the test just made.
    since: float | None = None
    _seen: object = field(default=None, repr=False)
    _set_at: float = field(default=float("-inf"), repr=False)

    def collect(self, plan: Plan, now: float, window: str) -> dict[str, TierObservation]:
        self.calls += 1
        self._check()
        if self.observations is not self._seen:
            self._seen, self._set_at = self.observations, now
        start = self._set_at if self.since is None else self.since
        observed = self.observations if now >= start else {"copilot": copilot_observation()}
        return {k: replace(v, evaluated_at=now, window=window) for k, v in observed.items()}

    def demand_history(self, plan: Plan, tier: str, start: float, end: float, step_seconds: float) -> DemandHistory:
        self._check()
        if tier not in self.history:
            return DemandHistory(tier, step_seconds, (), (), "fake")
        return self.history[tier]

    def health(self, now: float) -> SourceHealth:
        if not self.reachable:
            return SourceHealth(False, self.url, "connection refused")
        return SourceHealth(True, self.url, "", 15.0)

    def _check(self) -> None:
        if not self.reachable:
            raise PrometheusUnreachable(self.url, "connection refused")
