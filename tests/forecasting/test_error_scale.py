"""Forecast errors in units of their spread at each level (`ErrorScale`), and the first hour's groups by move."""

from __future__ import annotations

import numpy as np
import pytest

from forecasting.error_scale import ErrorScale
from forecasting.intervals import IntervalCalibration

STEP = 300.0


def _daily_counts(rng: np.random.Generator, days: int, quiet: float, busy: float) -> np.ndarray:
    """Rates read from Poisson counts per 5-minute step: a quiet night, a busy flat day, ramps between."""
    hours = (np.arange(days * 288) % 288) / 12.0
    level = np.interp(hours, [0, 8, 10, 17, 19, 24], [quiet, quiet, busy, busy, quiet, quiet])
    return rng.poisson(level * STEP) / STEP, level


@pytest.mark.parametrize(
    ("quiet", "busy"),
    [
        pytest.param(0.05, 2.5, id="a long-context tier: nights at 0.05 req/s, days at 2.5"),
        pytest.param(0.5, 20.0, id="a busy tier: nights at 0.5 req/s, days at 20"),
    ],
)
def test_the_fit_finds_poisson_noise_in_counts_read_as_rates(quiet: float, busy: float) -> None:
    """Yesterday's count as the forecast of today's: the error is the difference of two Poisson counts, whose
    variance is 2 x rate / step. The fit finds that term (not a spread proportional to the level)."""
    rng = np.random.default_rng(7)
    actual, _ = _daily_counts(rng, 4, quiet, busy)
    forecast, _ = _daily_counts(rng, 4, quiet, busy)
    scale = ErrorScale.fit(actual, forecast, floor=0.1 * float(actual.mean()))
    assert scale.poisson == pytest.approx(2.0 / STEP, rel=0.25)
    assert scale.of(np.array([busy]))[0] == pytest.approx(np.sqrt(2.0 * busy / STEP), rel=0.2)


def test_a_busy_hours_band_is_not_widened_by_the_quiet_hours_relative_errors() -> None:
    """Errors relative to the level, pooled over a day, applied the quiet hours' (Poisson at a tenth of the
    level: 1 / sqrt(r x 300) is large) to the busy ones: the 80% bound of a flat 2.5 req/s afternoon stood
    well above what its own hours miss by. In Poisson units, the bound holds the busy hours' own spread:
    their 90th percentile of the error is about 1.28 x sqrt(2 x 2.5 / 300) = 0.165 req/s."""
    rng = np.random.default_rng(11)
    days = 6
    actual = np.stack([_daily_counts(rng, 1, 0.05, 2.5)[0] for _ in range(days)])
    forecast = np.stack([_daily_counts(rng, 1, 0.05, 2.5)[0] for _ in range(days)])
    calibration = IntervalCalibration.from_errors(actual, forecast, floor=0.1, step_seconds=86_400.0)
    relative = IntervalCalibration.from_relative_errors(
        ((actual - forecast) / (forecast + 0.1)).ravel(), floor=0.1, source="relative"
    )
    afternoon = np.full(12, 2.5)
    fitted_excess = float(np.mean(calibration.bands(afternoon).upper_80 - afternoon))
    relative_excess = float(np.mean(relative.bands(afternoon).upper_80 - afternoon))
    assert fitted_excess == pytest.approx(1.28 * np.sqrt(2 * 2.5 / STEP), rel=0.25)
    assert relative_excess > 1.5 * fitted_excess


def test_a_zero_forecast_met_by_zero_demand_is_left_out_and_a_zero_forecast_is_read_at_one_request_a_step() -> None:
    """Nights with no demand at all say nothing about the spread at any level: the fit ignores them. Where
    the forecast is 0 the scale is that of the smallest demand seen (one request in a step; at most the
    floor), not 0: an error there is not divided by nothing."""
    rng = np.random.default_rng(3)
    busy_actual, _ = _daily_counts(rng, 3, 0.5, 5.0)
    busy_forecast, _ = _daily_counts(rng, 3, 0.5, 5.0)
    idle = np.zeros(3 * 288)
    with_idle = ErrorScale.fit(np.concatenate([busy_actual, idle]), np.concatenate([busy_forecast, idle]), floor=0.2)
    without = ErrorScale.fit(busy_actual, busy_forecast, floor=0.2)
    assert with_idle == without
    at_zero = float(with_idle.of(np.array([0.0]))[0])
    assert with_idle.resolution == pytest.approx(min(float(busy_actual[busy_actual > 0].min()), 0.2))
    assert at_zero >= np.sqrt(with_idle.poisson * with_idle.resolution) > 0.0


def test_levels_too_close_to_tell_the_terms_apart_keep_errors_relative_to_the_level() -> None:
    forecast = np.full(200, 100.0)
    actual = forecast + np.random.default_rng(1).normal(0.0, 5.0, 200)
    assert ErrorScale.fit(actual, forecast, floor=10.0) == ErrorScale.relative(10.0)


def test_a_flat_hour_whose_noisy_path_ends_higher_keeps_the_flat_hours_bound() -> None:
    """The first hour's blocks: a tenth are morning ramps (the path rises 2 req/s over the hour, missing by up
    to 30%), the rest flat at 2.5 req/s with Poisson noise, some of them yesterday's copy that ends a little
    above where it began. Split by terciles of the move, such a path was "rising" beside the ramps and took
    their bound; in units of its error spread it moves by noise and holds."""
    rng = np.random.default_rng(5)
    blocks, steps = 400, 12
    ramp = np.arange(blocks) % 10 == 0
    flat_path = rng.poisson(2.5 * STEP, (blocks, steps)) / STEP
    ramp_path = np.linspace(0.5, 2.5, steps)[None, :].repeat(blocks, axis=0)
    forecast = np.where(ramp[:, None], ramp_path, flat_path)
    noise = rng.poisson(np.maximum(forecast, 0.0) * STEP) / STEP - forecast
    miss = rng.uniform(-0.3, 0.3, (blocks, steps)) * forecast
    actual = forecast + noise + np.where(ramp[:, None], miss, 0.0)
    pooled = IntervalCalibration(0.25, (0,), ((-0.3, -0.2, 0.2, 0.3),), 100, "pooled")
    calibration = pooled.with_first_steps(actual, forecast)
    first = calibration.first
    assert first is not None
    rising_flat = first.groups[2] - int(ramp.sum())  # all ramps rise, and a flat path by noise about 1 in 20
    assert 0 <= rising_flat <= 0.1 * int((~ramp).sum())
    noisy_flat = 2.5 + np.array([-0.05, 0.02, 0.0, 0.04, -0.03, 0.01, 0.03, -0.02, 0.0, 0.02, 0.04, 0.06])
    rising = calibration.bands(np.linspace(0.5, 2.5, steps))
    holding = calibration.bands(noisy_flat)
    assert float(np.max(holding.upper_80 - noisy_flat)) < 0.3  # the flat hours' Poisson spread, ~0.12-0.2
    assert float(np.max(rising.upper_80[-3:] - np.linspace(0.5, 2.5, steps)[-3:])) > 0.4  # the ramps' misses
