"""One replay: a plan, a demand trace, the policies side by side over the same physics (pure, no I/O).

Every policy runs the same minutes on its own copy of the fleet: at each decision (every
`decision_interval_s`) it sets each tier's replicas, then every tier runs the minute. All fleets start with
the plan's planned replicas ready (as fleetsim starts), the oracle with what its schedule wants at minute 0.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from fleetsim.scenarios import Effects, Scenario, effects_at
from monitor.plan.hours import in_business_hours
from monitor.plan.model import Plan
from monitor.replay.curve import TierCurve, tier_curve
from monitor.replay.demand import Demand
from monitor.replay.fleet import TierFleet, TierRecord
from monitor.replay.names import POLICIES
from monitor.replay.planwatch import Planwatch
from monitor.replay.policies import Oracle, Policy, Predictive, Reactive, Static
from monitor.replay.slo import required_replicas
from monitor.service.settings import Settings

__all__ = ["POLICIES", "PolicyRun", "Replay", "ReplayConfig", "judged_minutes", "run_replay"]


@dataclass(frozen=True)
class ReplayConfig:
    policies: tuple[str, ...] = POLICIES
    decision_interval_s: float = 60.0
    scenarios: tuple[Scenario, ...] = ()
    seed: int = 0
    # The planwatch policy's service configuration (advice margins, cooldown, forecast windows and cadence,
    # observation window), as `planwatch serve` would run with it; None: the service's defaults.
    settings: Settings | None = None

    def __post_init__(self) -> None:
        unknown = [p for p in self.policies if p not in POLICIES]
        if unknown:
            raise ValueError(f"unknown policy {', '.join(unknown)} (known: {', '.join(POLICIES)})")
        if self.decision_interval_s < 60 or self.decision_interval_s % 60:
            raise ValueError(
                f"the decision interval must be a whole number of minutes, got {self.decision_interval_s}s"
            )


@dataclass
class PolicyRun:
    name: str
    fleets: dict[str, TierFleet]


@dataclass
class Replay:
    plan: Plan
    demand: Demand
    config: ReplayConfig
    curves: dict[str, TierCurve | None]
    cold_start_s: dict[str, float]
    judged: np.ndarray  # minutes the SLO counts in (business hours, or all when the plan says "always")
    required: dict[str, np.ndarray]  # the oracle's per-minute need
    runs: list[PolicyRun] = field(default_factory=list)

    def run(self, name: str) -> PolicyRun:
        return next(r for r in self.runs if r.name == name)


def judged_minutes(plan: Plan, demand: Demand) -> np.ndarray:
    if plan.slo.availability_window == "always":
        return np.ones(demand.minutes, dtype=bool)
    hours = plan.workload.business_hours
    return np.array([in_business_hours(demand.start + 60.0 * m + 30.0, hours) for m in range(demand.minutes)])


_CurveKey = tuple[str, str, Effects, int]  # (plan JSON, tier, effects, seed)
_CURVES: dict[_CurveKey, TierCurve] = {}  # measured curves, the latest 32, per process


def _measure_curve(key: _CurveKey) -> TierCurve:
    plan_json, tier, effects, seed = key
    plan = Plan.model_validate_json(plan_json)
    return tier_curve(plan, plan.tier(tier), effects, seed)


def _tier_curves(keys: list[_CurveKey], workers: int) -> list[TierCurve]:
    """Each key's curve, remembered per process; with `workers` > 1 the ones not yet measured are measured
    side by side in forked processes. Why: a curve's rates around the SLO knee run on the live step engine,
    8-9 s a tier that takes traffic (16 s of a 14-day replay's 115 s, one tier after the other)."""
    missing = [k for k in dict.fromkeys(keys) if k not in _CURVES]
    if workers > 1 and len(missing) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(min(workers, len(missing)), mp_context=multiprocessing.get_context("fork")) as pool:
            measured = list(pool.map(_measure_curve, missing))
    else:
        measured = [_measure_curve(k) for k in missing]
    for key, curve in zip(missing, measured, strict=True):
        _CURVES[key] = curve
        while len(_CURVES) > 32:
            del _CURVES[next(iter(_CURVES))]
    return [_CURVES[k] for k in keys]


def run_replay(
    plan: Plan,
    demand: Demand,
    config: ReplayConfig,
    progress: Callable[[str, float], None] | None = None,
    workers: int = 1,
) -> Replay:
    """Every policy of `config` over `demand`; `progress(policy, share done)` is called as it runs. With
    `workers` > 1 the policies run in up to that many processes, and planwatch refits some of its tiers in a
    worker of its own (`Planwatch.refit_processes`)."""
    effects = effects_at(config.scenarios, demand.start)
    plan_json = plan.model_dump_json(by_alias=True)
    busy = [t.name for i, t in enumerate(plan.tiers) if demand.arrivals[i].sum() > 0 and t.replicas.max > 0]
    measured = _tier_curves([(plan_json, name, effects, config.seed) for name in busy], workers)
    curves: dict[str, TierCurve | None] = {t.name: None for t in plan.tiers} | dict(zip(busy, measured, strict=True))
    cold = {t.name: effects.cold_start_seconds or t.cold_start_seconds for t in plan.tiers}
    judged = judged_minutes(plan, demand)
    required = {
        t.name: required_replicas(plan, t, curves[t.name], demand.arrivals[i] / 60.0, judged)
        for i, t in enumerate(plan.tiers)
    }
    replay = Replay(plan, demand, config, curves, cold, judged, required)
    if workers > 1 and len(config.policies) > 1:
        replay.runs.extend(_in_parallel(replay, workers, progress))
        return replay
    for name in config.policies:
        replay.runs.append(_run_policy(replay, _policy(replay, name, workers), progress))
    return replay


def _one(replay: Replay, name: str, workers: int) -> PolicyRun:
    if name != "planwatch":
        # The replay takes as long as planwatch, which needs both cores at every refit (this process and its
        # refit worker); the other policies have time to spare, so they yield a core when both want it.
        with contextlib.suppress(OSError):
            os.nice(10)
    return _run_policy(replay, _policy(replay, name, workers), None)


def _in_parallel(replay: Replay, workers: int, progress: Callable[[str, float], None] | None) -> list[PolicyRun]:
    """Policies are independent: each runs in a worker process (forked, so the curves are not measured
    again); planwatch, the slowest, starts first (the others finish long before it). Progress is reported as
    each policy finishes."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    names = sorted(replay.config.policies, key=lambda n: n != "planwatch")
    with ProcessPoolExecutor(min(workers, len(names)), mp_context=multiprocessing.get_context("fork")) as pool:
        futures = {n: pool.submit(_one, replay, n, workers) for n in names}
        runs = {}
        for n in names:
            runs[n] = futures[n].result()
            if progress:
                progress(n, 1.0)
    return [runs[n] for n in replay.config.policies]


def _policy(replay: Replay, name: str, workers: int = 1) -> Policy:
    plan = replay.plan
    if name == "static":
        return Static(plan)
    if name == "reactive":
        return Reactive(plan)
    if name == "predictive":
        return Predictive(plan)
    if name == "planwatch":
        settings = replay.config.settings or Settings()
        return Planwatch(plan, replay.demand.start, settings=settings, refit_processes=workers)
    minutes = {t.name: _fleet(replay, t.name, 0).cold_minutes for t in plan.tiers}
    return Oracle(replay.required, minutes)


def _fleet(replay: Replay, tier: str, ready: int) -> TierFleet:
    t = replay.plan.tier(tier)
    record = TierRecord.empty(replay.demand.minutes)
    return TierFleet(t, replay.curves[tier], replay.cold_start_s[tier], record, ready=ready)


def _run_policy(replay: Replay, policy: Policy, progress: Callable[[str, float], None] | None) -> PolicyRun:
    # The replay's linear algebra (ARIMA and forecast fits, Kalman filters) is on matrices of a few rows, where
    # BLAS threads only add synchronisation (a 2-day replay spent 44 of 120 s in statsmodels' state
    # initialisation with 2 OpenBLAS threads on 2 shared cores; a fit took 0.25 s, 0.025 s on one thread, same
    # parameters). The replay's parallelism is its worker processes.
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            return _run_policy_minutes(replay, policy, progress)
    finally:
        if isinstance(policy, Planwatch):
            policy.close()  # its refit worker, if it started one


def _run_policy_minutes(replay: Replay, policy: Policy, progress: Callable[[str, float], None] | None) -> PolicyRun:
    plan, demand = replay.plan, replay.demand
    interval = replay.config.decision_interval_s
    every = round(interval / 60.0)
    fleets = {t.name: _fleet(replay, t.name, t.replicas.planned) for t in plan.tiers}
    if isinstance(policy, Oracle):
        for name, want in policy.decide(0, fleets, interval).items():
            fleets[name].ready = want
    order = [(fleets[t.name], demand.arrivals[i].astype(float)) for i, t in enumerate(plan.tiers)]
    report_every = max(1, demand.minutes // 100)
    for m in range(demand.minutes):
        if m % every == 0:
            for name, want in policy.decide(m, fleets, interval).items():
                fleets[name].scale(m, want)
        for fleet, arrivals in order:
            fleet.step(m, arrivals[m])
        if progress and (m + 1) % report_every == 0:
            progress(policy.name, (m + 1) / demand.minutes)
    if progress:
        progress(policy.name, 1.0)
    return PolicyRun(policy.name, fleets)
