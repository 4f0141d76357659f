"""The next peak's bound calibrated on every past window of the series (`forecasting.peaks`)."""

from __future__ import annotations

import numpy as np
import pytest

from forecasting import forecast
from forecasting.peaks import DailyPeakBound

from .helpers import DAY, STEP, split, traffic


def days_of(day_factors: np.ndarray, *, spike: np.ndarray | None = None, seed: int = 0) -> np.ndarray:
    """A smooth daily cycle scaled per day, 2% point noise, and optionally one 5-minute spike a day."""
    rng = np.random.default_rng(seed)
    hours = np.arange(DAY) / 12.0
    shape = 20.0 + 80.0 * np.exp(-(((hours - 14.0) / 3.0) ** 2))
    values = np.concatenate([shape * f for f in day_factors]) * rng.lognormal(0.0, 0.02, DAY * day_factors.size)
    if spike is not None:
        for d, height in enumerate(spike):
            values[d * DAY + int(rng.integers(DAY))] = 100.0 * day_factors[d] * height
    return np.asarray(values, dtype=np.float64)


def cover(values: np.ndarray, first_day: int) -> tuple[float, float]:
    """Share of origins (every 6 h from `first_day`) whose 80% / 95% bound covers the next day's peak."""
    inside_80, inside_95 = [], []
    for origin in range(first_day * DAY, values.size - DAY + 1, DAY // 4):
        bound = DailyPeakBound.fit(values[:origin], values[:origin], STEP, DAY)
        assert bound is not None
        upper_80, upper_95 = bound.upper(values[:origin], STEP)
        realized = float(values[origin : origin + DAY].max())
        inside_80.append(upper_80 >= realized)
        inside_95.append(upper_95 >= realized)
    return float(np.mean(inside_80)), float(np.mean(inside_95))


def test_the_bounds_cover_the_next_day_peak_as_often_as_they_say() -> None:
    factors = np.random.default_rng(4).lognormal(0.0, 0.10, 60)
    covered_80, covered_95 = cover(days_of(factors), first_day=20)
    assert 0.65 <= covered_80 <= 0.92 and 0.88 <= covered_95 <= 1.0


def test_a_growing_level_is_covered_by_its_own_past_growth() -> None:
    factors = 1.03 ** np.arange(40) * np.random.default_rng(5).lognormal(0.0, 0.05, 40)
    _, covered_95 = cover(days_of(factors), first_day=20)
    assert covered_95 >= 0.85


@pytest.mark.parametrize(
    ("spiky", "days"),
    [
        pytest.param(True, 3, id="a peak that is one random burst a day is the median of three days' peaks"),
        pytest.param(False, 1, id="a smooth peak that moves with the day's level is yesterday's peak"),
    ],
)
def test_the_predictor_is_the_one_that_over_provisions_least(spiky: bool, days: int) -> None:
    rng = np.random.default_rng(7)
    factors = np.exp(np.cumsum(rng.normal(0.0, 0.08, 20)))  # the level wanders: yesterday's is the best guess
    spike = rng.lognormal(0.6, 0.4, 20) if spiky else None
    values = days_of(factors, spike=spike)
    bound = DailyPeakBound.fit(values, values, STEP, DAY)
    assert bound is not None and bound.days == days
    assert bound.log_ratio_80 <= bound.log_ratio_95


def test_filled_gaps_are_not_realized_peaks() -> None:
    values = days_of(np.ones(10))
    values[8 * DAY + 100 : 8 * DAY + 110] = 1_000.0  # a gap regularize filled badly: not demand that came
    actual = values.copy()
    actual[8 * DAY + 100 : 8 * DAY + 110] = np.nan
    skipped, counted = (DailyPeakBound.fit(values, a, STEP, DAY) for a in (actual, values))
    assert skipped is not None and counted is not None
    assert skipped.log_ratio_95 < 0.1 < counted.log_ratio_95


@pytest.mark.parametrize(
    ("days", "fitted"),
    [
        pytest.param(4.9, False, id="under three days of windows after yesterday's: no bound of this kind"),
        pytest.param(5.0, True, id="three days of windows after yesterday's peak: a bound"),
    ],
)
def test_the_bound_needs_three_days_of_windows(days: float, fitted: bool) -> None:
    values = days_of(np.ones(6))[: round(days * DAY)]
    assert (DailyPeakBound.fit(values, values, STEP, DAY) is not None) is fitted


@pytest.mark.parametrize(
    ("days", "named"),
    [
        pytest.param(9, True, id="nine days of history: the bound comes from every past window"),
        pytest.param(4, False, id="four days of history: the backtest windows' peak bound"),
    ],
)
def test_the_forecast_says_where_its_peak_bound_comes_from(days: int, named: bool) -> None:
    history, _ = split(traffic(days + 1, seed=2, level_noise=True), days * DAY)
    result = forecast(history)
    assert ("next-peak bound:" in result.reason) is named
    assert result.next_peak.upper_95 >= result.next_peak.upper >= result.next_peak.value
