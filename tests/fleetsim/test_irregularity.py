"""Irregular demand (day-to-day level, shape, trend, shifts, holidays) and a real rate trace as demand."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fleetsim.irregularity import DEFAULT_IRREGULARITY, Irregularity, rate_trace_demand
from fleetsim.scenarios import Effects, Scenario, parse_scenarios
from fleetsim.workload import rate_at, rates_at
from monitor.plan.load import load_plan

from .helpers import START

CAPSTONE = load_plan("examples/capstone.yaml")
DAY = 86_400.0
DAYS = 56


def daily_log_means(scenarios: tuple[Scenario, ...], days: int = DAYS) -> np.ndarray:
    stamps = START + np.arange(0.0, days * DAY, 1800.0)
    rates = np.array([rate_at(CAPSTONE, float(t), scenarios) for t in stamps])
    return np.log(rates.reshape(days, -1).mean(axis=1))


def test_the_irregular_scenario_makes_each_weekday_differ_from_the_same_weekday_a_week_before() -> None:
    regular, irregular = daily_log_means(()), daily_log_means(parse_scenarios("irregular"))
    week_over_week_regular = np.abs(regular[7:] - regular[:-7])
    week_over_week_irregular = np.abs(irregular[7:] - irregular[:-7])
    assert week_over_week_regular.max() < 1e-9
    assert np.median(week_over_week_irregular) > 0.05


def test_the_day_level_scatter_is_about_the_configured_one() -> None:
    calm = replace(DEFAULT_IRREGULARITY, trend_per_day=0.0, shift_per_day=0.0, holiday_per_day=0.0, shape_sd=0.0)
    levels = np.array([calm.day_log_level(day) for day in range(20_000, 20_400)])
    assert levels.std() == pytest.approx(calm.level_sd, rel=0.2)
    assert np.corrcoef(levels[1:], levels[:-1])[0, 1] == pytest.approx(calm.level_memory, abs=0.12)


@pytest.mark.parametrize(
    ("field", "value", "check"),
    [
        pytest.param("trend_per_day", 0.05, lambda levels: np.ptp(levels) > 0.5, id="a trend moves the level"),
        pytest.param("shift_per_day", 0.5, lambda levels: np.ptp(levels) > 0.3, id="frequent shifts move it"),
        pytest.param("level_sd", 0.0, lambda levels: np.ptp(levels) < 1e-12, id="with nothing on it stays flat"),
    ],
)
def test_each_part_of_the_irregularity_is_configurable(field: str, value: float, check: object) -> None:
    none = Irregularity(level_sd=0.0, trend_per_day=0.0, shift_per_day=0.0, holiday_per_day=0.0, shape_sd=0.0)
    levels = np.array([replace(none, **{field: value}).day_log_level(day) for day in range(20_000, 20_060)])
    assert callable(check) and check(levels)


def test_holidays_drop_business_days_to_the_holiday_level() -> None:
    always = Irregularity(level_sd=0.0, trend_per_day=0.0, shift_per_day=0.0, shape_sd=0.0, holiday_per_day=1.0)
    scenario = Scenario("holidays", "every business day is a holiday", Effects(irregularity=always))
    noon_monday = START + 4 * 3600.0  # START is Monday 08:00 in Los Angeles, the plan's timezone
    assert rate_at(CAPSTONE, noon_monday, (scenario,)) == pytest.approx(0.35 * rate_at(CAPSTONE, noon_monday))


def test_the_same_days_come_back_in_the_vectorised_path_and_across_calls() -> None:
    scenarios = parse_scenarios("irregular")
    stamps = START + np.arange(0.0, 3 * DAY, 3600.0)
    once = rates_at(CAPSTONE, stamps, scenarios, seed=1)
    again = np.array([rate_at(CAPSTONE, float(t), scenarios) for t in stamps])
    assert np.allclose(once, again)


def test_a_rate_trace_becomes_demand_scaled_to_the_plan_peak_with_gaps_filled() -> None:
    stamps = np.arange(0.0, 7200.0, 600.0)
    rates = np.array([100.0, 200.0, np.nan, 400.0, 300.0, 100.0, 50.0, 80.0, 90.0, 95.0, 99.0, 100.0])
    trace = rate_trace_demand(stamps, rates, start_unix=START, peak_rps=CAPSTONE.workload.arrival.peak_rps)
    scenario = Scenario("trace", "a real trace", Effects(demand=trace))
    assert rate_at(CAPSTONE, START + 1800.0, (scenario,)) == pytest.approx(CAPSTONE.workload.arrival.peak_rps)
    assert rate_at(CAPSTONE, START + 1200.0, (scenario,)) == pytest.approx(0.75 * CAPSTONE.workload.arrival.peak_rps)
    assert rate_at(CAPSTONE, START + 7200.0 + 1800.0, (scenario,)) == pytest.approx(
        CAPSTONE.workload.arrival.peak_rps
    ), "a trace repeats past its end"


@pytest.mark.parametrize(
    ("stamps", "rates", "message"),
    [
        pytest.param([0.0], [1.0], ">= 2", id="one point is refused"),
        pytest.param([0.0, 1.0, 2.0], [np.nan, np.nan, 1.0], "two finite", id="all gaps are refused"),
        pytest.param([0.0, 1.0], [0.0, 0.0], "peak is 0", id="a silent trace cannot be scaled"),
    ],
)
def test_unusable_rate_traces_are_refused_with_the_reason(
    stamps: list[float], rates: list[float], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        rate_trace_demand(np.array(stamps), np.array(rates), start_unix=START, peak_rps=10.0)
