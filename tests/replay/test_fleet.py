"""The replayed fleet: cold starts, draining scale-down, the oracle against brute force, and the policies."""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np
import pytest

from monitor.plan import Plan
from monitor.replay.curve import TierCurve
from monitor.replay.demand import Demand, default_start, profile_demand
from monitor.replay.fleet import TierFleet, TierRecord
from monitor.replay.run import ReplayConfig, _tier_curves, run_replay
from monitor.replay.slo import minute_slo
from monitor.replay.summary import summarise
from tests.replay.plans import one_tier_plan


@cache
def _curve(plan_json: str) -> TierCurve:
    from fleetsim.scenarios import Effects

    return _tier_curves([(plan_json, "chat", Effects(), 0)], 1)[0]


def _fleet(plan: Plan, minutes: int, ready: int, cold_start_s: float = 300.0) -> TierFleet:
    curve = _curve(plan.model_dump_json(by_alias=True))
    return TierFleet(plan.tiers[0], curve, cold_start_s, TierRecord.empty(minutes), ready=ready)


def _demand(plan: Plan, per_minute: list[int]) -> Demand:
    return Demand("test", default_start(plan), np.array([per_minute], dtype=np.int64), ("chat",))


def test_a_replica_in_cold_start_serves_nothing() -> None:
    plan = one_tier_plan(low=0)
    fleet = _fleet(plan, 10, ready=0, cold_start_s=300.0)
    fleet.scale(0, 1)
    for m in range(10):
        fleet.step(m, 60.0)
    assert fleet.record.served[:5].tolist() == [0.0] * 5
    assert fleet.record.billed[:5].tolist() == [1.0] * 5  # paid for while it starts
    assert fleet.record.served[5] > 0 and fleet.record.ready[5] == 1


def test_scale_down_drains_and_loses_no_request() -> None:
    plan = one_tier_plan()
    fleet = _fleet(plan, 40, ready=4)
    for m in range(40):
        if m == 10:
            fleet.scale(m, 1)  # far below demand: requests queue, none is dropped
        if m == 25:
            fleet.scale(m, 4)
        fleet.step(m, 600.0 if m < 30 else 0.0)
    r = fleet.record
    arrived, served = np.cumsum(r.arrivals), np.cumsum(r.served)
    assert np.allclose(arrived, served + r.queue)
    assert r.queue.max() > 0 and r.queue[-1] == 0 and served[-1] == pytest.approx(arrived[-1])


def test_static_with_enough_planned_replicas_holds_the_slo() -> None:
    plan = one_tier_plan(planned=6, cold_start="5m")
    demand = profile_demand(plan, (), 1.0, np.random.default_rng(1))
    (static,) = summarise(run_replay(plan, demand, ReplayConfig(policies=("static",))))
    assert static.slo_compliant_minutes_share == 1.0 and static.requests_over_slo_share < 0.05


def _brute_force(plan: Plan, per_minute: list[int], cold_s: float) -> float:
    """The cheapest action sequence (replicas per minute, each of min..max) meeting the SLO every minute."""
    best = np.inf
    bounds = plan.tiers[0].replicas
    for actions in itertools.product(range(bounds.min, bounds.max + 1), repeat=len(per_minute)):
        fleet = _fleet(plan, len(per_minute), ready=actions[0], cold_start_s=cold_s)
        for m, want in enumerate(actions):
            fleet.scale(m, want)
            fleet.step(m, float(per_minute[m]))
        if minute_slo(plan, fleet.tier, fleet.curve, fleet.record, len(per_minute)).ok.all():
            best = min(best, float(fleet.record.billed.sum()))
    return best


@pytest.mark.parametrize(
    "per_minute",
    [
        pytest.param([120, 480, 840, 180, 180, 700], id="a dip shorter than the cold start is bridged"),
        pytest.param([700, 60, 60, 60, 60, 700], id="a long dip is cheaper to stop and restart"),
        pytest.param([60, 60, 60, 60, 800, 800], id="a late ramp is started one cold start ahead"),
    ],
)
def test_the_oracle_is_the_brute_force_optimum_on_a_small_case(per_minute: list[int]) -> None:
    plan = one_tier_plan(planned=2, low=1, high=3, cold_start="2m", window="always")
    replay = run_replay(plan, _demand(plan, per_minute), ReplayConfig(policies=("oracle",)))
    (oracle,) = summarise(replay)
    assert oracle.slo_compliant_minutes_share == 1.0
    assert float(replay.run("oracle").fleets["chat"].record.billed.sum()) == _brute_force(plan, per_minute, 120.0)


@pytest.fixture(scope="module")
def day_replay() -> tuple[Plan, list]:  # type: ignore[type-arg]
    plan = one_tier_plan(cold_start="10m", window="always")
    demand = profile_demand(plan, (), 1.0, np.random.default_rng(2))
    return plan, summarise(run_replay(plan, demand, ReplayConfig()))


def test_the_oracle_uses_no_more_gpu_hours_than_any_policy_meeting_the_slo_as_well(day_replay: tuple) -> None:  # type: ignore[type-arg]
    _, summaries = day_replay
    oracle = next(s for s in summaries if s.name == "oracle")
    assert oracle.slo_compliant_minutes_share == 1.0
    others = [s for s in summaries if s.name != "oracle"]
    assert any(s.slo_compliant_minutes_share == 1.0 for s in others)  # the comparison is not empty
    for s in others:
        if s.slo_compliant_minutes_share >= oracle.slo_compliant_minutes_share:
            assert oracle.gpu_hours <= s.gpu_hours, s.name


@pytest.mark.parametrize("policy", ["static", "reactive", "predictive", "planwatch"])
def test_no_policy_sees_the_future(policy: str) -> None:
    plan = one_tier_plan(cold_start="5m")
    demand = profile_demand(plan, (), 0.5, np.random.default_rng(4))
    cut = 9 * 60  # 09:00, in the morning ramp
    changed = demand.arrivals.copy()
    changed[:, cut:] = changed[:, cut:] * 3 + 50
    other = Demand(demand.source, demand.start, changed, demand.tiers)
    config = ReplayConfig(policies=(policy,))
    a = run_replay(plan, demand, config).run(policy).fleets["chat"].record
    b = run_replay(plan, other, config).run(policy).fleets["chat"].record
    assert np.array_equal(a.billed[: cut + 1], b.billed[: cut + 1])
    assert np.array_equal(a.started[: cut + 1], b.started[: cut + 1])
    assert not np.array_equal(a.served, b.served)  # the change is real
