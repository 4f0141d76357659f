"""The TTFT's wait for a slot is each replica's own queue: behind a router every vLLM engine queues the
requests routed to it (its scheduler's waiting queue), so r replicas of B slots are r M/M/c queues of B
slots at lambda / r, not one queue of r x B slots (the replay's physics queues per replica too)."""

from __future__ import annotations

import pytest

from monitor.sizing.capacity import ReplicaModel, max_batch_at_slo
from monitor.sizing.latency import ttft_p95, wait_p95_seconds
from monitor.sizing.tier import replica_model
from tests.builders import copilot_plan

LOAD = 0.9  # per-replica utilization of the B slots: past the knee, so one replica's queue waits


@pytest.fixture(scope="module")
def copilot() -> tuple[ReplicaModel, int]:
    plan = copilot_plan()
    tier = plan.tiers[0]
    model = replica_model(plan, tier, tier.efficiency.bandwidth.expected, tier.efficiency.compute.expected)
    return model, max_batch_at_slo(model, plan.slo_for(tier)[1]).batch


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
        pytest.param(3, id="three replicas: each waits in its own queue of B slots, longer than a pooled 3B"),
        pytest.param(8, id="eight replicas: each waits in its own queue of B slots, longer than a pooled 8B"),
    ],
)
def test_the_wait_is_one_replicas_queue_of_b_slots_at_its_share_of_the_demand(
    copilot: tuple[ReplicaModel, int], replicas: int
) -> None:
    model, batch = copilot
    service = model.slot_seconds(batch)
    demand = replicas * LOAD * model.requests_per_second(batch)
    wait = ttft_p95(model, replicas, batch, demand).wait_p95_seconds
    assert wait == pytest.approx(wait_p95_seconds(batch, demand / replicas, service))
    pooled = wait_p95_seconds(replicas * batch, demand, service)
    assert wait > pooled if replicas > 1 else wait == pytest.approx(pooled)
