"""The latest results, in memory: what every request and every scrape reads, so none waits on Prometheus.

A `Snapshot` is immutable; the jobs build a new one and swap it in under a lock (`Results.update`), so a
reader always sees one consistent evaluation, its triggers and their acknowledgements. The JSON bodies of
the read routes are rendered once per snapshot by the writer, not per request.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

from monitor.advice import DemandOutlook
from monitor.evaluation import Evaluation
from monitor.forecasts import TierForecast
from monitor.observe.observer import SourceHealth
from monitor.plan.model import Plan
from monitor.service.state import Acknowledgement
from monitor.sizing.plan_sizing import PlanSizing
from monitor.source.redact import redact_url
from monitor.triggers import TriggerRecord

__all__ = ["OpenTrigger", "Outcome", "Results", "Snapshot", "shown"]


class Outcome(StrEnum):
    """How the last evaluation went: with data, without Prometheus, or with a failing observer."""

    OK = "ok"
    UNREACHABLE = "unreachable"
    ERROR = "error"


def shown(health: SourceHealth) -> SourceHealth:
    """Prometheus's health as the open /readyz shows it: the URL without credentials."""
    return replace(health, url=redact_url(health.url))


@dataclass(frozen=True)
class OpenTrigger:
    """A trigger that holds now (or is held over missing data), with its stored episode and who knows."""

    record: TriggerRecord
    episode_id: int | None
    held_over_unknown: bool = False
    acknowledgements: tuple[Acknowledgement, ...] = ()


@dataclass(frozen=True)
class Snapshot:
    plan: Plan
    sizing: PlanSizing
    source: SourceHealth  # as the last evaluation found it, through `shown`
    evaluation: Evaluation | None = None
    triggers: tuple[OpenTrigger, ...] = ()
    outcome: Outcome | None = None
    last_error: str = ""
    last_attempt_at: float | None = None
    last_success_at: float | None = None
    evaluations: Mapping[Outcome, int] = field(default_factory=dict)
    duration_seconds_sum: float = 0.0
    forecasts: Mapping[str, TierForecast] = field(default_factory=dict)
    forecast_errors: Mapping[str, str] = field(default_factory=dict)
    forecast_refit_at: float | None = None
    bodies: Mapping[str, bytes] = field(default_factory=dict)

    @property
    def evaluation_count(self) -> int:
        return sum(self.evaluations.values())

    def outlooks(self) -> dict[str, DemandOutlook]:
        return {tier: f.outlook for tier, f in self.forecasts.items()}


Renderer = Callable[[Snapshot], Mapping[str, bytes]]


class Results:
    """The one holder of the current snapshot. Writers go through `update`; readers call `current`."""

    def __init__(self, initial: Snapshot, render: Renderer):
        self._render = render
        self._lock = threading.Lock()
        self._snapshot = replace(initial, bodies=render(initial))

    def current(self) -> Snapshot:
        return self._snapshot

    def update(self, change: Callable[[Snapshot], Snapshot]) -> Snapshot:
        """Apply `change` to the latest snapshot and publish it with freshly rendered bodies.

        Serialized so two writers (the evaluation job and an acknowledgement) never lose each other's update.
        """
        with self._lock:
            changed = change(self._snapshot)
            self._snapshot = replace(changed, bodies=self._render(changed))
            return self._snapshot
