"""Model choice by the one-standard-error rule over many windows, and the short-horizon anchor."""

from __future__ import annotations

import numpy as np
import pytest

from forecasting import ForecastSettings, Series, forecast
from forecasting.anchoring import Anchor, recent_level
from forecasting.backtest import ModelScore
from forecasting.intervals import conformal_quantiles
from forecasting.selection import loss_margin, pick_model, plan_selection

from .helpers import DAY, STEP, traffic


def score(model: str, losses: list[float]) -> ModelScore:
    mae = float(np.mean(losses))
    return ModelScore(model, mae, mae, None, None, None, len(losses))


NAIVE = [1.0, 1.3, 0.8, 1.1, 0.9, 1.2]


@pytest.mark.parametrize(
    ("losses", "effective", "picked"),
    [
        pytest.param(
            {"seasonal_naive_daily": NAIVE, "profile_level": [0.9, 1.4, 0.6, 1.2, 0.7, 1.25]},
            6.0,
            "seasonal_naive_daily",
            id="a richer model ahead by less than one standard error loses to the simpler one",
        ),
        pytest.param(
            {"seasonal_naive_daily": NAIVE, "profile_level": [0.8 * x for x in NAIVE]},
            6.0,
            "profile_level",
            id="a richer model ahead on every window by a fifth wins",
        ),
        pytest.param(
            {"seasonal_naive_daily": NAIVE, "holt_winters": [x - 0.1 for x in NAIVE], "profile_level": NAIVE},
            6.0,
            "holt_winters",
            id="a steady lead wins even when small, and an equal simpler model does not block it",
        ),
        pytest.param(
            {"seasonal_naive_daily": [1.0], "combined": [0.99]},
            1.0,
            "combined",
            id="one window has no standard error: the lowest MASE",
        ),
        pytest.param(
            {"my_model": [0.9, 1.4, 0.6, 1.2, 0.7, 1.25], "seasonal_naive_daily": NAIVE},
            6.0,
            "seasonal_naive_daily",
            id="a model the ranking does not know counts as the richest",
        ),
    ],
)
def test_the_pick_is_the_simplest_model_within_one_standard_error(
    losses: dict[str, list[float]], effective: float, picked: str
) -> None:
    scores = [score(m, x) for m, x in losses.items()]
    arrays = {m: np.array(x) for m, x in losses.items()}
    assert pick_model(scores, arrays, effective).model == picked


def test_overlapping_windows_count_as_the_days_they_span() -> None:
    losses, best = np.array([1.0, 1.2, 1.1, 1.3, 1.0, 1.2, 1.1, 1.3]), np.ones(8)
    _, se_windows = loss_margin(losses, best, effective_windows=8.0)
    mean, se_days = loss_margin(losses, best, effective_windows=2.0)
    assert mean == pytest.approx(0.15) and se_days == pytest.approx(2.0 * se_windows)


def test_the_plan_backtests_a_dozen_windows_every_six_hours() -> None:
    plan = plan_selection(10 * DAY, STEP, DAY, every_steps=72, every_count=12)
    latest = 9 * DAY
    assert {latest - k * 72 for k in range(12)} <= set(plan.origins)
    assert len(plan.origins) == 13  # and the same time a week back, from backtest_origins


@pytest.mark.parametrize(
    ("weight", "half_life_s", "step", "expected"),
    [
        pytest.param(1.0, 3600.0, 300.0, [1.0, 0.5**0.25, 0.5**0.5], id="the weight halves every half-life"),
        pytest.param(0.6, 3600.0, 3600.0, [0.6, 0.3, 0.15], id="an hourly series halves every step"),
        pytest.param(0.0, 900.0, 300.0, [0.0, 0.0, 0.0], id="no weight, no anchoring"),
    ],
)
def test_anchor_weights_decay_over_the_horizon(
    weight: float, half_life_s: float, step: float, expected: list[float]
) -> None:
    anchor = Anchor(weight, half_life_s, step)
    assert np.allclose(anchor.weights(12)[[0, 3, 6]] if step == 300.0 else anchor.weights(3), expected)


@pytest.mark.parametrize(
    ("values", "step", "level"),
    [
        pytest.param([5.0, 1.0, 2.0, 30.0, 3.0], 300.0, 3.0, id="a median of 15 minutes drops one odd scrape"),
        pytest.param([5.0, 7.0], 3600.0, 7.0, id="an hourly series anchors on its last hour"),
        pytest.param([5.0, np.nan, np.nan, np.nan], 300.0, float("nan"), id="no recent observation: unknown"),
    ],
)
def test_the_recent_level(values: list[float], step: float, level: float) -> None:
    assert recent_level(np.array(values), step) == pytest.approx(level, nan_ok=True)


def test_the_anchor_is_fitted_to_how_long_the_present_level_persists() -> None:
    """Each window's actual holds its origin's level for about 2 h, then returns to the model's path."""
    rng = np.random.default_rng(3)
    levels = rng.uniform(50.0, 150.0, 12)
    h = np.arange(288)
    truth = 100.0 + (levels[:, None] - 100.0) * 0.5 ** (h * 300.0 / 7200.0)[None, :]
    actual = truth + rng.normal(0.0, 1.0, truth.shape)
    anchor = Anchor.fit(actual, np.full_like(actual, 100.0), levels, 300.0)
    assert anchor.weight >= 0.9 and anchor.half_life_s == 7200.0
    assert Anchor.fit(actual, truth, levels, 300.0).weight == 0.0  # an exact model gains nothing from it
    path = anchor.apply(np.full(288, 100.0), 150.0)
    assert path[0] == pytest.approx(100.0 + 50.0 * anchor.weight) and path[-1] == pytest.approx(100.0, abs=0.1)
    assert np.array_equal(anchor.apply(np.full(3, 100.0), float("nan")), np.full(3, 100.0))


def test_a_forecast_starts_from_where_a_wandering_level_is_now() -> None:
    """A daily cycle times a level that wanders over hours (as real aggregate demand does): 1 h ahead the
    anchored forecast beats both yesterday's copy (a day-old level) and the last value (no daily shape)."""
    rng = np.random.default_rng(7)
    n = 10 * DAY
    t = np.arange(n)
    shape = 1.0 + 0.5 * np.sin(2 * np.pi * t / DAY)
    wander = np.zeros(n)
    for i in range(1, n):  # AR(1) in log with a ~16 h memory at 5-minute steps
        wander[i] = 0.995 * wander[i - 1] + rng.normal(0.0, 0.01)
    values = 100.0 * shape * np.exp(wander)
    ours, naive, last = [], [], []
    for end in range(8 * DAY, 9 * DAY - 12, 48):
        result = forecast(Series(t[:end] * STEP, values[:end]), ForecastSettings(horizon_seconds=86_400.0))
        ours.append(abs(result.mean[11] - values[end + 11]))
        naive.append(abs(values[end + 11 - DAY] - values[end + 11]))
        last.append(abs(values[end - 1] - values[end + 11]))
        assert "anchored" in result.reason and "not anchored" not in result.reason
    assert np.mean(ours) < 0.75 * min(np.mean(naive), np.mean(last))


def test_an_hourly_export_is_forecast_as_well_as_its_five_minute_source() -> None:
    """Ten days averaged into hours (as a coarse export gives them): the whole pipeline runs at 1 h steps,
    the anchor on the last hour, and the next day's hourly path is about as good as the 5-minute one's."""
    series = traffic(11, seed=4, level_noise=True, weekend_fraction=1.0)
    hourly_values = series.values.reshape(-1, 12).mean(axis=1)
    hourly_stamps = series.timestamps_s[::12]
    history_hours = 10 * 24
    hourly = forecast(Series(hourly_stamps[:history_hours], hourly_values[:history_hours]))
    fine = forecast(Series(series.timestamps_s[: 10 * DAY], series.values[: 10 * DAY]))
    actual = hourly_values[history_hours : history_hours + 24]
    assert hourly.step_seconds == 3600.0 and hourly.mean.size == 24 and hourly.backtest is not None
    fine_error = float(np.mean(np.abs(fine.mean.reshape(-1, 12).mean(axis=1) - actual)))
    assert float(np.mean(np.abs(hourly.mean - actual))) <= 1.3 * fine_error + 0.02 * float(actual.mean())
    inside = (hourly.bands.lower_80 <= actual) & (actual <= hourly.bands.upper_80)
    assert inside.mean() >= 0.6


@pytest.mark.parametrize(
    ("n", "upper_rank"),
    [
        pytest.param(9, 9, id="nine errors: the 90% bound is the largest, (n + 1) x 0.9 = 9th of 9"),
        pytest.param(19, 18, id="nineteen errors: the 18th, not the plain quantile between 17th and 18th"),
        pytest.param(39, 39, id="thirty-nine errors: the 97.5% bound is the largest (the 90% the 36th)"),
    ],
)
def test_pooled_quantiles_carry_the_finite_sample_conformal_correction(n: int, upper_rank: int) -> None:
    errors = np.arange(1.0, n + 1.0)  # the k-th smallest error is k
    q = conformal_quantiles(errors)
    level = 0.975 if n == 39 else 0.90
    assert q[3 if level == 0.975 else 2] == pytest.approx(float(upper_rank))
    assert q[0] <= q[1] <= q[2] <= q[3]


def test_a_level_the_model_misses_but_a_shape_it_has_right_is_fitted_as_a_shift() -> None:
    """Each window's actual is the model's daily ramp moved by its origin's miss, held for hours: the shift
    (last level plus the model's own change) fits it, the blend toward a flat level would lose the ramp."""
    rng = np.random.default_rng(5)
    h = np.arange(288)
    ramp = 100.0 + 50.0 * np.sin(2 * np.pi * h / 288.0)
    misses = rng.uniform(-30.0, 30.0, 12)
    actual = ramp[None, :] + misses[:, None] * 0.5 ** (h * 300.0 / 14_400.0)[None, :]
    actual += rng.normal(0.0, 0.5, actual.shape)
    levels = ramp[0] + misses
    anchor = Anchor.fit(actual, np.tile(ramp, (12, 1)), levels, 300.0)
    assert anchor.shift and anchor.weight >= 0.9 and anchor.half_life_s == 14_400.0
    path = anchor.apply(ramp, 80.0)
    assert path[0] == pytest.approx(80.0)  # the level now, then the ramp moved by the fading miss
    assert path[12] == pytest.approx(ramp[12] + anchor.weights(13)[12] * (80.0 - ramp[0]))
    assert "shifting" in anchor.describe()
