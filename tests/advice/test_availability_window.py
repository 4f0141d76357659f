"""The advice honours the plan's availability window (pure): with `slo.availability_window: business_hours`
a moment outside business hours is sized for throughput, not the SLO, and the next morning is still
scheduled a cold start ahead; `always` sizes every moment for the SLO."""

from __future__ import annotations

from dataclasses import replace

import pytest

from monitor.advice import Action, AdviceSettings, AdviceState, DemandOutlook, advise_tier
from monitor.advice.capacity import capacity_table
from monitor.advice.window import OUTSIDE_HOURS, outside_quantile, throughput_table
from monitor.evaluation import EvaluationInputs, evaluate
from monitor.export import recommendation_shape
from monitor.observe.model import Measurement, TierObservation
from monitor.plan import Plan
from monitor.shapes import dump
from tests.builders import baseline_observation, copilot_plan

H = 3600.0
# The copilot's business hours are 08:00-20:00 New York time, Monday to Friday (EST in January: UTC-5).
FRI_0300 = 1_800_000_000.0  # Friday 2027-01-15 03:00 EST
FRI_0600 = FRI_0300 + 3 * H
FRI_0900 = FRI_0300 + 6 * H
SAT_1200 = FRI_0300 + 33 * H


def _plan(window: str = "business_hours", low: int = 1) -> Plan:
    plan = copilot_plan()
    tier = plan.tiers[0]
    tiers = [tier.model_copy(update={"replicas": tier.replicas.model_copy(update={"min": low})})]
    slo = plan.slo.model_copy(update={"availability_window": window})
    return plan.model_copy(update={"slo": slo, "tiers": tiers})


def _obs(demand: float, ready: int, **more: Measurement) -> TierObservation:
    base = replace(baseline_observation(), batch_per_replica=Measurement.unknown("idle"), **more)
    return replace(base, demand_rate=Measurement.of(demand), request_rate=Measurement.of(demand),
                   replicas_ready=Measurement.of(ready), waiting=Measurement.of(0.0))  # fmt: skip


def _flat(rps: float, start: float, hours: float) -> DemandOutlook:
    ts = tuple(start + 300.0 * i for i in range(int(hours * 12)))
    return DemandOutlook(ts, tuple(rps for _ in ts), tuple(rps for _ in ts), model="flat")


def _advise(plan: Plan, obs: TierObservation, now: float, outlook: DemandOutlook | None = None,
            state: AdviceState | None = None):  # type: ignore[no-untyped-def]  # fmt: skip
    return advise_tier(plan, plan.tiers[0], obs, outlook, state or AdviceState(), now)


def test_the_copilot_needs_fewer_replicas_for_throughput_than_for_the_slo_at_30_req_s() -> None:
    """The premise of the rows below: 30 req/s takes 3 replicas within the SLO and 2 for throughput."""
    plan = _plan()
    slo = capacity_table(plan, plan.tiers[0], 1.0)
    assert (slo.replicas_for_minutes(30.0), throughput_table(slo, 60.0).replicas_for_minutes(30.0)) == (3, 2)
    assert throughput_table(slo, 60.0).batch > slo.batch  # the KV cache admits more than the TPOT SLO's batch


@pytest.mark.parametrize(
    ("cold_seconds", "z"),
    [
        pytest.param(60.0, 3.09, id="a one-minute cold start keeps the minute's quantile"),
        pytest.param(540.0, 1.03, id="a 9-minute cold start spreads it over nine minutes: a third"),
        pytest.param(20.0, 3.09, id="a cold start under a minute still sizes a whole minute"),
    ],
)
def test_outside_the_window_the_minute_quantile_is_spread_over_a_cold_start(cold_seconds: float, z: float) -> None:
    assert outside_quantile(3.09, cold_seconds) == pytest.approx(z)


def test_a_night_minute_between_the_two_quantiles_takes_one_replica_fewer() -> None:
    """Demand just under what two replicas complete: a minute's Poisson quantile would ask for a third, a
    queue that a 9-minute cold start can catch does not."""
    plan = _plan()
    slo = capacity_table(plan, plan.tiers[0], 1.0)
    two = throughput_table(slo, 540.0).capacity_of(2)
    demand = two - 1.5 * (two / 60.0) ** 0.5
    assert throughput_table(slo, 60.0).replicas_for_minutes(demand) == 3
    assert throughput_table(slo, 540.0).replicas_for_minutes(demand) == 2
    rec = _advise(plan, _obs(demand, ready=2), FRI_0300)  # the observation's cold start: 9 minutes
    assert (rec.needed_now, rec.sized_for) == (2, "throughput")
    assert "a queue, not a minute, counts" in rec.explanation[2]


@pytest.mark.parametrize(
    ("window", "now", "needed", "sized_for"),
    [
        pytest.param(
            "business_hours", FRI_0300, 2, "throughput", id="3 a.m. on a business day is sized for throughput"
        ),
        pytest.param("business_hours", SAT_1200, 2, "throughput", id="Saturday noon is outside the business weekdays"),
        pytest.param("business_hours", FRI_0900, 3, "slo", id="9 a.m. on a business day is sized for the SLO"),
        pytest.param("always", FRI_0300, 3, "slo", id="with availability_window always 3 a.m. is sized for the SLO"),
        pytest.param("always", SAT_1200, 3, "slo", id="with availability_window always Saturday is sized for the SLO"),
    ],
)
def test_the_plans_availability_window_decides_which_bound_sizes_now(
    window: str, now: float, needed: int, sized_for: str
) -> None:
    rec = _advise(_plan(window), _obs(30.0, ready=needed), now)
    assert (rec.needed_now, rec.sized_for, rec.recommended) == (needed, sized_for, needed)
    said = OUTSIDE_HOURS in rec.reason and OUTSIDE_HOURS in rec.explanation[1]
    assert said is (sized_for == "throughput")
    assert dump(recommendation_shape(rec))["sized_for"] == sized_for


def test_the_next_business_morning_is_scheduled_a_cold_start_and_a_margin_ahead_of_its_slo_need() -> None:
    """At 06:00 three replicas serve 45 req/s for throughput; from 08:00 the SLO needs four, so the fourth
    is asked for by 08:00 - one forecast step - the 9-minute observed cold start - the 5-minute margin."""
    plan = _plan()
    rec = _advise(plan, _obs(45.0, ready=3), FRI_0600, _flat(45.0, FRI_0600, 4))
    assert (rec.recommended, rec.action, rec.sized_for) == (3, Action.HOLD, "throughput")
    opens = FRI_0300 + 5 * H
    assert [(s.replicas, s.needed_at, s.by) for s in rec.schedule] == [(4, opens - 300, opens - 300 - 540 - 300)]
    always = _advise(_plan("always"), _obs(45.0, ready=3), FRI_0600, _flat(45.0, FRI_0600, 4))
    assert (always.recommended, always.action, always.schedule) == (4, Action.SCALE_UP, ())


@pytest.mark.parametrize(
    ("minutes_to_opening", "recommended", "action"),
    [
        pytest.param(10, 4, Action.HOLD, id="ten minutes before opening the morning's fourth replica is kept"),
        pytest.param(60, 3, Action.SCALE_DOWN, id="an hour before opening it goes: the schedule asks again in time"),
    ],
)
def test_a_replica_brought_up_for_the_morning_is_not_scaled_down_before_the_morning(
    minutes_to_opening: int, recommended: int, action: Action
) -> None:
    """Four run at 45 req/s, which takes three for throughput; from 08:00 the SLO takes four. A replacement
    started now would be ready in the 9-minute cold start plus the 5-minute margin."""
    now = FRI_0300 + 5 * H - minutes_to_opening * 60
    long_low = AdviceState(low_since=now - H, last_recommended=4)
    rec = _advise(_plan(), _obs(45.0, ready=4), now, _flat(45.0, now, 4), long_low)
    assert (rec.recommended, rec.action) == (recommended, action)


def test_the_evaluation_gives_the_advice_the_same_morning_schedule() -> None:
    """serve, check, report and the replay reach the advice through `evaluate`: the same schedule."""
    plan = _plan()
    outlook = _flat(45.0, FRI_0600, 4)
    ev = evaluate(EvaluationInputs(plan, {"copilot": _obs(45.0, ready=3)}, FRI_0600, outlooks={"copilot": outlook}))
    rec = ev.tiers[0].recommendation
    assert rec is not None and rec.sized_for == "throughput" and not ev.in_business_hours
    assert rec.schedule == _advise(plan, _obs(45.0, ready=3), FRI_0600, outlook).schedule


@pytest.mark.parametrize(
    ("low", "demand", "ready", "recommended", "warning"),
    [
        pytest.param(2, 0.5, 2, 2, None, id="outside business hours the plan minimum still holds"),
        pytest.param(1, 200.0, 5, 5, "demand needs", id="outside business hours replicas.max caps with a warning"),
    ],
)
def test_throughput_sizing_stays_within_the_plans_min_and_max(
    low: int, demand: float, ready: int, recommended: int, warning: str | None
) -> None:
    rec = _advise(_plan(low=low), _obs(demand, ready=ready), FRI_0300)
    assert (rec.recommended, rec.sized_for) == (recommended, "throughput")
    assert any(warning in w for w in rec.warnings) if warning else not rec.warnings


_BURNING = {"ttft:5m": Measurement.of(0.9), "ttft:1h": Measurement.of(0.9)}


@pytest.mark.parametrize(
    ("now", "queue_grows", "reactive"),
    [
        pytest.param(FRI_0900, False, True, id="in business hours a fast-burning TTFT SLO scales up reactively"),
        pytest.param(FRI_0300, False, False, id="outside them a burning SLO does not: it is not counted there"),
        pytest.param(FRI_0300, True, True, id="outside them a growing queue still scales up reactively"),
    ],
)
def test_the_reactive_rule_follows_the_availability_window(now: float, queue_grows: bool, reactive: bool) -> None:
    obs = replace(_obs(30.0, ready=3), bad_fraction=_BURNING)
    if queue_grows:
        obs = replace(obs, request_rate=Measurement.of(25.0), waiting=Measurement.of(40.0))
    rec = _advise(_plan(), obs, now)
    assert rec.reason.startswith("reactive") is reactive
    assert (rec.action is Action.SCALE_UP) is reactive


@pytest.mark.parametrize(
    ("now", "configured_s", "waited_min", "action"),
    [
        pytest.param(FRI_0300, None, 8, Action.HOLD, id="outside business hours scale-down waits a cold start"),
        pytest.param(FRI_0300, None, 10, Action.SCALE_DOWN, id="and goes down after it, not after the 14 min lead"),
        pytest.param(FRI_0900, None, 11, Action.HOLD, id="in business hours it waits a replacement's 14 min lead"),
        pytest.param(FRI_0900, None, 15, Action.SCALE_DOWN, id="and goes down after it"),
        pytest.param(FRI_0900, 1800.0, 20, Action.HOLD, id="a set 30 min cooldown holds in business hours"),
        pytest.param(FRI_0900, 1800.0, 31, Action.SCALE_DOWN, id="and the cut comes after it"),
        pytest.param(FRI_0300, 1800.0, 10, Action.SCALE_DOWN, id="outside them a set one is at most a cold start"),
    ],
)
def test_the_scale_down_cooldown_is_a_replacement_s_lead_in_business_hours_and_a_cold_start_outside(
    now: float, configured_s: float | None, waited_min: int, action: Action
) -> None:
    plan, settings = _plan(), AdviceSettings(scale_down_cooldown_seconds=configured_s)  # observed cold start 9 min
    first = advise_tier(plan, plan.tiers[0], _obs(5.0, ready=3), None, AdviceState(), now - waited_min * 60,
                        None, settings)  # fmt: skip
    later = advise_tier(plan, plan.tiers[0], _obs(5.0, ready=3), None, first.state, now, None, settings)
    assert later.action is action


def test_held_advice_on_unknown_data_names_no_bound() -> None:
    obs = replace(_obs(30.0, ready=3), demand_rate=Measurement.unknown("stale"), request_rate=Measurement.unknown("x"))
    rec = _advise(_plan(), obs, FRI_0300)
    assert rec.stale and rec.sized_for is None
