"""The forecast refit: demand history -> forecast -> the outlook advice plans on (mean and 80% upper bound)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from forecasting import ForecastInputError, WorkWeek, synthetic_traffic
from monitor import shapes
from monitor.cli.main import build_app
from monitor.forecasts import forecast_tier, history_series, known_points, work_week
from monitor.observe.observer import DemandHistory
from monitor.outlooks import fit_outlooks, fit_tier, plan_peak
from monitor.plan.model import Weekday
from monitor.service.app import Services
from tests.builders import copilot_plan
from tests.service.conftest import ApiClient
from tests.service.fakes import Clock, FakeObserver


def _history(days: float, gap: slice | None = None) -> DemandHistory:
    series = synthetic_traffic(days, timezone="America/New_York", seed=3)
    values: list[float | None] = [float(v) for v in series.values]
    if gap is not None:
        values[gap] = [None] * len(values[gap])
    times = tuple(float(t) for t in series.timestamps_s)
    return DemandHistory("copilot", 300.0, times, tuple(values), "tier:demand_rps")


@pytest.mark.parametrize(
    ("days", "gap", "model_prefix"),
    [
        pytest.param(14, None, "", id="two weeks of history are backtested and a model picked"),
        pytest.param(14, slice(2000, 2100), "", id="a gap of eight hours is filled, not read as zero demand"),
        pytest.param(0.5, None, "mean_drift", id="half a day of history still gives a (wide) outlook"),
    ],
)
def test_the_outlook_is_the_forecast_mean_and_its_80_percent_upper_bound(
    days: float, gap: slice | None, model_prefix: str
) -> None:
    history = _history(days, gap)
    end = history.timestamps[-1]
    f = forecast_tier(history, end, horizon_seconds=86_400.0)
    o = f.outlook
    assert len(o.timestamps) == 288 and o.timestamps[0] == end + 300.0
    assert all(lo <= m <= up for lo, m, up in zip(f.lower, o.mean, o.upper, strict=True))
    assert o.model == f.model and f.model.startswith(model_prefix)
    assert f.next_peak_rps is not None and f.next_peak_upper_rps is not None
    assert f.next_peak_upper_rps >= f.next_peak_rps > 0
    assert f.history_points == len(history.timestamps) - (gap.stop - gap.start if gap else 0)


@pytest.mark.parametrize(
    ("days", "peak_over_seen", "ceiling_over_seen"),
    [
        pytest.param(0.5, 1.2, 1.2, id="a first morning's drift and spread are held to the plan's peak"),
        pytest.param(0.75, 1.2, 1.2, id="all through the first day"),
        pytest.param(0.5, 0.5, 1.0, id="demand already above the plan's peak holds it at the highest seen"),
        pytest.param(3.0, 1.2, None, id="a forecast that has seen a daily cycle is not held"),
    ],
)
def test_a_forecast_without_a_daily_cycle_is_held_to_the_plans_peak(
    days: float, peak_over_seen: float, ceiling_over_seen: float | None
) -> None:
    # Half a day from midnight is the night and the morning ramp: the mean/drift's upper bound reads that step
    # as a trend and a spread, four times the highest demand the morning had (the advice sized a tier's max).
    history = _history(days)
    end, seen = history.timestamps[-1], max(v for v in history.values if v is not None)
    free = forecast_tier(history, end, 86_400.0)
    held = forecast_tier(history, end, 86_400.0, plan_peak_rps=peak_over_seen * seen)
    if ceiling_over_seen is None:
        assert held == free
        return
    ceiling = ceiling_over_seen * seen
    assert max(free.outlook.upper) > 2.0 * ceiling
    assert max(held.outlook.upper) == pytest.approx(ceiling)
    assert held.outlook.mean == tuple(min(m, ceiling) for m in free.outlook.mean)
    assert all(lo <= m <= up for lo, m, up in zip(held.lower, held.outlook.mean, held.outlook.upper, strict=True))
    assert held.next_peak_upper_rps is not None and held.next_peak_upper_rps <= ceiling + 1e-9
    assert "held to the plan's peak" in held.reason


def test_a_first_morning_still_climbing_past_the_plans_peak_keeps_its_climb_ahead() -> None:
    # Three hours: two quiet, then demand climbing 12 req/s an hour, past a plan peak of 5: the schedule must
    # still bring replicas ahead of the climb (the dashboards' "next scale-up" on a first morning over peak).
    start, step = 1_767_225_600.0, 300.0
    values = [0.0] * 24 + [float(i) for i in range(1, 13)]
    times = tuple(start + step * (i + 1) for i in range(len(values)))
    history = DemandHistory("copilot", step, times, tuple(values), "q")
    end = times[-1]
    held = forecast_tier(history, end, 86_400.0, plan_peak_rps=5.0)
    hour = held.outlook.timestamps.index(end + 3600.0)
    assert 12.0 < held.outlook.upper[hour] <= 12.0 + 12.0 + 1e-6  # above the highest seen, by at most the climb
    assert "rising 12 req/s an hour" in held.reason


@pytest.mark.parametrize("fit", ["fit_tier", "fit_outlooks"], ids=["the service's refit", "check and report"])
def test_every_fitting_path_holds_a_first_days_forecast_to_the_tiers_planned_peak(fit: str) -> None:
    plan = copilot_plan()
    history = _history(0.5)
    end, seen = history.timestamps[-1], max(v for v in history.values if v is not None)
    observer = FakeObserver(history={"copilot": history})
    if fit == "fit_tier":
        fitted = fit_tier(observer, plan, "copilot", end)
    else:
        fitted = fit_outlooks(observer, plan, end).forecasts["copilot"]
    assert max(fitted.outlook.upper) <= max(plan_peak(plan, "copilot"), seen) + 1e-9
    assert "held to the plan's peak" in fitted.reason


def test_no_history_is_an_error_not_a_flat_zero_forecast() -> None:
    empty = DemandHistory("copilot", 300.0, (1.0, 2.0), (None, None), "q")
    with pytest.raises(ForecastInputError, match="tier copilot: 0 point"):
        forecast_tier(empty, 2.0, 86_400.0)


def test_the_refit_job_publishes_forecasts_and_advice_plans_on_them(
    services: Services, observer: FakeObserver, clock: Clock
) -> None:
    observer.history = {"copilot": _history(14)}
    clock.now = observer.history["copilot"].timestamps[-1]
    services.refit_now()
    services.evaluate_now()
    api = ApiClient(services.app)
    (tier,) = api.get("/v1/forecast").json()["tiers"]
    assert tier["name"] == "copilot" and len(tier["upper"]) == 288 and tier["interval"] == "80%"
    (rec,) = api.get("/v1/recommendations").json()["recommendations"]
    assert rec["needed_at_forecast_peak"] is not None
    assert 'planwatch_forecast_peak_requests_per_second{tier="copilot"}' in api.get("/metrics").text


def test_a_failed_refit_keeps_the_previous_forecast_and_says_why(
    services: Services, observer: FakeObserver, clock: Clock
) -> None:
    observer.history = {"copilot": _history(14)}
    clock.now = observer.history["copilot"].timestamps[-1]
    first = services.refit_now().forecasts["copilot"]
    observer.reachable = False
    clock.advance(3600)
    snapshot = services.refit_now()
    assert snapshot.forecasts["copilot"] is first
    assert snapshot.forecast_errors["copilot"].startswith("Prometheus unreachable")
    assert ApiClient(services.app).get("/v1/forecast").json()["errors"]["copilot"].startswith("Prometheus")
    clock.advance(2 * 86_400)  # the kept forecast no longer reaches into the future: dropped
    assert "copilot" not in services.refit_now().forecasts


def _cut(history: DemandHistory, hours: float) -> DemandHistory:
    """The history as it stood `hours` before its end."""
    keep = len(history.timestamps) - round(hours * 3600 / history.step_seconds)
    return DemandHistory(
        history.tier, history.step_seconds, history.timestamps[:keep], history.values[:keep], history.query
    )


@pytest.mark.parametrize(
    ("later_hours", "kept"),
    [
        pytest.param(1.0, "kept from the backtest 1h ago", id="the next hourly refit keeps the backtest's choice"),
        pytest.param(6.0, None, id="a refit a calibration spacing later backtests again"),
    ],
)
def test_the_refit_job_hands_each_tier_its_previous_choice(
    services: Services, observer: FakeObserver, clock: Clock, later_hours: float, kept: str | None
) -> None:
    whole = _history(15)
    observer.history = {"copilot": _cut(whole, 12.0)}
    clock.now = observer.history["copilot"].timestamps[-1]
    first = services.refit_now().forecasts["copilot"]
    assert first.choice is not None and "kept from the backtest" not in first.reason
    observer.history = {"copilot": _cut(whole, 12.0 - later_hours)}
    clock.advance(later_hours * 3600)
    refit = services.refit_now().forecasts["copilot"]
    assert refit.fitted_at == clock.now and refit.outlook.timestamps[0] == clock.now + 300.0
    if kept:
        assert refit.choice is first.choice and kept in refit.reason
    else:
        assert refit.choice is not first.choice and "kept from the backtest" not in refit.reason


@pytest.mark.parametrize(
    ("first_job", "has_forecast"),
    [
        pytest.param("evaluation", False, id="an evaluation before the first refit has no forecast"),
        pytest.param("first-refit", True, id="the start-up refit is followed by an evaluation with the forecast"),
    ],
)
def test_the_first_evaluation_after_start_up_plans_on_the_forecast(
    services: Services, observer: FakeObserver, clock: Clock, first_job: str, has_forecast: bool
) -> None:
    from monitor.service.app import _scheduler, refit_then_evaluate
    from monitor.service.jobs import run_evaluation

    observer.history = {"copilot": _history(14)}
    clock.now = observer.history["copilot"].timestamps[-1]
    jobs = {j.id: j for j in _scheduler(services.jobs).get_jobs()}
    assert jobs["first-refit"].func is refit_then_evaluate and jobs["evaluation"].func is run_evaluation
    jobs[first_job].func(*jobs[first_job].args)
    (rec,) = ApiClient(services.app).get("/v1/recommendations").json()["recommendations"]
    assert (rec["needed_at_forecast_peak"] is not None) is has_forecast


@pytest.mark.parametrize(
    ("overrides", "refit_s", "measurements_s"),
    [
        pytest.param({}, 900.0, 3600.0, id="by default forecasts are refitted every 15 min and measurements hourly"),
        pytest.param(
            {"forecast_interval": 300.0, "measurement_interval": 7200.0}, 300.0, 7200.0,
            id="each cadence is configured on its own",
        ),
    ],
)  # fmt: skip
def test_forecast_refits_and_measurement_records_run_on_their_own_cadence(
    start: Callable[..., Services], overrides: dict[str, float], refit_s: float, measurements_s: float
) -> None:
    from monitor.service.app import _scheduler

    jobs = {j.id: j for j in _scheduler(start(**overrides).jobs).get_jobs()}
    assert jobs["forecast-refit"].trigger.interval.total_seconds() == refit_s
    assert jobs["measurements"].trigger.interval.total_seconds() == measurements_s


def test_the_cli_json_and_the_api_say_the_same_forecast_in_the_same_shape(
    services: Services, observer: FakeObserver, clock: Clock, tmp_path: Path
) -> None:
    """One history, with a gap: the API's /v1/forecast entry and `planwatch forecast --format json` on the same
    points as a CSV (the gap's rows left out, the plan's working week given) are the same document, but for
    the CLI's ramp."""
    history = _history(14, gap=slice(3000, 3040))
    observer.history = {"copilot": history}
    clock.now = history.timestamps[-1]
    services.refit_now()
    (api_tier,) = ApiClient(services.app).get("/v1/forecast").json()["tiers"]
    csv = tmp_path / "copilot.csv"
    rows = [f"{t!r},{v!r}" for t, v in zip(history.timestamps, history.values, strict=True) if v is not None]
    csv.write_text("timestamp,value\n" + "\n".join(rows) + "\n")
    week = ["--workdays", "mon-fri", "--timezone", "America/New_York"]  # support-copilot.yaml's business days
    result = CliRunner().invoke(build_app(), ["forecast", "--csv", str(csv), "--format", "json", "--step", "5m", *week])
    assert result.exit_code == 0, result.output
    cli = json.loads(result.stdout)
    assert set(cli) - set(api_tier) == {"ramp"}
    assert {k: v for k, v in cli.items() if k != "ramp"} == api_tier
    shapes.TierForecast.model_validate(api_tier)
    shapes.ForecastDocument.model_validate(cli)  # the tier's forecast and its ramp, nothing else


@pytest.mark.parametrize(
    ("values", "known"),
    [
        pytest.param((1.0, None, 3.0), 2, id="a step without data stays on the grid as NaN, not dropped"),
        pytest.param((None, None, None), 0, id="a history with no data is all gaps, never zeros"),
    ],
)
def test_a_history_becomes_a_series_with_its_gaps_explicit(values: tuple[float | None, ...], known: int) -> None:
    history = DemandHistory("copilot", 300.0, (0.0, 300.0, 600.0), values, "q")
    series = history_series(history)
    assert list(series.timestamps_s) == [0.0, 300.0, 600.0]
    assert [None if math.isnan(v) else v for v in series.values] == list(values)
    assert known_points(series) == known


@pytest.mark.parametrize(
    ("weekdays", "expected"),
    [
        pytest.param(
            (Weekday.MON, Weekday.TUE, Weekday.WED, Weekday.THU, Weekday.FRI),
            WorkWeek("America/New_York", frozenset(range(5))),
            id="the plan's business days in its timezone are the forecaster's working week",
        ),
        pytest.param(tuple(Weekday), None, id="a plan open every day tells no day from another"),
        pytest.param((), None, id="nor does one with no business day"),
    ],
)
def test_the_forecasts_working_week_is_the_plans(weekdays: tuple[Weekday, ...], expected: WorkWeek | None) -> None:
    plan = copilot_plan()
    hours = plan.workload.business_hours.model_copy(update={"weekdays": weekdays})
    plan = plan.model_copy(update={"workload": plan.workload.model_copy(update={"business_hours": hours})})
    assert work_week(plan) == expected
