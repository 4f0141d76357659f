"""forecast(): model choice, fallbacks, intervals, trend, level shift and gaps, on series with known answers."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from forecasting import ForecastResult, ForecastSettings, Series, forecast, forecast_many
from tests.forecasting.helpers import DAY, STEP, WEEK, mae, split, traffic, with_values


@pytest.fixture(scope="module")
def four_weeks() -> tuple[ForecastResult, np.ndarray, np.ndarray]:
    """28 days of Poisson-noisy traffic (no day-level noise, no bursts), and the Monday after."""
    full = traffic(29, seed=11)
    history, monday = split(full, 28 * DAY)
    last_monday = history.values[-WEEK : -WEEK + DAY]
    return forecast(history, ForecastSettings(thresholds=(10.0, 20.0, 30.0))), monday, last_monday


def test_a_daily_and_weekly_pattern_is_recovered_better_than_last_week(
    four_weeks: tuple[ForecastResult, np.ndarray, np.ndarray],
) -> None:
    result, monday, last_monday = four_weeks
    assert result.model == "mstl"
    assert mae(result.mean, monday) < 0.85 * mae(last_monday, monday)  # averaging weeks beats repeating one
    assert result.next_peak.value == pytest.approx(monday.max(), rel=0.05)


def test_the_reason_names_the_pick_its_numbers_and_the_baseline(
    four_weeks: tuple[ForecastResult, np.ndarray, np.ndarray],
) -> None:
    result, _, _ = four_weeks
    report = result.backtest
    assert report is not None and report.baseline == "seasonal_naive_weekly" and report.picked == "mstl"
    # the baseline is scored with its short-horizon anchor, which is never worse than none on its windows
    assert report.score("seasonal_naive_weekly").mase <= 1.0
    assert {s.model for s in report.scores} == {"seasonal_naive_weekly", "seasonal_naive_daily", "mstl"}
    picked = report.score("mstl")
    assert picked.mase < 1.0 and picked.origins >= 12 and len(report.origins_s) == picked.origins
    assert f"picked mstl, MASE {picked.mase:.2f} against seasonal_naive_weekly" in result.reason
    # model choice sees the 12 windows every 6 h as well as the same time of week one and two weeks back
    assert result.reason.startswith(f"28.0 days of history, {len(report.origins_s)} backtest origin(s) x 24 h")
    assert len(report.origins_s) >= 13
    assert "holt_winters skipped (daily naive >= 1.5x weekly naive" in result.reason


def test_the_intervals_cover_the_next_day_about_as_often_as_they_claim(
    four_weeks: tuple[ForecastResult, np.ndarray, np.ndarray],
) -> None:
    result, monday, _ = four_weeks
    bands = result.bands
    inside_80 = np.mean((bands.lower_80 <= monday) & (monday <= bands.upper_80))
    inside_95 = np.mean((bands.lower_95 <= monday) & (monday <= bands.upper_95))
    assert 0.70 <= inside_80 <= 0.95 and inside_95 >= 0.88
    assert np.all(bands.lower_95 <= bands.lower_80) and np.all(bands.upper_80 <= bands.upper_95)
    picked = result.backtest.score("mstl")  # type: ignore[union-attr]
    assert picked.coverage_80 == pytest.approx(0.8, abs=0.1)


def test_interval_coverage_is_near_nominal_on_pure_noise() -> None:
    """White noise around 50: any model's errors are the noise, so coverage must match the claim."""
    inside_80, inside_95 = [], []
    for seed in range(3):
        values = np.random.default_rng(seed).normal(50.0, 5.0, 8 * DAY)
        history, actual = split(Series(np.arange(values.size) * STEP, values), 7 * DAY)
        result = forecast(history)
        bands = result.bands
        inside_80.append(np.mean((bands.lower_80 <= actual) & (actual <= bands.upper_80)))
        inside_95.append(np.mean((bands.lower_95 <= actual) & (actual <= bands.upper_95)))
    assert np.mean(inside_80) == pytest.approx(0.80, abs=0.06)
    assert np.mean(inside_95) == pytest.approx(0.95, abs=0.04)


def test_the_first_hours_band_widens_with_the_lead_when_demand_wanders_from_the_daily_shape() -> None:
    """A daily shape times a wandering level (the sum of the last 4 h of 2% steps): 5 minutes ahead demand
    is near where it is now (3% a step), an hour ahead it has moved several times that. Each step of the
    first hour gets its own quantiles (from the hour blocks the short anchor is fitted on, by how the path
    moves over the hour), so the first step's bound is below the hour's last (on flat hours 6% vs 21%): one
    quantile for the whole hour made the advice hold an hour's spread for a demand 5 minutes away."""
    rng = np.random.default_rng(5)
    steps = np.arange(10 * DAY)
    shape = 100.0 + 50.0 * np.sin(2 * np.pi * steps / DAY)
    walk = np.exp(np.convolve(rng.normal(0.0, 0.02, steps.size), np.ones(48), mode="same"))  # 4 h of 2% steps
    result = forecast(Series(steps * STEP, shape * walk))
    first = result.calibration.first
    assert first is not None and "hour blocks" in result.calibration.source
    upper = np.array([[q[2] for q in group] for group in first.quantiles])  # [falling, flat, rising][step]
    assert np.all(upper[:, 0] < upper[:, 11]) and upper[1, 0] < 0.5 * upper[1, 11]


@pytest.mark.parametrize(
    ("days", "model", "reason_start"),
    [
        pytest.param(0.5, "mean_drift", "0.5 days of history: mean/drift", id="half a day gives mean/drift"),
        pytest.param(
            1.5,
            "seasonal_naive_daily",
            "1.5 days of history: daily seasonal naive",
            id="a day and a half gives daily naive",
        ),
        pytest.param(
            2.5,
            "seasonal_naive_daily",
            "2.5 days of history, 3 backtest origin(s) x 24 h: seasonal_naive_daily (the only model",
            id="two and a half days backtest daily naive alone on the windows every 6 h that fit",
        ),
    ],
)
def test_short_history_falls_back_to_a_simpler_model_and_says_why(days: float, model: str, reason_start: str) -> None:
    result = forecast(traffic(days, seed=2))
    assert result.model == model
    assert result.reason.startswith(reason_start), result.reason
    assert len(result.mean) == DAY and np.all(result.bands.lower_95 <= result.mean)


def test_half_a_day_of_history_gets_wide_intervals() -> None:
    result = forecast(traffic(0.5, seed=2))
    assert result.calibration.source == "spread of the history x2"
    width = result.bands.upper_80 - result.bands.lower_80
    assert np.min(width) > 0.5 * np.mean(result.history.values)


@pytest.mark.parametrize(
    ("days", "multiple"),
    [
        pytest.param(1.0, 3.5, id="one day: the whole day's spread x2 stays within 3.5x the peak seen (was 4.4x)"),
        pytest.param(1.5, 3.0, id="a day and a half of day-over-day errors: within 3x (was 4x)"),
        pytest.param(2.0, 3.0, id="two days, one backtest window: within 3x (was 2.8x, 3.2x half a day later)"),
        pytest.param(2.5, 3.0, id="two and a half days, windows spanning 1.5 days: within 3x (was 3.2x)"),
    ],
)
def test_first_days_upper_bounds_stay_within_a_few_times_the_observed_peak(days: float, multiple: float) -> None:
    """A service ramping up over its first day, with bursts: yesterday's copy is near zero where today is
    busy, and errors relative to that near-zero forecast used to multiply the peak's bound."""
    series = traffic(days + 1, seed=5, bursts=True, peak_rps=2.0)
    values = np.array(series.values)
    values[:DAY] *= np.linspace(0.02, 1.0, DAY)
    n = int(days * DAY)
    result = forecast(Series(series.timestamps_s[:n], values[:n]))
    seen_peak, next_peak = float(values[:n].max()), float(values[n : n + DAY].max())
    assert float(result.bands.upper_95.max()) <= multiple * seen_peak
    assert result.next_peak.upper_95 >= next_peak  # and still above what came


def test_weekly_models_wait_for_two_weeks() -> None:
    result = forecast(traffic(12, seed=4))
    assert result.backtest is not None and result.backtest.baseline == "seasonal_naive_daily"
    daily_models = {"seasonal_naive_daily", "holt_winters", "mstl_daily", "profile_level", "combined", "day_median"}
    assert {s.model for s in result.backtest.scores} <= daily_models


def test_a_trend_is_followed() -> None:
    """3% growth a day, no weekly pattern: tomorrow is above today, by about 3%."""
    full = traffic(11, poisson=False, weekend_fraction=1.0, growth_per_week=0.21)
    history, tomorrow = split(full, 10 * DAY)
    result = forecast(history)
    today = history.values[-DAY:]
    assert result.mean.mean() == pytest.approx(tomorrow.mean(), rel=0.015)
    assert result.mean.mean() > 1.015 * today.mean()


def test_a_level_shift_is_adapted_to() -> None:
    """Demand up 50% three days ago (a new customer): tomorrow's peak is at the new level."""
    full = traffic(29, seed=5)
    values = full.values.copy()
    values[25 * DAY :] *= 1.5
    history, monday = split(with_values(full, values), 28 * DAY)
    result = forecast(history)
    old_level_peak = values[: 21 * DAY].max()
    assert result.next_peak.value == pytest.approx(monday.max(), rel=0.10)
    assert abs(result.next_peak.value - monday.max()) < 0.5 * abs(old_level_peak - monday.max())


def test_gaps_and_resets_do_not_change_the_forecast_much(
    four_weeks: tuple[ForecastResult, np.ndarray, np.ndarray],
) -> None:
    clean_result, monday, _ = four_weeks
    full = traffic(29, seed=11)
    history, _ = split(full, 28 * DAY)
    rng = np.random.default_rng(0)
    values = history.values.copy()
    values[rng.choice(values.size, size=values.size // 10, replace=False)] = np.nan  # 10% of scrapes lost
    values[20 * DAY + 96 : 20 * DAY + 168] = np.nan  # six hours of outage on a weekday morning
    values[[3000, 5000, 7000]] = -12.0  # counter resets
    keep = np.ones(values.size, dtype=bool)
    keep[4000:4010] = False  # and timestamps missing altogether
    holed = Series(history.timestamps_s[keep], values[keep])
    result = forecast(holed, ForecastSettings(thresholds=(10.0, 20.0, 30.0)))
    report = result.regularize_report
    assert report is not None and report.resets_cleaned == 3 and report.seasonal_filled_steps == 72 + 10
    assert report.missing_steps >= values.size // 10
    assert mae(result.mean, clean_result.mean) < 0.03 * monday.mean()


def test_forecasts_and_bounds_never_go_below_zero() -> None:
    """A quiet service whose demand is mostly zero, with a falling trend."""
    rng = np.random.default_rng(9)
    values = np.where(rng.uniform(size=6 * DAY) < 0.2, rng.exponential(2.0, 6 * DAY), 0.0)
    values *= np.linspace(2.0, 0.2, values.size)
    result = forecast(Series(np.arange(values.size) * STEP, values), ForecastSettings(horizon_seconds=3 * 86_400))
    for path in (result.mean, result.bands.lower_80, result.bands.lower_95, result.bands.upper_95):
        assert np.all(path >= 0.0)
    assert all(p.lower >= 0.0 for p in result.points(95))


def test_the_forecast_steps_on_from_the_end_of_the_history() -> None:
    result = forecast(traffic(3, seed=1), ForecastSettings(horizon_seconds=6 * 3600))
    rows = result.points(80)
    assert len(rows) == 72 and rows[0].timestamp_s == result.history.end_s + STEP
    assert all(r.lower <= r.mean <= r.upper for r in rows)
    with pytest.raises(ValueError, match="80 or 95"):
        result.points(90)


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"horizon_seconds": 0}, id="a zero horizon is refused"),
        pytest.param({"max_origins": 0}, id="a backtest needs at least one origin"),
        pytest.param({"step_seconds": -300}, id="a negative step is refused"),
        pytest.param({"horizon": 86400}, id="a misspelt setting is refused"),
    ],
)
def test_forecast_settings_are_validated(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        ForecastSettings(**kwargs)  # type: ignore[arg-type]


def test_several_tiers_are_forecast_by_name() -> None:
    results = forecast_many({"small": traffic(1.5, seed=1), "large": traffic(1.5, seed=2, peak_rps=80.0)})
    assert list(results) == ["small", "large"]
    assert results["large"].next_peak.value > 1.5 * results["small"].next_peak.value


def test_worker_processes_give_the_same_forecasts() -> None:
    tiers = {"a": traffic(1.5, seed=1), "b": traffic(1.5, seed=2)}
    alone = forecast_many(tiers)
    pooled = forecast_many(tiers, workers=2)
    for name in tiers:
        np.testing.assert_array_equal(alone[name].mean, pooled[name].mean)
        assert alone[name].reason == pooled[name].reason


def test_yesterdays_finished_outage_is_not_forecast_for_today() -> None:
    """The daily naive copies yesterday: fitted on an afternoon outage (demand at a few percent for two
    hours, then back), it forecast the same hours of today as another outage, and the advice would have
    planned no replicas for them. The regularizer treats the finished outage as missing (filled from the
    week before, not scored in the backtests)."""
    full = traffic(11, seed=4)
    history, future = split(full, 10 * DAY)
    values = history.values.copy()
    afternoon = slice(9 * DAY + 15 * 12, 9 * DAY + 17 * 12)  # yesterday 15:00-17:00
    values[afternoon] = 0.02 * values[afternoon]
    result = forecast(with_values(history, values), ForecastSettings(horizon_seconds=DAY * STEP))
    today = slice(15 * 12, 17 * 12)
    assert result.regularize_report is not None and result.regularize_report.outage_steps == 24
    assert mae(result.mean[today], future[today]) < 0.15 * future[today].mean()
