"""The seeds' hypothesis table, per tier: decision, proposal, why (the formula with its numbers), risk to test.

Pure text building over a PlanSizing; the CLI only lays it out. Units are always written: GB (1e9),
GiB (2**30) only where said, ms, req/s.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.plan.model import Plan
from monitor.sizing.plan_sizing import SizedTier
from monitor.units import format_bytes, format_seconds

__all__ = ["HypothesisRow", "findings", "format_range", "hypothesis_rows"]


@dataclass(frozen=True)
class HypothesisRow:
    decision: str
    proposal: str
    why: str
    risk: str


def format_range(*counts: int | None) -> str:
    """A range of counts, "none" where no count meets the SLO at that end: "46-67-none"."""
    return "-".join("none" if c is None else str(c) for c in counts)


def _open_end(sized: SizedTier) -> str:
    """Why the pessimistic end has no count, when it has none."""
    s, t = sized.sizing, sized.sizing.tier
    if s.replicas_range[2] is not None:
        return ""
    p = s.pessimistic
    why = (
        f"TTFT floor {format_seconds(p.ttft_floor_seconds)} > SLO {format_seconds(s.ttft_slo_seconds)}"
        if p.max_batch > 0
        else "no batch meets the TPOT SLO"
    )
    return f"; at efficiency {t.efficiency.bandwidth.low:g}/{t.efficiency.compute.low:g} no count meets the SLO ({why})"


def hypothesis_rows(plan: Plan, sized: SizedTier) -> list[HypothesisRow]:
    return [
        _model_row(plan, sized),
        _traffic_row(plan, sized),
        _compute_row(sized),
        _concurrency_row(sized),
        _memory_row(plan, sized),
        _batch_row(sized),
        _ttft_row(sized),
        _replicas_row(sized),
        _cost_row(plan, sized),
    ]


def _model_row(plan: Plan, sized: SizedTier) -> HypothesisRow:
    s, t = sized.sizing, sized.sizing.tier
    m = plan.model_of(t)
    return HypothesisRow(
        "Model and quantization",
        f"{t.model} ({m.parameters / 1e9:g}B), {t.weight_dtype.value} weights, {t.kv_cache_dtype.value} KV, "
        f"TP{t.tensor_parallel} on {t.gpu}",
        f"weights = {m.parameters / 1e9:g}B params x {t.weight_dtype.bytes:g} B = {format_bytes(s.weights_bytes)}; "
        f"KV/token = 2 x {m.layers} layers x {m.kv_heads} KV heads x {m.head_dim} x {t.kv_cache_dtype.bytes:g} B "
        f"= {s.kv_bytes_per_token:,.0f} B",
        "Eval delta of this precision against BF16 on the real task set",
    )


def _traffic_row(plan: Plan, sized: SizedTier) -> HypothesisRow:
    wl, t = sized.sizing.workload, sized.sizing.tier
    r = t.routing.prompt_tokens
    band = f"{r.min:,} <= prompt < {r.max:,}" if r.max else f"prompt >= {r.min:,}"
    calls = plan.workload.calls_per_request
    return HypothesisRow(
        "Traffic routed here",
        f"{wl.share:.1%} of model calls: {wl.peak_rps:.2f} req/s at peak, {wl.average_rps:.2f} on average",
        f"{plan.workload.arrival.peak_rps:g} req/s x {calls:g} calls x share {t.routing.share:g} x P({band}); "
        f"prompt mean {wl.prompt_mean:,.0f} / p95 {wl.prompt_p95:,.0f} tokens, output mean {wl.output_mean:,.0f} / "
        f"p95 {wl.output_p95:,.0f} (log-normal fit to the plan's p50/p95)",
        "Prompt and output p95 on real traffic; calls per user request",
    )


def _compute_row(sized: SizedTier) -> HypothesisRow:
    s = sized.sizing
    eff = s.expected.compute_efficiency
    return HypothesisRow(
        "Compute at peak",
        f"{s.gpus_of_pure_compute:.1f} GPUs of pure compute",
        f"(uncached prefill {s.uncached_prefill_tokens_per_second:,.0f} + decode {s.decode_tokens_per_second:,.0f} "
        f"tokens/s) x 2 x params + attention = {s.compute_flops_per_second / 1e15:.2f} PFLOP/s, at {eff:.0%} of "
        f"peak; without prefix caching {s.compute_flops_per_second_without_prefix_cache / 1e15:.2f} PFLOP/s",
        f"Prefix-cache hit rate on real traffic (plan: {s.workload.prefix_hit_rate:.0%})",
    )


def _concurrency_row(sized: SizedTier) -> HypothesisRow:
    s = sized.sizing
    return HypothesisRow(
        "Concurrency (Little's law)",
        f"{s.concurrency_at_peak:,.0f} sequences in flight at peak",
        f"L = {s.workload.peak_rps:.2f} req/s x ({format_seconds(s.ttft_slo_seconds)} + "
        f"{s.workload.output_mean:,.0f} x {format_seconds(s.tpot_slo_seconds)}) = {s.workload.peak_rps:.2f} x "
        f"{s.time_in_system_seconds:.2f} s",
        "Burstiness: peak-to-average above what the plan assumes",
    )


def _memory_row(plan: Plan, sized: SizedTier) -> HypothesisRow:
    s, t = sized.sizing, sized.sizing.tier
    tp, hbm = t.tensor_parallel, plan.gpu(t.gpu).hbm_bytes
    return HypothesisRow(
        "KV-cache memory",
        f"{format_bytes(max(s.kv_budget_bytes, 0))} per replica = {s.kv_budget_tokens:,.0f} tokens",
        f"{tp} x {format_bytes(hbm)} x {t.gpu_memory_utilization:g} utilization - weights "
        f"{format_bytes(s.weights_bytes)} - overhead {tp} x {format_bytes(t.runtime_overhead_per_gpu_bytes)} "
        f"= {format_bytes(s.kv_budget_bytes)}; at peak the tier holds {format_bytes(s.kv_bytes_at_peak_mean)} "
        f"(mean contexts, prefix once) to {format_bytes(s.kv_bytes_at_peak_p95)} (all at p95)",
        "KV occupancy and preemption rate at p95 context",
    )


def _batch_row(sized: SizedTier) -> HypothesisRow:
    s = sized.sizing
    p = s.expected
    return HypothesisRow(
        "Decode step and batch",
        f"batch {p.max_batch:g} per replica: p95 TPOT {format_seconds(p.tpot_p95_seconds)} against "
        f"{format_seconds(s.tpot_slo_seconds)} ({p.batch_constraint} binds); mean {format_seconds(p.tpot_seconds)}",
        "step = max(weights read, GEMM FLOPs) + attention + all-reduce + overhead; decode-only step "
        f"{format_seconds(p.decode_step_seconds)}, a step carrying a prompt chunk "
        f"{format_seconds(p.chunk_step_seconds)}"
        f" ({p.chunk_share:.0%} of steps; B x {s.workload.uncached_prompt_mean:,.0f} prompt tokens per "
        f"{s.workload.output_mean:,.0f} - 1 + chunks steps); p95 TPOT over requests: the chunk steps of the "
        "prompts prefilled while each decodes (compound Poisson over the prompt and output mixes); "
        f"{p.requests_per_second_per_replica:.2f} req/s per replica = B / (prefill + (output - 1) x TPOT), where "
        "prompts queued back to back share full steps and a request's first gaps ride the chunk steps of the "
        "prompts queued behind its own",
        "Measured saturation point per replica; TP scaling against the vendor chart",
    )


def _ttft_row(sized: SizedTier) -> HypothesisRow:
    s = sized.sizing
    p = s.expected
    t = p.ttft
    verdict = "meets" if t.seconds <= s.ttft_slo_seconds else "misses"
    return HypothesisRow(
        "TTFT",
        f"p95 about {format_seconds(t.seconds)} ({verdict} {format_seconds(s.ttft_slo_seconds)})",
        f"prefill of the p95 uncached prompt ({s.workload.uncached_prompt_p95:,.0f} tokens) "
        f"{format_seconds(t.prefill_p95_seconds)} + the step in flight {format_seconds(t.step_wait_p95_seconds)}"
        f" + prompts ahead p95 {format_seconds(t.prefill_wait_p95_seconds)} (M/G/1 on prefill over the prompt mix)"
        f" + queue wait p95 {format_seconds(t.wait_p95_seconds)} (M/M/c in each replica's own queue: c = "
        f"{t.slots:,} slots, max_num_seqs or the sequences whose KV fits, at {s.workload.peak_rps:.2f} req/s / "
        f"{max(p.replicas, 1)} replicas)",
        "TTFT p50/p95/p99 at 1x, 2x and 3x expected peak",
    )


def _replicas_row(sized: SizedTier) -> HypothesisRow:
    s, t = sized.sizing, sized.sizing.tier
    low, mid, high = s.replicas_range
    return HypothesisRow(
        "Replicas at peak",
        f"{mid} (range {format_range(low, high)}) = {mid * t.tensor_parallel} GPUs; the plan says "
        f"{t.replicas.planned}{_open_end(sized)}",
        f"max(ceil({s.workload.peak_rps:.2f} / {s.expected.requests_per_second_per_replica:.2f}) = "
        f"{s.expected.replicas_for_throughput} for throughput, TTFT); range from efficiency "
        f"{t.efficiency.bandwidth.high:g}/{t.efficiency.compute.high:g} to "
        f"{t.efficiency.bandwidth.low:g}/{t.efficiency.compute.low:g} (bandwidth/compute)",
        f"Cold start ({format_seconds(t.cold_start_seconds)} assumed) against the morning ramp",
    )


def _cost_row(plan: Plan, sized: SizedTier) -> HypothesisRow:
    c, t = sized.cost, sized.sizing.tier
    hours = plan.workload.arrival.peak_hours_per_day
    per_request = (
        f"${c.cost_per_request_usd:.5f} per request" if c.requests_per_month else "no routed requests (standby)"
    )
    return HypothesisRow(
        "Cost",
        f"${c.cost_per_hour_usd_at_peak:,.2f}/h at peak, ${c.cost_per_month_usd:,.0f}/month, {per_request}",
        f"{c.replicas_at_peak} x {t.tensor_parallel} GPUs x ${c.gpu_hour_usd:.2f} for {hours:g} h + "
        f"{c.replicas_at_average} x {t.tensor_parallel} GPUs for {24 - hours:g} h = {c.gpu_hours_per_day:,.0f} "
        "GPU-h/day x 30 days",
        "Cost per completed request at average and peak traffic",
    )


def findings(sized: SizedTier) -> list[str]:
    """What the sizing says about the plan itself: each a sentence a design review should hear."""
    s, t = sized.sizing, sized.sizing.tier
    low, mid, high = s.replicas_range
    out = []
    if s.standby:
        out.append("standby tier: no routed traffic; sized for its capacity only, costed at its minimum")
    elif t.replicas.planned < mid:
        out.append(
            f"under-provisioned: the plan has {t.replicas.planned} replicas at peak, sizing expects {mid} "
            f"(range {format_range(low, high)}), bound by {s.expected.binding_constraint}{_open_end(sized)}"
        )
    elif high is not None and t.replicas.planned > high:
        out.append(f"over-provisioned: the plan has {t.replicas.planned} replicas, sizing needs at most {high}")
    if t.replicas.max < mid and not s.standby:
        out.append(f"replicas.max {t.replicas.max} is below the {mid} replicas sizing expects at peak")
    if s.expected.max_batch == 0:
        out.append(
            f"TPOT SLO unmet even at batch 1 ({format_seconds(s.expected.tpot_p95_seconds)} at p95: decodes stall "
            "behind the prompts' chunk steps); counted at batch 1, no replica count meets it: raise TP, route "
            "long prompts elsewhere, or relax the TPOT SLO"
        )
    # the floor, not `ttft_feasible`: a tier no batch holds to the TPOT SLO is not TTFT-feasible either
    if s.expected.ttft_floor_seconds > s.ttft_slo_seconds and not s.standby:
        out.append(
            "TTFT infeasible: the p95 prompt's prefill and the step in flight alone take "
            f"{format_seconds(s.expected.ttft_floor_seconds)} on TP{t.tensor_parallel} "
            f"(SLO {format_seconds(s.ttft_slo_seconds)}); no replica count fixes it: "
            "route long prompts elsewhere, raise TP, or relax the TTFT SLO"
        )
    return out
