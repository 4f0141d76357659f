"""Next peak, ramp crossings and the local-time helpers (business hours, morning ramp)."""

from __future__ import annotations

from datetime import datetime, time
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from forecasting import (
    ForecastInputError,
    ForecastSettings,
    forecast,
    is_business_hours,
    local_time,
    next_morning_ramp,
    next_peak,
    ramp_crossings,
)
from tests.forecasting.helpers import DAY, split, traffic

# A ramp from 0 to 100 over ten 60 s steps, then flat: mean(t) = 10 x step index.
TIMES = 1000.0 + 60.0 * np.arange(1, 21)
MEAN = np.minimum(10.0 * np.arange(1, 21), 100.0)
UPPER = MEAN + 10.0
LOWER = np.maximum(MEAN - 20.0, 0.0)


@pytest.mark.parametrize(
    ("threshold", "expected"),
    [
        pytest.param(25.0, (1150.0, 1090.0, 1270.0), id="mean crosses 25 half-way between steps 2 and 3"),
        pytest.param(50.0, (1300.0, 1240.0, 1420.0), id="upper crosses a step earlier, lower two steps later"),
        pytest.param(95.0, (1570.0, 1510.0, None), id="the lower bound never reaching 95 leaves latest empty"),
        pytest.param(105.0, (None, 1570.0, None), id="above the mean but under the upper bound: only earliest"),
        pytest.param(150.0, (None, None, None), id="above every bound: no crossing at all"),
    ],
)
def test_ramp_crossing_times_are_interpolated(threshold: float, expected: tuple[float | None, ...]) -> None:
    (crossing,) = ramp_crossings(TIMES, MEAN, LOWER, UPPER, [threshold], last_timestamp_s=1000.0, last_value=0.0)
    got = (crossing.timestamp_s, crossing.earliest_s, crossing.latest_s)
    assert got == pytest.approx(expected)
    assert crossing.threshold == threshold


def test_demand_already_above_a_threshold_crosses_it_after_the_next_dip() -> None:
    """Now 80 (above 50): tonight's dip to 10, then tomorrow's ramp is the crossing that matters."""
    mean = np.array([70.0, 40.0, 10.0, 10.0, 30.0, 60.0, 90.0])
    times = 60.0 * np.arange(1, 8)
    (crossing,) = ramp_crossings(times, mean, mean - 5, mean + 5, [50.0], last_timestamp_s=0.0, last_value=80.0)
    assert crossing.timestamp_s == pytest.approx(300.0 + 60.0 * 20.0 / 30.0)
    assert crossing.earliest_s == pytest.approx(300.0 + 60.0 * 15.0 / 30.0)
    assert crossing.latest_s == pytest.approx(300.0 + 60.0 * 25.0 / 30.0)


def test_next_peak_is_the_highest_mean_within_the_window() -> None:
    mean = np.array([1.0, 5.0, 3.0, 9.0])
    peak = next_peak(np.arange(4.0), mean, mean + 1, mean + 2, window_steps=3)
    assert (peak.timestamp_s, peak.value, peak.upper, peak.upper_95) == (1.0, 5.0, 6.0, 7.0)


@pytest.fixture(scope="module")
def tuesday_forecast() -> tuple[np.ndarray, np.ndarray, list[float | None]]:
    """Forecast of a noise-free Tuesday after eight days (Paris), with ramp thresholds."""
    history, _ = split(traffic(9, poisson=False), 8 * DAY)
    result = forecast(history, ForecastSettings(thresholds=(10.0, 30.0)))
    times = [c.timestamp_s for c in result.ramp]
    return result.timestamps_s, result.mean, times


def test_ramp_thresholds_are_crossed_at_the_right_local_times(
    tuesday_forecast: tuple[np.ndarray, np.ndarray, list[float | None]],
) -> None:
    """The generator's ramp: 6% at 08:00 rising (smoothstep) to 100% at 09:30, peak 40 req/s."""
    _, _, (at_10, at_30) = tuesday_forecast
    assert at_10 is not None and at_30 is not None
    clock_10, clock_30 = local_time(at_10, "Europe/Paris"), local_time(at_30, "Europe/Paris")
    minutes_10 = clock_10.hour * 60 + clock_10.minute
    minutes_30 = clock_30.hour * 60 + clock_30.minute
    assert clock_10.weekday() == 1
    assert abs(minutes_10 - (8 * 60 + 28)) <= 6  # 10 req/s = 21.3% of the way up: 08:28
    assert abs(minutes_30 - (8 * 60 + 58)) <= 6  # 30 req/s = 73.4% of the way up: 08:58


def test_the_next_peak_falls_in_the_business_day(
    tuesday_forecast: tuple[np.ndarray, np.ndarray, list[float | None]],
) -> None:
    times, mean, _ = tuesday_forecast
    peak = next_peak(times, mean, mean, mean, window_steps=DAY)
    clock = local_time(peak.timestamp_s, "Europe/Paris")
    assert time(9, 30) <= clock.time() <= time(17, 30) and clock.weekday() == 1
    assert peak.value == pytest.approx(40.0 * 1.01, rel=0.03)


def test_the_morning_ramp_is_found_after_the_local_night(
    tuesday_forecast: tuple[np.ndarray, np.ndarray, list[float | None]],
) -> None:
    times, mean, _ = tuesday_forecast
    ramp = next_morning_ramp(times, mean, "Europe/Paris")
    assert ramp is not None
    clock = local_time(ramp.timestamp_s, "Europe/Paris")
    assert abs(clock.hour * 60 + clock.minute - (8 * 60 + 45)) <= 6  # half-way up the 08:00-09:30 ramp
    assert ramp.trough < 0.1 * ramp.peak


@pytest.mark.parametrize(
    ("start_hour", "steps", "what"),
    [
        pytest.param(12, 48, "no night", id="an afternoon-only path has no morning ramp"),
        pytest.param(1, 72, "one hour of day", id="a path ending at 07:00 has too little day to tell"),
    ],
)
def test_no_morning_ramp_without_a_night_and_a_day(start_hour: int, steps: int, what: str) -> None:
    start = datetime(2024, 4, 2, start_hour, 0, tzinfo=ZoneInfo("Europe/Paris")).timestamp()
    times = start + 300.0 * np.arange(steps)
    noisy_night = 2.5 + 0.3 * np.sin(np.arange(steps) * 1.7)
    assert next_morning_ramp(times, noisy_night, "Europe/Paris") is None, what


@pytest.mark.parametrize(
    ("local", "zone", "kwargs", "expected"),
    [
        pytest.param(datetime(2024, 4, 1, 9, 30), "Europe/Paris", {}, True, id="Monday 09:30 in Paris is business"),
        pytest.param(datetime(2024, 4, 1, 18, 0), "Europe/Paris", {}, False, id="18:00 is already after hours"),
        pytest.param(datetime(2024, 4, 6, 11, 0), "Europe/Paris", {}, False, id="Saturday is not a business day"),
        pytest.param(datetime(2024, 1, 8, 9, 30), "America/New_York", {}, True, id="winter time in New York"),
        pytest.param(datetime(2024, 7, 8, 8, 30), "America/New_York", {}, False, id="summer 08:30 is before 09:00"),
        pytest.param(
            datetime(2024, 4, 6, 11, 0),
            "Asia/Tokyo",
            {"weekdays": range(7), "start": time(8), "end": time(20)},
            True,
            id="a seven-day service counts Saturday",
        ),
        pytest.param(
            datetime(2024, 4, 2, 23, 0),
            "Europe/London",
            {"start": time(22), "end": time(6)},
            True,
            id="a window across midnight holds 23:00",
        ),
    ],
)
def test_business_hours_are_judged_in_local_time(
    local: datetime, zone: str, kwargs: dict[str, object], expected: bool
) -> None:
    timestamp = local.replace(tzinfo=ZoneInfo(zone)).timestamp()
    assert is_business_hours(timestamp, zone, **kwargs) is expected  # type: ignore[arg-type]


def test_an_unknown_timezone_is_a_typed_error() -> None:
    with pytest.raises(ForecastInputError, match="unknown timezone 'Mars/Olympus'"):
        is_business_hours(0.0, "Mars/Olympus")
