"""Replay benchmarks: planwatch's advice against static, reactive (KEDA), predictive (Dynamo-style) and the
hindsight oracle, and the replay's own speed.

    PYTHONPATH=. python benchmarks/bench_replay.py [--case servegen|profile|speed|all] [--days 14]
                                                   [--workers 2] [--plan examples/capstone-revised.yaml]
                                                   [--spare auto|always|never] [--draws N]

Cases
  servegen  the plan over ../shared/data/traces/servegen_language_m-mid_10min.csv (14 days, scaled to the
            plan's peak), routed by the trace's own prompt lengths and again by the plan's (the trace's shape
            with the plan's mix of short and long prompts)
  profile   fleetsim's daily profile of the plan with the slow-cold-start (20 min) and bursty scenarios
  speed     the servegen case timed: 14 days x the plan's tiers x 5 policies at 60 s decisions

The plan as given may not hold its SLO under fleetsim's physics at replicas.max (the sizing model and
fleetsim's "true" engine disagree, by design); `--raise-max K` multiplies every tier's replicas.max so the
oracle can meet the SLO and the comparison measures the policies, not the plan's cap.
Targets (issue #13): planwatch within 1.15x the oracle's GPU-hours with >= 99.5% SLO-compliant business-hours
minutes, and fewer SLO-violating minutes than reactive and predictive at no more GPU-hours than the cheaper.
After the targets each case says why planwatch misses (`why`, `hours`): the mornings it was not ready and the
tiers short, per tier the advice's capacity table against the replay's physics at the oracle's peak replica
count, each policy's GPU-hours inside and outside the minutes the SLO counts, what not knowing each
minute's Poisson draw costs any causal policy (`noise_price`), and what simple causal rules fitted in hindsight
spend in the judged minutes (`causal_reach`).

`--draws N` (N > 1) replays planwatch and the oracle on N - 1 more Poisson draws of each case's demand (the same
trace or profile, other arrivals) and prints each draw's ratio and SLO minutes with their spread. Why: the SLO
minutes of one 14-day draw move by more than the targets' margins (a session measured 98.75-99.68% for the same
code on three draws of slow-cold-start), so a target met or missed on one draw says little by itself.
"""

from __future__ import annotations

import argparse
import itertools
import math
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fleetsim.scenarios import Scenario, parse_scenarios
from monitor.advice.capacity import capacity_table
from monitor.plan import Plan, load_plan
from monitor.replay.demand import Demand, load_demand, profile_demand
from monitor.replay.reference import availability_price
from monitor.replay.render import HEADERS, table_rows
from monitor.replay.run import Replay, ReplayConfig, run_replay
from monitor.replay.slo import required_replicas
from monitor.replay.summary import CAUSES, PolicySummary, summarise

SERVEGEN = Path("/work/shared/data/traces/servegen_language_m-mid_10min.csv")  # ../shared from the checkout


def _cpu() -> float:
    """CPU seconds of this process and its finished workers."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def raised(plan: Plan, factor: int, spare: str | None = None) -> Plan:
    """The plan with every tier's replicas.max times `factor`, and its replicas.spare set when given."""
    if factor <= 1 and spare is None:
        return plan
    tiers = tuple(
        t.model_copy(
            update={
                "replicas": t.replicas.model_copy(
                    update={"max": t.replicas.max * max(1, factor), "spare": spare or t.replicas.spare}
                )
            }
        )
        for t in plan.tiers
    )
    return plan.model_copy(update={"tiers": tiers})


def report(title: str, plan: Plan, demand: Demand, config: ReplayConfig, workers: int) -> list[PolicySummary]:
    began, cpu0 = time.perf_counter(), _cpu()
    replay = run_replay(plan, demand, config, workers=workers)
    seconds, cpu = time.perf_counter() - began, _cpu() - cpu0
    summaries = summarise(replay)
    print(f"\n## {title}: {demand.minutes / 1440:.1f} days, {int(demand.arrivals.sum()):,} requests, "
          f"{seconds:.1f} s wall, {cpu:.0f} s CPU")  # fmt: skip
    widths = [max(len(h), *(len(r[i]) for r in table_rows(summaries))) for i, h in enumerate(HEADERS)]
    print("  ".join(h.ljust(w) for h, w in zip(HEADERS, widths, strict=True)))
    for row in table_rows(summaries):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    per_tier = {s.name: {t.name: f"{t.gpu_hours:.0f}h/{t.slo_compliant_minutes_share or 0:.3f}" for t in s.tiers}
                for s in summaries}  # fmt: skip
    for name, tiers in per_tier.items():
        print(f"  {name:<10} per tier (GPU-h / SLO minutes): {tiers}")
    targets(summaries)
    why(replay, summaries)
    hours(replay)
    noise_price(replay)
    causal_reach(replay)
    return summaries


def noise_price(replay: Replay) -> None:
    """What not knowing a minute's draw costs, as the replay's report says it (`monitor.replay.reference`),
    with the share of judged minutes the expected-rate sizing still leaves short per tier."""
    price = availability_price(replay)
    short = {name: f"{share:.2%}" for name, share in price.short_minutes_share.items()}
    print(f"  {price.sentence()} Minutes that sizing leaves short: {short}")


def _recent(arrivals: np.ndarray, lag: int, width: int, statistic: str) -> np.ndarray:
    """Per minute t, the mean or the highest of the per-minute rates over minutes [t - lag - width, t - lag)."""
    rates = np.concatenate([np.zeros(width), arrivals / 60.0])
    windows = sliding_window_view(rates, width)  # row k: minutes k - width .. k - 1
    rows = np.clip(np.arange(arrivals.size) - lag, 0, None)
    return np.asarray(windows.mean(axis=1) if statistic == "mean" else windows.max(axis=1))[rows]


def _least_factor(short_at: Callable[[float], float], allowed: float) -> float:
    """The least f on a 0.01 grid in [0.5, 3] whose short share is within `allowed` (it falls as f grows)."""
    low, high = 50, 300
    if short_at(high / 100) > allowed:
        return float("inf")
    while low < high:
        mid = (low + high) // 2
        low, high = (mid + 1, high) if short_at(mid / 100) > allowed else (low, mid)
    return low / 100


def _tier_reach(replay: Replay, i: int, allowed: float) -> tuple[float, float, str]:
    """(judged GPU-h, the same holding 30 min, the rule) of the cheapest rule for tier `i` (see causal_reach)."""
    plan, judged, tier = replay.plan, replay.judged, replay.plan.tiers[i]
    curve, need = replay.curves[tier.name], replay.required[tier.name]
    table = capacity_table(plan, tier, 1.0)  # sizes a rate as the advice does: CapacityTable.minute_rates
    lag, gpus = math.ceil(replay.cold_start_s[tier.name] / 60.0), tier.tensor_parallel / 60.0
    best: tuple[float, float, str] = (math.inf, math.inf, "none within f <= 3")
    for width, statistic in itertools.product((5, 10, 30), ("mean", "max")):
        seen = _recent(replay.demand.arrivals[i], lag, width, statistic)

        def sized(f: float, seen: np.ndarray = seen) -> np.ndarray:
            return required_replicas(plan, tier, curve, table.minute_rates(f * seen), judged)

        def short(f: float, sized: Callable[[float], np.ndarray] = sized) -> float:
            return float((sized(f)[judged] < need[judged]).mean())

        f = _least_factor(short, allowed)
        if math.isfinite(f):
            counts = sized(f)
            held = sliding_window_view(np.concatenate([np.zeros(30), counts]), 31).max(axis=1)
            rule = (counts[judged].sum() * gpus, held[judged].sum() * gpus, f"{statistic} of {width} min x {f:.2f}")
            best = min(best, rule)
    return best


def causal_reach(replay: Replay, allowed: float = 0.005) -> None:
    """A reach for causal policies, fitted in hindsight (no policy has it): per tier, the cheapest of a few
    simple rules that size each minute on what was seen a cold start before it (the mean or the highest
    per-minute rate of the last 5, 10 or 30 minutes, times a factor f), sized as `noise_price` sizes, with f
    the least that leaves at most `allowed` of the judged minutes below the oracle's need; and the same rule
    holding each count for 30 minutes, as a scale-down cooldown of that length would. Against it, planwatch's own
    judged-minute GPU-hours and the share of its judged minutes below the oracle's need by the same test."""
    plan, judged = replay.plan, replay.judged
    pw = next((r for r in replay.runs if r.name == "planwatch"), None)
    rule = held = ours = 0.0
    parts = []
    for i, tier in enumerate(plan.tiers):
        need = replay.required[tier.name]
        if replay.curves[tier.name] is None or not judged.any() or need[judged].max() <= tier.replicas.min:
            continue
        cost, cost_held, described = _tier_reach(replay, i, allowed)
        rule, held = rule + cost, held + cost_held
        if pw is not None:
            ready = pw.fleets[tier.name].record.ready
            ours += ready[judged].sum() * tier.tensor_parallel / 60.0
            described += f", planwatch short {(ready[judged] < need[judged]).mean():.2%}"
        parts.append(f"{tier.name}: {described}")
    if not parts:
        return
    reach = f"{rule:,.0f} GPU-h, {held:,.0f} holding 30 min" if math.isfinite(rule) else "no rule reaches it on a tier"
    print(f"  causal reach in judged minutes (hindsight rules, <= {allowed:.1%} short of the oracle's need): "
          f"{reach}; planwatch {ours:,.0f} by its ready replicas ({'; '.join(parts)})")  # fmt: skip


def hours(replay: Replay) -> None:
    """GPU-hours per policy inside and outside the minutes the SLO counts: outside them the oracle only keeps
    up with demand (`required_replicas`), a policy that holds the SLO there too spends the difference."""
    gpus = {t.name: t.tensor_parallel for t in replay.plan.tiers}
    for run in replay.runs:
        inside = sum(f.record.billed[replay.judged].sum() * gpus[n] for n, f in run.fleets.items()) / 60.0
        outside = sum(f.record.billed[~replay.judged].sum() * gpus[n] for n, f in run.fleets.items()) / 60.0
        print(f"  {run.name:<10} GPU-h in judged minutes {inside:,.0f}, outside {outside:,.0f}")


def why(replay: Replay, summaries: list[PolicySummary]) -> None:
    """What the replay shows about planwatch's misses: the mornings it was not ready (tiers short of the
    oracle's need), and per tier the demand the advice's capacity table says the oracle's business-hours peak
    replica count serves against what the replay's physics serves at that count within the SLO
    (`required_replicas`, the oracle's own test). A table above the physics sizes too few replicas."""
    pw = next((s for s in summaries if s.name == "planwatch"), None)
    if pw is None:
        return
    short = [f"{m['day']} ({', '.join(m['short_tiers'])})" for m in pw.mornings if not m["ready"]]
    print(f"  planwatch mornings not ready: {', '.join(short) or 'none'}")
    causes = {t.name: "/".join(str(t.violating_minutes_by_cause[c]) for c in CAUSES) for t in pw.tiers}
    print(f"  planwatch violating minutes per tier, too few asked / still starting / enough ready: {causes}")
    plan = replay.plan
    for tier in plan.tiers:
        curve, need = replay.curves[tier.name], replay.required[tier.name][replay.judged]
        if curve is None or need.size == 0:
            continue
        n = int(need.max())
        table = capacity_table(plan, tier, 1.0)
        rates = np.linspace(0.0, 1.5 * table.capacity_of(n), 3001)
        within = rates[required_replicas(plan, tier, curve, rates, np.ones(rates.size, dtype=bool)) <= n]
        print(f"  {tier.name}: {n} replicas serve {table.capacity_of(n):.2f} req/s by the advice's table "
              f"(uncalibrated), {within.max():.2f} req/s within the SLO by the replay's physics")  # fmt: skip


def draws(title: str, plan: Plan, make: Callable[[np.random.Generator], Demand], config: ReplayConfig,
          n: int, workers: int, shown: list[PolicySummary]) -> None:  # fmt: skip
    """planwatch and the oracle on n - 1 more draws of the case's demand (seeds 1..n-1, independent of the
    main run's generator), each draw's figures, and the mean and range over all n draws (the main run's too)."""
    if n < 2:
        return
    only = ReplayConfig(scenarios=config.scenarios, policies=("planwatch", "oracle"))
    first = next(s for s in shown if s.name == "planwatch")
    ratios, shares = [first.oracle_ratio or math.nan], [first.slo_compliant_minutes_share or math.nan]
    for seed in range(1, n):
        summaries = {s.name: s for s in summarise(run_replay(plan, make(np.random.default_rng(seed)), only,
                                                             workers=workers))}  # fmt: skip
        pw = summaries["planwatch"]
        ratios.append(pw.oracle_ratio or math.nan)
        shares.append(pw.slo_compliant_minutes_share or math.nan)
        print(f"  {title}, draw {seed}: planwatch {pw.gpu_hours:,.0f} GPU-h, {ratios[-1]:.3f}x the oracle, "
              f"{100 * shares[-1]:.2f}% SLO minutes ({pw.slo_violating_minutes} violating)")  # fmt: skip
    print(
        f"  over all {n} draws: ratio mean {np.mean(ratios):.3f} (range {min(ratios):.3f}-{max(ratios):.3f}), "
        f"SLO minutes mean {100 * np.mean(shares):.2f}% (range {100 * min(shares):.2f}-{100 * max(shares):.2f}%)"
    )


def targets(summaries: list[PolicySummary]) -> None:
    by = {s.name: s for s in summaries}
    pw, oracle = by.get("planwatch"), by.get("oracle")
    if pw is None or oracle is None:
        return
    share = pw.slo_compliant_minutes_share or 0.0
    ratio = pw.oracle_ratio if pw.oracle_ratio is not None else float("inf")
    print(f"  target planwatch <= 1.15x oracle GPU-h: {ratio:.3f} -> {'met' if ratio <= 1.15 else 'MISSED'}")
    print(f"  target planwatch >= 99.5% SLO minutes: {100 * share:.2f}% -> {'met' if share >= 0.995 else 'MISSED'}")
    others = [by[n] for n in ("reactive", "predictive") if n in by]
    if others:
        cheaper = min(o.gpu_hours for o in others)
        fewer = all(pw.slo_violating_minutes < o.slo_violating_minutes for o in others)
        violating = [o.slo_violating_minutes for o in others]
        print(f"  target fewer violating minutes than reactive and predictive ({pw.slo_violating_minutes} vs "
              f"{violating}): {'met' if fewer else 'MISSED'}; at <= the cheaper's GPU-h "
              f"({pw.gpu_hours:.0f} vs {cheaper:.0f}): {'met' if pw.gpu_hours <= cheaper else 'MISSED'}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", default="all", choices=("servegen", "profile", "speed", "all"))
    ap.add_argument("--days", type=float, default=14.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--plan", default="examples/capstone-revised.yaml")
    ap.add_argument("--raise-max", type=int, default=3)
    ap.add_argument("--spare", choices=("auto", "always", "never"), help="override every tier's replicas.spare")
    ap.add_argument("--draws", type=int, default=1, help="Poisson draws per case for planwatch and the oracle")
    args = ap.parse_args()
    plan = raised(load_plan(args.plan), args.raise_max, args.spare)
    rng = np.random.default_rng(0)
    if args.case in ("servegen", "all"):
        config = ReplayConfig()
        for lengths, title in ((True, "ServeGen, trace lengths"), (False, "ServeGen, plan lengths")):

            def trace(g: np.random.Generator, lengths: bool = lengths) -> Demand:
                return load_demand(plan, SERVEGEN, g, days=args.days, scale_to_peak=True, trace_lengths=lengths)

            shown = report(title, plan, trace(rng), config, args.workers)
            draws(title, plan, trace, config, args.draws, args.workers, shown)
    if args.case in ("profile", "all"):
        for spec in ("slow-cold-start", "bursty"):
            scenarios = parse_scenarios(spec)

            def profile(g: np.random.Generator, scenarios: tuple[Scenario, ...] = scenarios) -> Demand:
                return profile_demand(plan, scenarios, args.days, g)

            config = ReplayConfig(scenarios=scenarios)
            shown = report(f"fleetsim profile, {spec}", plan, profile(rng), config, args.workers)
            draws(f"fleetsim profile, {spec}", plan, profile, config, args.draws, args.workers, shown)
    if args.case in ("speed", "all"):
        demand = load_demand(plan, SERVEGEN, rng, days=args.days, scale_to_peak=True, trace_lengths=False)
        began = time.perf_counter()
        run_replay(plan, demand, ReplayConfig(), workers=args.workers)
        seconds = time.perf_counter() - began
        me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        own, kids = me.ru_maxrss / 1024, children.ru_maxrss / 1024
        cpu = me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime
        print(f"  CPU time {cpu:.0f} s over all processes (the wall time on a shared machine is longer)")
        print(f"\n## speed: {demand.minutes / 1440:.0f} days x {len(plan.tiers)} tiers x 5 policies at 60 s: "
              f"{seconds:.1f} s wall ({args.workers} workers); peak RSS {own:.0f} MB (parent), "
              f"{kids:.0f} MB (largest worker); target 120 s, 1024 MB")  # fmt: skip


if __name__ == "__main__":
    main()
