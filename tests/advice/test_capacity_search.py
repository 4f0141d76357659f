"""One replicas-for-demand search, and one feasibility test: the TTFT the bound uses, step in flight included."""

from __future__ import annotations

import numpy as np
import pytest

from monitor.advice.capacity import capacity_table
from monitor.plan import load_plan
from monitor.plan.model import Plan
from monitor.sizing.latency import ttft_p95
from monitor.sizing.tier import replicas_for_ttft, size_tier, ttft_floor_seconds
from tests.builders import EXAMPLES, copilot_plan


def _with_ttft_slo(plan: Plan, seconds: float) -> Plan:
    tier = plan.tiers[0]
    slo = tier.slo.model_copy(update={"ttft_p95_seconds": seconds}) if tier.slo else None
    if slo is not None:
        return plan.model_copy(update={"tiers": [tier.model_copy(update={"slo": slo})]})
    return plan.model_copy(update={"slo": plan.slo.model_copy(update={"ttft_p95_seconds": seconds})})


def _brute_force(plan: Plan, demand: float) -> int:
    """The fewest replicas that carry the demand at the SLO batch and whose TTFT p95 meets the SLO, counted up."""
    table = capacity_table(plan, plan.tiers[0], 1.0)
    ttft_slo, _ = plan.slo_for(plan.tiers[0])
    n = 1
    while n * table.requests_per_second_per_replica < demand or (
        ttft_p95(table.model, n, table.batch, demand).seconds > ttft_slo
    ):
        n += 1
    return n


def test_an_slo_between_the_prefill_and_the_ttft_floor_is_infeasible_and_the_search_ends() -> None:
    """The bug a 14-day replay hit: feasibility read the prefill alone while the bound added the step in flight,
    so an SLO between the two was 'feasible' and the search doubled until Erlang C overflowed."""
    plan = copilot_plan()
    table = capacity_table(plan, plan.tiers[0], 1.0)
    prefill = ttft_p95(table.model, 1, table.batch, 0.0).prefill_p95_seconds
    floor = ttft_floor_seconds(table.model, table.batch)
    assert prefill < floor
    squeezed = _with_ttft_slo(plan, (prefill + floor) / 2)
    tight = capacity_table(squeezed, squeezed.tiers[0], 1.0)
    demand = 10 * tight.requests_per_second_per_replica
    assert not tight.ttft_feasible
    assert tight.replicas_for(demand) == 10  # throughput only, and the advice warns
    assert not size_tier(squeezed, squeezed.tiers[0]).expected.ttft_feasible


@pytest.mark.parametrize(
    "share_of_one_replica",
    [
        pytest.param(0.3, id="a demand one replica carries needs one"),
        pytest.param(7.5, id="a demand between counts needs the next count"),
        pytest.param(60.0, id="a large fleet is found by the doubling and bisection, as by counting up"),
    ],
)
def test_the_search_finds_the_fewest_replicas_counting_up_would(share_of_one_replica: float) -> None:
    plan = copilot_plan()
    table = capacity_table(plan, plan.tiers[0], 1.0)
    demand = share_of_one_replica * table.requests_per_second_per_replica
    assert table.ttft_feasible
    assert table.replicas_for(demand) == _brute_force(plan, demand)


@pytest.mark.parametrize(
    "slo_over_floor",
    [
        pytest.param(1.02, id="just above the floor the queueing term binds: more replicas than throughput needs"),
        pytest.param(3.0, id="a roomy SLO needs the throughput count"),
    ],
)
def test_sizing_and_advice_use_the_same_search(slo_over_floor: float) -> None:
    plan = copilot_plan()
    base = capacity_table(plan, plan.tiers[0], 1.0)
    plan = _with_ttft_slo(plan, slo_over_floor * ttft_floor_seconds(base.model, base.batch))
    tier = plan.tiers[0]
    sized = size_tier(plan, tier).expected
    table = capacity_table(plan, tier, 1.0)
    peak = table.model.workload.peak_rps
    assert sized.ttft_feasible and table.ttft_feasible
    assert sized.replicas == table.replicas_for(peak) == replicas_for_ttft(table.model, table.batch, peak,
                                                                            table.ttft_slo)[0]  # fmt: skip
    assert table.capacity_of(sized.replicas - 1) < peak


@pytest.mark.parametrize(
    "slo_over_floor",
    [
        pytest.param(1.02, id="where the queueing term binds the remembered needs are the searched ones"),
        pytest.param(3.0, id="where throughput binds the remembered needs are the searched ones"),
    ],
)
def test_a_need_read_between_remembered_demands_is_what_the_search_finds(slo_over_floor: float) -> None:
    """The table answers a demand between two it searched that need the same count without searching; asked
    in any order, over demands that cross many counts, every answer is the search's."""
    plan = copilot_plan()
    base = capacity_table(plan, plan.tiers[0], 1.0)
    plan = _with_ttft_slo(plan, slo_over_floor * ttft_floor_seconds(base.model, base.batch))
    table = capacity_table(plan, plan.tiers[0], 1.0)
    per_replica = table.requests_per_second_per_replica
    demands = np.random.default_rng(7).permutation(np.linspace(0.01, 12.0, 1500) * per_replica)
    answers = [table.replicas_for(float(d)) for d in demands]
    searched = [replicas_for_ttft(table.model, table.batch, float(d), table.ttft_slo)[0] for d in demands]
    assert len(set(searched)) >= 10
    assert answers == searched


def test_a_tier_no_batch_holds_to_the_tpot_slo_is_counted_at_batch_1_by_sizing_and_advice_alike() -> None:
    """capstone.yaml's long-context tier (24K prompts on TP2): a decode riding through one prompt's three
    0.8 s chunk steps misses 50 ms TPOT even alone, so no batch meets it. Both count the demand at batch 1,
    flagged (the advice with 0 req/s per replica asked for one replica at any demand, as sizing did)."""
    plan = load_plan(EXAMPLES / "capstone.yaml")
    tier = plan.tier("long-context")
    table = capacity_table(plan, tier, 1.0)
    sized = size_tier(plan, tier).expected
    assert sized.max_batch == 0 and sized.tpot_p95_seconds > plan.slo_for(tier)[1]
    assert not table.tpot_feasible and not table.ttft_feasible and table.batch == 1
    per_replica = table.model.requests_per_second(1)
    assert table.replicas_for(10 * per_replica) == 10
    assert sized.replicas == table.replicas_for(table.model.workload.peak_rps) > tier.replicas.planned
