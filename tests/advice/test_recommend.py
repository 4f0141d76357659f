"""Scale advice on hand-made inputs (pure): the ramp schedule, cold start, hysteresis, unknown data, caps."""

from __future__ import annotations

from dataclasses import replace

import pytest

from monitor.advice import Action, AdviceSettings, AdviceState, DemandOutlook, advise_fleet, advise_tier
from monitor.advice.capacity import capacity_table
from monitor.observe.model import Measurement, TierObservation
from monitor.plan import Plan
from monitor.sizing.workload import tier_workload
from tests.builders import baseline_observation, copilot_plan

H = 3600.0
# Friday 2027-01-15 09:00 in New York, the copilot's business hours (08:00-20:00): the SLO sizes every moment
# of these tests (test_availability_window.py covers the hours outside them)
NOW = 1_800_000_000.0 + 6 * H


def _obs(demand: float, ready: int, **more: Measurement) -> TierObservation:
    base = replace(baseline_observation(), batch_per_replica=Measurement.unknown("idle"), **more)
    return replace(base, demand_rate=Measurement.of(demand), request_rate=Measurement.of(demand),
                   replicas_ready=Measurement.of(ready), waiting=Measurement.of(0.0))  # fmt: skip


def _ramp(start_rps: float = 5.0, peak_rps: float = 50.0, ramp_starts_h: float = 1.0) -> DemandOutlook:
    """Flat until `ramp_starts_h`, then a two-hour linear ramp to the peak, then flat: 5-minute points."""
    ts, upper = [], []
    for i in range(0, 12 * 8):
        t = NOW + i * 300
        frac = min(max((t - NOW - ramp_starts_h * H) / (2 * H), 0.0), 1.0)
        ts.append(t)
        upper.append(start_rps + frac * (peak_rps - start_rps))
    return DemandOutlook(tuple(ts), tuple(upper), tuple(upper), model="test ramp")


def _advise(
    plan: Plan,
    obs: TierObservation,
    outlook: DemandOutlook | None = None,
    state: AdviceState | None = None,
    now: float = NOW,
):  # type: ignore[no-untyped-def]
    return advise_tier(plan, plan.tiers[0], obs, outlook, state or AdviceState(), now)


def test_the_schedule_asks_for_each_step_a_cold_start_and_a_margin_before_the_ramp_needs_it() -> None:
    rec = _advise(copilot_plan(), _obs(5.0, ready=1), _ramp())
    assert [s.replicas for s in rec.schedule] == [2, 3, 4]  # the 50 req/s peak takes 4 at p95 TPOT
    for step in rec.schedule:
        assert step.by == pytest.approx(step.needed_at - 600 - 300)
        assert step.needed_at > NOW + 1 * H
    assert rec.recommended == 1 and rec.action is Action.HOLD


def test_a_slower_observed_cold_start_moves_the_schedule_earlier() -> None:
    plan = copilot_plan()
    normal = _advise(plan, _obs(5.0, ready=1), _ramp())
    slow = _advise(plan, _obs(5.0, ready=1, cold_start_p95=Measurement.of(1200.0)), _ramp())
    assert [s.by for s in slow.schedule] == pytest.approx([s.by - 600 for s in normal.schedule])


def test_a_step_already_due_is_recommended_now() -> None:
    # Already ramping: one replica is outgrown within 15 minutes, less than cold start plus margin.
    rec = _advise(copilot_plan(), _obs(16.0, ready=1), _ramp(ramp_starts_h=-0.5))
    assert rec.recommended >= 2 and rec.action is Action.SCALE_UP


@pytest.mark.parametrize(
    ("obs", "state", "expected"),
    [
        pytest.param(
            replace(
                _obs(30.0, ready=3),
                demand_rate=Measurement.unknown("stale: last sample 12 min old"),
                request_rate=Measurement.unknown("stale"),
            ),
            AdviceState(last_recommended=3),
            3,
            id="unknown demand holds the last recommendation instead of dropping to zero",
        ),
        pytest.param(
            replace(_obs(30.0, ready=3), replicas_ready=Measurement.unknown("target down")),
            AdviceState(),
            4,
            id="unknown replica count with no history holds the plan's planned replicas",
        ),
    ],
)
def test_unknown_data_holds_and_is_marked_stale(obs: TierObservation, state: AdviceState, expected: int) -> None:
    rec = _advise(copilot_plan(), obs, state=state)
    assert (rec.recommended, rec.stale, rec.action) == (expected, True, Action.HOLD)


def test_scale_down_waits_for_the_cooldown_then_goes_down() -> None:
    plan = copilot_plan()
    first = _advise(plan, _obs(5.0, ready=3))
    assert (first.action, first.recommended, first.state.low_since) == (Action.HOLD, 3, NOW)
    later = _advise(plan, _obs(5.0, ready=3), state=first.state, now=NOW + 31 * 60)
    assert (later.action, later.recommended) == (Action.SCALE_DOWN, 1)


def test_demand_coming_back_resets_the_cooldown() -> None:
    plan = copilot_plan()
    first = _advise(plan, _obs(5.0, ready=3))
    back = _advise(plan, _obs(55.0, ready=3), state=first.state, now=NOW + 10 * 60)
    assert back.state.low_since is None


def _with_spare(plan: Plan, spare: str, most: int = 6) -> Plan:
    tier = plan.tiers[0]
    replicas = tier.replicas.model_copy(update={"max": most, "spare": spare})
    return plan.model_copy(update={"tiers": [tier.model_copy(update={"replicas": replicas})]})


@pytest.mark.parametrize(
    ("spare", "failures_per_gpu_hour", "extra"),
    [
        pytest.param("always", 2e-5, 1, id="spare always keeps one replica beyond the peak a replacement takes"),
        pytest.param("never", 1e-2, 0, id="spare never keeps none however often GPUs fail"),
        pytest.param("auto", 2e-5, 0, id="auto keeps none for 4 replicas of 4 GPUs: failures cost 5e-5 of 1e-3"),
        pytest.param("auto", 1e-3, 1, id="auto keeps one when failures alone would spend the availability budget"),
    ],
)
def test_the_business_hours_floor_keeps_the_spare_the_plan_asks_for(
    spare: str, failures_per_gpu_hour: float, extra: int
) -> None:
    plan = _with_spare(copilot_plan(), spare)  # the peak takes 4 or 5 of max 6: room for the spare
    flags = tuple(True for _ in _ramp().timestamps)
    outlook = _ramp(start_rps=45.0, ramp_starts_h=0.0)
    settings = AdviceSettings(gpu_failures_per_gpu_hour=failures_per_gpu_hour)
    rec = advise_tier(plan, plan.tiers[0], _obs(5.0, ready=4), outlook, AdviceState(), NOW, flags, settings)
    assert rec.floor == rec.needed_at_forecast_peak + extra  # type: ignore[operator]
    assert rec.recommended >= rec.floor


def test_a_peak_beyond_a_cold_start_is_left_to_the_schedule_not_the_floor() -> None:
    plan = copilot_plan()
    lead_h = (plan.tiers[0].cold_start_seconds + 300.0) / H
    rec = _advise(plan, _obs(5.0, ready=1), _ramp(ramp_starts_h=lead_h + 0.5))
    assert rec.needed_at_forecast_peak is not None and rec.floor < rec.needed_at_forecast_peak + 1
    assert rec.schedule  # the ramp is still met: by the schedule's steps


def test_the_floor_reads_the_forecast_from_now_on_not_its_points_already_past() -> None:
    """Between refits an outlook still holds the points since it was fitted: on a falling evening they held
    the floor up to a refit's 15 minutes behind the forecast."""
    plan = copilot_plan()
    ts = tuple(NOW + 300 * i for i in range(-3, 96))
    upper = tuple(45.0 if t <= NOW else 5.0 for t in ts)
    rec = _advise(plan, _obs(5.0, ready=4), DemandOutlook(ts, upper, upper, model="falling"))
    table = capacity_table(plan, plan.tiers[0], 1.0)
    assert rec.floor == max(plan.tiers[0].replicas.min, table.replicas_for_minutes(5.0))
    assert rec.floor < table.replicas_for_minutes(45.0)


def test_a_narrow_forecast_band_is_not_sized_as_if_the_minute_s_noise_came_on_top_of_it() -> None:
    """The bound's margin (3%) and a minute's Poisson margin combine in quadrature: 4 replicas hold both
    where sizing the upper bound as a mean (the margins added) asked for 5."""
    plan = copilot_plan()
    table = capacity_table(plan, plan.tiers[0], 1.0)
    low, high = 0.0, table.capacity_of(4)
    for _ in range(60):  # the mean whose combined minute rate is 99.5% of what 4 replicas hold
        mid = (low + high) / 2
        low, high = (mid, high) if table.minute_rate(mid, 1.03 * mid) <= 0.995 * table.capacity_of(4) else (low, mid)
    ts = tuple(NOW + 300 * i for i in range(96))
    outlook = DemandOutlook(ts, (low,) * len(ts), (1.03 * low,) * len(ts), model="flat")
    rec = _advise(plan, _obs(low, ready=4), outlook)
    assert table.replicas_for_minutes(1.03 * low) == 5  # the bound sized as a mean
    assert rec.needed_at_forecast_peak == rec.floor == rec.recommended == 4


@pytest.mark.parametrize(
    ("bursts", "more"),
    [
        pytest.param(Measurement.unknown("under 60 minutes of demand in 7d"), False,
                     id="bursts not yet measured leave Poisson's minutes"),
        pytest.param(Measurement.of(0.0), False, id="minutes measured as Poisson's are sized as before"),
        pytest.param(Measurement.of(0.04), True,
                     id="measured bursts ask for more replicas now, at the forecast's peak and as its floor"),
    ],
)  # fmt: skip
def test_production_s_measured_minute_bursts_size_every_minute_the_advice_reads(
    bursts: Measurement, more: bool
) -> None:
    plan = copilot_plan()
    table = capacity_table(plan, plan.tiers[0], 1.0)
    mean = 0.97 * table.capacity_of(4) - table.minute_z * (0.97 * table.capacity_of(4) / 60.0) ** 0.5
    ts = tuple(NOW + 300 * i for i in range(96))
    outlook = DemandOutlook(ts, (mean,) * len(ts), (mean,) * len(ts), model="flat")
    poisson = _advise(plan, _obs(mean, ready=4), outlook)
    rec = _advise(plan, _obs(mean, ready=4, minute_overdispersion=bursts), outlook)
    assert poisson.needed_now == poisson.needed_at_forecast_peak == poisson.recommended == 4
    need = table.replicas_for_minutes(mean, bursts.value or 0.0)
    assert (rec.needed_now, rec.needed_at_forecast_peak, rec.floor) == (need, need, need)
    assert (need > 4) == more and ("bursts" in rec.explanation[2]) == more


def test_a_growing_queue_scales_up_reactively() -> None:
    obs = replace(_obs(40.0, ready=3), request_rate=Measurement.of(30.0), waiting=Measurement.of(25.0))
    rec = _advise(copilot_plan(), obs)
    assert rec.action is Action.SCALE_UP and rec.recommended >= 4
    assert rec.reason.startswith("reactive")


def test_replicas_max_caps_with_a_warning() -> None:
    rec = _advise(copilot_plan(), _obs(200.0, ready=3))
    assert rec.recommended == 5
    assert any("replicas.max is 5" in w for w in rec.warnings)


def test_the_schedule_stops_at_replicas_max_with_a_warning() -> None:
    """A ramp to 200 req/s needs far more than copilot's replicas.max: the schedule is capped as the advice is."""
    plan = copilot_plan()
    top = plan.tiers[0].replicas.max
    rec = _advise(plan, _obs(5.0, ready=1), _ramp(peak_rps=200.0))
    assert [s.replicas for s in rec.schedule] == list(range(2, top + 1))
    assert any(f"the schedule stops at {top}" in w for w in rec.warnings)


def test_capacity_is_calibrated_on_production_when_replicas_ran_a_real_batch() -> None:
    plan = copilot_plan()
    base = baseline_observation()
    slow = replace(
        base, output_tokens_per_second_per_replica=Measurement.of(base.output_tokens_per_second_per_replica.value * 0.7)
    )  # type: ignore[operator]
    modelled = _advise(
        plan,
        replace(
            _obs(45.0, ready=3),
            batch_per_replica=base.batch_per_replica,
            output_tokens_per_second_per_replica=base.output_tokens_per_second_per_replica,
        ),
    )
    calibrated = _advise(
        plan,
        replace(
            _obs(45.0, ready=3),
            batch_per_replica=base.batch_per_replica,
            output_tokens_per_second_per_replica=slow.output_tokens_per_second_per_replica,
        ),
    )
    assert calibrated.calibration == pytest.approx(0.7, abs=0.01)
    assert calibrated.capacity_source.startswith("calibrated")
    assert calibrated.needed_now > modelled.needed_now  # type: ignore[operator]


def test_costs_are_reported_now_and_as_recommended() -> None:
    rec = _advise(copilot_plan(), _obs(30.0, ready=3))
    assert rec.cost_per_hour_usd_now == pytest.approx(3 * 4 * 4.0)
    assert rec.cost_per_request_usd(rec.recommended) == pytest.approx(rec.recommended * 16.0 / (30.0 * 3600))


def test_the_fleet_gpu_budget_caps_recommendations_with_a_warning() -> None:
    plan = copilot_plan()
    tight = plan.model_copy(update={"costs": plan.costs.model_copy(update={"max_gpus": 8})})
    fleet = advise_fleet(tight, {"copilot": _obs(60.0, ready=2)}, {}, {}, NOW)
    assert fleet.gpus_recommended <= 8
    assert fleet.warnings and "budget is 8" in fleet.warnings[0]


def _flat(rps: float, now: float, daily_cycle: bool) -> DemandOutlook:
    ts = tuple(now + i * 300 for i in range(12 * 4))
    return DemandOutlook(ts, (rps,) * len(ts), (rps,) * len(ts), model="test", daily_cycle=daily_cycle)


@pytest.mark.parametrize(
    ("hours_from_now", "daily_cycle", "plan_floor"),
    [
        pytest.param(-50 / 60, False, True, id="at the opening a forecast on under a day holds the plan's peak"),
        pytest.param(-65 / 60, False, True, id="so does one a cold start and the margin before the opening"),
        pytest.param(-7.0, False, False, id="at night, hours before business, it does not"),
        pytest.param(0.0, False, False, id="nor once the opening's reactive replicas could be ready"),
        pytest.param(-50 / 60, True, False, id="a forecast that has seen a day is left to schedule the morning"),
    ],
)
def test_until_the_forecast_has_seen_a_day_the_plan_sizes_business_hours(
    hours_from_now: float, daily_cycle: bool, plan_floor: bool
) -> None:
    plan = copilot_plan()
    now = NOW + hours_from_now * H  # NOW is 09:00, business hours from 08:00; cold start 10 min + 5 min margin:
    # the plan's peak holds 07:45-08:15
    peak = tier_workload(plan, plan.tiers[0]).peak_rps
    rec = _advise(plan, _obs(2.0, ready=1), _flat(2.0, now, daily_cycle), now=now)
    # the floor a forecast that had seen the plan's peak coming would give, through the same capacity table
    seen = _advise(plan, _obs(2.0, ready=1), _flat(peak, NOW, True), now=NOW)
    assert seen.floor > plan.tiers[0].replicas.min
    assert rec.floor == (seen.floor if plan_floor else plan.tiers[0].replicas.min)
    assert rec.recommended >= rec.floor
    assert ("the plan's peak stands in" in rec.explanation[-1]) is plan_floor


def test_without_any_forecast_the_advice_stays_reactive_as_check_no_forecast_says() -> None:
    plan = copilot_plan()
    rec = _advise(plan, _obs(2.0, ready=1), None)
    assert rec.floor == plan.tiers[0].replicas.min and rec.recommended == 1
