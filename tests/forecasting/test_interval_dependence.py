"""Interval calibration on backtest windows that share hours: their offsets are fewer draws than windows."""

from __future__ import annotations

import numpy as np
import pytest

import forecasting.intervals as intervals
from forecasting import IntervalCalibration

HOUR = 3600.0
SPACING_H = 6  # the calibration windows' spacing (ForecastSettings.calibration_spacing_seconds)
WINDOWS = 12


@pytest.mark.parametrize(
    ("offsets", "low", "high"),
    [
        pytest.param(np.array([0.1, -0.1] * 6), 1.0, 1.0, id="alternating offsets are independent"),
        pytest.param(np.zeros(12), 1.0, 1.0, id="equal offsets carry no dependence to measure"),
        pytest.param(np.repeat([0.1, -0.2, 0.05, 0.15], 3), 2.0, 4.0, id="each day seen by three windows"),
        pytest.param(np.linspace(-0.2, 0.2, 12), 3.0, 12.0, id="a steady drift is worth a few draws, not twelve"),
    ],
)
def test_the_variance_inflation_counts_windows_repeating_one_draw(offsets: np.ndarray, low: float, high: float) -> None:
    assert low <= intervals.variance_inflation(offsets) <= high


def _day_offsets_seen_by_overlapping_windows(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Relative errors of 12 day-long hourly windows 6 h apart (each day busier or quieter by N(0, 10%),
    1% noise within), and the errors of the day after the last, which none of them saw."""
    rng = np.random.default_rng(seed)
    hours = np.repeat(rng.normal(0.0, 0.1, 6), 24) + rng.normal(0.0, 0.01, 6 * 24)
    windows = np.stack([hours[s : s + 24] for s in range(0, WINDOWS * SPACING_H, SPACING_H)])
    next_day = rng.normal(0.0, 0.1) + rng.normal(0.0, 0.01, 24)
    return windows, next_day


def _cover_6_to_24h(seeds: int) -> float:
    """Share of the next day's 6-24 h points inside the 80% band calibrated on the windows, over seeds."""
    inside = []
    for seed in range(seeds):
        relative, next_day = _day_offsets_seen_by_overlapping_windows(seed)
        forecast = np.full_like(relative, 100.0)
        calibration = IntervalCalibration.from_errors(
            forecast + relative * 110.0, forecast, floor=10.0, step_seconds=HOUR
        )
        bands = calibration.bands(np.full(24, 100.0))
        actual = 100.0 + next_day * 110.0
        inside.append(np.mean((bands.lower_80[6:] <= actual[6:]) & (actual[6:] <= bands.upper_80[6:])))
    return float(np.mean(inside))


def test_overlapping_windows_give_an_80_percent_band_that_covers_about_80_percent() -> None:
    """Twelve windows 6 h apart span four days: counted as twelve independent offsets, the 6-24 h band
    covered about two thirds of the next day (the NAB load balancer's hourly export: 69.6% next day)."""
    assert 0.75 <= _cover_6_to_24h(200) <= 0.85


def test_counted_as_independent_the_same_windows_under_cover(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference the test above is measured against: the calibration as it was (tau = 1)."""
    monkeypatch.setattr(intervals, "variance_inflation", lambda offsets: 1.0)
    assert _cover_6_to_24h(200) < 0.72


def test_independent_windows_keep_their_bands() -> None:
    """Windows a day apart, one draw each: tau stays near 1 (chance positive autocorrelations in a dozen
    draws widen a little, never by much)."""
    rng = np.random.default_rng(7)
    inflations = [intervals.variance_inflation(rng.normal(0.0, 0.1, WINDOWS)) for _ in range(400)]
    assert np.median(inflations) < 1.3
    assert np.quantile(inflations, 0.9) < 2.5
