"""Drift thresholds: the seeds' numbers as known answers, and the same boundary `monitor.drift.judge` uses."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from monitor.drift import Status, judge
from monitor.observe.model import Measurement, TierObservation
from monitor.observer import PrometheusObserver
from monitor.plan import load_plan
from monitor.plan.model import Tolerance
from monitor.rules.thresholds import KV_FULL_RATIO, MIN_REQUESTS, DriftThreshold, fleet_thresholds, tier_thresholds
from monitor.sizing.plan_sizing import size_plan
from monitor.triggers.catalog import trigger_def
from monitor.triggers.model import TierInputs, TriggerInputs

ROOT = Path(__file__).resolve().parents[2]
CAPSTONE = load_plan(ROOT / "examples" / "capstone.yaml")
COPILOT = load_plan(ROOT / "examples" / "support-copilot.yaml")


@pytest.mark.parametrize(
    ("threshold", "expected"),
    [
        pytest.param(tier_thresholds(CAPSTONE)["fast"]["prompt_p95"], 1939.4556 * 1.4,
                     id="capstone fast: band p95 1,952 reads as 1,939.5 through the buckets, x 1.4 = 2,715 tokens"),
        pytest.param(tier_thresholds(COPILOT)["copilot"]["prompt_p95"], 2437.5,
                     id="copilot: a flat 2,000-token prompt reads as 1,950 (1,000-2,000 bucket), x 1.25 = 2,437.5"),
        pytest.param(fleet_thresholds(CAPSTONE)["prompt_p95"], 31285.5265 * 1.4,
                     id="capstone fleet: 24,000 p95 reads as 31,286 in the 20,000-50,000 bucket, x 1.4"),
        pytest.param(tier_thresholds(COPILOT)["copilot"]["prefix_hit_rate"], 0.45,
                     id="copilot: 1,200 of 2,000 tokens shared is a 60% hit rate, breach below 45%"),
        pytest.param(tier_thresholds(CAPSTONE)["standard"]["peak_rate"], 9.3785 * 1.25,
                     id="capstone standard: 78% of 12 req/s is 9.38 at peak, breach above 11.7"),
        pytest.param(tier_thresholds(CAPSTONE)["fallback"]["peak_rate"], 0.0,
                     id="capstone fallback takes no planned traffic: any traffic is above its peak"),
        pytest.param(fleet_thresholds(COPILOT)["peak_to_average"], 50 / 15 * 1.25,
                     id="copilot: 50 over 15 req/s is 3.33x, breach above 4.17x"),
        pytest.param(tier_thresholds(CAPSTONE)["long-context"]["calls_per_request"], 1.25,
                     id="one call per request planned, breach above 1.25"),
    ],
)  # fmt: skip
def test_thresholds_have_the_seeds_numbers(threshold: DriftThreshold, expected: float) -> None:
    assert threshold.value == pytest.approx(expected, rel=1e-6)


def _every_threshold() -> list[DriftThreshold]:
    out = [t for plan in (CAPSTONE, COPILOT) for tiers in tier_thresholds(plan).values() for t in tiers.values()]
    out += [t for plan in (CAPSTONE, COPILOT) for t in fleet_thresholds(plan).values()]
    return [t for t in out if t.plan == t.plan and t.plan > 0]  # NaN: judged at the observed batch only


@pytest.mark.parametrize("t", [pytest.param(t, id=f"{t.tier} {t.assumption} {t.harmful}") for t in _every_threshold()])
def test_the_threshold_is_where_judge_turns_to_breach(t: DriftThreshold) -> None:
    tolerance = Tolerance(warn=0.0, breach=t.breach)
    inside = t.value * (1 - 1e-6) if t.harmful == "higher" else t.value * (1 + 1e-6)
    outside = t.value * (1 + 1e-6) if t.harmful == "higher" else t.value * (1 - 1e-6)
    assert judge(t.plan, Measurement(inside), t.harmful, tolerance)[1] is not Status.BREACH
    assert judge(t.plan, Measurement(outside), t.harmful, tolerance)[1] is Status.BREACH


@pytest.mark.parametrize(
    ("threshold", "expected"),
    [
        pytest.param(DriftThreshold("prompt_p95", "t", 1950, "higher", 0.25, "tokens"), "> 1950 * (1 + 0.25)",
                     id="higher is harmful: above plan x (1 + breach)"),
        pytest.param(DriftThreshold("prefix_hit_rate", "t", 0.6000000000000001, "lower", 0.25, "ratio"),
                     "< 0.6 * (1 - 0.25)", id="lower is harmful: below plan x (1 - breach), float noise trimmed"),
    ],
)  # fmt: skip
def test_the_comparison_shows_where_the_number_comes_from(threshold: DriftThreshold, expected: str) -> None:
    assert threshold.comparison() == expected


def test_a_plan_of_no_prefix_hits_cannot_drift_lower() -> None:
    assert not DriftThreshold("prefix_hit_rate", "t", 0.0, "lower", 0.25, "ratio").can_breach
    assert DriftThreshold("peak_rate", "t", 0.0, "higher", 0.25, "req/s").can_breach


def test_min_requests_is_the_observers() -> None:
    assert PrometheusObserver.min_requests == MIN_REQUESTS


@pytest.mark.parametrize(
    ("kv", "preemptions", "holds"),
    [
        pytest.param(KV_FULL_RATIO, 0.1, True, id="95% full with preemptions is pressure"),
        pytest.param(KV_FULL_RATIO - 1e-6, 0.1, False, id="just under 95% is not"),
        pytest.param(1.0, 0.0, False, id="full without preemptions is not"),
    ],
)
def test_kv_pressure_uses_the_catalogs_numbers(kv: float, preemptions: float, holds: bool) -> None:
    sizing = size_plan(COPILOT)
    obs = TierObservation("copilot", 0.0, "15m")
    obs = dataclasses.replace(obs, kv_occupancy_max=Measurement(kv), preemption_rate=Measurement(preemptions))
    inputs = TriggerInputs(COPILOT, sizing, {"copilot": TierInputs(obs, ())}, (), 0.0, True)
    assert (trigger_def("kv-pressure").check(inputs, "copilot") is not None) is holds
