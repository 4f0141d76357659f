"""regularize(): step inference, grid, counter-reset artefacts and gap filling, with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from forecasting import ForecastInputError, RegularSeries, Series, infer_step_seconds, regularize
from tests.forecasting.helpers import DAY, STEP, traffic, with_values


@pytest.mark.parametrize(
    ("timestamps", "expected_step"),
    [
        pytest.param(np.arange(100) * 300.0, 300.0, id="a regular 5-minute series has a 300 s step"),
        pytest.param(
            np.arange(100) * 60.0 + np.tile([0.0, 0.4, -0.3, 0.2], 25),
            60.0,
            id="scrape jitter of under a second is rounded away",
        ),
        pytest.param(
            np.concatenate([np.arange(50) * 300.0, 50 * 300.0 + 3600 + np.arange(50) * 300.0]),
            300.0,
            id="a one-hour hole does not change the inferred step",
        ),
        pytest.param(np.repeat(np.arange(50) * 30.0, 2), 30.0, id="duplicated timestamps are ignored"),
    ],
)
def test_the_step_is_the_median_spacing(timestamps: np.ndarray, expected_step: float) -> None:
    assert infer_step_seconds(timestamps) == expected_step


def test_a_short_gap_is_a_straight_line_between_its_neighbours() -> None:
    values = np.arange(20, dtype=float) * 2.0 + 10.0
    holed = values.copy()
    holed[5:9] = np.nan  # 20 minutes
    done = regularize(Series(np.arange(20) * STEP, holed))
    np.testing.assert_allclose(done.series.values, values)
    assert (done.report.missing_steps, done.report.interpolated_steps, done.report.seasonal_filled_steps) == (4, 4, 0)


def test_a_long_gap_over_the_morning_ramp_is_filled_from_the_week_before() -> None:
    truth = traffic(10, poisson=False)
    first, stop = 7 * DAY + 90, 7 * DAY + 90 + 72  # Monday 07:30 to 13:30 local, six hours
    holed = truth.values.copy()
    holed[first:stop] = np.nan
    done = regularize(with_values(truth, holed))
    filled = done.series.values[first:stop]
    linear = np.linspace(holed[first - 1], holed[stop], stop - first + 2)[1:-1]
    assert np.max(np.abs(filled - truth.values[first:stop])) < 0.05 * truth.values.max()
    assert np.max(np.abs(linear - truth.values[first:stop])) > 0.5 * truth.values.max()  # what a line would do
    assert done.report.seasonal_filled_steps == 72 and done.report.long_gaps_interpolated == 0


def test_missing_timestamps_are_gaps_like_nan_values() -> None:
    truth = traffic(3, poisson=False)
    keep = np.ones(len(truth), dtype=bool)
    keep[100:104] = False
    done = regularize(Series(truth.timestamps_s[keep], truth.values[keep]))
    assert len(done.series) == len(truth) and done.report.missing_steps == 4
    np.testing.assert_allclose(done.series.timestamps_s, truth.timestamps_s)


@pytest.mark.parametrize(
    ("index", "artefact"),
    [
        pytest.param(150, -35.0, id="a negative point from a counter reset is removed"),
        pytest.param(150, 0.0, id="a lone drop to zero between two busy points is removed"),
        pytest.param(0, -3.0, id="a reset on the very first point is replaced by its neighbour"),
    ],
)
def test_counter_reset_artefacts_are_cleaned(index: int, artefact: float) -> None:
    truth = traffic(1, poisson=False)
    broken = truth.values.copy()
    broken[index] = artefact
    done = regularize(with_values(truth, broken))
    assert done.report.resets_cleaned == 1
    assert abs(done.series.values[index] - truth.values[index]) < 0.05 * truth.values.max()


def test_quiet_nights_with_real_zeros_are_left_alone() -> None:
    values = np.array([0.0, 0.1, 0.0, 0.2, 0.0, 30.0, 40.0, 0.0, 0.0, 35.0, 40.0])
    done = regularize(Series(np.arange(values.size) * STEP, values))
    assert done.report.resets_cleaned == 0
    np.testing.assert_array_equal(done.series.values, values)


def test_off_grid_samples_are_snapped_and_samples_in_one_step_averaged() -> None:
    timestamps = np.array([0.0, 301.0, 598.0, 610.0, 900.0])
    values = np.array([1.0, 2.0, 3.0, 5.0, 6.0])
    done = regularize(Series(timestamps, values), step_seconds=300.0)
    np.testing.assert_allclose(done.series.values, [1.0, 2.0, 4.0, 6.0])
    assert done.report.merged_points == 1 and "1 samples merged" in done.report.describe()


def test_a_larger_step_averages_the_samples_of_each_step() -> None:
    minutes = np.arange(20, dtype=float)  # 1-minute samples 0..19
    done = regularize(Series(minutes * 60.0, minutes), step_seconds=300.0)
    np.testing.assert_allclose(done.series.values, [2.0, 7.0, 12.0, 17.0])
    assert done.series.start_s == 0.0 and done.report.merged_points == 16


@pytest.mark.parametrize(
    ("series", "step", "message"),
    [
        pytest.param(
            Series([0.0, 300.0], [1.0, np.nan]), None, "fewer than two numeric", id="one number is not a series"
        ),
        pytest.param(Series([0.0, 300.0], [1.0, 2.0]), -5.0, "step must be positive", id="a negative step is refused"),
        pytest.param(Series([5.0, 5.0], [1.0, 2.0]), None, "cannot infer the step", id="one timestamp has no step"),
    ],
)
def test_unusable_input_is_a_typed_error(series: Series, step: float | None, message: str) -> None:
    with pytest.raises(ForecastInputError, match=message):
        regularize(series, step)


def test_series_types_validate_their_input() -> None:
    with pytest.raises(ForecastInputError, match="2 timestamps but 3 values"):
        Series([0.0, 1.0], [1.0, 2.0, 3.0])
    with pytest.raises(ForecastInputError, match="no NaN"):
        RegularSeries(0.0, 300.0, np.array([1.0, np.nan]))
    regular = RegularSeries(1000.0, 300.0, np.arange(5, dtype=float))
    assert regular.end_s == 2200.0 and regular.tail(2).start_s == 1900.0
    np.testing.assert_allclose(regular.future_timestamps(2), [2500.0, 2800.0])
    with pytest.raises(ValueError, match="read-only"):
        regular.values[0] = 3.0


def outage(truth: Series, first: int, steps: int, level: float = 0.5) -> np.ndarray:
    """The series with `steps` points from `first` at `level` req/s: an upstream outage mid-afternoon."""
    broken = truth.values.copy()
    broken[first : first + steps] = level
    return broken


@pytest.mark.parametrize(
    ("steps", "until_end", "cleared"),
    [
        pytest.param(24, False, 24, id="a two-hour outage that ended is missing and filled from the week before"),
        pytest.param(12, False, 12, id="one that lasted the hour its level is measured over is an outage"),
        pytest.param(6, False, 0, id="a half-hour dip is a dip in the hour, not an outage"),
        pytest.param(24, True, 0, id="one still under way at the end of the history is what demand is now"),
    ],
)
def test_a_finished_outage_is_an_incident_not_demand(steps: int, until_end: bool, cleared: int) -> None:
    """ServeGen's Wednesday afternoon fell from ~1,800 to ~5 req/s for two hours and came back in one window:
    a daily naive fitted on it forecast the same hours of Thursday as another outage."""
    truth = traffic(10, poisson=False)
    first = 9 * DAY + 15 * 12  # 15:00 on the tenth day, in business hours
    broken = outage(truth, first, steps)
    end = first + steps if until_end else len(truth)
    done = regularize(Series(truth.timestamps_s[:end], broken[:end]))
    assert done.report.outage_steps == cleared
    kept = done.series.values[first : first + steps]
    if cleared:
        assert done.filled is not None and done.filled[first : first + steps].all()
        assert np.max(np.abs(kept - truth.values[first : first + steps])) < 0.1 * truth.values.max()
        assert "finished outages" in done.report.describe()
    else:
        np.testing.assert_array_equal(kept, broken[first : first + steps])


def test_a_quiet_tiers_fall_to_zero_is_not_an_outage() -> None:
    """Under the quiet floor (5% of the series' 95th percentile) zeros are real demand, as for the resets."""
    values = np.concatenate([np.full(24, 40.0), np.full(24, 1.0), np.zeros(24), np.full(24, 1.0)])
    done = regularize(Series(np.arange(values.size) * STEP, values))
    assert done.report.outage_steps == 0
    np.testing.assert_array_equal(done.series.values, values)


def test_an_outage_can_be_kept_for_a_caller_that_copies_the_history_as_it_was() -> None:
    truth = traffic(10, poisson=False)
    broken = outage(truth, 9 * DAY + 15 * 12, 24)
    done = regularize(with_values(truth, broken), clear_outages=False)
    assert done.report.outage_steps == 0
    np.testing.assert_array_equal(done.series.values, broken)


def test_a_service_that_goes_quiet_every_evening_is_the_season_not_an_outage() -> None:
    """fleetsim's business-hours profile falls from its plateau to ~0 within the hour after 18:30 every day,
    below a tenth of the hour before it; the day before it did the same, so it is the daily cycle."""
    hour = np.arange(10 * DAY) * STEP / 3600.0 % 24.0
    values = np.clip(np.minimum(hour - 8.0, 19.5 - hour), 0.0, 1.0) * 40.0
    done = regularize(Series(np.arange(values.size) * STEP, values))
    assert done.report.outage_steps == 0
    np.testing.assert_array_equal(done.series.values, values)
