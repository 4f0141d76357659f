"""Each scenario moves the metric it documents, and only when active (capstone seed, Step 7)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest
from fastapi import HTTPException

from fleetsim.fleet import Fleet
from fleetsim.scenarios import SCENARIOS, SLOW_TP, Effects, ScenarioError, effects_at, parse_scenarios
from fleetsim.server import dcgm_text, ksm_text, vllm_text

from .helpers import START, hist_count, parse, run_fleet, tiny_plan, total

SECONDS = 300.0


def plan_for_scenarios():
    return tiny_plan(rps=6.0, replicas=3, max_model_len=131072)


def histogram_quantile(fleet: Fleet, key: str, q: float) -> float:
    """Prometheus' histogram_quantile over the fleet's summed buckets (linear inside a bucket)."""
    pods = list(fleet.pods.values())
    bounds = [0.0, *pods[0].metrics.bounds[key]]
    counts = np.sum([p.metrics.cumulative(key) for p in pods], axis=0)
    rank = q * counts[-1]
    i = int(np.searchsorted(counts, rank))
    below = counts[i - 1] if i else 0.0
    return bounds[i] + (bounds[i + 1] - bounds[i]) * (rank - below) / (counts[i] - below)


def hit_rate(fleet: Fleet) -> float:
    return total(fleet, "vllm:prefix_cache_hits") / total(fleet, "vllm:prefix_cache_queries")


def request_rate(fleet: Fleet) -> float:
    return hist_count(fleet, "vllm:e2e_request_latency_seconds") / SECONDS


def mean_itl(fleet: Fleet) -> float:
    return total_sum(fleet, "vllm:inter_token_latency_seconds") / hist_count(fleet, "vllm:inter_token_latency_seconds")


def total_sum(fleet: Fleet, key: str) -> float:
    return sum(p.metrics.sums[key] for p in fleet.pods.values())


def calls_per_user_request(fleet: Fleet) -> float:
    ts = fleet.tiers["fast"]
    return ts.model_calls / ts.user_requests


def prompt_p95(fleet: Fleet) -> float:
    return histogram_quantile(fleet, "vllm:request_prompt_tokens", 0.95)


@pytest.fixture(scope="module")
def baseline() -> Fleet:
    return run_fleet(plan_for_scenarios(), SECONDS)


@pytest.mark.parametrize(
    ("scenario", "measure", "low", "high"),
    [
        pytest.param("long-prompts", prompt_p95, 30_000, 50_000, id="long-prompts moves the prompt p95 to ~40K"),
        pytest.param("prefix-miss", hit_rate, 0.0, 0.03, id="prefix-miss collapses the prefix-cache hit rate"),
        pytest.param("over-peak", request_rate, 1.3 * 6, 1.5 * 6, id="over-peak sends 40% more than the peak"),
        pytest.param("slow-tp", mean_itl, 0.0, 0.0, id="slow-tp stretches inter-token latency by 1/0.65"),
        pytest.param("tool-calls", calls_per_user_request, 4.7, 5.0, id="tool-calls makes 5 model calls per request"),
    ],
)
def test_scenario_moves_its_metric(scenario: str, measure: Callable[[Fleet], float], low: float, high: float,
                                   baseline: Fleet) -> None:  # fmt: skip
    moved = measure(run_fleet(plan_for_scenarios(), SECONDS, parse_scenarios(scenario)))
    if scenario == "slow-tp":
        low = high = measure(baseline) / SLOW_TP
        assert moved == pytest.approx(low, rel=0.05)
    else:
        assert low <= moved <= high
        assert not low <= measure(baseline) <= high


def test_baseline_matches_the_plan(baseline: Fleet) -> None:
    assert hit_rate(baseline) == pytest.approx(0.30, abs=0.03)
    assert request_rate(baseline) == pytest.approx(6.0, rel=0.1)
    assert prompt_p95(baseline) == pytest.approx(6000, rel=0.25)
    assert calls_per_user_request(baseline) == 1.0


def test_bursty_raises_the_one_minute_peak_to_average() -> None:
    ratios = []
    for scenario in ("baseline", "bursty"):
        fleet = run_fleet(tiny_plan(rps=2.0, replicas=2), 0, parse_scenarios(scenario), seed=3)
        per_minute = []
        for _ in range(40):
            before = fleet.tiers["fast"].user_requests
            fleet.advance_to(fleet.now + 60.0)
            per_minute.append(fleet.tiers["fast"].user_requests - before)
        ratios.append(max(per_minute) / np.mean(per_minute))
    assert ratios[0] < 1.4 and ratios[1] > 2.5


def test_slow_cold_start_delays_ready_time_of_new_pods() -> None:
    fleet = run_fleet(tiny_plan(), 10, parse_scenarios("slow-cold-start"))
    fleet.scale("fast", 3)
    fleet.advance_to(fleet.now + 1199.0)
    assert fleet.pods["fast-2"].phase == "starting"
    fleet.advance_to(fleet.now + 2.0)
    ksm = parse(ksm_text(fleet))
    created = {s.labels["pod"]: s.value for s in ksm["kube_pod_created"].samples}
    ready = {s.labels["pod"]: s.value for s in ksm["kube_pod_status_ready_time"].samples}
    assert ready["fast-2"] - created["fast-2"] == pytest.approx(1200.0)


def test_replica_down_takes_a_target_down_and_shows_an_xid() -> None:
    fleet = run_fleet(tiny_plan(replicas=3), 60, parse_scenarios("replica-down"), dcgm_interval=10.0)
    failed = [p.name for p in fleet.pods.values() if p.phase == "failed"]
    assert failed == ["fast-2"]
    with pytest.raises(HTTPException) as down:
        vllm_text(fleet, "fast-2")
    assert down.value.status_code == 503
    xid = parse(dcgm_text(fleet, "fast-2"))["DCGM_FI_DEV_XID_ERRORS"].samples[0].value
    assert xid == 79
    ready = {
        (s.labels["pod"], s.labels["condition"]): s.value
        for s in parse(ksm_text(fleet))["kube_pod_status_ready"].samples
    }
    assert ready[("fast-2", "false")] == 1.0
    fleet.set_scenarios(())
    fleet.advance_to(fleet.now + 121.0)
    assert fleet.pods["fast-2"].phase == "ready"


def test_a_scenario_with_a_start_time_is_baseline_before_it() -> None:
    scenarios = parse_scenarios(f"prefix-miss@{START + 120:.0f}")
    fleet = run_fleet(plan_for_scenarios(), 120, scenarios)
    before = hit_rate(fleet)
    queries, hits = total(fleet, "vllm:prefix_cache_queries"), total(fleet, "vllm:prefix_cache_hits")
    fleet.advance_to(fleet.now + 180)
    after = (total(fleet, "vllm:prefix_cache_hits") - hits) / (total(fleet, "vllm:prefix_cache_queries") - queries)
    assert before > 0.25 and after < 0.03


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param("baseline", Effects(), id="baseline is the identity"),
        pytest.param("bursty,over-peak", Effects(burstiness=8.0, rate_multiplier=1.4), id="scenarios compose"),
        pytest.param("slow-tp,slow-tp", Effects(efficiency_multiplier=SLOW_TP**2), id="multipliers multiply"),
        pytest.param("replica-down,replica-down", Effects(failed_replicas=2), id="failed replicas add up"),
    ],
)
def test_effects_compose(spec: str, expected: Effects) -> None:
    got = effects_at(parse_scenarios(spec), START)
    assert got.efficiency_multiplier == pytest.approx(expected.efficiency_multiplier)
    assert replace(got, efficiency_multiplier=0.0) == replace(expected, efficiency_multiplier=0.0)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param("spiky", "unknown scenario 'spiky'", id="an unknown name lists the known ones"),
        pytest.param("bursty@noon", "neither Unix seconds nor ISO 8601", id="an unreadable start time is named"),
    ],
)
def test_bad_scenario_specs_are_rejected_clearly(spec: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message) as err:
        parse_scenarios(spec)
    assert "long-prompts" in str(err.value) or "@" in spec


def test_start_times_parse_as_iso_or_unix() -> None:
    iso, unix = parse_scenarios(["bursty@2024-05-06T15:00Z", "slow-tp@1715007600"])
    assert iso.start_unix == unix.start_unix == START
    assert not iso.active_at(START - 1) and iso.active_at(START)


def test_every_scenario_documents_the_metric_it_moves() -> None:
    assert set(SCENARIOS) == {"baseline", "long-prompts", "prefix-miss", "bursty", "over-peak", "slow-tp",
                              "slow-cold-start", "tool-calls", "irregular", "replica-down"}  # fmt: skip
    assert all(s.moves for s in SCENARIOS.values())
