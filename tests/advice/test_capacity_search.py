"""The capacity search ends even where no replica count serves the demand within the TTFT SLO."""

from __future__ import annotations

from monitor.advice.capacity import MAX_REPLICAS, CapacityTable
from monitor.sizing.tier import replica_model
from tests.builders import copilot_plan


class _TtftCapped(CapacityTable):
    """A table whose TTFT bound never grows past one replica's worth: what a tier whose step in flight alone
    takes the TTFT SLO looks like to the search."""

    def capacity_of(self, replicas: int) -> float:
        return min(replicas, 1) * self.requests_per_second_per_replica


def test_a_demand_no_count_can_serve_ends_the_search_past_any_fleet() -> None:
    plan = copilot_plan()
    tier = plan.tiers[0]
    table = _TtftCapped(replica_model(plan, tier, 0.7, 0.6), batch=64, ttft_slo=0.5, feasible=True)
    assert MAX_REPLICAS <= table.replicas_for(10 * table.requests_per_second_per_replica) < 2 * MAX_REPLICAS
