"""A refit keeps the previous forecast's model choice for one calibration spacing (`forecasting.choice`)."""

from __future__ import annotations

import numpy as np
import pytest

from forecasting import ForecastResult, ForecastSettings, RegularSeries, forecast, make_model
from forecasting.anchoring import recent_level

DAY, HOUR, STEP = 86_400.0, 3_600.0, 300.0
SETTINGS = ForecastSettings(horizon_seconds=DAY, step_seconds=STEP)


def _demand(days: float, seed: int = 3) -> np.ndarray:
    """A diurnal demand with noise and a slow rise, at 5 minutes."""
    t = np.arange(round(days * DAY / STEP)) * STEP
    rng = np.random.default_rng(seed)
    shape = 40.0 + 30.0 * np.sin(2 * np.pi * t / DAY) + 0.00002 * t
    return np.asarray(np.maximum(shape * rng.lognormal(0.0, 0.08, t.size), 0.0))


def _history(values: np.ndarray) -> RegularSeries:
    return RegularSeries(0.0, STEP, values)


def _fit(values: np.ndarray, previous: ForecastResult | None = None) -> ForecastResult:
    return forecast(_history(values), SETTINGS, previous.choice if previous else None)


VALUES = _demand(17.0)
FIRST_DAYS = 10.0  # every origin the plan asks for, until the 16 days that bring the weekly baseline in
FIRST = _fit(VALUES[: round(FIRST_DAYS * DAY / STEP)])


def _later(hours: float) -> np.ndarray:
    return VALUES[: round((FIRST_DAYS * DAY + hours * HOUR) / STEP)]


@pytest.mark.parametrize(
    "hours",
    [pytest.param(1.0, id="an hourly refit"), pytest.param(5.75, id="a refit just inside the 6h spacing")],
)
def test_a_refit_within_the_spacing_keeps_the_choice_and_refits_the_model_on_the_new_history(hours: float) -> None:
    assert FIRST.choice is not None and FIRST.backtest is not None
    refit = _fit(_later(hours), FIRST)
    assert refit.choice is FIRST.choice  # no new backtest: the same decision, made on the older history
    assert refit.model == FIRST.model and refit.backtest is FIRST.backtest
    assert f"kept from the backtest {'1h' if hours == 1.0 else '5h45m'} ago, re-chosen every 6h" in refit.reason
    # The kept model is fitted on the new history and anchored at its recent level, as a fresh choice would be.
    history = _history(_later(hours))
    point = make_model(FIRST.model).fit(history).forecast(refit.mean.size)
    anchor = FIRST.choice.anchor(FIRST.model, STEP)
    np.testing.assert_allclose(refit.mean, anchor.apply(point.mean, recent_level(history.values, STEP)))
    assert refit.timestamps_s[0] == history.end_s + STEP


def test_a_refit_one_spacing_later_backtests_again() -> None:
    refit = _fit(_later(6.0), FIRST)
    assert refit.choice is not None and refit.choice is not FIRST.choice
    assert refit.choice.made_at_s == refit.history.end_s
    assert "kept from the backtest" not in refit.reason


@pytest.mark.parametrize(
    ("values", "why"),
    [
        pytest.param(VALUES[: round((FIRST_DAYS * DAY - HOUR) / STEP)], "earlier", id="a history that ends earlier"),
        pytest.param(VALUES[: round((16 * DAY + HOUR) / STEP)], "weekly", id="a history that let weekly models in"),
    ],
)
def test_a_refit_the_choice_does_not_answer_backtests_again(values: np.ndarray, why: str) -> None:
    previous = FIRST if why == "earlier" else _fit(VALUES[: round((16 * DAY - HOUR) / STEP)])
    assert previous.choice is not None and previous.choice.made_at_s > values.size * STEP - 6 * HOUR
    refit = _fit(values, previous)
    assert refit.choice is not None and refit.choice is not previous.choice
    assert refit.choice.made_at_s == refit.history.end_s


def test_a_constant_choice_is_not_kept_once_the_history_moves() -> None:
    idle = np.zeros(round(FIRST_DAYS * DAY / STEP))
    first = _fit(idle)
    assert first.choice is not None and first.choice.constant
    moved = np.concatenate([idle, np.full(12, 5.0)])
    refit = _fit(moved, first)
    assert refit.backtest is not None and refit.choice is not first.choice


@pytest.mark.parametrize(
    ("hours_after", "aged"),
    [
        pytest.param(0.0, False, id="the history it was made on keeps it"),
        pytest.param(5.75, False, id="just inside the spacing keeps it"),
        pytest.param(6.0, True, id="one spacing after it backtests again"),
        pytest.param(-1.0, True, id="a history that ends before it was made backtests again"),
    ],
)
def test_a_choice_ages_at_one_spacing_which_is_what_reuse_and_the_replays_work_split_read(
    hours_after: float, aged: bool
) -> None:
    choice = FIRST.choice
    assert choice is not None and choice.report is not None
    spacing = SETTINGS.calibration_spacing_seconds
    end = choice.made_at_s + hours_after * HOUR
    assert choice.aged(end, spacing) is aged
    assert choice.reusable(end, choice.signature, spacing) is (not aged)
