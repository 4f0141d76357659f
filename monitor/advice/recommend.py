"""Scale recommendations per tier: now, over the forecast, and the schedule that beats the morning ramp.

replicas now   = max(needed for current demand, steps of the schedule already due, reactive +1, floor)
a schedule step: scale to N by (start of the forecast step whose upper bound outgrows N-1 replicas)
                 - cold start - margin
scale-down     : only after demand stayed lower for the cooldown, never on unknown data, never below
                 the floor (plan minimum; in business hours, N + spare for the forecast business-hours peak
                 within a cold start and the margin)
Every rate is sized per minute (`CapacityTable.replicas_for_minutes`): the SLO is judged per minute.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

from monitor.advice.capacity import Calibration, CapacityTable, calibrate, capacity_table
from monitor.advice.model import (
    Action,
    AdviceSettings,
    AdviceState,
    DemandOutlook,
    Recommendation,
    ScaleStep,
)
from monitor.observe.model import Measurement, TierObservation
from monitor.plan.model import Plan, Tier
from monitor.slo import burn_rate

__all__ = ["advise_tier", "spare_replicas"]


_DEFAULT_SETTINGS = AdviceSettings()


@dataclass(frozen=True)
class _Assessment:
    """What the tier needs, before hysteresis and caps turn it into a recommendation."""

    demand: Measurement
    calibration: Calibration
    table: CapacityTable
    needed_now: int
    needed_at_peak: int | None
    floor: int
    reactive: bool
    schedule: tuple[ScaleStep, ...]
    target: int


def advise_tier(
    plan: Plan,
    tier: Tier,
    obs: TierObservation,
    outlook: DemandOutlook | None,
    state: AdviceState,
    now: float,
    business_hours: tuple[bool, ...] | None = None,
    settings: AdviceSettings = _DEFAULT_SETTINGS,
) -> Recommendation:
    """One tier's recommendation. `business_hours` flags each outlook point as inside business hours."""
    demand = obs.demand_rate if obs.demand_rate.known else obs.request_rate
    if demand.value is None or obs.replicas_ready.value is None:
        return _hold_stale(plan, tier, obs.replicas_ready, demand, state)
    a = _assess(plan, tier, obs, demand, outlook, business_hours, now, settings)
    return _decide(plan, tier, obs, a, state, now, settings)


def _assess(
    plan: Plan,
    tier: Tier,
    obs: TierObservation,
    demand: Measurement,
    outlook: DemandOutlook | None,
    business: tuple[bool, ...] | None,
    now: float,
    settings: AdviceSettings,
) -> _Assessment:
    current = int(obs.replicas_ready.value or 0)
    cal = calibrate(plan, tier, obs, settings)
    table = capacity_table(plan, tier, cal.factor)
    needed_now = table.replicas_for_minutes(demand.value or 0.0)
    cold = obs.cold_start_p95.value if obs.cold_start_p95.value is not None else tier.cold_start_seconds
    steps = _schedule(table, outlook, current, cold, settings.safety_margin_seconds)
    due = max((s.replicas for s in steps if s.by <= now), default=0)
    floor = _floor(plan, tier, table, outlook, business, now, cold, settings)
    reactive = _reactive(obs, demand, settings)
    return _Assessment(
        demand=demand,
        calibration=cal,
        table=table,
        needed_now=needed_now,
        needed_at_peak=table.replicas_for_minutes(max(outlook.upper)) if outlook and outlook.upper else None,
        floor=floor,
        reactive=reactive,
        schedule=tuple(s for s in steps if s.by > now),
        target=max(needed_now, due, floor, current + 1 if reactive else 0),
    )


def _schedule(
    table: CapacityTable, outlook: DemandOutlook | None, current: int, cold: float, margin: float
) -> list[ScaleStep]:
    """One step per replica above `current` the forecast's upper bound will need. A forecast point stands
    for the step that ends at it (demand histories are rates over the step before each stamp), so demand
    can reach its value at the start of that step: that is when the replica is needed."""
    if not outlook or not outlook.upper:
        return []
    times = outlook.timestamps
    step = times[1] - times[0] if len(times) > 1 else 0.0
    steps, have = [], current
    rates, at = table.minute_rates(outlook.upper), 0  # one array pass over the points `have` already serves
    while (i := table.first_unserved(have, rates, at)) is not None:
        t, upper, at = times[i], outlook.upper[i], i + 1
        need = table.replicas_for(float(rates[i]))
        while need > have:
            have += 1
            steps.append(ScaleStep(have, t - step - cold - margin, t - step, upper, cold, margin))
    return steps


def _floor(
    plan: Plan,
    tier: Tier,
    table: CapacityTable,
    outlook: DemandOutlook | None,
    business: tuple[bool, ...] | None,
    now: float,
    cold: float,
    settings: AdviceSettings,
) -> int:
    """Plan minimum; in business hours also N + spare for the business-hours forecast peak within a cold start
    plus the margin (`spare_replicas`: with a spare, if one replica is lost the others hold the SLO until its
    replacement is ready). Further ahead the schedule brings the replicas in time, so the floor need not hold
    the day's peak."""
    floor = tier.replicas.min
    if not outlook or not business or not _in_business_hours_now(outlook, business, now):
        return floor
    lead = cold + settings.safety_margin_seconds
    points = zip(outlook.timestamps, outlook.upper, business, strict=True)
    peak = max((u for t, u, b in points if b and t <= now + lead), default=0.0)
    need = table.replicas_for_minutes(peak)
    return max(floor, need + spare_replicas(plan, tier, need, cold, settings.gpu_failures_per_gpu_hour))


def spare_replicas(
    plan: Plan, tier: Tier, replicas: int, replacement_seconds: float, failures_per_gpu_hour: float
) -> int:
    """Replicas kept beyond the need for a GPU failure (`replicas.spare`): `always` one, `never` none, `auto`
    one only when the failures alone would spend the availability budget. Without a spare, a failed replica
    leaves the tier short until its replacement has started, so the expected share of time short is
    replicas x GPUs per replica x failures per GPU-hour x replacement time (hours); `auto` keeps the spare
    when that exceeds 1 - availability. At the default 2e-5 failures per GPU-hour (`AdviceSettings`) and a
    10-minute replacement, that is above 300 GPUs for a 99.9% target: smaller tiers spend the spare's
    GPU-hours on nothing the SLO counts."""
    mode = tier.replicas.spare
    if replicas <= 0 or mode == "never":
        return 0
    if mode == "always":
        return 1
    short = replicas * tier.tensor_parallel * failures_per_gpu_hour * replacement_seconds / 3600.0
    return 1 if short > 1.0 - plan.slo.availability else 0


def _in_business_hours_now(outlook: DemandOutlook, business: tuple[bool, ...], now: float) -> bool:
    """The flag of the outlook point nearest to now (the outlook starts at or just after now; its timestamps
    ascend, so the nearest is one of the two around now, the earlier on a tie)."""
    times = outlook.timestamps
    i = bisect_left(times, now)
    if i == len(times) or (i > 0 and now - times[i - 1] <= times[i] - now):
        i -= 1
    return business[i]


def _reactive(obs: TierObservation, demand: Measurement, settings: AdviceSettings) -> bool:
    """Scale up now when an SLO burns fast (5m and 1h) or the queue grows (demand above what is served)."""
    for slo in ("ttft", "tpot"):
        short, long = obs.bad_fraction.get(f"{slo}:5m"), obs.bad_fraction.get(f"{slo}:1h")
        if short is None or long is None or short.value is None or long.value is None:
            continue
        if min(burn_rate(short.value, 0.95), burn_rate(long.value, 0.95)) > settings.page_burn_factor:
            return True
    served, waiting = obs.request_rate.value, obs.waiting.value
    return bool(demand.value and served is not None and waiting and demand.value > served * 1.05)


def _decide(
    plan: Plan, tier: Tier, obs: TierObservation, a: _Assessment, state: AdviceState, now: float,
    settings: AdviceSettings,
) -> Recommendation:  # fmt: skip
    warnings = []
    target = a.target
    if target > tier.replicas.max:
        warnings.append(f"the SLO needs {target} replicas but replicas.max is {tier.replicas.max}")
        target = tier.replicas.max
    schedule = tuple(step for step in a.schedule if step.replicas <= tier.replicas.max)
    if len(schedule) < len(a.schedule):
        most = max(step.replicas for step in a.schedule)
        warnings.append(f"the forecast needs {most} replicas but replicas.max is {tier.replicas.max}: "
                        f"the schedule stops at {tier.replicas.max}")  # fmt: skip
    if not a.table.ttft_feasible:
        warnings.append("the step in flight and the p95 prompt's prefill alone exceed the TTFT SLO: "
                        "no replica count meets it")  # fmt: skip
    action, recommended, low_since, reason = _hysteresis(target, int(obs.replicas_ready.value or 0), state, now,
                                                         settings)  # fmt: skip
    if a.reactive and action is Action.SCALE_UP:
        reason = "reactive: an SLO is burning fast or the queue is growing"
    return Recommendation(
        tier=tier.name, current=obs.replicas_ready, recommended=recommended, action=action, reason=reason,
        stale=False, confidence="high" if a.calibration.factor != 1.0 else "medium",
        capacity_source=a.calibration.source, calibration=a.calibration.factor,
        requests_per_second_per_replica=a.table.requests_per_second_per_replica, needed_now=a.needed_now,
        needed_at_forecast_peak=a.needed_at_peak, floor=a.floor, schedule=schedule, explanation=_explain(a),
        warnings=tuple(warnings), gpus_per_replica=tier.tensor_parallel,
        gpu_hour_usd=plan.costs.gpu_hour_usd[tier.gpu], demand_rps=a.demand.value,
        capacity_rps_now=a.table.capacity_of(int(obs.replicas_ready.value or 0)),
        state=AdviceState(low_since=low_since, last_recommended=recommended),
    )  # fmt: skip


def _hysteresis(
    target: int, current: int, state: AdviceState, now: float, settings: AdviceSettings
) -> tuple[Action, int, float | None, str]:
    if target > current:
        return Action.SCALE_UP, target, None, "demand (now or on the forecast ramp) needs more replicas"
    if target == current:
        return Action.HOLD, current, None, "capacity matches demand"
    low_since = state.low_since if state.low_since is not None else now
    waited = now - low_since
    if waited < settings.scale_down_cooldown_seconds:
        left = settings.scale_down_cooldown_seconds - waited
        return Action.HOLD, current, low_since, f"demand is lower; scale-down waits {left / 60:.0f} min of cooldown"
    return Action.SCALE_DOWN, target, low_since, f"demand stayed lower for {waited / 60:.0f} min"


def _explain(a: _Assessment) -> tuple[str, ...]:
    d = a.demand
    peak = a.needed_at_peak if a.needed_at_peak is not None else "unknown (no forecast)"
    return (
        f"demand {d.value:.3g} req/s ({d.window or 'now'}; query: {d.query or 'n/a'})",
        f"capacity {a.table.requests_per_second_per_replica:.3g} req/s per replica at the TPOT SLO batch; "
        f"{a.calibration.source}",
        f"needed now = smallest n with capacity(n) >= demand + z sqrt(demand / 60) = {a.needed_now} "
        f"(a minute's Poisson count at z = {a.table.minute_z:.2f}, the availability's quantile; "
        "capacity(n) = min(n x per-replica, the TTFT-bounded demand))",
        f"needed at the forecast peak (upper bound) = {peak}",
        f"floor = {a.floor} (plan minimum; in business hours N + spare for the business-hours forecast peak, "
        "replicas.spare)",
    )


def _hold_stale(
    plan: Plan, tier: Tier, current: Measurement, demand: Measurement, state: AdviceState
) -> Recommendation:
    """Unknown is not zero: hold the last recommendation (or what runs, or the plan) and say why."""
    held = state.last_recommended
    if held is None:
        held = int(current.value) if current.value is not None else tier.replicas.planned
    why = demand.reason if demand.value is None else current.reason
    return Recommendation(
        tier=tier.name, current=current, recommended=held, action=Action.HOLD,
        reason=f"holding: data is unknown or stale ({why})", stale=True, confidence="low",
        capacity_source="none (no data)", calibration=1.0, requests_per_second_per_replica=0.0, needed_now=None,
        needed_at_forecast_peak=None, floor=tier.replicas.min, schedule=(), explanation=(f"unknown: {why}",),
        warnings=(), gpus_per_replica=tier.tensor_parallel, gpu_hour_usd=plan.costs.gpu_hour_usd[tier.gpu],
        demand_rps=None, capacity_rps_now=None, state=AdviceState(low_since=None, last_recommended=held),
    )  # fmt: skip
