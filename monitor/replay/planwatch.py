"""The planwatch policy: what `planwatch serve` would recommend, followed by an autoscaler (KEDA/HPA reading
planwatch_recommended_replicas), on the replay's own observations.

The same pieces as the service, nothing replay-only: every decision collects observations through a
Observer (`ReplayObserver`, what Prometheus would hold), calls `monitor.evaluation.evaluate` with the
previous call's open triggers and advice states, and takes each tier's recommended replicas. Forecasts are
refitted on the service's cadence (`Settings.forecast_interval`) from the replay's own demand history with
the service's windows (`monitor.outlooks.fit_tier`); a tier whose refit fails keeps its previous forecast
while it still reaches into the future, as `run_forecast_refit` does. A tier with no recommendation (its
data unknown) holds what runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from forecasting import ForecastError
from monitor.advice import DemandOutlook
from monitor.evaluation import EvaluationInputs, TriggerKey, evaluate
from monitor.forecasts import TierForecast
from monitor.outlooks import fit_tier
from monitor.plan.model import Plan
from monitor.replay.fleet import TierFleet
from monitor.replay.observe import ReplayObserver
from monitor.service.settings import Settings
from monitor.sizing.plan_sizing import PlanSizing, size_plan
from monitor.triggers import TriggerRecord

__all__ = ["Planwatch"]


@dataclass
class Planwatch:
    plan: Plan
    start: float
    settings: Settings = field(default_factory=Settings)
    name: str = "planwatch"
    observer: ReplayObserver | None = None
    forecasts: dict[str, TierForecast] = field(default_factory=dict)
    triggers: dict[TriggerKey, TriggerRecord] = field(default_factory=dict)
    advice_states: dict[str, object] = field(default_factory=dict)
    sizing: PlanSizing | None = None
    _minute: int = 0
    _refit_at: float | None = None

    def attach(self, fleets: Mapping[str, TierFleet]) -> None:
        self.observer = ReplayObserver(self.plan, fleets, self.start, lambda: self._minute, self.settings.long_window)
        self.sizing = size_plan(self.plan)

    def decide(self, minute: int, fleets: Mapping[str, TierFleet], interval_s: float) -> dict[str, int]:
        if self.observer is None:
            self.attach(fleets)
        assert self.observer is not None
        self._minute = minute
        now = self.start + 60.0 * minute
        if self._refit_at is None or now - self._refit_at >= self.settings.forecast_interval - 1e-6:
            self._refit(now)
        observations = self.observer.collect(self.plan, now, self.settings.observation_window)
        evaluation = evaluate(
            EvaluationInputs(
                self.plan,
                observations,
                now,
                outlooks=self.outlooks(),
                previous_triggers=self.triggers,
                advice_states=self.advice_states,  # type: ignore[arg-type]
                settings=self.settings.advice.to_advice_settings(),
                sizing=self.sizing,
            )
        )
        self.triggers = evaluation.open_triggers
        self.advice_states = dict(evaluation.advice_states)
        out = {name: f.total for name, f in fleets.items()}
        for t in evaluation.tiers:
            if t.recommendation is not None:
                out[t.tier] = t.recommendation.recommended
        return out

    def outlooks(self) -> dict[str, DemandOutlook]:
        return {name: f.outlook for name, f in self.forecasts.items()}

    def _refit(self, now: float) -> None:
        """`fit_tier` per tier, its history read at the replay's clock, in this process.

        Why not in worker processes: a refit mostly refits the model its tier's backtest chose (kept for 6 h,
        `forecasting.choice`), a few milliseconds, and shipping four weeks of history and the forecast with
        its choice to a worker and back cost more than the fit (ServeGen 14 days: planwatch 117 s in its own
        process, 126 s with its refits in two more, on 2 cores)."""
        assert self.observer is not None
        windows = self.settings.forecast_windows
        self._refit_at = now
        fits: dict[str, TierForecast] = {}
        for tier in self.plan.tiers:
            previous = self.forecasts.get(tier.name)
            try:
                fits[tier.name] = fit_tier(self.observer, self.plan, tier.name, now, windows, previous)
            except ForecastError:
                if previous and previous.reaches_past(now):
                    fits[tier.name] = previous
        self.forecasts = fits
