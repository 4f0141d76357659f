"""Scale recommendations per tier: now, over the forecast, and the schedule that beats the morning ramp.

replicas now   = max(needed for current demand, steps of the schedule already due, reactive +1, floor)
a schedule step: scale to N by (start of the forecast step whose upper bound outgrows N-1 replicas)
                 - cold start - margin
scale-down     : only after demand stayed lower for the cooldown, never on unknown data, never below
                 the floor (plan minimum; in business hours, N + spare for the forecast business-hours peak
                 within a cold start and the margin)
Every rate is sized per minute (`CapacityTable.replicas_for_minutes`): the SLO is judged per minute.
Outside the plan's availability window (`slo.availability_window: business_hours`, outside business hours) a
moment is sized for throughput, not the SLO (monitor.advice.window): now, and each forecast point of those
hours; the business-hours points still schedule the morning's replicas a cold start ahead.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.advice.capacity import Calibration, CapacityTable, calibrate, capacity_table
from monitor.advice.collapse import collapse_now
from monitor.advice.model import (
    Action,
    AdviceSettings,
    AdviceState,
    DemandOutlook,
    Recommendation,
    ScaleStep,
)
from monitor.advice.ramp import Points, Tables, held_for_ramp, need_among, needed_at_peak, scale_schedule
from monitor.advice.window import OUTSIDE_HOURS, slo_counts, throughput_table
from monitor.observe.model import Measurement, TierObservation
from monitor.plan.hours import in_business_hours
from monitor.plan.model import Plan, Tier
from monitor.slo import burn_rate

__all__ = ["advise_tier", "spare_replicas"]


_DEFAULT_SETTINGS = AdviceSettings()


@dataclass(frozen=True)
class _Assessment:
    """What the tier needs, before hysteresis and caps turn it into a recommendation."""

    demand: Measurement
    calibration: Calibration
    table: CapacityTable  # the SLO's: what the ready replicas serve within it (capacity_rps_now)
    bursts: float  # the minutes' variance beyond Poisson's the margins were sized with (0: Poisson)
    sizing: CapacityTable  # the table that sized now: the SLO's, or throughput's outside the window
    slo_now: bool  # the SLO counts now (always, or in business hours)
    needed_now: int
    needed_at_peak: int | None
    floor: int
    floor_from_plan: bool  # the floor is the plan's peak: the forecast has not seen a day yet
    reactive: bool
    schedule: tuple[ScaleStep, ...]
    target: int
    cooldown: float  # seconds demand must stay lower before a scale-down


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
    """One tier's recommendation. `business_hours` flags each outlook point as inside business hours (the
    evaluation computes them once per forecast; computed from the plan when omitted)."""
    demand, served = _demand(obs)
    if demand.value is None or obs.replicas_ready.value is None:
        return _hold_stale(plan, tier, obs.replicas_ready, demand, state)
    a = _assess(plan, tier, obs, demand, served, outlook, business_hours, now, settings, state.calibration)
    return _decide(plan, tier, obs, a, state, now, settings)


def _demand(obs: TierObservation) -> tuple[Measurement, Measurement]:
    """(demand, served) over one window: the last `NOW_WINDOW` where it is known (a ramp shows there within
    minutes, where the check window's mean lags it by half the window), else the check window; the demand is
    the served rate where the queue's growth is unknown. One window for both, since the queue test compares
    them (a rising demand over 5 minutes against an hour's served rate reads as a queue that grows)."""
    for demand, served in ((obs.demand_rate_now, obs.request_rate_now), (obs.demand_rate, obs.request_rate)):
        if demand.known:
            return demand, served
    for served in (obs.request_rate_now, obs.request_rate):
        if served.known:
            return served, served
    return obs.request_rate, obs.request_rate


def _assess(
    plan: Plan,
    tier: Tier,
    obs: TierObservation,
    demand: Measurement,
    served: Measurement,
    outlook: DemandOutlook | None,
    business: tuple[bool, ...] | None,
    now: float,
    settings: AdviceSettings,
    remembered: float | None,
) -> _Assessment:
    current = int(obs.replicas_ready.value or 0)
    cal = calibrate(plan, tier, obs, settings, remembered)
    table = capacity_table(plan, tier, cal.factor)
    cold = obs.cold_start_p95.value if obs.cold_start_p95.value is not None else tier.cold_start_seconds
    bursts = obs.minute_overdispersion.value or 0.0  # unmeasured: Poisson's minutes, the sizing's assumption
    tables = Tables(table, throughput_table(table, cold), bursts)
    slo_now = slo_counts(plan, now)
    sizing = tables.pick(slo_now)
    needed_now = sizing.replicas_for_minutes(demand.value or 0.0, bursts)
    points = Points.of(plan, outlook, business)
    steps = scale_schedule(tables, points, current, cold, settings.safety_margin_seconds)
    due = max((s.replicas for s in steps if s.by <= now), default=0)
    held = held_for_ramp(tables, points, now, cold + settings.safety_margin_seconds)
    floor = _floor(plan, tier, tables, points, now, cold, settings)
    before_a_day = _plan_before_a_day(plan, tier, tables, outlook, now, cold, settings)
    floor = max(floor, before_a_day)
    reactive = _reactive(obs, demand, served, slo_now, settings)
    return _Assessment(
        demand=demand,
        calibration=cal,
        table=table,
        bursts=bursts,
        sizing=sizing,
        slo_now=slo_now,
        needed_now=needed_now,
        needed_at_peak=needed_at_peak(tables, points),
        floor=floor,
        floor_from_plan=before_a_day > 0 and before_a_day == floor,
        reactive=reactive,
        schedule=tuple(s for s in steps if s.by > now),
        target=max(needed_now, due, held, floor, current + 1 if reactive else 0),
        cooldown=_cooldown(slo_now, cold, settings),
    )


def _cooldown(slo_now: bool, cold: float, settings: AdviceSettings) -> float:
    """How long demand must stay lower before a cut: unless configured, a replacement's lead (the cold start
    plus the margin) while the SLO counts, a cold start outside the availability window; configured
    (`advice.scale_down_cooldown`), that while the SLO counts and at most a cold start outside.

    Why: a replica kept idle costs the time kept; one cut and then needed again costs its restart (billed
    through a cold start) and, while the SLO counts, the lead a replacement takes before it serves. Holding
    it longer than that costs more than the restart it insures against (the rent-or-buy break-even; the
    oracle keeps a replica through a gap exactly when the gap is at most a cold start), and what the
    forecast needs within the lead is held anyway (the floor, `held_for_ramp`), so the cooldown guards only
    against demand the forecast did not see, which the need now asks for again. On the 14-day replays
    (main draw), 30 minutes to the lead: ServeGen (8-minute cold starts) 1.148x -> 1.138x the oracle's
    GPU-hours, SLO minutes 99.87% -> 99.90%, scale events 791 -> 932; fleetsim's slow-cold-start profile
    (20 minutes) 1.151x -> 1.149x at 99.85%, scale events 334 -> 355."""
    configured = settings.scale_down_cooldown_seconds
    if slo_now:
        return cold + settings.safety_margin_seconds if configured is None else configured
    return cold if configured is None else min(configured, cold)


def _floor(
    plan: Plan,
    tier: Tier,
    tables: Tables,
    points: Points | None,
    now: float,
    cold: float,
    settings: AdviceSettings,
) -> int:
    """Plan minimum; in business hours also N + spare for the business-hours forecast peak within a cold start
    plus the margin (`spare_replicas`: with a spare, if one replica is lost the others hold the SLO until its
    replacement is ready). Further ahead the schedule brings the replicas in time, so the floor need not hold
    the day's peak."""
    floor = tier.replicas.min
    if points is None or not in_business_hours(now, plan.workload.business_hours):
        return floor
    lead = cold + settings.safety_margin_seconds
    ahead = (points.times > now) & (points.times <= now + lead)
    return max(floor, _with_spare(plan, tier, need_among(tables, points, points.business & ahead), cold, settings))


def _with_spare(plan: Plan, tier: Tier, need: int, cold: float, settings: AdviceSettings) -> int:
    """N + spare: the replicas a peak needs and the spare `replicas.spare` keeps beside them."""
    return need + spare_replicas(plan, tier, need, cold, settings.gpu_failures_per_gpu_hour)


def _plan_before_a_day(
    plan: Plan,
    tier: Tier,
    tables: Tables,
    outlook: DemandOutlook | None,
    now: float,
    cold: float,
    settings: AdviceSettings,
) -> int:
    """The plan's peak as the floor while the forecast has seen under a day, from a cold start plus the margin
    (the lead) before business hours open until a lead after: N + spare for the tier's planned peak demand
    (0 otherwise).

    Why: a forecast on hours of history (a mean and drift) has not seen a morning, so it can neither schedule
    the ramp a lead ahead nor hold replicas for it, and what the opening's demand asks for reactively is ready
    a lead late. The plan is the hypothesis production has not yet had the time to confirm, so it covers that
    gap; after it, replicas the observed demand does not need leave after the cooldown like any others (held
    all day, the plan's peak cost a day of GPU-hours wherever the plan overestimated demand: 14% more on the
    ServeGen replay with the trace's own lengths). No outlook at all (`check --no-forecast`) stays reactive."""
    if outlook is None or outlook.daily_cycle:
        return 0
    hours = plan.workload.business_hours
    lead = cold + settings.safety_margin_seconds
    if not in_business_hours(now + lead, hours) or in_business_hours(now - lead, hours):
        return 0
    need = tables.slo.replicas_for_minutes(tables.slo.model.workload.peak_rps, tables.bursts)
    return _with_spare(plan, tier, need, cold, settings)


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


def _reactive(
    obs: TierObservation, demand: Measurement, served_rate: Measurement, slo_now: bool, settings: AdviceSettings
) -> bool:
    """Scale up now when an SLO burns fast (5m and 1h) while it counts, or the queue grows (demand above what
    is served). Outside the availability window only the queue: a tier sized for throughput runs batches
    past the TPOT SLO's by design, so its burn rate says nothing the plan counts."""
    for slo in ("ttft", "tpot") if slo_now else ():
        short, long = obs.bad_fraction.get(f"{slo}:5m"), obs.bad_fraction.get(f"{slo}:1h")
        if short is None or long is None or short.value is None or long.value is None:
            continue
        if min(burn_rate(short.value, 0.95), burn_rate(long.value, 0.95)) > settings.page_burn_factor:
            return True
    served, waiting = served_rate.value, obs.waiting.value
    return bool(demand.value and served is not None and waiting and demand.value > served * 1.05)


def _decide(
    plan: Plan, tier: Tier, obs: TierObservation, a: _Assessment, state: AdviceState, now: float,
    settings: AdviceSettings,
) -> Recommendation:  # fmt: skip
    warnings = []
    target = a.target
    if target > tier.replicas.max:
        needs = "the SLO needs" if a.slo_now else "demand needs"
        warnings.append(f"{needs} {target} replicas but replicas.max is {tier.replicas.max}")
        target = tier.replicas.max
    schedule = tuple(step for step in a.schedule if step.replicas <= tier.replicas.max)
    if len(schedule) < len(a.schedule):
        most = max(step.replicas for step in a.schedule)
        warnings.append(f"the forecast needs {most} replicas but replicas.max is {tier.replicas.max}: "
                        f"the schedule stops at {tier.replicas.max}")  # fmt: skip
    if not a.table.tpot_feasible:
        warnings.append("no batch meets the TPOT SLO, not even 1 (decodes stall behind the prompts' chunk "
                        "steps): counted at batch 1, no replica count meets it")  # fmt: skip
    elif not a.table.ttft_feasible:
        warnings.append("the step in flight and the p95 prompt's prefill alone exceed the TTFT SLO: "
                        "no replica count meets it")  # fmt: skip
    current = int(obs.replicas_ready.value or 0)
    collapse = collapse_now(state.collapse, obs, a.demand, a.slo_now, now)
    action, recommended, low_since, reason = _hysteresis(target, current, state, now, a.cooldown)
    if collapse is not None and action is not Action.SCALE_UP:
        action, recommended, low_since = Action.HOLD, current, None
        reason = collapse.describe(a.demand.value or 0.0)
    if a.reactive and action is Action.SCALE_UP:
        reason = "reactive: an SLO is burning fast or the queue is growing"
    if not a.slo_now:
        reason = f"{reason} ({OUTSIDE_HOURS})"
    return Recommendation(
        tier=tier.name, current=obs.replicas_ready, recommended=recommended, action=action, reason=reason,
        stale=False, confidence="high" if a.calibration.factor != 1.0 else "medium",
        capacity_source=a.calibration.source, calibration=a.calibration.factor,
        requests_per_second_per_replica=a.sizing.requests_per_second_per_replica, needed_now=a.needed_now,
        needed_at_forecast_peak=a.needed_at_peak, floor=a.floor, schedule=schedule, explanation=_explain(a),
        warnings=tuple(warnings), gpus_per_replica=tier.tensor_parallel,
        gpu_hour_usd=plan.costs.gpu_hour_usd[tier.gpu], demand_rps=a.demand.value,
        capacity_rps_now=a.table.capacity_of(current),
        state=AdviceState(low_since, recommended, a.calibration.steady, collapse),
        sized_for="slo" if a.slo_now else "throughput",
    )  # fmt: skip


def _hysteresis(
    target: int, current: int, state: AdviceState, now: float, cooldown: float
) -> tuple[Action, int, float | None, str]:
    if target > current:
        return Action.SCALE_UP, target, None, "demand (now or on the forecast ramp) needs more replicas"
    if target == current:
        return Action.HOLD, current, None, "capacity matches demand"
    low_since = state.low_since if state.low_since is not None else now
    waited = now - low_since
    if waited < cooldown:
        left = cooldown - waited
        return Action.HOLD, current, low_since, f"demand is lower; scale-down waits {left / 60:.0f} min of cooldown"
    return Action.SCALE_DOWN, target, low_since, f"demand stayed lower for {waited / 60:.0f} min"


def _explain(a: _Assessment) -> tuple[str, ...]:
    d = a.demand
    peak = a.needed_at_peak if a.needed_at_peak is not None else "unknown (no forecast)"
    sized = a.sizing
    if a.slo_now:
        bound = (f"capacity {sized.requests_per_second_per_replica:.3g} req/s per replica at the TPOT SLO batch "
                 f"({sized.batch:g})")  # fmt: skip
        capacity = "capacity(n) = min(n x per-replica, the TTFT-bounded demand)"
    else:
        bound = (f"{OUTSIDE_HOURS} (the plan's SLO counts in business hours only): capacity "
                 f"{sized.requests_per_second_per_replica:.3g} req/s per replica at the largest batch the engine "
                 f"admits ({sized.batch:g}: KV cache, chunk budget, max_num_seqs), no TTFT bound")  # fmt: skip
        capacity = "capacity(n) = n x per-replica"
    return (
        f"demand {d.value:.3g} req/s ({d.window or 'now'}; query: {d.query or 'n/a'})",
        f"{bound}; {a.calibration.source}",
        f"needed now = smallest n with capacity(n) >= demand + z sqrt(demand / 60{_bursts_term(a.bursts)}) = "
        f"{a.needed_now} ({_count(a.bursts)} at z = {sized.minute_z:.2f}, {_quantile_why(a.slo_now)}; {capacity})",
        f"needed at the forecast peak = {peak} (where the SLO counts, its mean sized for the SLO with the 80% "
        "bound's margin and the minute's in quadrature, "
        f"r + sqrt((u - r)^2 + z^2 (r / 60{_bursts_term(a.bursts, 'r')})); outside business hours, when it counts "
        "in business hours only, its mean sized for throughput)",
        f"floor = {a.floor} (plan minimum; in business hours N + spare for the business-hours forecast peak, "
        "replicas.spare)"
        + ("; the forecast has seen under a day, so the plan's peak stands in for it" if a.floor_from_plan else ""),
    )


def _bursts_term(bursts: float, rate: str = "demand") -> str:
    return f" + {bursts:.3g} {rate}^2" if bursts else ""


def _count(bursts: float) -> str:
    if bursts:
        return f"a minute's count with production's bursts, alpha = {bursts:.3g} beyond Poisson's"
    return "a minute's Poisson count"


def _quantile_why(slo_now: bool) -> str:
    if slo_now:
        return "the availability's quantile"
    return "the availability's quantile over the square root of a cold start's minutes: a queue, not a minute, counts"


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
        demand_rps=None, capacity_rps_now=None, state=AdviceState(None, held, state.calibration, state.collapse),
        sized_for=None,
    )  # fmt: skip
