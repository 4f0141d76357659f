"""The working-day naive: a Monday copies Friday, a day off the last day off, from the plan's working week."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from forecasting import ForecastInputError, ForecastSettings, RegularSeries, WorkWeek, forecast
from forecasting.models import make_model
from tests.forecasting.helpers import DAY, STEP, mae, split, traffic

PARIS = "Europe/Paris"
MONDAY = datetime(2024, 4, 1, tzinfo=ZoneInfo(PARIS))  # the helpers' traffic starts here


def _days(first_day: int, values_by_day: list[float]) -> RegularSeries:
    """Hourly history from local midnight `first_day` days after Monday 2024-04-01, one value per day."""
    start = MONDAY.timestamp() + first_day * 86_400.0
    return RegularSeries(start, 3600.0, np.repeat(np.asarray(values_by_day, dtype=float), 24))


@pytest.mark.parametrize(
    ("first_day", "history", "expected"),
    [
        pytest.param(0, [1, 2, 3, 4, 5, 60, 70], [5], id="after a weekend a Monday copies Friday"),
        pytest.param(0, [1, 2, 3, 4, 5, 60], [60, 5], id="a Sunday copies Saturday and the Monday after Friday"),
        pytest.param(0, [1, 2, 3, 4, 5, 60, 70], [5, 5], id="two days ahead the Tuesday copies Friday too"),
        pytest.param(0, [1, 2, 3, 4, 5], [5, 5, 5], id="with no day off in the history yet a weekend copies Friday"),
        pytest.param(5, [60, 70, 1], [1, 1], id="a history that starts on a Saturday gives Tuesday Monday's day"),
    ],
)
def test_each_day_copies_the_last_day_of_its_kind(first_day: int, history: list[float], expected: list[float]) -> None:
    series = _days(first_day, history)
    model = make_model("seasonal_naive_workday", WorkWeek(PARIS))
    path = model.fit(series).forecast(24 * len(expected)).mean
    assert np.array_equal(path, np.repeat(np.asarray(expected, dtype=float), 24))


def test_working_days_follow_the_local_calendar_across_a_dst_change() -> None:
    zone = ZoneInfo("America/Los_Angeles")
    week = WorkWeek("America/Los_Angeles")  # 2026-03-08 (a Sunday) is 23 hours long there
    stamps = np.array(
        [datetime(2026, 3, d, h, 30, tzinfo=zone).timestamp() for d, h in ((6, 23), (7, 0), (8, 23), (9, 0))]
    )
    assert week.working(stamps).tolist() == [True, False, False, True]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        pytest.param(lambda: WorkWeek("Mars/Olympus"), "unknown timezone", id="an unknown timezone is named"),
        pytest.param(lambda: WorkWeek(PARIS, frozenset({7})), "some of 0-6", id="a weekday beyond Sunday is refused"),
        pytest.param(
            lambda: make_model("seasonal_naive_workday"), "needs the working week", id="the model needs a week"
        ),
    ],
)
def test_bad_calendars_are_refused_with_what_is_wrong(make: Callable[[], object], message: str) -> None:
    with pytest.raises(ForecastInputError, match=message):
        make()


def test_a_monday_morning_after_the_first_weekend_follows_friday_when_the_plan_gives_the_week() -> None:
    # eight days of weekday traffic with quiet weekends, to Monday 06:00: the daily models copy Sunday
    full = traffic(9, seed=3)
    history, after = split(full, 7 * DAY + 72)
    ramp = after[:48]  # Monday 06:00-10:00, the morning ramp
    plain = forecast(history, ForecastSettings(step_seconds=STEP))
    known = forecast(history, ForecastSettings(step_seconds=STEP, work_week=WorkWeek(PARIS)))
    assert known.model == "seasonal_naive_workday", known.reason
    assert mae(known.mean[:48], ramp) < 0.5 * mae(plain.mean[:48], ramp)
    assert np.mean(known.bands.upper_80[:48] >= ramp) > 0.6


@pytest.mark.parametrize(
    ("first_day", "history", "guessed_days"),
    [
        pytest.param(0, [1, 2, 3, 4, 5], [True, True, False], id="a weekend with no day off before it is a guess"),
        pytest.param(0, [1, 2, 3, 4], [False, True, True], id="the working day before it is not"),
        pytest.param(0, [1, 2, 3, 4, 5, 60], None, id="once the history has a day off nothing is guessed"),
        pytest.param(5, [60, 70, 1], None, id="a history that starts on a weekend guesses no working day"),
    ],
)
def test_the_days_it_had_nothing_of_their_kind_for_are_marked_guessed(
    first_day: int, history: list[float], guessed_days: list[bool] | None
) -> None:
    days = 3 if guessed_days is None else len(guessed_days)
    path = make_model("seasonal_naive_workday", WorkWeek(PARIS)).fit(_days(first_day, history)).forecast(24 * days)
    if guessed_days is None:
        assert path.guessed is None
    else:
        assert path.guessed is not None
        assert path.guessed.tolist() == np.repeat(guessed_days, 24).tolist()


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("days", [7, 8], ids=["on the Monday", "on the Tuesday"])
def test_the_first_weeks_weekend_guess_does_not_widen_the_working_days_bands(seed: int, days: int) -> None:
    # With quiet weekends, the backtest windows of the first Saturday copy Friday's day onto it (there is no
    # day off to copy yet): their errors are the whole day's traffic. Fitted on, they set the morning's 80%
    # upper bound near twice the ramp (1.6-2.0x) through the week after, and the advice plans on that bound.
    history, after = split(traffic(10, seed=seed, weekend_fraction=0.0), days * DAY + 72)
    ramp = after[:48]  # the morning ramp, 06:00-10:00
    result = forecast(history, ForecastSettings(step_seconds=STEP, work_week=WorkWeek(PARIS)))
    assert result.model == "seasonal_naive_workday", result.reason
    assert np.mean(result.bands.upper_80[24:48]) < 1.25 * np.mean(ramp[24:48])
    assert np.mean(result.bands.upper_80[:48] >= ramp) > 0.7
    assert mae(result.mean[:48], ramp) < 0.06 * np.mean(ramp)
