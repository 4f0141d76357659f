"""The TTFT's wait for a slot is each replica's own queue: behind a router every vLLM engine queues the
requests routed to it (its scheduler's waiting queue), so r replicas of L slots are r M/M/c queues of L
slots at lambda / r, not one queue of r x L slots (the replay's physics queues per replica too). L is what
the engine admits (max_num_seqs, or the sequences whose KV fits), not the SLO's batch."""

from __future__ import annotations

import pytest

from monitor.sizing.capacity import ReplicaModel, max_batch_at_slo
from monitor.sizing.latency import ttft_p95, wait_p95_seconds
from monitor.sizing.tier import replica_model
from tests.builders import copilot_plan

LOAD = 0.95  # per-replica utilization of the L slots: past the knee of 512 slots, so one replica's queue waits


@pytest.fixture(scope="module")
def copilot() -> tuple[ReplicaModel, int]:
    plan = copilot_plan()
    tier = plan.tiers[0]
    model = replica_model(plan, tier, tier.efficiency.bandwidth.expected, tier.efficiency.compute.expected)
    return model, model.admission_limit


@pytest.mark.parametrize(
    "replicas",
    [
        pytest.param(2, id="two replicas at twice the demand wait as long as one"),
        pytest.param(4, id="four replicas at four times the demand wait as long as one"),
        pytest.param(16, id="sixteen replicas at sixteen times the demand wait as long as one"),
    ],
)
def test_replicas_at_proportional_demand_wait_as_long_as_one(copilot: tuple[ReplicaModel, int], replicas: int) -> None:
    model, batch = copilot
    per_replica = LOAD * model.requests_per_second(batch)
    one = ttft_p95(model, 1, batch, per_replica)
    many = ttft_p95(model, replicas, batch, replicas * per_replica)
    assert one.wait_p95_seconds > 0
    assert many.wait_p95_seconds == pytest.approx(one.wait_p95_seconds)
    assert many.seconds == pytest.approx(one.seconds)


@pytest.mark.parametrize(
    "replicas",
    [
        pytest.param(1, id="one replica: its own queue is the tier's, as before"),
        pytest.param(3, id="three replicas: each waits in its own queue of L slots, longer than a pooled 3L"),
        pytest.param(8, id="eight replicas: each waits in its own queue of L slots, longer than a pooled 8L"),
    ],
)
def test_the_wait_is_one_replicas_queue_of_l_slots_at_its_share_of_the_demand(
    copilot: tuple[ReplicaModel, int], replicas: int
) -> None:
    model, batch = copilot
    service = model.slot_seconds(batch)
    demand = replicas * LOAD * model.requests_per_second(batch)
    wait = ttft_p95(model, replicas, batch, demand).wait_p95_seconds
    assert wait == pytest.approx(wait_p95_seconds(batch, demand / replicas, service))
    pooled = wait_p95_seconds(replicas * batch, demand, service)
    assert wait > pooled if replicas > 1 else wait == pytest.approx(pooled)


def test_the_slots_are_the_engines_not_the_slo_batch_so_at_the_slo_batchs_throughput_nobody_waits_for_one() -> None:
    """vLLM admits every request up to max_num_seqs (or what KV holds), whatever that does to TPOT: the SLO's
    batch (164 for copilot) is a rate the advice keeps to, not slots the engine withholds. A queue of 164
    slots at 95% of their throughput had requests wait 2.7 s p95 for a slot no engine keeps them from."""
    plan = copilot_plan()
    tier = plan.tiers[0]
    model = replica_model(plan, tier, tier.efficiency.bandwidth.expected, tier.efficiency.compute.expected)
    slo_batch = max_batch_at_slo(model, plan.slo_for(tier)[1]).batch
    assert slo_batch < model.admission_limit == tier.max_num_seqs
    estimate = ttft_p95(model, 1, slo_batch, LOAD * model.requests_per_second(slo_batch))
    assert estimate.slots == model.admission_limit
    assert estimate.wait_p95_seconds == 0.0
    assert wait_p95_seconds(slo_batch, LOAD * model.requests_per_second(slo_batch), model.slot_seconds(slo_batch)) > 0
