"""The advice sizes "now" on the last five minutes' rates where they are known, the check window's otherwise."""

from __future__ import annotations

from dataclasses import replace

import pytest

from monitor.advice import AdviceState, advise_tier
from monitor.observe.model import Measurement, TierObservation
from tests.builders import baseline_observation, copilot_plan

# Friday 2027-01-15 09:00 in New York: inside the copilot's business hours, the SLO sizes the moment
NOW = 1_800_000_000.0 + 6 * 3600.0
UNKNOWN = Measurement.unknown("not collected")


def _obs(window: tuple[float, float], now: tuple[float, float] | None, waiting: float = 0.0) -> TierObservation:
    """(demand, served) over the check window and over the last five minutes (None: not collected)."""
    base = replace(baseline_observation(), batch_per_replica=Measurement.unknown("idle"))
    five = (UNKNOWN, UNKNOWN) if now is None else (Measurement.of(now[0], window="5m"), Measurement.of(now[1]))
    return replace(base, demand_rate=Measurement.of(window[0]), request_rate=Measurement.of(window[1]),
                   demand_rate_now=five[0], request_rate_now=five[1], replicas_ready=Measurement.of(2),
                   waiting=Measurement.of(waiting))  # fmt: skip


def _needed(obs: TierObservation) -> int | None:
    plan = copilot_plan()
    return advise_tier(plan, plan.tiers[0], obs, None, AdviceState(), NOW).needed_now


@pytest.mark.parametrize(
    ("obs", "same_as"),
    [
        pytest.param(_obs((10.0, 10.0), (40.0, 40.0)), _obs((40.0, 40.0), None),
                     id="a ramp the last five minutes show before the hour's mean: sized on the five minutes"),
        pytest.param(_obs((40.0, 40.0), (10.0, 10.0)), _obs((10.0, 10.0), None),
                     id="demand that fell in the last five minutes: sized on them too (the cooldown holds it)"),
        pytest.param(_obs((40.0, 40.0), None), _obs((40.0, 40.0), (40.0, 40.0)),
                     id="no five-minute rates (an observer that does not read them): the check window's"),
    ],
)  # fmt: skip
def test_needed_now_follows_the_five_minute_demand_where_it_is_known(
    obs: TierObservation, same_as: TierObservation
) -> None:
    assert _needed(obs) == _needed(same_as)
    assert _needed(_obs((10.0, 10.0), None)) != _needed(_obs((40.0, 40.0), None))  # the demands size differently


@pytest.mark.parametrize(
    ("obs", "reactive"),
    [
        pytest.param(_obs((20.0, 20.0), (24.0, 24.0), waiting=0.01), False,
                     id="five minutes above the hour's served rate, all of it served: a ramp, not a queue"),
        pytest.param(_obs((20.0, 20.0), (30.0, 24.0), waiting=25.0), True,
                     id="a queue that grew over the last five minutes: reactive"),
        pytest.param(_obs((30.0, 24.0), None, waiting=25.0), True,
                     id="without five-minute rates, a queue that grew over the window: reactive"),
    ],
)  # fmt: skip
def test_the_queue_test_compares_demand_and_served_over_one_window(obs: TierObservation, reactive: bool) -> None:
    plan = copilot_plan()
    rec = advise_tier(plan, plan.tiers[0], obs, None, AdviceState(), NOW)
    assert rec.reason.startswith("reactive") is reactive
