"""Every path of a plan through the surface decision: each online tier, with its planned volume and breakeven,
and each batch job. A job the plan runs on an online tier or its own pool is declared dedicated: the walk
sends offline work to batch, so that shows as the seed's "most common sizing mistake"."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from monitor.plan.batch import BatchJob
from monitor.plan.model import Plan
from monitor.sizing.breakeven import Breakeven, tier_breakeven
from monitor.sizing.plan_sizing import PlanSizing, SizedTier
from monitor.sizing.surface import PathFacts, SurfaceDecision, walk

__all__ = ["GPURange", "breakeven_to_dict", "decision_to_dict", "gpu_ranges", "plan_decisions"]


def plan_decisions(plan: Plan, sizing: PlanSizing) -> list[tuple[SurfaceDecision, Breakeven | None]]:
    out = []
    for sized in sizing.tiers:
        t = sized.sizing.tier
        ttft, tpot = plan.slo_for(t)
        facts = PathFacts(
            name=t.name,
            offline=False,
            why_offline_or_not=f"online path: users wait on TTFT p95 {ttft * 1e3:g} ms and TPOT p95 {tpot * 1e3:g} ms",
            breakeven=tier_breakeven(plan, sized),
            declared=t.surface,
        )
        out.append((walk(plan.constraints, facts), facts.breakeven))
    return out + [(walk(plan.constraints, _job_facts(job)), None) for job in plan.batch_jobs]


def _job_facts(job: BatchJob) -> PathFacts:
    w = job.window
    hours = w.hours_to_deadline
    why = f"{job.name} may run {w.start}-{w.end} and must be done {hours:g} h after it starts"
    why += ": it tolerates hours" if hours >= 1 else ": under an hour is not offline work"
    declared = {"batch-api": "batch", "pool": "dedicated"}.get(job.runs_on, "dedicated")
    return PathFacts(job.name, offline=hours >= 1, why_offline_or_not=why, declared=declared)


def breakeven_to_dict(b: Breakeven) -> dict[str, Any]:
    return {
        "tokens_per_month": b.tokens_per_month,
        "serverless_usd_per_million_tokens": b.serverless_usd_per_million,
        "serverless_usd_per_month": b.serverless_usd_per_month,
        "dedicated_usd_per_month": b.dedicated_usd_per_month,
        "breakeven_tokens_per_month": b.breakeven_tokens_per_month,
        "effective_dedicated_usd_per_million_tokens": b.effective_usd_per_million,
        "above_breakeven": b.above,
        "formula": b.lines(),
    }


def decision_to_dict(d: SurfaceDecision, b: Breakeven | None) -> dict[str, Any]:
    return {
        "path": d.path,
        "surface": d.surface,
        "label": d.label,
        "byoc": d.byoc,
        "fine_tune": d.fine_tune,
        "region": d.region or None,
        "declared": d.declared or None,
        "mismatch": d.mismatch,
        "branches": [asdict(br) for br in d.branches],
        "breakeven": breakeven_to_dict(b) if b is not None else None,
    }


@dataclass(frozen=True)
class GPURange:
    """The seed's "range the GPU count rather than quoting one number: the benchmark picks the point"."""

    tier: str
    low: int | None  # None: no count meets the SLO at that end of the efficiencies (TierSizing.replicas_range)
    expected: int
    high: int | None
    benchmark: str


def gpu_ranges(sizing: PlanSizing) -> list[GPURange]:
    return [_gpu_range(sizing.plan, s) for s in sizing.tiers if not s.sizing.standby]


def _gpu_range(plan: Plan, sized: SizedTier) -> GPURange:
    s, t = sized.sizing, sized.sizing.tier
    low, mid, high = s.replicas_range
    tp = t.tensor_parallel
    ttft, tpot = plan.slo_for(t)
    benchmark = (
        f"benchmark TP{tp} replicas of {t.model} on {t.gpu} with the real prompt and output distributions (prompt "
        f"p95 {s.workload.prompt_p95:,.0f} tokens) at 1x, 2x and 3x the expected peak: the requests/s one replica "
        f"sustains with TTFT p95 under {ttft:g} s and TPOT p95 under {tpot * 1e3:g} ms picks the point in the range"
    )
    return GPURange(t.name, _times(low, tp), mid * tp, _times(high, tp), benchmark)


def _times(count: int | None, tp: int) -> int | None:
    return None if count is None else count * tp
