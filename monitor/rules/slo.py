"""Multi-window, multi-burn-rate SLO rules per tier: bad-fraction recording rules, then burn alerts.

Per tier and per window of the SRE workbook policy (`monitor.slo.SRE_POLICY`: 1h/5m x14.4 and 6h/30m x6 page,
1d/2h x3 and 3d/6h x1 ticket), three bad fractions are recorded:

- TTFT: requests whose time to first token is above the tier's p95 threshold, over all requests;
- TPOT: output tokens whose inter-token latency is above the threshold, over all tokens (the per-token
  histogram, `inter_token_latency_seconds` or its old name `time_per_output_token_seconds`);
- availability: requests finished with error or abort over all finished, plus the share of the tier's
  replicas whose scrape is down (averaged over the window).

A latency SLO "p95 under T" is the objective "95% of requests (tokens) within T": budget 5%. An alert fires
when both the long and the short window burn faster than the pair's factor. Availability alerts are held to
the plan's business hours when `availability_window: business_hours`: PromQL has no timezones, so the gate
is planwatch's own `planwatch_business_open` gauge. Failure mode: while planwatch is down or not scraped,
that gauge is absent and availability alerts cannot fire; PlanwatchDown / PlanwatchAbsent
(rules/alerts-planwatch.yml) page instead, so the outage is not silence.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from monitor import queries as q
from monitor.plan.model import Tier
from monitor.rules.buckets import (
    ITL_BOUNDS,
    ITL_BOUNDS_BEFORE_15202,
    TTFT_BOUNDS,
    TTFT_BOUNDS_BEFORE_15202,
    Bracket,
    latency_bracket,
)
from monitor.rules.context import Context
from monitor.rules.model import AlertRule, Group, RecordingRule, held_over
from monitor.rules.promql import number, selector_matchers, share_above
from monitor.rules.runbooks import runbook
from monitor.slo import SRE_POLICY, BurnWindow, budget_spent, latency_objective
from monitor.triggers.catalog import trigger_def
from monitor.units import parse_duration

__all__ = [
    "BUSINESS_OPEN",
    "DOWN_LOOKBACK",
    "DOWN_RATIO",
    "SLO_KINDS",
    "SLOKind",
    "slo_groups",
    "slo_windows",
]

# planwatch's gauge: 1 inside the plan's business hours now (judged in the plan's timezone).
BUSINESS_OPEN = "planwatch_business_open"
# A replica counts as down when it exported vLLM series within this lookback and its scrape fails now.
DOWN_LOOKBACK = "1h"
DOWN_RATIO = "tier:vllm_replicas_down:ratio"


@dataclass(frozen=True)
class SLOKind:
    key: str  # as the trigger ids spell it: ttft, tpot, availability
    title: str
    alert: str
    record: str  # recorded series prefix; the window is appended
    what: str  # what is counted, for descriptions

    def trigger(self, severity: str) -> str:
        return f"{self.key}-burn-{severity}" if self.key == "availability" else f"{self.key}-slo-burn-{severity}"


SLO_KINDS = (
    SLOKind("ttft", "TTFT", "TTFTErrorBudgetBurn", "tier:vllm_time_to_first_token_seconds:over_slo_ratio",
            "requests"),
    SLOKind("tpot", "TPOT", "TPOTErrorBudgetBurn", "tier:vllm_inter_token_latency_seconds:over_slo_ratio",
            "output tokens"),
    SLOKind("availability", "Availability", "AvailabilityErrorBudgetBurn", "tier:vllm_request_unavailable:ratio",
            "requests"),
)  # fmt: skip


def slo_windows() -> tuple[str, ...]:
    """Every window the policy reads, shortest first: 5m, 30m, 1h, 2h, 6h, 1d, 3d."""
    windows = {w for p in SRE_POLICY for w in (p.long, p.short)}
    return tuple(sorted(windows, key=parse_duration))


def slo_groups(ctx: Context) -> tuple[Group, ...]:
    """One group per plan: recording rules first (rules in a group run in order), then the alerts."""
    rules: list[RecordingRule | AlertRule] = []
    for tier in ctx.plan.tiers:
        rules.extend(_recording(ctx, tier))
    for kind in SLO_KINDS:
        for tier in ctx.plan.tiers:
            rules.extend(_alerts(ctx, tier, kind))
    return (Group(f"planwatch-{ctx.plan.name}-slo", tuple(rules)),)


def _brackets(ctx: Context, tier: Tier) -> tuple[Bracket, Bracket]:
    ttft, tpot = ctx.plan.slo_for(tier)
    return (
        latency_bracket(ttft, TTFT_BOUNDS, TTFT_BOUNDS_BEFORE_15202),
        latency_bracket(tpot, ITL_BOUNDS, ITL_BOUNDS_BEFORE_15202),
    )


def _recording(ctx: Context, tier: Tier) -> Iterator[RecordingRule]:
    """The down share (instant), then per window the three bad fractions, labelled with tier and plan."""
    sel, labels = ctx.selector(tier), ctx.labels(tier.name)
    matchers = selector_matchers(sel)
    ttft, tpot = _brackets(ctx, tier)
    # Bounds only the current list has: models without them count neither as good nor in the total.
    ttft_guard, tpot_guard = ttft.upper not in TTFT_BOUNDS_BEFORE_15202, tpot.upper not in ITL_BOUNDS_BEFORE_15202
    down, up = q.REPLICAS_DOWN.for_tier(sel, window=DOWN_LOOKBACK), q.REPLICAS_UP.for_tier(sel, window=DOWN_LOOKBACK)
    yield RecordingRule(DOWN_RATIO, f"({down}) / (({up}) + ({down}))", labels)
    ttft_kind, tpot_kind, availability = SLO_KINDS
    for w in slo_windows():
        ttft_share = share_above(q.TTFT_BUCKETS, matchers, w, ttft, ttft_guard)
        tpot_share = share_above(q.ITL_BUCKETS, matchers, w, tpot, tpot_guard)
        # No finished request in the window (NaN) counts as no error; replicas down still count.
        errors = f"({q.ERROR_RATIO.for_tier(sel, window=w)} >= 0 or on () vector(0))"
        down_share = f"avg_over_time({ctx.recorded(DOWN_RATIO, tier.name)}[{w}])"
        yield RecordingRule(f"{ttft_kind.record}_{w}", ttft_share, labels)
        yield RecordingRule(f"{tpot_kind.record}_{w}", tpot_share, labels)
        yield RecordingRule(f"{availability.record}_{w}", f"clamp_max({errors} + on () {down_share}, 1)", labels)


def _objective(ctx: Context, kind: SLOKind) -> float:
    return ctx.plan.slo.availability if kind.key == "availability" else latency_objective(0.95)


def _alerts(ctx: Context, tier: Tier, kind: SLOKind) -> Iterator[AlertRule]:
    objective = _objective(ctx, kind)
    gate = ""
    if kind.key == "availability" and ctx.plan.slo.availability_window == "business_hours":
        gate = f" and on () ({BUSINESS_OPEN} == 1)"
    for w in SRE_POLICY:
        burn = [f"{ctx.recorded(f'{kind.record}_{x}', tier.name)} / (1 - {number(objective)}) > {number(w.factor)}"
                for x in (w.long, w.short)]  # fmt: skip
        trigger = kind.trigger(w.severity)
        yield AlertRule(
            alert=kind.alert,
            expr=held_over(f"{burn[0]} and {burn[1]}{gate}", trigger_def(trigger).hold_seconds, ctx.hold_scale),
            hold=None,
            labels={
                "severity": w.severity,
                "trigger": trigger,
                **ctx.labels(tier.name),
                "long": w.long,
                "short": w.short,
            },
            annotations=_annotations(ctx, tier, kind, w, objective, bool(gate)),
        )


def _what_is_bad(ctx: Context, tier: Tier, kind: SLOKind) -> str:
    ttft, tpot = _brackets(ctx, tier)
    if kind.key == "availability":
        return "requests that failed (finished with error or abort, plus the share of replicas down)"
    b = ttft if kind.key == "ttft" else tpot
    where = "a bucket bound" if b.exact else f"interpolated between the {_s(b.lower)} and {_s(b.upper)} buckets"
    return f"{kind.what} with {kind.title} above {_s(b.threshold)} (the tier's p95 SLO; {where})"


def _pct(share: float) -> str:
    """0.05 -> `5%`, 0.999 -> `99.9%`."""
    return f"{share * 100:.6g}%"


def _s(seconds: float | None) -> str:
    """1.2 -> `1.2 s`, 0.05 -> `50 ms`."""
    if seconds is None:
        return "+Inf"
    return f"{seconds * 1000:g} ms" if seconds < 1 else f"{seconds:g} s"


def _annotations(
    ctx: Context, tier: Tier, kind: SLOKind, w: BurnWindow, objective: float, gated: bool
) -> dict[str, str]:
    budget = 1 - objective
    spent = budget_spent(w.factor, w.long)
    hours = (
        " Judged in business hours only (planwatch_business_open == 1, from the planwatch advisor): while planwatch "
        "is down this alert cannot fire, and PlanwatchDown or PlanwatchAbsent pages instead."
        if gated
        else ""
    )
    description = (
        f"Tier {tier.name} of plan {ctx.plan.name}: {_what_is_bad(ctx, tier, kind)} used the {_pct(budget)} error "
        f'budget (objective {_pct(objective)}) {{{{ printf "%.1f" $value }}}}x faster than sustainable over '
        f"{w.long}, and more than {number(w.factor)}x over {w.short} too. A burn of {number(w.factor)}x spends "
        f"{spent:.0%} of a 30-day budget in {w.long}.{hours}"
    )
    return {
        "summary": f'{kind.title} error budget of tier {tier.name} burning {{{{ printf "%.1f" $value }}}}x '
        f"({w.long}/{w.short} windows, {w.severity})",
        "description": description,
        "runbook": runbook(kind.trigger(w.severity)),
    }
