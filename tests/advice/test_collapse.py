"""Demand that collapses while the SLO counts is held as an incident: no scale-down until it returns."""

from __future__ import annotations

from dataclasses import replace

import pytest

from monitor.advice import Action, AdviceState, DemandOutlook, Recommendation, advise_tier
from monitor.advice.collapse import Collapse, collapse_now
from monitor.observe.model import Measurement, TierObservation
from tests.builders import baseline_observation, copilot_plan

# Friday 2027-01-15 09:00 in New York: inside the copilot's business hours; NIGHT is 23:00 the same day
NOW = 1_800_000_000.0 + 6 * 3600.0
NIGHT = NOW + 14 * 3600.0
HOUR = 3600.0


def _obs(window_rps: float, now_rps: float | None, ready: int) -> TierObservation:
    """Demand over the check window (an hour) and over the last five minutes (None: unknown), all served."""
    base = replace(baseline_observation(), batch_per_replica=Measurement.unknown("idle"))
    now = Measurement.unknown("no sample") if now_rps is None else Measurement.of(now_rps, window="5m")
    return replace(base, demand_rate=Measurement.of(window_rps, window="1h"),
                   request_rate=Measurement.of(window_rps, window="1h"), demand_rate_now=now,
                   request_rate_now=now, replicas_ready=Measurement.of(ready))  # fmt: skip


def _advise(
    obs: TierObservation, state: AdviceState, at: float, outlook: DemandOutlook | None = None
) -> Recommendation:
    plan = copilot_plan()
    return advise_tier(plan, plan.tiers[0], obs, outlook, state, at)


def _busy() -> int:
    """The replicas 40 req/s needs: what runs before the collapse."""
    return _advise(_obs(40.0, 40.0, 1), AdviceState(), NOW).recommended


def test_a_collapse_in_business_hours_holds_the_fleet_past_the_cooldown_until_demand_returns() -> None:
    busy = _busy()
    fell = _advise(_obs(38.0, 0.2, busy), AdviceState(), NOW)
    assert fell.state.collapse == Collapse(NOW, 38.0)
    assert (fell.action, fell.recommended) == (Action.HOLD, busy) and "collapsed" in fell.reason
    later = _advise(_obs(0.2, 0.2, busy), fell.state, NOW + 2 * HOUR)  # the hour is all incident by now
    assert (later.action, later.recommended) == (Action.HOLD, busy) and "incident" in later.reason
    assert later.state.low_since is None  # no cooldown runs while the incident lasts
    back = _advise(_obs(20.0, 39.0, busy), later.state, NOW + 2 * HOUR + 300.0)
    assert back.state.collapse is None and back.recommended == busy


def test_without_the_collapse_the_same_quiet_hour_scales_down_after_the_cooldown() -> None:
    """The control: a fall to a third is a decline, not a collapse; the cooldown runs and the fleet shrinks."""
    busy = _busy()
    fell = _advise(_obs(38.0, 13.0, busy), AdviceState(), NOW)
    assert fell.state.collapse is None and fell.state.low_since == NOW
    later = _advise(_obs(13.0, 13.0, busy), fell.state, NOW + 2 * HOUR)
    assert later.action is Action.SCALE_DOWN and later.recommended < busy


@pytest.mark.parametrize(
    ("obs", "at", "previous", "expected"),
    [
        pytest.param(_obs(38.0, 0.2, 9), NIGHT, None, None,
                     id="outside business hours a collapse is not held (the SLO does not count there)"),
        pytest.param(_obs(38.0, 0.2, 9), NIGHT, Collapse(NOW, 38.0), None,
                     id="a collapse held through the business day ends when the business day does"),
        pytest.param(_obs(0.05, 0.0, 1), NOW, None, None,
                     id="a tier too quiet for a tenth to mean anything (15 requests expected in 5 minutes)"),
        pytest.param(_obs(0.2, 0.2, 9), NOW, Collapse(NOW - HOUR, 38.0), Collapse(NOW - HOUR, 38.0),
                     id="a collapse lasts while demand stays under a tenth of the level it fell from"),
        pytest.param(_obs(38.0, 3.7, 9), NOW, None, Collapse(NOW, 38.0),
                     id="just under a tenth of the hour's demand within five minutes is a collapse"),
        pytest.param(_obs(38.0, 4.0, 9), NOW, Collapse(NOW - HOUR, 30.0), None,
                     id="back above a tenth of the level it fell from, it is over"),
    ],
)  # fmt: skip
def test_what_is_a_collapse(
    obs: TierObservation, at: float, previous: Collapse | None, expected: Collapse | None
) -> None:
    rec = _advise(obs, AdviceState(collapse=previous), at)
    assert rec.state.collapse == expected


def test_unknown_demand_keeps_a_collapse_in_force_and_holds() -> None:
    stale = Measurement.unknown("stale")
    obs = replace(_obs(38.0, None, 9), demand_rate=stale, request_rate=stale)
    rec = _advise(obs, AdviceState(last_recommended=9, collapse=Collapse(NOW, 38.0)), NOW)
    assert rec.stale and rec.recommended == 9 and rec.state.collapse == Collapse(NOW, 38.0)


def test_a_collapse_still_scales_up_for_the_forecast() -> None:
    """Only scale-down waits: a ramp the forecast shows within a cold start is still brought in."""
    busy = _busy()
    steps = tuple(NOW + 300.0 * k for k in range(24))
    outlook = DemandOutlook(steps, (90.0,) * 24, (100.0,) * 24)
    rec = _advise(_obs(0.2, 0.2, busy), AdviceState(collapse=Collapse(NOW - HOUR, 38.0)), NOW, outlook)
    assert rec.action is Action.SCALE_UP and rec.recommended > busy
    assert rec.state.collapse == Collapse(NOW - HOUR, 38.0)


def test_collapse_needs_a_short_window_other_than_the_check_window() -> None:
    obs = _obs(38.0, 0.2, 9)
    same = replace(obs, window="5m")
    assert collapse_now(None, obs, obs.demand_rate_now, True, NOW) == Collapse(NOW, 38.0)
    assert collapse_now(None, same, same.demand_rate_now, True, NOW) is None
