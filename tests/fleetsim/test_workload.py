"""The synthetic workload: the weekly profile solved to the plan, bursts, lengths, routing and prefix reuse."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from fleetsim.scenarios import parse_scenarios
from fleetsim.workload import (
    PrefixModel,
    WorkloadModel,
    arrival_times,
    burst_multiplier,
    burst_multipliers,
    rate_at,
    rates_at,
)
from monitor.plan.load import load_plan
from monitor.sizing.workload import plan_prefix_hit_rate, tier_workload

from .helpers import START

CAPSTONE = load_plan("examples/capstone.yaml")
COPILOT = load_plan("examples/support-copilot.yaml")
WEEK = START + np.arange(0, 7 * 86400, 60.0)


@pytest.mark.parametrize(
    "plan",
    [pytest.param(CAPSTONE, id="capstone: 12 req/s peak, 3 average"),
     pytest.param(COPILOT, id="support copilot: 50 req/s peak, 15 average")],
)  # fmt: skip
def test_the_weekly_profile_peaks_at_peak_rps_and_averages_average_rps(plan):
    rates = np.array([rate_at(plan, float(t)) for t in WEEK])
    arrival = plan.workload.arrival
    assert rates.max() == pytest.approx(arrival.peak_rps, rel=1e-6)
    assert rates.mean() == pytest.approx(arrival.average_rps, rel=0.01)


def local(plan, day: int, hour: float) -> float:
    """Unix time of `hour` on 2024-05-(6 + day) in the plan's timezone (day 0 is a Monday)."""
    zone = ZoneInfo(plan.workload.business_hours.timezone)
    return datetime(2024, 5, 6 + day, int(hour), int(hour % 1 * 60), tzinfo=zone).timestamp()


def test_the_morning_ramp_happens_in_the_plans_timezone():
    rate = lambda day, hour: rate_at(CAPSTONE, local(CAPSTONE, day, hour))  # noqa: E731
    assert rate(0, 3.0) < 0.05 * 12  # quiet night
    assert rate(0, 7.5) < rate(0, 8.0) < rate(0, 8.5) < rate(0, 9.0)  # ramp around 08:00 Los Angeles
    assert rate(0, 11.0) == pytest.approx(12.0)  # plateau
    assert rate(5, 11.0) < 0.5 * rate(0, 11.0)  # Saturday is quieter


def test_over_peak_scales_the_profile_by_1_4():
    t = local(CAPSTONE, 0, 11.0)
    assert rate_at(CAPSTONE, t, parse_scenarios("over-peak")) == pytest.approx(1.4 * 12.0)


def test_bursts_are_a_pure_function_of_time_with_mean_one():
    scalar = np.array([burst_multiplier(float(t), 8.0, 5) for t in WEEK])
    assert np.array_equal(scalar, burst_multipliers(WEEK, 8.0, 5))
    assert scalar.mean() == pytest.approx(1.0, abs=0.05)
    assert scalar.max() == pytest.approx(9.0 / 1.4)
    assert burst_multiplier(START, 0.0, 5) == 1.0
    vectorised = rates_at(CAPSTONE, WEEK[:500], parse_scenarios("bursty"), seed=5)
    assert np.allclose(
        vectorised, [rate_at(CAPSTONE, float(t)) * burst_multiplier(float(t), 8.0, 5) for t in WEEK[:500]]
    )


def test_arrivals_are_poisson_at_the_profile_rate_and_reproducible():
    t0 = local(CAPSTONE, 0, 11.0)
    draw = lambda seed: arrival_times(CAPSTONE, t0, t0 + 3600, (), np.random.default_rng(seed))  # noqa: E731
    times = draw(1)
    assert len(times) == pytest.approx(12 * 3600, rel=0.03)
    assert np.all(np.diff(times) >= 0) and times[0] >= t0 and times[-1] < t0 + 3600
    assert np.array_equal(times, draw(1)) and not np.array_equal(times, draw(2))
    gaps = np.diff(times)
    assert np.std(gaps) / np.mean(gaps) == pytest.approx(1.0, abs=0.05)  # exponential gaps


def draw_calls(plan, n: int = 40_000, scenarios: str = "baseline"):
    model = WorkloadModel(plan, parse_scenarios(scenarios))
    return model.calls(np.full(n, START), np.random.default_rng(3))


def test_lengths_follow_the_plans_percentiles():
    calls = draw_calls(CAPSTONE)
    prompts = np.array([c.prompt_tokens for c in calls])
    outputs = np.array([c.output_tokens for c in calls])
    assert np.percentile(prompts, [50, 95]) == pytest.approx([6000, 24000], rel=0.05)
    assert np.percentile(outputs, [50, 95]) == pytest.approx([250, 900], rel=0.05)
    long = np.array([c.prompt_tokens for c in draw_calls(CAPSTONE, scenarios="long-prompts")])
    assert np.percentile(long, [50, 95]) == pytest.approx([6000, 40000], rel=0.06)


def test_calls_are_routed_as_the_plan_routes_them():
    calls = draw_calls(CAPSTONE)
    for tier in CAPSTONE.tiers:
        share = sum(c.tier == tier.name for c in calls) / len(calls)
        assert share == pytest.approx(tier_workload(CAPSTONE, tier).share, abs=0.01), tier.name


@pytest.mark.parametrize(
    "plan",
    [pytest.param(CAPSTONE, id="a stated hit rate (0.30) is met with recurring content beyond the prefix"),
     pytest.param(COPILOT, id="the default hit rate is shared prefix / mean prompt (0.6)")],
)  # fmt: skip
def test_reusable_prefix_gives_the_plans_hit_rate(plan):
    calls = draw_calls(plan)
    reusable = sum(c.cacheable_tokens for c in calls) / sum(c.prompt_tokens for c in calls)
    assert reusable == pytest.approx(plan_prefix_hit_rate(plan), abs=0.01)
    assert PrefixModel.for_plan(plan).shared_tokens <= plan.workload.shared_prefix_tokens


def test_each_tier_reuses_the_prefix_share_sizing_plans_for_it():
    """One prefix-hit rule: the calls fleetsim routes to a tier reuse what sizing's per-tier rate says
    (long prompts less than the fleet's 30%, prompts shorter than the shared prefix nearly all of it)."""
    calls = draw_calls(CAPSTONE)
    rates = {}
    for tier in CAPSTONE.tiers:
        mine = [c for c in calls if c.tier == tier.name]
        if len(mine) < 500:
            continue
        rates[tier.name] = sum(c.cacheable_tokens for c in mine) / sum(c.prompt_tokens for c in mine)
        assert rates[tier.name] == pytest.approx(tier_workload(CAPSTONE, tier).prefix_hit_rate, abs=0.02), tier.name
    assert rates["long-context"] < plan_prefix_hit_rate(CAPSTONE) < rates["standard"] < rates["fast"]


def test_prefix_miss_gives_most_calls_a_unique_prefix():
    calls = draw_calls(CAPSTONE, 10_000, "prefix-miss")
    assert sum(c.prefix_key == -1 for c in calls) / len(calls) == pytest.approx(0.98, abs=0.01)


def test_tool_calls_chain_sequential_calls():
    model = WorkloadModel(CAPSTONE, parse_scenarios("tool-calls"))
    first = model.calls(np.array([START]), np.random.default_rng(0))[0]
    second = model.follow_up(first, START + 10, np.random.default_rng(1))
    assert (first.calls_total, first.call_index, second.call_index) == (5, 0, 1)
    assert second.user_request == first.user_request and second.arrival == START + 10


@pytest.mark.parametrize(
    ("p50", "p95"),
    [
        pytest.param(1000.0, 4000.0, id="a long-tailed prompt length keeps its median and 95th percentile"),
        pytest.param(200.0, 200.0, id="equal percentiles draw every length the same"),
    ],
)
def test_drawn_lengths_have_the_plans_percentiles(p50, p95):
    """fleetsim's own log-normal: the draws' empirical p50 and p95 are the plan's (hard-coded, not re-derived)."""
    from fleetsim.workload import LengthDistribution

    drawn = LengthDistribution.from_percentiles(p50, p95).sample(np.random.default_rng(7), 200_000)
    assert np.percentile(drawn, 50) == pytest.approx(p50, rel=0.01)
    assert np.percentile(drawn, 95) == pytest.approx(p95, rel=0.015)
