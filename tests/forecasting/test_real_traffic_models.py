"""The pieces for real traffic: the robust profile, the combination, the peak bound, sub-day calibration."""

from __future__ import annotations

import numpy as np
import pytest

from forecasting import RegularSeries, Series, forecast, make_model, regularize
from forecasting.backtest import mean_absolute_error, run_backtest
from forecasting.intervals import PeakCalibration
from forecasting.models import Combination, HoltWinters, ProfileLevel
from forecasting.selection import calibration_origins

from .helpers import DAY, STEP, mae, split, traffic, with_values


def regular(days: float, **kwargs: object) -> RegularSeries:
    return regularize(traffic(days, **kwargs)).series  # type: ignore[arg-type]


def test_the_profile_ignores_an_outage_that_yesterday_s_copy_repeats() -> None:
    series = traffic(9, seed=3, poisson=False)
    values = np.array(series.values)
    values[7 * DAY + 100 : 7 * DAY + 160] = 0.0  # five hours of outage yesterday afternoon
    history, after = split(with_values(series, values), 8 * DAY)
    # the model's own robustness: the regularizer would treat this finished outage as missing, but not one
    # that keeps more than a tenth of the traffic or lasts under an hour
    regular_history = regularize(history, clear_outages=False).series
    profile = ProfileLevel().fit(regular_history).forecast(DAY).mean
    naive = make_model("seasonal_naive_daily").fit(regular_history).forecast(DAY).mean
    assert mae(profile, after[:DAY]) < 0.5 * mae(naive, after[:DAY])


def test_the_profile_follows_a_growing_level() -> None:
    history, after = split(traffic(12, seed=5, growth_per_week=0.3, poisson=False, weekend_fraction=1.0), 11 * DAY)
    fitted = ProfileLevel().fit(regularize(history).series)
    assert fitted.trend_per_day > 0.01
    assert float(np.max(fitted.forecast(DAY).mean)) == pytest.approx(float(np.max(after)), rel=0.05)


@pytest.mark.parametrize(
    "days_ago",
    [
        pytest.param(2, id="a 50 percent step two days ago is a new level, not a slope"),
        pytest.param(3, id="a 50 percent step three days ago is a new level, not a slope"),
    ],
)
def test_the_profile_refits_its_trend_after_a_level_shift(days_ago: int) -> None:
    series = traffic(11, seed=3, poisson=False, weekend_fraction=1.0, level_noise=True)
    values = np.array(series.values)
    values[(10 - days_ago) * DAY :] *= 1.5
    history, after = split(with_values(series, values), 10 * DAY)
    fitted = ProfileLevel().fit(regularize(history).series)
    assert fitted.trend_per_day == 0.0  # the step read as +7-9%/day before the shift test
    assert float(np.max(fitted.forecast(DAY).mean)) == pytest.approx(float(np.max(after[:DAY])), rel=0.10)


def test_the_offset_starts_the_path_where_demand_is_now_and_fades() -> None:
    series = traffic(8, seed=2, poisson=False, weekend_fraction=1.0)
    values = np.array(series.values)
    values[-12:] *= 1.5  # the last hour runs 50% above the usual day
    fitted = ProfileLevel().fit(regularize(with_values(series, values)).series)
    assert fitted.offset == pytest.approx(np.log(1.5), abs=0.1) and 0.0 < fitted.rho < 1.0
    assert fitted.offset * fitted.rho ** (2 * 96) < 0.01


def test_a_combination_is_the_mean_of_its_parts() -> None:
    history = regular(8, seed=1)
    parts = (HoltWinters(), ProfileLevel())
    combined = Combination(parts).fit(history).forecast(DAY).mean
    expected = np.mean([part.fit(history).forecast(DAY).mean for part in parts], axis=0)
    assert np.allclose(combined, expected)
    assert make_model("combined").label == "combined"


@pytest.mark.parametrize(
    ("peaks_actual", "peaks_forecast", "below", "above"),
    [
        pytest.param([110, 112, 108, 111], [100, 100, 100, 100], 1.10, 1.20, id="a steady 10% miss is added back"),
        pytest.param([100, 150, 80, 130], [100, 100, 100, 100], 1.50, 9.0, id="scattered misses widen the bound"),
    ],
)
def test_the_peak_bound_is_scaled_by_past_peak_misses(
    peaks_actual: list[float], peaks_forecast: list[float], below: float, above: float
) -> None:
    actual = np.array(peaks_actual, dtype=float)[:, None] * np.ones((1, 5))
    predicted = np.array(peaks_forecast, dtype=float)[:, None] * np.ones((1, 5))
    calibration = PeakCalibration.from_windows("m", actual, predicted, peak_steps=5, days_spanned=4.0)
    assert calibration is not None
    upper_80, upper_95 = calibration.upper(100.0)
    assert below * 100 <= upper_95 <= above * 100 and upper_80 <= upper_95


def test_a_peak_bound_needs_two_windows() -> None:
    one = np.ones((1, 5))
    assert PeakCalibration.from_windows("m", one, one, peak_steps=5, days_spanned=1.0) is None


def test_calibration_origins_step_back_every_few_hours_from_the_latest_window() -> None:
    origins = calibration_origins(n_steps=1000, window=288, need=300, spacing=72, count=8)
    assert origins == (352, 424, 496, 568, 640, 712)


def test_the_forecast_s_next_peak_bound_covers_the_next_day_peak_of_irregular_days() -> None:
    series = traffic(10, seed=11, level_noise=True, bursts=True)
    history, after = split(series, 9 * DAY)
    result = forecast(history)
    assert result.next_peak.upper_95 >= float(np.max(after[:DAY]))
    assert result.next_peak.upper_95 >= result.next_peak.upper >= result.next_peak.value
    assert result.step_seconds == STEP


def test_regularize_marks_the_steps_it_filled() -> None:
    series = traffic(3, seed=1)
    keep = np.ones(len(series), dtype=bool)
    keep[400:460] = False  # a five-hour hole
    done = regularize(Series(series.timestamps_s[keep], series.values[keep]))
    assert done.filled is not None and np.flatnonzero(done.filled).tolist() == list(range(400, 460))


def test_a_backtest_does_not_score_the_filled_steps() -> None:
    series = regular(4, seed=2)
    filled = np.zeros(len(series), dtype=bool)
    filled[3 * DAY : 3 * DAY + 50] = True
    run = run_backtest(series, make_model("seasonal_naive_daily"), (3 * DAY,), DAY, filled)
    assert np.isnan(run.actual[0, :50]).all() and np.isfinite(run.actual[0, 50:]).all()
    errors = np.abs(series.values[3 * DAY + 50 : 4 * DAY] - series.values[2 * DAY + 50 : 3 * DAY])
    assert mean_absolute_error(run) == pytest.approx(float(errors.mean()))
