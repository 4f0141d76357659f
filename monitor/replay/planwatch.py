"""The planwatch policy: what `planwatch serve` would recommend, followed by an autoscaler (KEDA/HPA reading
planwatch_recommended_replicas), on the replay's own observations.

The same pieces as the service, nothing replay-only: every decision collects observations through a
Observer (`ReplayObserver`, what Prometheus would hold), calls `monitor.evaluation.evaluate` with the
previous call's open triggers and advice states, and takes each tier's recommended replicas. Forecasts are
refitted on the service's cadence (`Settings.forecast_interval`) from the replay's own demand history with
the service's windows (`monitor.outlooks.fit_tier`); a tier whose refit fails keeps its previous forecast
while it still reaches into the future, as `run_forecast_refit` does. A tier with no recommendation (its
data unknown) holds what runs.

Where tiers are due a backtest at the same refit (they are, every 6 h: their choices were made together),
`refit_processes` > 1 spreads them over forked processes: the backtests are two thirds of the policy's
refit time, and the replay's other policies are done long before planwatch, so their cores idle.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field

from forecasting import ForecastError, ForecastSettings
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
    refit_processes: int = 1  # processes the tiers due a backtest at one refit are spread over (1: this one)
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
        """`fit_tier` per tier, its history read at the replay's clock; the tiers due a backtest spread over
        `refit_processes` (`_backtests_due`), the others here.

        Why not every refit in worker processes: a refit mostly refits the model its tier's backtest chose
        (kept for 6 h, `forecasting.choice`), a few milliseconds, and shipping four weeks of history and the
        forecast with its choice to a worker and back cost more than the fit (ServeGen 14 days: planwatch 117 s
        in its own process, 126 s with every refit in two more, on 2 cores). A forked process inherits the
        history instead and returns only the forecasts it fitted."""
        assert self.observer is not None
        self._refit_at = now
        due = self._backtests_due(now)
        forked = due[1:] if self.refit_processes > 1 and len(due) > 1 else []
        with _forked_refits(self, forked, now, self.refit_processes - 1) as away:
            here = {t.name: self._fit(t.name, now) for t in self.plan.tiers if t.name not in forked}
            fitted = here | {tier: future.result() for tier, future in away.items()}
        fits: dict[str, TierForecast] = {}
        for tier in self.plan.tiers:
            fit, previous = fitted[tier.name], self.forecasts.get(tier.name)
            if fit is not None:
                fits[tier.name] = fit
            elif previous and previous.reaches_past(now):
                fits[tier.name] = previous
        self.forecasts = fits

    def _fit(self, tier: str, now: float) -> TierForecast | None:
        """The tier's refit, None if its history cannot be forecast (ForecastError)."""
        assert self.observer is not None
        try:
            windows, previous = self.settings.forecast_windows, self.forecasts.get(tier)
            return fit_tier(self.observer, self.plan, tier, now, windows, previous)
        except ForecastError:
            return None

    def _backtests_due(self, now: float) -> list[str]:
        """Tiers whose refit will backtest again: their last choice came from a backtest and is a calibration
        spacing old (`ModelChoice.aged`, what `reusable` reads). Only where the work is done depends on it,
        never a result."""
        spacing = ForecastSettings().calibration_spacing_seconds
        due = []
        for name, f in self.forecasts.items():
            choice = f.choice
            # a microsecond's slack: the history ends at `now` up to float rounding
            if choice is not None and choice.report is not None and choice.aged(now + 1e-6, spacing):
                due.append(name)
        return due


# The policy a forked refit reads its history from: set before the fork, inherited by the child, so the
# history is never pickled (only the forecasts come back).
_FORKED: Planwatch | None = None


@contextmanager
def _forked_refits(
    policy: Planwatch, tiers: list[str], now: float, processes: int
) -> Iterator[dict[str, Future[TierForecast | None]]]:
    """The tiers' refits running in up to `processes` forked children while the caller fits the others."""
    global _FORKED
    if not tiers:
        yield {}
        return
    _FORKED = policy
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(min(processes, len(tiers)), mp_context=context) as pool:
            yield {tier: pool.submit(_fit_in_child, tier, now) for tier in tiers}
    finally:
        _FORKED = None


def _fit_in_child(tier: str, now: float) -> TierForecast | None:
    assert _FORKED is not None
    return _FORKED._fit(tier, now)
