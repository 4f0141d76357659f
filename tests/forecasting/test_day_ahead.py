"""The day ahead from the model best after the first hour (`forecasting.day_ahead`), the first hour unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from forecasting import ForecastSettings, RegularSeries, forecast
from forecasting.day_ahead import far_weights, spliced
from tests.forecasting.helpers import DAY, split, traffic

STEP = 600.0
PER_DAY = 144


def _shapeless(days: int, seed: int = 3) -> RegularSeries:
    """Demand at a steady level whose shape within each day is new every day: each hour of each day gets
    its own factor (lognormal, sigma 0.3), so yesterday's shape says nothing of today's."""
    rng = np.random.default_rng(seed)
    hourly = rng.lognormal(0.0, 0.3, size=days * 24)
    rate = 100.0 * np.repeat(hourly, 6)
    counts = rng.poisson(rate * STEP) / STEP
    return RegularSeries(0.0, STEP, counts.astype(float))


SHAPELESS = forecast(_shapeless(10), ForecastSettings(horizon_seconds=86_400.0))


@pytest.mark.parametrize(
    ("step_seconds", "expected"),
    [
        pytest.param(600.0, [0.0] * 6 + [1 / 6, 2 / 6, 3 / 6, 4 / 6, 5 / 6, 1.0, 1.0], id="10-minute steps"),
        pytest.param(300.0, [0.0] * 12 + [1 / 12, 2 / 12], id="5-minute steps: the second hour rises by twelfths"),
        pytest.param(3600.0, [0.0, 1.0, 1.0], id="hourly steps: the first hour's model, then the day ahead's"),
    ],
)
def test_the_day_ahead_model_weighs_nothing_in_the_first_hour_and_everything_from_the_second(
    step_seconds: float, expected: list[float]
) -> None:
    assert far_weights(len(expected), step_seconds) == pytest.approx(expected)


def test_the_joined_path_follows_each_model_where_it_alone_counts() -> None:
    near, far = np.full(18, 10.0), np.full(18, 40.0)
    path = spliced(near, far, 600.0)
    assert path[:6] == pytest.approx(10.0) and path[11:] == pytest.approx(40.0)
    assert np.all(np.diff(path) >= 0.0) and path[8] == pytest.approx(25.0)


def test_a_day_shape_that_never_repeats_gets_a_flat_day_ahead_and_keeps_its_first_hour_model() -> None:
    result = SHAPELESS
    choice = result.choice
    assert choice is not None and choice.far is not None and choice.far.label == "day_median"
    assert result.model == f"{choice.model.label} then day_median"
    assert "the day ahead (after the first hour, joined over the second) from day_median" in result.reason
    # From two hours on: the median of the last day, approached from the level now (the anchor's blend), so
    # the path moves one way only, with none of yesterday's hourly shape in it.
    later, median = result.mean[12:], float(np.median(result.history.values[-PER_DAY:]))
    steps = np.diff(later)
    assert np.all(steps >= -1e-9) or np.all(steps <= 1e-9)
    assert later[-1] == pytest.approx(median, rel=0.05)


def test_the_flat_day_ahead_beats_yesterdays_shape_copied_on_such_demand() -> None:
    """What it is for: tomorrow's error against copying today (the daily naive), same history."""
    series = _shapeless(11)
    history = RegularSeries(0.0, STEP, series.values[: 10 * PER_DAY])
    tomorrow = series.values[10 * PER_DAY :]
    result = forecast(history, ForecastSettings(horizon_seconds=86_400.0))
    naive = history.values[-PER_DAY:]
    assert np.mean(np.abs(result.mean - tomorrow)) < 0.85 * np.mean(np.abs(naive - tomorrow))


def test_a_daily_shape_that_repeats_keeps_its_morning_ramp_in_the_day_ahead() -> None:
    """Noise-free weekdays after a weekend in the windows: the copies are right on most days, so the flat
    day is not eligible even though the weekend makes the comparison noisy."""
    history, actual = split(traffic(9, poisson=False), 8 * DAY)
    result = forecast(history, ForecastSettings())
    assert "day_median" not in result.model
    assert np.max(result.mean) > 3.0 * np.min(result.mean)
    assert np.mean(np.abs(result.mean - actual[: result.mean.size])) < 0.1 * np.mean(actual)


@pytest.mark.parametrize(
    ("settings", "why"),
    [
        pytest.param(ForecastSettings(models=("seasonal_naive_daily", "holt_winters")), "models", id="models fixed"),
        pytest.param(ForecastSettings(horizon_seconds=3600.0), "horizon", id="a one-hour horizon"),
    ],
)
def test_no_day_ahead_pick_where_the_user_fixed_the_models_or_the_horizon_is_one_hour(
    settings: ForecastSettings, why: str
) -> None:
    result = forecast(_shapeless(10), settings)
    assert result.choice is not None and result.choice.far is None
    assert result.backtest is not None and "day_median" not in {s.model for s in result.backtest.scores}
    assert " then " not in result.model, why


def test_a_refit_keeps_the_day_ahead_model_with_the_choice() -> None:
    series = _shapeless(10)
    later = RegularSeries(0.0, STEP, np.concatenate((series.values, series.values[-2:])))
    refit = forecast(later, ForecastSettings(horizon_seconds=86_400.0), SHAPELESS.choice)
    assert refit.choice is SHAPELESS.choice and refit.model == SHAPELESS.model
    assert "kept from the backtest" in refit.reason
