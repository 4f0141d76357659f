"""Each model alone: known answers on synthetic series, settings validation, helpers."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pydantic import ValidationError

from forecasting import (
    ForecastInputError,
    HoltWinters,
    HoltWintersSettings,
    MeanDrift,
    MSTLForecaster,
    MSTLSettings,
    RegularSeries,
    SeasonalNaive,
    SeasonalNaiveSettings,
    make_model,
    regularize,
)
from forecasting.models._warnings import collect_warnings
from forecasting.models.level import ses_level, significant_slope
from forecasting.models.resample import block_means, decimation_factor, upsample
from tests.forecasting.helpers import DAY, STEP, WEEK, mae, split, traffic


def _regular(values: np.ndarray, start_s: float = 0.0) -> RegularSeries:
    return RegularSeries(start_s, STEP, values)


@pytest.mark.parametrize(
    ("model", "period"),
    [
        pytest.param(SeasonalNaive.daily(), DAY, id="daily seasonal naive repeats the last day"),
        pytest.param(SeasonalNaive.weekly(), WEEK, id="weekly seasonal naive repeats the last week"),
    ],
)
def test_seasonal_naive_repeats_the_last_season(model: SeasonalNaive, period: int) -> None:
    values = np.random.default_rng(1).uniform(0, 10, 3 * WEEK)
    point = model.fit(_regular(values)).forecast(period + 5)
    np.testing.assert_array_equal(point.mean[:period], values[-period:])
    np.testing.assert_array_equal(point.mean[period:], values[-period : -period + 5])
    assert point.timestamps_s[0] == (3 * WEEK) * STEP


def test_mstl_recovers_the_daily_and_weekly_pattern() -> None:
    """26 noise-free days ending on a Friday night: Saturday must come out quiet, at weekend level."""
    full = traffic(27, poisson=False)
    history, saturday = split(full, 26 * DAY)
    point = MSTLForecaster().fit(regularize(history).series).forecast(DAY)
    friday = history.values[-DAY:]
    assert mae(point.mean, saturday) < 0.02 * saturday.mean()
    assert point.mean.max() == pytest.approx(saturday.max(), rel=0.03)
    assert point.mean.max() < 0.45 * friday.max()  # the weekly season, not yesterday, drives it


def test_holt_winters_follows_a_daily_pattern() -> None:
    full = traffic(9, poisson=True, weekend_fraction=1.0)
    history, tomorrow = split(full, 8 * DAY)
    point = HoltWinters().fit(regularize(history).series).forecast(DAY)
    assert mae(point.mean, tomorrow) < 0.06 * tomorrow.mean()
    assert abs(int(np.argmax(point.mean)) - int(np.argmax(tomorrow))) <= 36  # peak within 3 hours


def test_mean_drift_is_the_recent_level_plus_a_capped_slope() -> None:
    values = np.linspace(10.0, 20.0, 72)  # 6 hours rising, 10/71 per step
    point = MeanDrift().fit(_regular(values)).forecast(100)
    slope = 10.0 / 71.0
    level = float(np.mean(values[-12:]))
    assert point.mean[0] == pytest.approx(level + slope)
    assert point.mean[-1] == pytest.approx(level + slope * 36)  # drift capped at 3 hours


def test_forecasts_never_go_below_zero() -> None:
    values = np.linspace(50.0, 1.0, 200)  # falling fast towards zero
    assert MeanDrift().fit(_regular(values)).forecast(500).mean.min() == 0.0


@pytest.mark.parametrize(
    ("days", "trend_per_day", "expected"),
    [
        pytest.param(14, 0.03, True, id="a steady 3 percent daily growth is a proven slope"),
        pytest.param(14, 0.0, False, id="day-to-day noise alone is not a slope"),
        pytest.param(3, 0.03, False, id="three days are too few to prove a slope"),
    ],
)
def test_a_slope_is_used_only_when_significant(days: int, trend_per_day: float, expected: bool) -> None:
    rng = np.random.default_rng(7)
    daily_noise = np.repeat(rng.normal(0.0, 0.02, days), 96)
    z = trend_per_day * np.arange(days * 96) / 96 + daily_noise + rng.normal(0.0, 0.05, days * 96)
    slope = significant_slope(z, 96, t_min=3.0)
    assert (slope is not None) is expected
    if slope is not None:
        assert slope.per_block * 96 == pytest.approx(trend_per_day, rel=0.2)


def test_the_remainder_level_is_zero_on_noise_and_follows_a_shift() -> None:
    rng = np.random.default_rng(3)
    noise = rng.normal(0.0, 0.1, 7 * 96)
    alpha, level = ses_level(noise, 96)
    assert abs(level) < 0.05
    shifted = noise + np.where(np.arange(noise.size) > 4 * 96, 0.5, 0.0)
    alpha, level = ses_level(shifted, 96)
    assert alpha > 0 and level == pytest.approx(0.5, abs=0.1)


@pytest.mark.parametrize(
    ("factory", "kwargs"),
    [
        pytest.param(MSTLSettings, {"fit_step_minutes": 0}, id="MSTL refuses a zero fit step"),
        pytest.param(MSTLSettings, {"daily_window_cycles": 3}, id="MSTL refuses a seasonal window under 7"),
        pytest.param(HoltWintersSettings, {"min_history_days": 1.0}, id="Holt-Winters needs two daily cycles"),
        pytest.param(SeasonalNaiveSettings, {"season": "monthly"}, id="seasonal naive knows daily and weekly"),
        pytest.param(MSTLSettings, {"unknown": 1}, id="unknown settings are refused, not ignored"),
    ],
)
def test_model_settings_are_validated(factory: type, kwargs: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        factory(**kwargs)


@pytest.mark.parametrize(
    ("model", "days", "message"),
    [
        pytest.param(MSTLForecaster(), 10, "mstl needs 4320 points", id="weekly MSTL needs over two weeks"),
        pytest.param(HoltWinters(), 1, "holt_winters needs 576 points", id="Holt-Winters needs two days"),
        pytest.param(SeasonalNaive.weekly(), 6, "one weekly season", id="weekly naive needs a week of data"),
    ],
)
def test_too_short_history_is_refused_with_the_need(model: object, days: int, message: str) -> None:
    series = _regular(np.ones(days * DAY))
    with pytest.raises(ForecastInputError, match=message):
        model.fit(series)  # type: ignore[attr-defined]


def test_make_model_names_the_known_models() -> None:
    assert make_model("mstl_daily").label == "mstl_daily"
    with pytest.raises(ForecastInputError, match=r"unknown model 'arima' \(known: .*seasonal_naive_weekly"):
        make_model("arima")


@pytest.mark.parametrize(
    ("steps_per_day", "target", "factor"),
    [
        pytest.param(288, 96, 3, id="5-minute steps are fitted on 15-minute blocks"),
        pytest.param(1440, 96, 15, id="1-minute steps are fitted on 15-minute blocks"),
        pytest.param(144, 96, 2, id="10-minute steps are fitted on 20-minute blocks"),
        pytest.param(24, 96, 1, id="hourly steps are fitted as they are"),
    ],
)
def test_decimation_keeps_whole_periods(steps_per_day: int, target: int, factor: int) -> None:
    assert decimation_factor(steps_per_day, target) == factor
    assert steps_per_day % factor == 0


def test_block_means_and_upsampling_round_trip_a_line() -> None:
    values = np.arange(30, dtype=float)
    blocks = block_means(values, 3)
    np.testing.assert_allclose(blocks, np.arange(1, 30, 3))
    future_blocks = np.array([31.0, 34.0, 37.0])  # the line continued, as block means
    np.testing.assert_allclose(upsample(future_blocks, 3, 6, blocks[-1]), [30, 31, 32, 33, 34, 35])


def test_library_warnings_are_collected_not_raised() -> None:
    notes: list[str] = []
    with collect_warnings(notes):
        warnings.warn("did not converge", RuntimeWarning, stacklevel=1)
        warnings.warn("did not converge", RuntimeWarning, stacklevel=1)
    assert notes == ["RuntimeWarning: did not converge"]
