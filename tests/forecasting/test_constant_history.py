"""A history that never moved is forecast as itself without a backtest: an idle tier costs nothing a refit."""

from __future__ import annotations

import numpy as np
import pytest

from forecasting.pipeline import ForecastSettings, forecast
from forecasting.series import RegularSeries

DAY = 86_400.0


@pytest.mark.parametrize(
    ("value", "days", "step", "model"),
    [
        pytest.param(0.0, 7.0, 300.0, "seasonal_naive_daily", id="an idle tier's week of zeros at 5 minutes"),
        pytest.param(0.0, 14.0, 600.0, "seasonal_naive_daily", id="two weeks of zeros at 10 minutes"),
        pytest.param(3.0, 3.0, 300.0, "seasonal_naive_daily", id="a gauge stuck at 3 for three days"),
        pytest.param(2.5, 0.5, 300.0, "mean_drift", id="half a day of a constant keeps the short-history model"),
    ],
)
def test_a_constant_history_is_forecast_as_itself_with_no_spread_and_no_backtest(
    value: float, days: float, step: float, model: str
) -> None:
    history = RegularSeries(0.0, step, np.full(round(days * DAY / step), value))
    result = forecast(history, ForecastSettings(horizon_seconds=DAY, step_seconds=step))
    assert result.model == model
    for path in (result.mean, result.bands.lower_95, result.bands.upper_80, result.bands.upper_95):
        np.testing.assert_array_equal(path, value)
    assert (result.next_peak.value, result.next_peak.upper, result.next_peak.upper_95) == (value, value, value)
    assert result.backtest is None
    assert f"the history is {value:g} at all {len(history)} steps" in result.reason


@pytest.mark.parametrize(
    "where",
    [
        pytest.param(0, id="one request at the start of the week"),
        pytest.param(-1, id="one request in the last step"),
    ],
)
def test_a_history_that_moved_once_is_backtested(where: int) -> None:
    values = np.zeros(7 * 288)
    values[where] = 0.01
    result = forecast(RegularSeries(0.0, 300.0, values), ForecastSettings(horizon_seconds=DAY, step_seconds=300.0))
    assert result.backtest is not None
    assert "not backtested" not in result.reason
