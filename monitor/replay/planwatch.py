"""The planwatch policy: what `planwatch serve` would recommend, followed by an autoscaler (KEDA/HPA reading
planwatch_recommended_replicas), on the replay's own observations.

The same pieces as the service, nothing replay-only: every decision collects observations through a
Observer (`ReplayObserver`, what Prometheus would hold), calls `monitor.evaluation.evaluate` with the
previous call's open triggers and advice states, and takes each tier's recommended replicas. Forecasts are
refitted on the service's cadence (`Settings.forecast_interval`) from the replay's own demand history with
the service's windows (`monitor.outlooks.fit_tier`); a tier whose refit fails keeps its previous forecast
while it still reaches into the future, as `run_forecast_refit` does. A tier with no recommendation (its
data unknown) holds what runs.

With `refit_processes` > 1 a forked worker refits some tiers while this process refits the others: the refits
are two fifths of the policy's time, and the replay's other policies are done long before planwatch, so their
cores idle. The worker reads the demand history from the fleets' records, which live in shared memory
(`TierRecord.empty`), and gets each tier's previous forecast with the request, so it holds no state of its own
and either process can refit any tier: which ones go to the worker is balanced on the last refit's times
(the backtests, every 6 h, cost ten times a refit of a kept model). Every decision is the same as with one
process (tests/replay).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import time
import traceback
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

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
    refit_processes: int = 1  # 2 or more: a forked worker refits some of the tiers (1: all in this one)
    _minute: int = 0
    _refit_at: float | None = None
    _worker: _RefitWorker | None = field(default=None, repr=False)
    _seconds: dict[str, float] = field(default_factory=dict, repr=False)  # each tier's last refit, wall clock

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
        """`fit_tier` per tier, its history read at the replay's clock; with a worker (`refit_processes` > 1)
        some tiers are refitted there at the same time as the others here.

        Why a worker that lives through the run rather than a process per refit: a refit mostly refits the
        model its tier's backtest chose (kept for 6 h, `forecasting.choice`), a few milliseconds, less than
        starting a process (or shipping the history to one) costs; the worker reads the history where the
        replay writes it, and only the forecasts cross the pipe (16 KB a tier)."""
        assert self.observer is not None
        self._refit_at = now
        worker = self._refit_worker()
        away = self._for_worker() if worker is not None else ()
        if worker is not None:
            worker.ask(now, self._minute, {tier: self.forecasts.get(tier) for tier in away})
        fitted = {t.name: self._timed_fit(t.name, now) for t in self.plan.tiers if t.name not in away}
        if worker is not None:
            fitted |= worker.answer()
        self._seconds = {tier: seconds for tier, (_, seconds) in fitted.items()}
        self.forecasts = self._kept({tier: fit for tier, (fit, _) in fitted.items()}, now)

    def _kept(self, fitted: Mapping[str, TierForecast | None], now: float) -> dict[str, TierForecast]:
        """Each tier's forecast in plan order: the new one, or where the refit failed the previous one while it
        still reaches past `now` (as `run_forecast_refit` keeps it)."""
        kept: dict[str, TierForecast] = {}
        for tier in self.plan.tiers:
            fit, previous = fitted[tier.name], self.forecasts.get(tier.name)
            if fit is not None:
                kept[tier.name] = fit
            elif previous is not None and previous.reaches_past(now):
                kept[tier.name] = previous
        return kept

    def _refit_worker(self) -> _RefitWorker | None:
        if self.refit_processes < 2 or len(self.plan.tiers) < 2:
            return None
        if self._worker is None:
            self._worker = _RefitWorker.start(self)
            weakref.finalize(self, self._worker.close)
        return self._worker

    def close(self) -> None:
        """Stop the refit worker (the run is over); a later refit would start another."""
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    def _for_worker(self) -> tuple[str, ...]:
        """The tiers the worker refits: the longest-first greedy split of the last refit's times (every other
        tier before any was timed). Where a tier is refitted changes when the forecasts are ready, never them."""
        names = [t.name for t in self.plan.tiers]
        if not self._seconds:
            return tuple(names[1::2])
        here: list[str] = []
        there: list[str] = []
        load = [0.0, 0.0]
        for name in sorted(names, key=lambda n: -self._seconds.get(n, 0.0)):
            side = 0 if load[0] <= load[1] else 1
            (here, there)[side].append(name)
            load[side] += self._seconds.get(name, 0.0)
        return tuple(there)

    def _timed_fit(self, tier: str, now: float) -> tuple[TierForecast | None, float]:
        began = time.perf_counter()
        fit = self._fit(tier, now)
        return fit, time.perf_counter() - began

    def _fit(self, tier: str, now: float) -> TierForecast | None:
        """The tier's refit, None if its history cannot be forecast (ForecastError)."""
        assert self.observer is not None
        try:
            windows, previous = self.settings.forecast_windows, self.forecasts.get(tier)
            return fit_tier(self.observer, self.plan, tier, now, windows, previous)
        except ForecastError:
            return None


@dataclass
class _RefitWorker:
    """A forked process refitting the tiers it is asked for, from the previous forecasts it is handed; a
    failure in it is raised here, never read as a tier without a forecast."""

    process: BaseProcess
    pipe: Connection

    @classmethod
    def start(cls, policy: Planwatch) -> _RefitWorker:
        here, there = multiprocessing.Pipe()
        context = multiprocessing.get_context("fork")
        process = context.Process(target=_serve, args=(policy, there, here), daemon=True)
        process.start()
        there.close()
        return cls(process, here)

    def ask(self, now: float, minute: int, previous: Mapping[str, TierForecast | None]) -> None:
        self.pipe.send((now, minute, dict(previous)))

    def answer(self) -> dict[str, tuple[TierForecast | None, float]]:
        try:
            ok, body = self.pipe.recv()
        except EOFError:
            raise RuntimeError(f"the replay's refit worker exited (code {self.process.exitcode})") from None
        if not ok:
            raise RuntimeError(f"the replay's refit worker failed:\n{body}")
        fitted: dict[str, tuple[TierForecast | None, float]] = body
        return fitted

    def close(self) -> None:
        with contextlib.suppress(OSError):  # already gone
            self.pipe.send(None)
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
        self.pipe.close()


def _serve(policy: Planwatch, pipe: Connection, parents_end: Connection) -> None:
    """The worker's loop: at each (now, minute, previous forecasts) asked, those tiers' refits as the policy
    makes them, with their times; None or the parent gone (EOF) ends it."""
    parents_end.close()  # inherited by the fork: held open here, the parent's exit would never read as EOF
    try:
        while (asked := pipe.recv()) is not None:
            now, policy._minute, previous = asked
            policy.forecasts = {tier: f for tier, f in previous.items() if f is not None}
            try:
                fitted = {tier: policy._timed_fit(tier, now) for tier in previous}
            except BaseException:
                pipe.send((False, traceback.format_exc()))
                return
            pipe.send((True, fitted))
    except (EOFError, KeyboardInterrupt):
        pass  # the replay ended or was stopped
    finally:
        pipe.close()
