"""The replay follows the plan's availability window through the product's own advice (no replay-only branch):
counted in business hours only, the SLO sizes those hours and throughput the rest."""

from __future__ import annotations

import numpy as np

from monitor.replay.demand import profile_demand
from monitor.replay.run import ReplayConfig, judged_minutes, run_replay
from monitor.replay.slo import minute_slo
from tests.replay.plans import one_tier_plan


def test_counted_in_business_hours_only_planwatch_spends_fewer_off_hours_gpu_hours_and_holds_those_hours() -> None:
    """Three days of the plan's own daily profile, planwatch under each window. Judged on the business-hours
    minutes alone, the business-hours plan is no worse, and it spends fewer GPU-hours outside them."""
    runs = {}
    for window in ("business_hours", "always"):
        plan = one_tier_plan(cold_start="10m", window=window)
        demand = profile_demand(plan, (), 3.0, np.random.default_rng(3))
        runs[window] = (plan, demand, run_replay(plan, demand, ReplayConfig(policies=("planwatch",))))
    plan, demand, _ = runs["business_hours"]
    business = judged_minutes(plan, demand)
    off_hours_gpu_h, violating = {}, {}
    for window, (p, d, replay) in runs.items():
        f = replay.run("planwatch").fleets["chat"]
        off_hours_gpu_h[window] = float(f.record.billed[~business].sum()) * f.tier.tensor_parallel / 60.0
        ok = minute_slo(p, f.tier, f.curve, f.record, d.minutes).ok
        violating[window] = int((~ok & business).sum())
    assert off_hours_gpu_h["business_hours"] < 0.9 * off_hours_gpu_h["always"]
    assert violating["business_hours"] <= violating["always"]
