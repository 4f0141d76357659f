"""The scheduled jobs: collect (I/O) -> compute (pure) -> store and publish.

Each job reads the clock it is given, never raises into the scheduler (a failure is recorded in the
snapshot and shows on /readyz and /metrics) and leaves the previous results in place when it cannot do
better. An unreachable Prometheus is not a failure of the evaluation: it runs on all-unknown observations,
so advice holds the fleet (stale) and triggers are carried over, not resolved.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, fields, replace

from monitor.advice import AdviceSettings
from monitor.evaluation import Evaluation, EvaluationInputs, evaluate
from monitor.forecasts import TierForecast
from monitor.hold_history import held_in_history
from monitor.observe.model import Measurement, TierObservation
from monitor.observe.observer import Observer, SourceHealth
from monitor.outlooks import fit_tier
from monitor.plan.model import FLEET, Plan
from monitor.service.results import OpenTrigger, Outcome, Results, Snapshot, shown
from monitor.service.settings import Settings
from monitor.service.state import StateStore
from monitor.sizing.plan_sizing import PlanSizing
from monitor.source import PrometheusUnreachable

__all__ = [
    "Collected",
    "JobContext",
    "attach_episodes",
    "run_evaluation",
    "run_forecast_refit",
    "unknown_observation",
    "with_fresh_acknowledgements",
]

log = logging.getLogger("planwatch.service")


def _reason(exc: PrometheusUnreachable) -> str:
    return exc.reason


@dataclass(frozen=True)
class JobContext:
    plan: Plan
    sizing: PlanSizing
    settings: Settings
    observer: Observer
    store: StateStore
    results: Results
    clock: Callable[[], float]
    timer: Callable[[], float]

    @property
    def advice(self) -> AdviceSettings:
        return self.settings.advice.to_advice_settings()


@dataclass(frozen=True)
class Collected:
    observations: dict[str, TierObservation]
    outcome: Outcome
    source: SourceHealth
    error: str = ""


def unknown_observation(tier: str, now: float, window: str, reason: str) -> TierObservation:
    """Every measurement unknown, with the reason: what advice and triggers see when nothing was observed."""
    unknown = Measurement.unknown(reason, window=window)
    values = {f.name: unknown for f in fields(TierObservation) if f.type in ("Measurement", Measurement)}
    return TierObservation(tier=tier, evaluated_at=now, window=window, **values)  # type: ignore[arg-type]


def collect(ctx: JobContext, now: float) -> Collected:
    """The cycle's observations and Prometheus's health: one probe, the observer's (its `health` at the same
    `now` reuses it), and none more when the collection already found Prometheus unreachable."""
    window = ctx.settings.observation_window
    try:
        observed = ctx.observer.collect(ctx.plan, now, window)
    except PrometheusUnreachable as exc:
        why = f"Prometheus unreachable: {_reason(exc)}"
        source = shown(SourceHealth(False, ctx.settings.prometheus.url, _reason(exc), checked_at=now))
        return Collected(_complete(ctx.plan, {}, now, window, why), Outcome.UNREACHABLE, source, why)
    except Exception as exc:
        log.exception("collecting observations failed")
        why = f"observer failed: {type(exc).__name__}: {exc}"
        return Collected(_complete(ctx.plan, {}, now, window, why), Outcome.ERROR, _health(ctx, now), why)
    return Collected(_complete(ctx.plan, observed, now, window, "no observation"), Outcome.OK, _health(ctx, now))


def _complete(
    plan: Plan, observed: dict[str, TierObservation], now: float, window: str, reason: str
) -> dict[str, TierObservation]:
    """One observation per tier of the plan and for the fleet view: what the observer did not return is
    unknown, not absent (so triggers on it are carried over, not resolved)."""
    names = [t.name for t in plan.tiers] + ([FLEET] if FLEET in observed or not observed else [])
    return {n: observed.get(n) or unknown_observation(n, now, window, reason) for n in names}


def _health(ctx: JobContext, now: float) -> SourceHealth:
    url = ctx.settings.prometheus.url
    try:
        h = ctx.observer.health(now)
    except PrometheusUnreachable as exc:
        return shown(SourceHealth(False, url, _reason(exc), checked_at=now))
    except Exception as exc:
        log.exception("checking Prometheus health failed")
        return shown(SourceHealth(None, url, f"health check failed: {exc}", checked_at=now))
    return shown(replace(h, url=h.url or url, checked_at=now))


def run_evaluation(ctx: JobContext) -> Snapshot:
    """One evaluation: collect, evaluate (pure), commit the episodes and advice state, publish."""
    now, started = ctx.clock(), ctx.timer()
    try:
        collected = collect(ctx, now)
        inputs = _inputs(ctx, collected, now)
        evaluation = _with_history_holds(ctx, inputs, evaluate(inputs), collected)
        ctx.store.commit_evaluation(evaluation.current_triggers, evaluation.resolved, evaluation.advice_states, now)
        triggers = attach_episodes(ctx.store, evaluation)
    except Exception as exc:
        log.exception("evaluation failed")
        return _publish_failure(ctx, now, ctx.timer() - started, f"{type(exc).__name__}: {exc}")
    duration = ctx.timer() - started
    fresh_acks = with_fresh_acknowledgements(ctx.store)  # one posted while this ran is not lost
    return ctx.results.update(lambda s: fresh_acks(_published(s, collected, evaluation, triggers, now, duration)))


def _inputs(ctx: JobContext, collected: Collected, now: float) -> EvaluationInputs:
    """This cycle's observations, the latest forecasts, and the state the previous cycles stored."""
    return EvaluationInputs(
        ctx.plan,
        collected.observations,
        now,
        outlooks=ctx.results.current().outlooks(),
        previous_triggers={e.record.key: e.record for e in ctx.store.open_episodes()},
        advice_states=ctx.store.advice_states(),
        evals=ctx.store.evals(),
        settings=ctx.advice,
        sizing=ctx.sizing,
    )


def _with_history_holds(ctx: JobContext, inputs: EvaluationInputs, ev: Evaluation, collected: Collected) -> Evaluation:
    """A trigger seen for the first time (no stored episode) is judged on the history Prometheus holds:
    if the condition held over its hold period there, it is active now, as `check` says."""
    new = [r.key for r in ev.current_triggers if r.key not in inputs.previous_triggers]
    if not new or collected.outcome is not Outcome.OK:
        return ev
    window = ctx.settings.observation_window
    try:
        held = held_in_history(ctx.observer, ctx.plan, inputs.now, window, new, ctx.sizing)
    except PrometheusUnreachable as exc:
        log.warning("reading trigger history failed, new triggers start pending: %s", _reason(exc))
        return ev
    return evaluate(replace(inputs, held_before=held)) if held else ev


def attach_episodes(store: StateStore, evaluation: Evaluation) -> tuple[OpenTrigger, ...]:
    """The holding triggers with the id of their stored episode (acknowledgements are attached on publish)."""
    episodes = {e.record.key: e.id for e in store.open_episodes()}
    carried = {r.key for r in evaluation.carried}
    return tuple(OpenTrigger(r, episodes.get(r.key), r.key in carried) for r in evaluation.triggers)


def with_fresh_acknowledgements(store: StateStore) -> Callable[[Snapshot], Snapshot]:
    """A snapshot change that re-reads the acknowledgements of the open triggers (after one is posted)."""

    def change(s: Snapshot) -> Snapshot:
        acks = store.acknowledgements(t.episode_id for t in s.triggers if t.episode_id is not None)
        fresh = tuple(replace(t, acknowledgements=tuple(acks.get(t.episode_id or -1, ()))) for t in s.triggers)
        return replace(s, triggers=fresh)

    return change


def _published(
    s: Snapshot, c: Collected, evaluation: Evaluation, triggers: tuple[OpenTrigger, ...], now: float, duration: float
) -> Snapshot:
    return replace(
        s,
        evaluation=evaluation,
        triggers=triggers,
        outcome=c.outcome,
        last_error=c.error,
        source=c.source,
        last_attempt_at=now,
        last_success_at=now if c.outcome is Outcome.OK else s.last_success_at,
        evaluations={**s.evaluations, c.outcome: s.evaluations.get(c.outcome, 0) + 1},
        duration_seconds_sum=s.duration_seconds_sum + duration,
    )


def _publish_failure(ctx: JobContext, now: float, duration: float, error: str) -> Snapshot:
    """The previous results stay; the failure is counted and shown on /readyz."""
    return ctx.results.update(
        lambda s: replace(
            s,
            outcome=Outcome.ERROR,
            last_error=error,
            last_attempt_at=now,
            evaluations={**s.evaluations, Outcome.ERROR: s.evaluations.get(Outcome.ERROR, 0) + 1},
            duration_seconds_sum=s.duration_seconds_sum + duration,
        )
    )


def run_forecast_refit(ctx: JobContext) -> Snapshot:
    """Refit every tier's demand forecast; a tier that fails keeps its previous forecast while it still
    reaches into the future, and says why on /v1/forecast and /readyz."""
    now = ctx.clock()
    fits: dict[str, TierForecast] = {}
    errors: dict[str, str] = {}
    previous = ctx.results.current().forecasts
    for tier in ctx.plan.tiers:
        try:
            fits[tier.name] = _refit(ctx, tier.name, now, previous.get(tier.name))
        except PrometheusUnreachable as exc:
            errors[tier.name] = f"Prometheus unreachable: {_reason(exc)}"
        except Exception as exc:
            log.warning("forecast for tier %s failed: %s", tier.name, exc)
            errors[tier.name] = f"{type(exc).__name__}: {exc}"

    def change(s: Snapshot) -> Snapshot:
        kept = {n: f for n, f in s.forecasts.items() if n in errors and f.reaches_past(now)}
        return replace(s, forecasts={**kept, **fits}, forecast_errors=errors, forecast_refit_at=now)

    return ctx.results.update(change)


def _refit(ctx: JobContext, tier: str, now: float, previous: TierForecast | None) -> TierForecast:
    return fit_tier(ctx.observer, ctx.plan, tier, now, ctx.settings.forecast_windows, previous)
