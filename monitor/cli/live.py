"""What `check` and `report` share: one evaluation of the plan against a live Prometheus, with each tier's
demand forecast fitted from its history there, as `serve` does (the same observer, forecasting path and
composition, so the three give the same advice on the same history)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from monitor import shapes
from monitor.cli.common import ExitCode, fail, option_seconds
from monitor.evaluation import Evaluation, EvaluationInputs, evaluate
from monitor.export import evaluation_shape
from monitor.hold_history import held_in_history
from monitor.observer import PrometheusObserver
from monitor.outlooks import DEFAULT_WINDOWS, FittedOutlooks, ForecastWindows, fit_outlooks
from monitor.plan.model import Plan
from monitor.source import HttpPrometheusSource, PrometheusUnreachable, QueryError
from monitor.source.redact import redact_url
from monitor.units import validate_promql_duration

__all__ = [
    "REACTIVE_ONLY",
    "LiveEvaluation",
    "check_document",
    "evaluate_live",
    "exit_on_prometheus_errors",
    "forecast_windows",
    "validate_windows",
]

REACTIVE_ONLY = "no demand forecast (--no-forecast): the advice is reactive only, with no scale schedule"


@dataclass(frozen=True)
class LiveEvaluation:
    evaluation: Evaluation
    fitted: FittedOutlooks | None  # None when forecasting was turned off

    @property
    def forecast_notes(self) -> tuple[str, ...]:
        """Why a tier's advice is reactive only (no forecast), one line per reason."""
        if self.fitted is None:
            return (REACTIVE_ONLY,)
        return tuple(f"tier {tier}: no demand forecast ({why}): the advice is reactive only"
                     for tier, why in self.fitted.errors.items())  # fmt: skip


def validate_windows(window: str, long_window: str) -> None:
    """`--window` and `--long-window` are PromQL ranges: a bad one is a usage error naming the option."""
    for name, value in (("--window", window), ("--long-window", long_window)):
        try:
            validate_promql_duration(value)
        except ValueError as exc:
            fail(f"{name}: {exc}")


def forecast_windows(history: str, horizon: str, step_seconds: float = DEFAULT_WINDOWS.step_seconds) -> ForecastWindows:
    """The windows of `--history` and `--horizon`; a bad duration is a usage error naming the option."""
    return ForecastWindows(option_seconds("--history", history), step_seconds, option_seconds("--horizon", horizon))


@contextmanager
def exit_on_prometheus_errors(url: str) -> Iterator[None]:
    """An unreachable Prometheus or a refused query exits with status 3, the URL shown without credentials."""
    try:
        yield
    except PrometheusUnreachable as exc:
        fail(f"cannot reach Prometheus at {exc.url}: {exc.reason}", ExitCode.UNREACHABLE)
    except QueryError as exc:
        fail(f"Prometheus at {redact_url(url)} refused a query ({exc.message}): {exc.query}", ExitCode.UNREACHABLE)


def evaluate_live(
    source: HttpPrometheusSource,
    plan: Plan,
    now: float,
    window: str,
    *,
    long_window: str,
    recording_rules: bool = True,
    windows: ForecastWindows | None,
) -> LiveEvaluation:
    """Collect the observations over `window` ending at `now`, fit the forecasts (unless `windows` is None)
    and evaluate once. An unreachable Prometheus or a refused query exits with status 3."""
    observer = PrometheusObserver(source, long_window=long_window, recording_rules=recording_rules,
                                    cycle_timeout=source.settings.timeout)  # fmt: skip
    with exit_on_prometheus_errors(source.settings.url):
        observations = observer.collect(plan, now, window)
        fitted = fit_outlooks(observer, plan, now, windows) if windows is not None else None
        inputs = EvaluationInputs(plan, observations, now, outlooks=fitted.outlooks if fitted else {})
        first = evaluate(inputs)
        # One-shot: how long each trigger has held is read from history, as serve reads it on first sight.
        keys = [r.key for r in first.current_triggers]
        held = held_in_history(observer, plan, now, window, keys, first.sizing) if keys else {}
    if not held:
        return LiveEvaluation(first, fitted)
    return LiveEvaluation(evaluate(replace(inputs, held_before=held, sizing=first.sizing)), fitted)


def check_document(live: LiveEvaluation) -> shapes.CheckDocument:
    """The JSON of `check`: the evaluation as the API has it, then what the advice planned on (each tier's
    forecast model, or why it has none)."""
    forecasts = live.fitted.forecasts if live.fitted else {}
    forecast = shapes.CheckForecast(
        enabled=live.fitted is not None,
        models={tier: f.model for tier, f in forecasts.items()},
        reactive_only=list(live.evaluation.reactive_tiers),
        notes=list(live.forecast_notes),
    )
    return shapes.CheckDocument(**dict(evaluation_shape(live.evaluation)), forecast=forecast)
