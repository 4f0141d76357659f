"""The revisit-the-design catalog: the capstone seed's "what could invalidate the plan", each with its
condition, window, hold time, severity, mitigation (the seeds' levers) and when to revisit the design.
"""

from __future__ import annotations

from monitor.batch_progress import BATCH_READINGS
from monitor.drift import Status, describe_bound
from monitor.plan.model import FLEET
from monitor.slo import SRE_POLICY, burn_rate
from monitor.triggers.batch import batch_misses_deadline, batch_on_online_tier
from monitor.triggers.breakeven import dedicated_below_breakeven, serverless_above_breakeven
from monitor.triggers.model import Check, Evidence, Needs, Severity, TriggerDef, TriggerInputs
from monitor.units import format_value

__all__ = ["CATALOG", "trigger_def"]

_M = 60.0

# A trigger's condition and what it is judged on, declared together so they cannot drift apart.
Rule = tuple[Check, Needs]


def _drift_breach(assumption: str, what: str) -> Rule:
    """A check that holds while one plan assumption is in breach on a tier."""

    def check(inputs: TriggerInputs, tier: str) -> Evidence | None:
        row = inputs.tiers[tier].row(assumption)
        if row is None or row.status is not Status.BREACH or row.observed.value is None:
            return None
        ratio = f" ({row.ratio:.2f}x)" if row.ratio is not None else ""
        # an edge-bucket quantile is evidence as the bound it is ("above 5,000 tokens"), not as a measurement
        seen = describe_bound(row.observed, row.unit) or format_value(row.observed.value, row.unit)
        return Evidence(
            f"{what}: observed {seen} against {format_value(row.plan, row.unit)} planned{ratio}",
            observed={assumption: row.observed.value},
            plan={assumption: row.plan},
            queries=(row.observed.query,) if row.observed.query else (),
        )

    return check, Needs(assumptions=(assumption,))


def _kv_pressure(inputs: TriggerInputs, tier: str) -> Evidence | None:
    obs = inputs.tiers[tier].observation
    kv, preempt = obs.kv_occupancy_max.value, obs.preemption_rate.value
    if kv is None or preempt is None or kv < 0.95 or preempt <= 0:
        return None
    return Evidence(
        f"KV cache {kv:.0%} full with {preempt:.3g} preemptions/s: sequences are being evicted and recomputed",
        observed={"kv_occupancy_max": kv, "preemption_rate": preempt},
        plan={"kv_occupancy_max": 0.95, "preemption_rate": 0.0},
        queries=tuple(q for q in (obs.kv_occupancy_max.query, obs.preemption_rate.query) if q),
    )


def _cold_start(inputs: TriggerInputs, tier: str) -> Evidence | None:
    if tier == FLEET:
        return None
    t = inputs.tiers[tier]
    observed = t.observation.cold_start_p95.value
    cold = observed if observed is not None else inputs.plan.tier(tier).cold_start_seconds
    lead = t.ramp_lead_seconds.value
    if lead is None or cold <= lead:
        return None
    source = "observed p95" if observed is not None else "the plan's assumption"
    return Evidence(
        f"cold start {cold / _M:.1f} min ({source}) is longer than the {lead / _M:.1f} min reactive autoscaling has "
        "between the ramp reaching 80% and 100% of current capacity",
        observed={"cold_start_seconds": cold, "ramp_lead_seconds": lead},
        plan={"cold_start_seconds": inputs.plan.tier(tier).cold_start_seconds},
        queries=(t.observation.cold_start_p95.query,) if t.observation.cold_start_p95.query else (),
    )


def _burn(slo: str, severity: str) -> Rule:
    """Multi-window burn: both the long and the short window burn faster than the policy's factor."""

    def check(inputs: TriggerInputs, tier: str) -> Evidence | None:
        if slo == "errors" and not _availability_applies(inputs):
            return None
        objective = inputs.plan.slo.availability if slo == "errors" else 0.95
        bad = inputs.tiers[tier].observation.bad_fraction
        for w in (p for p in SRE_POLICY if p.severity == severity):
            long, short = bad.get(f"{slo}:{w.long}"), bad.get(f"{slo}:{w.short}")
            if not long or not short or long.value is None or short.value is None:
                continue
            burn_long, burn_short = burn_rate(long.value, objective), burn_rate(short.value, objective)
            if burn_long > w.factor and burn_short > w.factor:
                return Evidence(
                    f"{slo} budget burning at {burn_long:.1f}x over {w.long} and {burn_short:.1f}x over {w.short} "
                    f"(threshold {w.factor}x, objective {objective:.3%})",
                    observed={f"burn_{w.long}": burn_long, f"burn_{w.short}": burn_short},
                    plan={"burn_threshold": w.factor, "objective": objective},
                    queries=tuple(q for q in (long.query, short.query) if q),
                )
        return None

    windows = [w for p in SRE_POLICY if p.severity == severity for w in (p.long, p.short)]
    return check, Needs(bad_fractions=tuple(f"{slo}:{w}" for w in windows))


def _availability_applies(inputs: TriggerInputs) -> bool:
    return inputs.plan.slo.availability_window == "always" or inputs.in_business_hours


def _quality(fallback: bool) -> Rule:
    """A posted eval of this tier's model at its precision fails (the drop exceeds the threshold)."""

    def check(inputs: TriggerInputs, tier: str) -> Evidence | None:
        if tier == FLEET:
            return None
        t = inputs.plan.tier(tier)
        if (t.routing.share == 0) != fallback:
            return None
        if not fallback and t.weight_dtype.value in ("bf16", "fp16"):
            return None
        precision = t.weight_dtype.value
        failed = [e for e in inputs.evals if e.model == t.model and e.precision == precision and e.failed]
        if not failed:
            return None
        worst = max(failed, key=lambda e: e.regression)
        return Evidence(
            f"{worst.model} in {precision} scores {worst.score:g} on {worst.task_set} against a baseline of "
            f"{worst.baseline_score:g} (drop {worst.regression:.3g} > threshold {worst.threshold:g})",
            observed={"score": worst.score},
            plan={"baseline_score": worst.baseline_score, "threshold": worst.threshold},
        )

    return check, Needs()  # posted evals are stored: never unknown


def _def(
    id_: str,
    title: str,
    invalidates: str,
    severity: Severity,
    window: str,
    hold_min: float,
    mitigation: str,
    revisit: str,
    rule: Rule,
) -> TriggerDef:
    check, needs = rule
    return TriggerDef(id_, title, invalidates, severity, window, hold_min * _M, mitigation, revisit, check, needs)


CATALOG: tuple[TriggerDef, ...] = (
    _def(
        "prompt-p95-above-plan",
        "Prompts are longer than planned",
        "KV memory per sequence, TTFT, prefill compute",
        Severity.WARNING,
        "1h",
        30,
        "Route long prompts to a separate long-context pool; retrieve less or "
        "summarize; quantize the KV cache; add memory (H200)",
        "Revisit when prompt p95 stays above plan for a day: the p95 prompt, not the mean, sets memory",
        _drift_breach("prompt_p95", "prompt p95 above plan"),
    ),
    _def(
        "prefix-hit-below-plan",
        "Prefix caching hits less than planned",
        "Prefill compute (uncached tokens)",
        Severity.WARNING,
        "1h",
        30,
        "Freeze the system prompt and place it first; move per-user or timestamped "
        "text below the shared prefix; route by prefix",
        "Revisit when the hit rate stays low after the prompt is frozen: prefill compute is then the plan's real cost",
        _drift_breach("prefix_hit_rate", "prefix hit rate"),
    ),
    _def(
        "traffic-above-peak",
        "Traffic above the planned peak",
        "Replica count at peak, cost",
        Severity.CRITICAL,
        "1h",
        10,
        "Scale up now; raise replicas.max; shed or queue low-priority traffic",
        "Revisit when the peak stays above plan on several days: re-run sizing with the observed peak",
        _drift_breach("peak_rate", "peak request rate"),
    ),
    _def(
        "burstier-than-planned",
        "Traffic is burstier than planned",
        "Headroom and queueing (TTFT)",
        Severity.WARNING,
        "1d",
        60,
        "Keep more headroom (run below 80% of saturation); queue with admission control; pre-warm before known bursts",
        "Revisit when 1-minute peaks over the average exceed the plan for a week",
        _drift_breach("peak_to_average", "peak-to-average"),
    ),
    _def(
        "throughput-below-model",
        "Per-replica throughput below the sizing model",
        "Efficiency assumptions and TP scaling",
        Severity.WARNING,
        "1h",
        30,
        "Benchmark TP=2 against TP=4 on the real model and batch; check chunked prefill and CUDA graphs; "
        "recalibrate efficiency in the plan",
        "Revisit when replicas are measured slower at the same batch: "
        "the engine's TP scaling is worse than the vendor chart",
        _drift_breach("throughput_per_replica", "output tokens/s per replica at the observed batch"),
    ),
    _def(
        "kv-pressure",
        "KV cache full with preemptions",
        "KV budget and concurrency per replica",
        Severity.CRITICAL,
        "15m",
        10,
        "Quantize the KV cache (FP8); lower max_num_seqs; route long prompts away; add replicas or memory",
        "Revisit when preemptions recur at planned load: contexts or concurrency exceed the plan",
        (_kv_pressure, Needs(measurements=("kv_occupancy_max", "preemption_rate"))),
    ),
    _def(
        "cold-start-too-slow",
        "Cold start too slow for the ramp",
        "Reactive autoscaling at the morning ramp",
        Severity.WARNING,
        "1h",
        0,
        "Pre-warm on a schedule ahead of the forecast ramp; keep a larger floor in "
        "the morning; speed up weight loading (local cache, safetensors streaming)",
        "Revisit when no lead time before the ramp covers the cold start",
        (_cold_start, Needs(ramp=True)),  # an unknown cold start falls back to the plan's
    ),
    _def(
        "tool-call-fanout",
        "More model calls per user request than planned",
        "Arrival rate seen by the engines",
        Severity.WARNING,
        "1h",
        30,
        "Re-size with calls per request as measured; cache tool results; batch or parallelize sequential calls",
        "Revisit when the product adds tool calls: one request becomes several model calls",
        _drift_breach("calls_per_request", "model calls per user request"),
    ),
    _def(
        "quantization-quality-regression",
        "Quantized model below its quality bar",
        "FP8 weights and KV cache",
        Severity.WARNING,
        "1d",
        0,
        "Serve BF16 on H200 for the affected tasks; keep FP8 KV only; re-run the eval with a calibrated quantization",
        "Revisit when the eval's drop exceeds the agreed tolerance",
        _quality(fallback=False),
    ),
    _def(
        "fallback-fails-eval",
        "The fallback model fails its eval",
        "The degraded mode when 70B is saturated",
        Severity.WARNING,
        "1d",
        0,
        "Provision the primary tier for peak instead of leaning on the fallback; choose a stronger fallback",
        "Revisit when the fallback fails the task set",
        _quality(fallback=True),
    ),
    _def(
        "ttft-slo-burn-page",
        "TTFT SLO burning fast",
        "TTFT headroom at current load",
        Severity.CRITICAL,
        "1h",
        2,
        "Scale up; check queue time and prefill load; route long prompts away",
        "Revisit when the fast burn recurs at planned load",
        _burn("ttft", "page"),
    ),
    _def(
        "ttft-slo-burn-ticket",
        "TTFT SLO burning slowly",
        "TTFT headroom",
        Severity.WARNING,
        "1d",
        15,
        "Plan more headroom or faster prefill",
        "Revisit when the budget runs out within the period",
        _burn("ttft", "ticket"),
    ),
    _def(
        "tpot-slo-burn-page",
        "TPOT SLO burning fast",
        "Decode step time at the running batch",
        Severity.CRITICAL,
        "1h",
        2,
        "Scale up; lower max_num_seqs; reduce the chunked-prefill budget",
        "Revisit when the fast burn recurs at planned load",
        _burn("tpot", "page"),
    ),
    _def(
        "tpot-slo-burn-ticket",
        "TPOT SLO burning slowly",
        "Decode step time",
        Severity.WARNING,
        "1d",
        15,
        "Re-size the batch limit against measured TPOT",
        "Revisit when the budget runs out within the period",
        _burn("tpot", "ticket"),
    ),
    _def(
        "availability-burn-page",
        "Availability burning fast in business hours",
        "Replica count, failure headroom",
        Severity.CRITICAL,
        "1h",
        2,
        "Restore failed replicas; add one replica of headroom; check XID errors",
        "Revisit when one replica down breaks the SLO",
        _burn("errors", "page"),
    ),
    _def(
        "availability-burn-ticket",
        "Availability burning slowly in business hours",
        "Failure headroom",
        Severity.WARNING,
        "1d",
        15,
        "Keep N+1 replicas in business hours",
        "Revisit when the budget runs out within the period",
        _burn("errors", "ticket"),
    ),
    _def(
        "volume-below-dedicated-breakeven",
        "Volume fell below the dedicated breakeven",
        "The surface choice: dedicated over serverless",
        Severity.WARNING,
        "7d",
        60,
        "Lower the off-peak floor so autoscaling holds fewer GPU-hours; consolidate tiers; move low-volume paths "
        "to a serverless per-token API unless a strict SLO or custom weights keep them dedicated",
        "Revisit the surface when a week's volume priced per token stays below the GPU-hours the tier holds",
        (dedicated_below_breakeven, Needs(measurements=("tokens_rate_long", "gpus_mean_long"))),
    ),
    _def(
        "volume-above-dedicated-breakeven",
        "Volume rose above the dedicated breakeven",
        "The surface choice: serverless over dedicated",
        Severity.WARNING,
        "7d",
        60,
        "Size a dedicated tier for the path (planwatch size) and move it once the benchmark confirms the sizing",
        "Revisit the surface when a week's volume priced per token stays above what the path would cost dedicated",
        (serverless_above_breakeven, Needs(measurements=("tokens_rate_long",))),
    ),
    _def(
        "batch-job-will-miss-deadline",
        "A batch job will miss its deadline",
        "The batch job's throughput and window",
        Severity.WARNING,
        "5m",
        5,
        "Add replicas to the job's pool for the rest of the window; move the run to a batch API; start it earlier",
        "Revisit when runs keep finishing late: re-size the job (planwatch size) with its measured tokens/s",
        (batch_misses_deadline, Needs(extras=(BATCH_READINGS,))),
    ),
    _def(
        "batch-traffic-on-online-tier",
        "Batch traffic is landing on an online tier",
        "The online tier's headroom and SLO; pricing offline work apart",
        Severity.WARNING,
        "5m",
        5,
        "Point the job at its own pool or the batch API; if it must share, confine it to the tier's quiet hours",
        "Revisit when offline work keeps reaching online replicas: price it on batch, not on the online deployment",
        (batch_on_online_tier, Needs(extras=(BATCH_READINGS,))),
    ),
)


def trigger_def(trigger_id: str) -> TriggerDef:
    for d in CATALOG:
        if d.id == trigger_id:
            return d
    raise KeyError(f"no trigger {trigger_id!r}; known: {', '.join(d.id for d in CATALOG)}")
