"""Judge each item of the measurement plan from what history holds (pure).

measured  the history (or a posted eval) answers the item fully
partly    some of it: one load level of three, a bound instead of the number, one failure of four
not yet   nothing yet, and the evidence says what is missing
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from monitor.measurements.model import ITEMS, Item, ItemSpec, LoadPoint, Readings, Status, TierReadings
from monitor.plan.model import FLEET, Plan, Tier
from monitor.sizing.plan_sizing import PlanSizing
from monitor.units import format_seconds

__all__ = ["judge_plan", "load_level"]

# Steps of history needed at a load level before its latency counts as measured there.
MIN_POINTS = 3
_LONG_PROMPT = 100_000

Verdict = tuple[Status, list[str], dict[str, float | None]]


def load_level(multiple: float) -> int | None:
    """1x, 2x or 3x the sized peak load per replica: [0.75, 1.5), [1.5, 2.5), 2.5 and above."""
    if multiple >= 2.5:
        return 3
    if multiple >= 1.5:
        return 2
    return 1 if multiple >= 0.75 else None


def judge_plan(plan: Plan, sizing: PlanSizing, readings: Readings) -> list[Item]:
    out = []
    for spec in ITEMS:
        if spec.scope == "plan":
            status, evidence, values = _PLAN[spec.id](plan, readings)
            out.append(_item(spec, FLEET, (status, evidence, values), readings, list(readings.tiers.values())))
            continue
        for tier in plan.tiers:
            r = readings.tiers.get(tier.name)
            if r is not None:
                verdict = _TIER[spec.id](plan, sizing, tier, r, readings)
                out.append(_item(spec, tier.name, verdict, readings, [r]))
    return out


def _item(spec: ItemSpec, tier: str, verdict: Verdict, readings: Readings, rs: Sequence[TierReadings]) -> Item:
    status, evidence, values = verdict
    stamps = [p.at for r in rs for p in r.load]
    first, last = (min(stamps), max(stamps)) if stamps else (readings.start, readings.end)
    dated = status is not Status.NOT_YET
    return Item(
        spec.id, spec.title, tier, status, tuple(evidence), first if dated else None, last if dated else None,
        engine="; ".join(sorted({r.engine for r in rs if r.engine})),
        hardware="; ".join(sorted({r.hardware for r in rs if r.hardware})),
        values=values,
    )  # fmt: skip


def _by_count(found: int, of: int) -> Status:
    return Status.MEASURED if found == of else Status.PARTLY if found else Status.NOT_YET


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None and math.isfinite(v)]
    return sum(known) / len(known) if known else None


def _latency(plan: Plan, sizing: PlanSizing, tier: Tier, r: TierReadings, readings: Readings) -> Verdict:
    levels: dict[int, list[LoadPoint]] = {1: [], 2: [], 3: []}
    for p in r.load:
        level = load_level(p.load_multiple)
        if level is not None and p.ttft[1] is not None:
            levels[level].append(p)
    evidence: list[str] = []
    values: dict[str, float | None] = {}
    highest = max((p.load_multiple for p in r.load), default=None)
    for level, points in levels.items():
        if len(points) < MIN_POINTS:
            evidence.append(f"{level}x: {len(points)} steps of history at this load (need {MIN_POINTS})")
            continue
        ttft = [_mean([p.ttft[i] for p in points]) for i in range(3)]
        tpot = [_mean([p.tpot[i] for p in points]) for i in range(3)]
        values |= {f"ttft_p{q}_{level}x": v for q, v in zip((50, 95, 99), ttft, strict=True)}
        values |= {f"tpot_p{q}_{level}x": v for q, v in zip((50, 95, 99), tpot, strict=True)}
        evidence.append(f"{level}x ({len(points)} steps): TTFT p50/p95/p99 {_three(ttft)}, TPOT {_three(tpot)}")
    if highest is not None:
        values["highest_load_multiple"] = highest
        evidence.append(f"highest load reached so far: {highest:.2f}x the sized peak load per replica")
    found = sum(1 for points in levels.values() if len(points) >= MIN_POINTS)
    return _by_count(found, 3), evidence, values


def _three(values: Sequence[float | None]) -> str:
    return " / ".join("?" if v is None else format_seconds(v) for v in values)


def _goodput(plan: Plan, sizing: PlanSizing, tier: Tier, r: TierReadings, readings: Readings) -> Verdict:
    bad = r.observation.bad_fraction
    ttft, tpot = bad.get(f"ttft:{readings.window}"), bad.get(f"tpot:{readings.window}")
    if ttft is None or tpot is None or ttft.value is None or tpot.value is None:
        some = ttft or tpot
        why = some.reason if some is not None else "no SLO histograms read"
        return Status.NOT_YET, [f"no TTFT/TPOT histograms over {readings.window}: {why}"], {}
    bound = max(0.0, 1.0 - ttft.value - tpot.value)
    slo_ttft, slo_tpot = plan.slo_for(tier)
    return (
        Status.PARTLY,
        [
            f"at least {bound:.1%} of requests met both SLOs over {readings.window} (TTFT over "
            f"{format_seconds(slo_ttft)}: {ttft.value:.2%}, TPOT over {format_seconds(slo_tpot)}: {tpot.value:.2%})",
            "a lower bound by request, not goodput by token: tokens of the requests that met both SLOs need "
            "per-request records (request logs or a tracing exporter)",
        ],
        {"goodput_request_share_lower_bound": bound, "ttft_over_slo": ttft.value, "tpot_over_slo": tpot.value},
    )


def _kv(plan: Plan, sizing: PlanSizing, tier: Tier, r: TierReadings, readings: Readings) -> Verdict:
    obs = r.observation
    kv, preempt, p95 = obs.kv_occupancy_max.value, obs.preemption_rate.value, obs.prompt_p95.value
    if kv is None or preempt is None:
        why = obs.kv_occupancy_max.reason or obs.preemption_rate.reason
        return Status.NOT_YET, [f"KV occupancy or preemptions unknown: {why}"], {}
    planned = sizing.tier(tier.name).sizing.workload.prompt_p95
    evidence = [f"KV occupancy peaked at {kv:.0%} with {preempt:.3g} preemptions/s over {readings.window}"]
    values = {"kv_occupancy_max": kv, "preemption_rate": preempt, "prompt_p95": p95}
    if p95 is not None and p95 >= 0.9 * planned:
        evidence.append(f"at a prompt p95 of {p95:,.0f} tokens (planned {planned:,.0f})")
        return Status.MEASURED, evidence, values
    seen = "unknown" if p95 is None else f"{p95:,.0f}"
    evidence.append(f"but the prompt p95 seen was {seen} tokens, short of the planned {planned:,.0f}")
    return Status.PARTLY, evidence, values


def _prefix(plan: Plan, sizing: PlanSizing, tier: Tier, r: TierReadings, readings: Readings) -> Verdict:
    hit = r.observation.prefix_hit_rate
    planned = sizing.tier(tier.name).sizing.workload.prefix_hit_rate
    if hit.value is None:
        return Status.NOT_YET, [f"prefix-cache hit rate unknown: {hit.reason}"], {}
    evidence = [f"prefix-cache hit rate {hit.value:.1%} on real traffic over {readings.window} (planned {planned:.1%})"]
    return Status.MEASURED, evidence, {"prefix_hit_rate": hit.value, "planned": planned}


def _cold(plan: Plan, sizing: PlanSizing, tier: Tier, r: TierReadings, readings: Readings) -> Verdict:
    cold = r.observation.cold_start_p95
    if cold.value is None:
        return Status.NOT_YET, [f"no cold start seen: {cold.reason}"], {}
    evidence = [f"cold start p95 {format_seconds(cold.value)} from pod creation to ready (weight load included), "
                f"planned {format_seconds(tier.cold_start_seconds)}"]  # fmt: skip
    return Status.MEASURED, evidence, {"cold_start_p95_seconds": cold.value}


def _failures(plan: Plan, sizing: PlanSizing, tier: Tier, r: TierReadings, readings: Readings) -> Verdict:
    obs, evidence, found = r.observation, [], 0
    down = r.replicas_down_max.value
    if down is not None and down > 0:
        found += 1
        evidence.append(f"one replica down: up to {down:g} replica(s) down at once; " + _meanwhile(
            plan, tier, [p for p in r.load if p.replicas_down]))  # fmt: skip
    else:
        evidence.append("one replica down: not seen" + ("" if down is not None else f" ({r.replicas_down_max.reason})"))
    kv, preempt = obs.kv_occupancy_max.value, obs.preemption_rate.value
    if kv is not None and preempt is not None and kv >= 0.99 and preempt > 0:
        found += 1
        full = [p for p in r.load if p.kv_max is not None and p.kv_max >= 0.99]
        evidence.append(f"cache full: KV at {kv:.0%} with {preempt:.3g} preemptions/s; " + _meanwhile(plan, tier, full))
    else:
        evidence.append("cache full: not seen")
    found += _long_prompt(tier, r, evidence)
    if obs.cold_start_p95.value is not None:
        found += 1
        evidence.append("rolling deploy or restart: pods started in the window")
    else:
        evidence.append("rolling deploy: no pod started in the window")
    evidence.append(_slo_meanwhile(r, readings))
    return _by_count(found, 4), evidence, {"replicas_down_max": down, "prompts_over_100k": r.prompts_over_100k.value}


def _meanwhile(plan: Plan, tier: Tier, points: Sequence[LoadPoint]) -> str:
    """What the SLO did while it lasted: the mean of each step's p95 against the tier's SLO."""
    if not points:
        return "the SLO meanwhile: no history step caught it"
    ttft, tpot = _mean([p.ttft[1] for p in points]), _mean([p.tpot[1] for p in points])
    slo_ttft, slo_tpot = plan.slo_for(tier)
    parts = [f"{name} p95 {format_seconds(v)} (SLO {format_seconds(slo)})"
             for name, v, slo in (("TTFT", ttft, slo_ttft), ("TPOT", tpot, slo_tpot)) if v is not None]  # fmt: skip
    return f"meanwhile ({len(points)} steps): " + (", ".join(parts) or "latency unknown")


def _long_prompt(tier: Tier, r: TierReadings, evidence: list[str]) -> int:
    n = r.prompts_over_100k.value
    if n is not None and n > 0:
        evidence.append(f"a 100K-token request: {n:,.0f} prompt(s) over 100,000 tokens")
        return 1
    if tier.max_model_len is not None and tier.max_model_len < _LONG_PROMPT:
        evidence.append(f"a 100K-token request: refused by max_model_len {tier.max_model_len:,} (the behaviour is "
                        "the engine's error, by configuration)")  # fmt: skip
        return 1
    evidence.append("a 100K-token request: not seen")
    return 0


def _slo_meanwhile(r: TierReadings, readings: Readings) -> str:
    bad, obs = r.observation.bad_fraction, r.observation
    parts = [f"{k} over SLO {m.value:.2%}" for k in ("ttft", "tpot")
             if (m := bad.get(f"{k}:{readings.window}")) is not None and m.value is not None]  # fmt: skip
    if obs.error_ratio.value is not None:
        parts.append(f"errors {obs.error_ratio.value:.2%}")
    return f"the SLO over {readings.window}: " + (", ".join(parts) if parts else "unknown")


def _cost(plan: Plan, sizing: PlanSizing, tier: Tier, r: TierReadings, readings: Readings) -> Verdict:
    price, obs = plan.costs.gpu_hour_usd[tier.gpu], r.observation
    gpus, rate = obs.gpus_mean_long.value, obs.average_rate.value
    evidence: list[str] = []
    values: dict[str, float | None] = {}
    if gpus is not None and rate:
        values["usd_per_request_average"] = gpus * price / 3600 / rate
        evidence.append(f"average: {gpus:.1f} GPUs x ${price:.2f}/h / ({rate:.2f} req/s x 3600) = "
                        f"${values['usd_per_request_average']:.5f} per completed request")  # fmt: skip
    else:
        evidence.append("average: GPUs held or request rate unknown")
    peak = max((p for p in r.load if p.requests_per_second and p.gpus), key=lambda p: p.requests_per_second or 0,
               default=None)  # fmt: skip
    if peak is not None and peak.gpus and peak.requests_per_second:
        values["usd_per_request_peak"] = peak.gpus * price / 3600 / peak.requests_per_second
        evidence.append(f"peak: {peak.gpus:.0f} GPUs x ${price:.2f}/h / ({peak.requests_per_second:.2f} req/s x "
                        f"3600) = ${values['usd_per_request_peak']:.5f} per completed request")  # fmt: skip
    else:
        evidence.append("peak: no step with both GPUs and a request rate")
    return _by_count(len(values), 2), evidence, values


def _quality(plan: Plan, readings: Readings) -> Verdict:
    wanted = [(t.model, t.weight_dtype.value, "quantized" if t.routing.share else "fallback") for t in plan.tiers
              if t.routing.share == 0 or t.weight_dtype.value not in ("bf16", "fp16")]  # fmt: skip
    if not wanted:
        return Status.MEASURED, ["not applicable: no quantized tier and no fallback tier in the plan"], {}
    evidence, found = [], 0
    for model, precision, kind in dict.fromkeys(wanted):
        evals = [e for e in readings.evals if e.model == model and e.precision == precision]
        if evals:
            found += 1
            e = max(evals, key=lambda x: x.submitted_at)
            verdict = "fails" if e.failed else "passes"
            evidence.append(f"{kind} {model} {precision} on {e.task_set}: {e.score:g} against {e.baseline_score:g} "
                            f"({verdict}, threshold {e.threshold:g})")  # fmt: skip
        else:
            evidence.append(f"{kind} {model} {precision}: no eval posted (POST /v1/evals)")
    return _by_count(found, len(dict.fromkeys(wanted))), evidence, {}


def _tp(plan: Plan, readings: Readings) -> Verdict:
    by_model: dict[str, dict[int, list[str]]] = {}
    for t in plan.tiers:
        by_model.setdefault(t.model, {}).setdefault(t.tensor_parallel, []).append(t.name)
    compared = {m: tps for m, tps in by_model.items() if len(tps) >= 2}
    if not compared:
        runs = ", ".join(f"{m} at TP{'/'.join(map(str, sorted(tps)))}" for m, tps in by_model.items())
        return Status.NOT_YET, [f"the plan runs {runs}: no model at two TPs to compare (add a tier or a "
                                "benchmark at the other TP)"], {}  # fmt: skip
    evidence: list[str] = []
    values: dict[str, float | None] = {}
    found = wanted = 0
    for model, tps in compared.items():
        for tp, names in sorted(tps.items()):
            wanted += 1
            seen = _throughput(readings.tiers, names)
            if seen is None:
                evidence.append(f"{model} TP{tp} ({', '.join(names)}): no throughput observed")
                continue
            found += 1
            values[f"{model}:tp{tp}:tokens_per_second_per_gpu"] = seen[0] / tp
            evidence.append(f"{model} TP{tp}: {seen[0]:,.0f} output tokens/s per replica at batch {seen[1]:.0f} = "
                            f"{seen[0] / tp:,.0f} per GPU")  # fmt: skip
    return _by_count(found, wanted), evidence, values


def _throughput(tiers: Mapping[str, TierReadings], names: Sequence[str]) -> tuple[float, float] | None:
    for name in names:
        r = tiers.get(name)
        if r is None:
            continue
        tps, batch = r.observation.output_tokens_per_second_per_replica.value, r.observation.batch_per_replica.value
        if tps is not None and batch is not None:
            return tps, batch
    return None


_TIER: dict[str, Callable[[Plan, PlanSizing, Tier, TierReadings, Readings], Verdict]] = {
    "latency-at-load": _latency,
    "goodput-at-slo": _goodput,
    "kv-at-p95-context": _kv,
    "prefix-hit-rate": _prefix,
    "cold-start": _cold,
    "failure-behaviour": _failures,
    "cost-per-request": _cost,
}
_PLAN: dict[str, Callable[[Plan, Readings], Verdict]] = {"quantization-quality": _quality, "tp-scaling": _tp}
