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
from concurrent.futures import Executor
from dataclasses import dataclass, field

from forecasting import ForecastError, WorkWeek
from monitor.advice import DemandOutlook
from monitor.evaluation import EvaluationInputs, TriggerKey, evaluate
from monitor.forecasts import TierForecast, forecast_tier, work_week
from monitor.observe.observer import DemandHistory
from monitor.outlooks import read_history
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
    refit_workers: int = 1  # processes the tiers' refits run in (the replay's spare cores); 1: in this one
    _minute: int = 0
    _refit_at: float | None = None
    _pool: Executor | None = None

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
        """`fit_tier` per tier (its history read here, at the replay's clock), the forecasts in `refit_workers`
        processes: they are most of a long replay's work, pure, and independent between tiers."""
        assert self.observer is not None
        windows = self.settings.forecast_windows
        self._refit_at = now
        histories = [read_history(self.observer, self.plan, t.name, now, windows) for t in self.plan.tiers]
        week = work_week(self.plan)
        jobs = [(h, now, windows.horizon_seconds, self.forecasts.get(h.tier), week) for h in histories]
        if self.refit_workers > 1:
            fitted = list(self._executor().map(_forecast, jobs))
        else:
            fitted = [_forecast(job) for job in jobs]
        fits: dict[str, TierForecast] = {}
        for tier, fit in zip(self.plan.tiers, fitted, strict=True):
            if fit is not None:
                fits[tier.name] = fit
                continue
            previous = self.forecasts.get(tier.name)
            if previous and previous.outlook.timestamps and previous.outlook.timestamps[-1] > now:
                fits[tier.name] = previous
        self.forecasts = fits

    def _executor(self) -> Executor:
        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            context = multiprocessing.get_context("fork")  # the forecaster is imported already
            self._pool = ProcessPoolExecutor(self.refit_workers, mp_context=context, initializer=_one_blas_thread)
        return self._pool

    def close(self) -> None:
        """Stop the refit processes (the replay calls it when the policy has run)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None


def _forecast(job: tuple[DemandHistory, float, float, TierForecast | None, WorkWeek]) -> TierForecast | None:
    """One tier's forecast (keeping its previous forecast's model choice while fresh, as `serve` does), None
    where its history cannot be forecast (`fit_tier`'s ForecastError, returned rather than raised: the
    forecaster's errors do not all survive pickling)."""
    history, now, horizon, previous, week = job
    try:
        return forecast_tier(history, now, horizon, previous, week)
    except ForecastError:
        return None


def _one_blas_thread() -> None:
    """A refit process fits as the replay's own process does: on one BLAS thread (monitor.replay.run)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
