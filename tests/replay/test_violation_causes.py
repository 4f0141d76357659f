"""Each SLO-violating minute of a replay is put down to one cause: too few replicas asked for, asked for but still
in cold start, or enough ready (a queue carried over), judged against the oracle's need that minute."""

from __future__ import annotations

import numpy as np
import pytest

from monitor.replay.demand import profile_demand
from monitor.replay.run import ReplayConfig, run_replay
from monitor.replay.summary import CAUSES, _causes, summarise, to_json
from tests.replay.plans import one_tier_plan


@pytest.mark.parametrize(
    ("ready", "billed", "need", "violating", "expected"),
    [
        ([2], [2], [3], [True], (1, 0, 0)),
        ([2], [3], [3], [True], (0, 1, 0)),
        ([3], [3], [3], [True], (0, 0, 1)),
        ([1], [2], [3], [True], (1, 0, 0)),
        ([2, 2, 3], [2, 3, 3], [3, 3, 3], [False, False, False], (0, 0, 0)),
    ],
    ids=[
        "running and starting below the need: too few asked",
        "the missing replica is starting: still starting",
        "as many ready as the oracle needed: enough ready (a queue carried in)",
        "asked for one more but still short even once it starts: too few asked",
        "minutes that met the SLO have no cause",
    ],
)  # fmt: skip
def test_a_violating_minute_has_exactly_one_cause(
    ready: list[int], billed: list[int], need: list[int], violating: list[bool], expected: tuple[int, int, int]
) -> None:
    arrays = [np.asarray(v, dtype=float) for v in (ready, billed, need)]
    got = _causes(*arrays, np.asarray(violating))
    assert tuple(got[c] for c in CAUSES) == expected


def test_the_causes_add_up_to_each_tiers_violating_minutes_and_name_the_cold_start_of_a_slow_ramp() -> None:
    plan = one_tier_plan(cold_start="20m", planned=1)
    demand = profile_demand(plan, (), 2.0, np.random.default_rng(3))
    replay = run_replay(plan, demand, ReplayConfig(policies=("static", "reactive", "oracle")))
    by = {s.name: s for s in summarise(replay)}
    for s in by.values():
        (tier,) = s.tiers
        assert sum(tier.violating_minutes_by_cause.values()) == s.slo_violating_minutes
    static = by["static"].tiers[0].violating_minutes_by_cause
    # one replica, never more asked: short, or (as demand falls back) the backlog it left carried in; never starting
    assert static["too_few_asked"] > 0 and static["enough_ready"] > 0 and static["still_starting"] == 0
    run = next(r for r in replay.runs if r.name == "static")
    record, violating = run.fleets["chat"].record, by["static"].violating
    enough = violating & (record.ready >= replay.required["chat"])
    assert enough.sum() == static["enough_ready"] and (record.queue[np.flatnonzero(enough) - 1] > 0).all()
    assert by["reactive"].tiers[0].violating_minutes_by_cause["still_starting"] > 0  # it asks, 20 minutes late
    assert by["oracle"].slo_violating_minutes == 0
    tiers = to_json(replay, list(by.values()))["policies"][0]["tiers"]
    assert set(tiers[0]["violating_minutes_by_cause"]) == set(CAUSES)
