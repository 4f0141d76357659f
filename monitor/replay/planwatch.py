"""The planwatch policy: what `planwatch serve` would recommend, followed by an autoscaler (KEDA/HPA reading
planwatch_recommended_replicas), on the replay's own observations.

The same pieces as the service, nothing replay-only: every decision collects observations through a
Observer (`ReplayObserver`, what Prometheus would hold), calls `monitor.evaluation.evaluate` with the
previous call's open triggers and advice states, and takes each tier's recommended replicas. Forecasts are
refitted on the service's cadence (`Settings.forecast_interval`) from the replay's own demand history with
the service's windows (`monitor.outlooks.fit_tier`); a tier whose refit fails keeps its previous forecast
while it still reaches into the future, as `run_forecast_refit` does. A tier with no recommendation (its
data unknown) holds what runs.

With `refit_processes` > 1 a forked worker refits every other tier while this process refits the rest: the
refits are two fifths of the policy's time, and the replay's other policies are done long before planwatch,
so their cores idle. The worker reads the demand history from the fleets' records, which live in shared
memory (`TierRecord.empty`), and keeps its tiers' previous forecasts as this process does (`_kept`), so only
the forecasts it fitted cross the pipe; every decision is the same as with one process (tests/replay).
"""

from __future__ import annotations

import contextlib
import multiprocessing
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
    refit_processes: int = 1  # 2 or more: a forked worker refits every other tier (1: all in this one)
    _minute: int = 0
    _refit_at: float | None = None
    _worker: _RefitWorker | None = field(default=None, repr=False)

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
        its tiers are refitted there at the same time as the others here.

        Why a worker that lives through the run rather than a process per refit: a refit mostly refits the
        model its tier's backtest chose (kept for 6 h, `forecasting.choice`), a few milliseconds, less than
        starting a process (or shipping the history to one) costs; the worker reads the history where the
        replay writes it and returns only the forecasts."""
        assert self.observer is not None
        self._refit_at = now
        worker = self._refit_worker()
        away = worker.ask(now, self._minute) if worker is not None else ()
        fitted = {t.name: self._fit(t.name, now) for t in self.plan.tiers if t.name not in away}
        if worker is not None:
            fitted |= worker.answer()
        self.forecasts = self._kept(fitted, now)

    def _kept(self, fitted: Mapping[str, TierForecast | None], now: float) -> dict[str, TierForecast]:
        """The fitted tiers' forecasts in plan order: the new one, or where the refit failed the previous one
        while it still reaches past `now` (as `run_forecast_refit` keeps it)."""
        kept: dict[str, TierForecast] = {}
        for tier in self.plan.tiers:
            if tier.name not in fitted:
                continue
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
            self._worker = _RefitWorker.start(self, tuple(t.name for t in self.plan.tiers[1::2]))
            weakref.finalize(self, self._worker.close)
        return self._worker

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
    """A forked process refitting `tiers` whenever asked, its own copy of the policy keeping their previous
    forecasts; a failure in it is raised here, never read as a tier without a forecast."""

    tiers: tuple[str, ...]
    process: BaseProcess
    pipe: Connection

    @classmethod
    def start(cls, policy: Planwatch, tiers: tuple[str, ...]) -> _RefitWorker:
        here, there = multiprocessing.Pipe()
        context = multiprocessing.get_context("fork")
        process = context.Process(target=_serve, args=(policy, tiers, there, here), daemon=True)
        process.start()
        there.close()
        return cls(tiers, process, here)

    def ask(self, now: float, minute: int) -> tuple[str, ...]:
        self.pipe.send((now, minute))
        return self.tiers

    def answer(self) -> dict[str, TierForecast | None]:
        try:
            ok, body = self.pipe.recv()
        except EOFError:
            raise RuntimeError(f"the replay's refit worker exited (code {self.process.exitcode})") from None
        if not ok:
            raise RuntimeError(f"the replay's refit worker failed:\n{body}")
        fitted: dict[str, TierForecast | None] = body
        return fitted

    def close(self) -> None:
        with contextlib.suppress(OSError):  # already gone
            self.pipe.send(None)
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
        self.pipe.close()


def _serve(policy: Planwatch, tiers: tuple[str, ...], pipe: Connection, parents_end: Connection) -> None:
    """The worker's loop: at each (now, minute) asked, the tiers' refits as the policy makes them, kept as it
    keeps them (the next refit's previous forecasts), sent back; None or the parent gone (EOF) ends it."""
    parents_end.close()  # inherited by the fork: held open here, the parent's exit would never read as EOF
    try:
        while (asked := pipe.recv()) is not None:
            now, policy._minute = asked
            try:
                fitted = {tier: policy._fit(tier, now) for tier in tiers}
            except BaseException:
                pipe.send((False, traceback.format_exc()))
                return
            kept = policy._kept(fitted, now)
            policy.forecasts = {t: f for t, f in policy.forecasts.items() if t not in tiers} | kept
            pipe.send((True, fitted))
    except (EOFError, KeyboardInterrupt):
        pass  # the replay ended or was stopped
    finally:
        pipe.close()
