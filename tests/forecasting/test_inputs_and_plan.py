"""Durations, CSV parsing, interval calibration and the backtest plan, each against hand-computed answers."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from forecasting import ForecastInputError, IntervalCalibration, parse_duration
from forecasting.csv_input import CsvFormatError, parse_csv_series
from forecasting.models.level import significant_shift
from forecasting.selection import backtest_origins, plan_selection
from tests.forecasting.helpers import DAY, STEP, WEEK


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("24h", 86_400.0, id="hours"),
        pytest.param("90m", 5_400.0, id="minutes beyond an hour"),
        pytest.param("7d", 604_800.0, id="days"),
        pytest.param("5m", 300.0, id="a scrape step"),
        pytest.param("1h30m", 5_400.0, id="combined units"),
        pytest.param("300", 300.0, id="a plain number is seconds"),
        pytest.param(" 2W ", 1_209_600.0, id="weeks, case and spaces forgiven"),
    ],
)
def test_durations_are_read_as_people_write_them(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("5x", id="an unknown unit"),
        pytest.param("", id="nothing"),
        pytest.param("-5m", id="a negative duration"),
        pytest.param("0", id="zero"),
        pytest.param("h", id="a unit without a number"),
    ],
)
def test_bad_durations_are_refused(text: str) -> None:
    with pytest.raises(ForecastInputError):
        parse_duration(text)


def test_csv_timestamps_may_be_iso_with_or_without_offset_or_unix_seconds() -> None:
    text = (
        "# exported from grafana\n"
        "time,rps,pod\n"
        "2024-04-01T08:00:00+02:00,1.5,a\n"
        "2024-04-01 08:05:00,,a\n"
        "1711951800,2.5,a\n"
        "2024-04-01T06:15:00Z,3.5,a\n"
    )
    series = parse_csv_series(text, source="x.csv", time_column="time", value_column="rps", timezone="Europe/Paris")
    paris = datetime(2024, 4, 1, 8, 0, tzinfo=ZoneInfo("Europe/Paris")).timestamp()
    np.testing.assert_allclose(series.timestamps_s, paris + np.array([0.0, 300.0, 600.0, 900.0]))
    assert np.isnan(series.values[1]) and series.values[3] == 3.5


def test_csv_without_header_uses_the_first_two_columns() -> None:
    series = parse_csv_series("1700000000,4\n1700000300,5\n", source="x.csv")
    np.testing.assert_array_equal(series.values, [4.0, 5.0])


def test_csv_errors_carry_the_line_number() -> None:
    with pytest.raises(CsvFormatError) as caught:
        parse_csv_series("timestamp,value\n\n1700000000,4\n1700000300,four\n", source="d.csv")
    assert caught.value.line == 4 and str(caught.value) == "d.csv:4: value 'four' is not a number"


def test_interval_quantiles_come_from_the_errors_by_horizon_bucket() -> None:
    """One window at 1-minute steps: relative errors within +-0.2 in the first hour, +-0.4 in the second."""
    rng = np.random.default_rng(0)
    relative = np.concatenate(
        [rng.permutation(np.linspace(-0.2, 0.2, 60)), rng.permutation(np.linspace(-0.4, 0.4, 60))]
    )
    forecast = np.full(120, 100.0)
    actual = forecast + relative * (forecast + 10.0)
    calibration = IntervalCalibration.from_errors(actual, forecast, floor=10.0, step_seconds=60.0)
    assert calibration.bucket_starts == (0, 60)
    bands = calibration.bands(forecast)
    assert bands.upper_80[0] == pytest.approx(100.0 + 0.8 * 0.2 * 110.0, rel=0.01)
    assert bands.upper_80[-1] == pytest.approx(100.0 + 0.8 * 0.4 * 110.0, rel=0.01)
    # 60 errors: the finite-sample (conformal) 2.5% bound is the smallest, floor(61 x 0.025) = 1st, not the
    # interpolated -0.38 (so the bound moved from 58.2 to 56: one window's sample is small)
    assert bands.lower_95[-1] == pytest.approx(100.0 - 0.4 * 110.0, rel=0.01)


def test_a_handful_of_windows_widens_the_bands_like_a_student_t_prediction() -> None:
    """Three whole-day offsets -10%, 0, +10%: the next day's offset is t(2) x 0.1 x sqrt(4/3) wide."""
    offsets = np.array([-0.1, 0.0, 0.1])
    forecast = np.full((3, 288), 100.0)
    actual = forecast + offsets[:, None] * (forecast + 10.0)
    calibration = IntervalCalibration.from_errors(actual, forecast, floor=10.0, step_seconds=STEP)
    upper_relative = calibration.quantiles[-1][2]
    assert upper_relative == pytest.approx(1.886 * 0.1 * np.sqrt(4 / 3), rel=0.1)
    assert upper_relative > 2 * np.quantile(offsets, 0.9)  # what pooling the three days would claim


def test_the_first_hours_band_carries_its_own_offsets_not_the_days() -> None:
    """Six day-long windows whose first hour is within 2% (the forecast starts from where demand is) and
    whose day after it is off by -15%..+15% (a busier or quieter day): the first hour's 80% band stays at
    the first hour's errors. Split by the whole window's offset, it carried the day's offsets twice (as the
    next window's and as minus each window's own): its upper bound was 22% above the forecast, not 1.6%."""
    rng = np.random.default_rng(1)
    day_offsets = np.linspace(-0.15, 0.15, 6)
    relative = np.tile(day_offsets[:, None], (1, DAY)) + rng.uniform(-0.01, 0.01, (6, DAY))
    relative[:, :12] = rng.uniform(-0.02, 0.02, (6, 12))
    forecast = np.full((6, DAY), 100.0)
    actual = forecast + relative * (forecast + 10.0)
    calibration = IntervalCalibration.from_errors(actual, forecast, floor=10.0, step_seconds=STEP)
    assert calibration.bucket_starts[:2] == (0, 12)
    first_hour_upper = calibration.quantiles[0][2]
    assert 0.01 < first_hour_upper < 0.03
    assert calibration.quantiles[-1][2] > 0.15  # the day's bucket keeps the days' offsets


POOLED = IntervalCalibration(
    10.0, (0, 12, 72), ((-0.1, -0.05, 0.05, 0.1), (-0.2, -0.1, 0.1, 0.2), (-0.3, -0.2, 0.2, 0.3)), 100, "backtest"
)


def test_each_step_of_the_first_hour_gets_its_own_quantiles_from_the_hour_blocks() -> None:
    """Errors that grow with the lead (within +-1% one step ahead, +-12% twelve steps ahead) on flat paths:
    one step's 80% upper bound is its own 0.8 x 1%, the twelfth's 0.8 x 12%; the hours after keep theirs."""
    rng = np.random.default_rng(2)
    spread = 0.01 * np.arange(1, 13)
    relative = rng.uniform(-1.0, 1.0, (400, 12)) * spread[None, :]
    forecast = np.full((400, 12), 100.0)
    actual = forecast + relative * (forecast + 10.0)
    calibration = POOLED.with_first_steps(actual, forecast)
    bands = calibration.bands(np.full(24, 100.0))
    assert bands.upper_80[0] == pytest.approx(100.0 + 0.8 * 0.01 * 110.0, rel=0.01)
    assert bands.upper_80[11] == pytest.approx(100.0 + 0.8 * 0.12 * 110.0, rel=0.02)
    assert bands.upper_80[12] == pytest.approx(100.0 + 0.1 * 110.0)  # the 1-6 h bucket, as it was
    assert POOLED.with_first_steps(actual[:20], forecast[:20]) is POOLED  # 20 errors a step: too few


def test_a_rising_hour_takes_the_quantiles_of_the_rising_hours_and_flat_hours_at_its_levels_keep_theirs() -> None:
    """A third of the blocks are ramps (the path rises 50% over the hour) and miss by up to 30%; the others
    hold at levels across the ramps' (100-150) and miss by up to 3%. Pooled, a 90% bound leaves the ramps'
    misses out; by the path's move, a rising path gets the ramps' bound and a flat one the flat hours'
    (Mondrian conformal). The flat hours span the ramps' levels so that the error's growth with the level
    (`ErrorScale`) is not read from the ramps alone."""
    rng = np.random.default_rng(3)
    rising = np.arange(600) % 3 == 0
    flat_levels = rng.uniform(100.0, 150.0, 600)
    forecast = np.where(rising[:, None], np.linspace(100.0, 150.0, 12)[None, :], flat_levels[:, None])
    spread = np.where(rising, 0.3, 0.03)[:, None]
    actual = forecast + rng.uniform(-1.0, 1.0, (600, 12)) * spread * (forecast + 10.0)
    calibration = POOLED.with_first_steps(actual, forecast)
    ramp = calibration.bands(np.linspace(100.0, 150.0, 12))
    flat = calibration.bands(np.full(12, 100.0))
    assert ramp.upper_80[0] == pytest.approx(100.0 + 0.8 * 0.3 * 110.0, rel=0.05)
    assert flat.upper_80[0] == pytest.approx(100.0 + 0.8 * 0.03 * 110.0, rel=0.02)


def test_bands_are_clipped_at_zero_and_contain_the_mean() -> None:
    calibration = IntervalCalibration.from_relative_errors(np.linspace(-3.0, 0.5, 100), floor=1.0, source="test")
    bands = calibration.bands(np.array([0.0, 1.0, 5.0]))
    assert np.all(bands.lower_95 == 0.0) and np.all(bands.upper_80 >= [0.0, 1.0, 5.0])


@pytest.mark.parametrize(
    ("history_days", "need_days", "expected_days_back"),
    [
        pytest.param(28, 2, (14, 7, 1), id="four weeks: yesterday and the same weekday one and two weeks back"),
        pytest.param(28, 15, (7, 2, 1), id="when two weeks back has too little training, the day before instead"),
        pytest.param(10, 2, (7, 2, 1), id="ten days: a week back still has two days of training"),
        pytest.param(4, 2, (2, 1), id="four days: only the windows with two days of training"),
    ],
)
def test_backtest_origins_include_the_same_time_of_week(
    history_days: int, need_days: int, expected_days_back: tuple[int, ...]
) -> None:
    n = history_days * DAY
    origins = backtest_origins(n, DAY, STEP, need=need_days * DAY, max_origins=3)
    assert tuple((n - o) // DAY for o in origins) == expected_days_back


def test_the_plan_uses_the_weekly_baseline_once_two_origins_have_two_weeks() -> None:
    short = plan_selection(15 * DAY, STEP, DAY)
    long = plan_selection(28 * DAY, STEP, DAY)
    assert short.baseline.label == "seasonal_naive_daily" and long.baseline.label == "seasonal_naive_weekly"
    assert [m.label for m in long.candidates] == [
        "seasonal_naive_weekly",
        "seasonal_naive_daily",
        "holt_winters",
        "mstl",
        "profile_level",
        "combined",
    ]
    assert all(o >= 15 * DAY for o in long.origins) and 28 * DAY - WEEK in long.origins


@pytest.mark.parametrize(
    ("step_log", "days_after", "found"),
    [
        pytest.param(np.log(1.3), 2, True, id="a 30 percent step two days ago is found"),
        pytest.param(np.log(1.05), 3, False, id="a 5 percent step is within day-to-day noise"),
        pytest.param(0.0, 3, False, id="no step, nothing found"),
    ],
)
def test_level_shifts_are_found_only_when_clear(step_log: float, days_after: int, found: bool) -> None:
    rng = np.random.default_rng(4)
    days = 14
    daily = np.repeat(rng.normal(0.0, 0.03, days), 96) + rng.normal(0.0, 0.05, days * 96)
    daily[(days - days_after) * 96 :] += step_log
    shift = significant_shift(daily, 96, t_min=5.0)
    assert (shift is not None) is found
    if shift is not None:
        assert shift.days_ago == days_after and shift.size == pytest.approx(step_log, abs=0.05)
