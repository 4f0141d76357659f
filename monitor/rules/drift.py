"""Drift alerts: the revisit-the-design triggers PromQL can express, with the plan's numbers baked in.

Each alert mirrors one trigger of `monitor.triggers.catalog`: the same threshold as the Python drift
(`monitor.rules.thresholds`), held over the trigger's hold time on Prometheus's history as planwatch judges it
(`monitor.rules.model.held_over`, no `for:`), labels {severity, tier, trigger} plus the plan's name, and the
trigger's runbook. The observed side is the catalog query the advisor runs, over
the trigger's window:

    prompt-p95-above-plan   tier: PROMPT_TOKENS_P95 over 1h; fleet: share of prompts above the fleet
                            threshold > 5% (same as "fleet p95 above it", see below), both on >= 50 requests
    prefix-hit-below-plan   tier: PREFIX_CACHE_HIT_RATIO over 1h, on >= 50 requests
    traffic-above-peak      tier: PEAK_REQUEST_RATE (highest 5-minute rate) over 1h, counted at the plan's
                            calls per request when the gateway reports calls per request
    burstier-than-planned   fleet: highest 1-minute request rate over 1d / mean over 1d (recorded rates)
    kv-pressure             tier: KV_USAGE_MAX >= 0.95 and PREEMPTION_RATE > 0 over 15m
    tool-call-fanout        tier: CALLS_PER_USER_REQUEST over 1h

The plan's prompt numbers describe the whole product; routing cuts them into per-tier bands, so a shift to
longer prompts can land in the long-context pool whose own band does not move. The fleet rule catches it:
the fleet p95 (Python: `monitor.histogram.merged_quantile` over every tier's buckets) exceeds T exactly when
more than 5% of the prompts are longer than T, each tier's count at T interpolated in its own buckets, so the
tiers' different bucket sets (max_model_len) never have to be summed bucket by bucket.

Not expressible in PromQL, left to the advisor (alerts-planwatch.yml): throughput-below-model (the sizing
model at the observed batch), cold-start-too-slow (the forecast ramp), the two eval triggers (posted evals).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from monitor import queries as q
from monitor.plan.model import FLEET, Tier
from monitor.rules.buckets import bracket
from monitor.rules.context import PLAN_LABEL, Context
from monitor.rules.model import AlertRule, Group, RecordingRule, held_over
from monitor.rules.promql import count_above, count_total, fleet_sum, number, selector_matchers
from monitor.rules.runbooks import runbook
from monitor.rules.thresholds import KV_FULL_RATIO, MIN_REQUESTS, DriftThreshold, fleet_thresholds, tier_thresholds
from monitor.sizing.buckets import build_1_2_5_buckets
from monitor.triggers.catalog import trigger_def
from monitor.units import parse_duration

__all__ = ["FLEET_RATE_1M", "TIER_RATE_1M", "alert_name", "drift_groups", "drift_notes"]

TIER_RATE_1M = "tier:vllm_request_success:rate_1m"
FLEET_RATE_1M = "fleet:vllm_request_success:rate_1m"
_P95 = 0.95
_ACRONYMS = {"kv": "KV", "ttft": "TTFT", "tpot": "TPOT", "slo": "SLO", "p95": "P95"}


def alert_name(trigger_id: str) -> str:
    """`prompt-p95-above-plan` -> `PromptP95AbovePlan`, `kv-pressure` -> `KVPressure`."""
    return "".join(_ACRONYMS.get(part, part.capitalize()) for part in trigger_id.split("-"))


def drift_groups(ctx: Context) -> tuple[Group, ...]:
    thresholds = tier_thresholds(ctx.plan)
    fleet = fleet_thresholds(ctx.plan)
    this_plan = f"{{{PLAN_LABEL}={q.quote(ctx.plan.name)}}}"
    rules: list[RecordingRule | AlertRule] = [
        *(RecordingRule(TIER_RATE_1M, q.REQUEST_RATE.for_tier(ctx.selector(t), window="1m"), ctx.labels(t.name))
          for t in ctx.plan.tiers),
        RecordingRule(FLEET_RATE_1M, f"sum by ({PLAN_LABEL}) ({TIER_RATE_1M}{this_plan})"),
    ]  # fmt: skip
    for tier in ctx.plan.tiers:
        rules.extend(_tier_alerts(ctx, tier, thresholds[tier.name]))
    rules.extend(_fleet_alerts(ctx, fleet))
    return (Group(f"planwatch-{ctx.plan.name}-drift", tuple(rules)),)


def drift_notes(ctx: Context) -> tuple[str, ...]:
    """Why a rule a reader might expect is not in the file."""
    notes = [
        "throughput-below-model, cold-start-too-slow, quantization-quality-regression and fallback-fails-eval: "
        "PromQL cannot express them (the sizing model at the observed batch, the forecast ramp, posted evals); "
        "planwatch evaluates them and PlanwatchTriggerActive (alerts-planwatch.yml) alerts"
    ]
    thresholds = tier_thresholds(ctx.plan)
    for tier in ctx.plan.tiers:
        t = thresholds[tier.name]
        if _prompt_dead(ctx, tier, t["prompt_p95"]):
            last = _token_bounds(ctx, tier)[-1]
            notes.append(
                f"prompt-p95-above-plan on tier {tier.name}: its threshold {t['prompt_p95'].value:,.0f} tokens is "
                f"not below the last prompt bucket bound {last:,.0f} (max_model_len), so the observed p95 can "
                "never exceed it; the fleet rule covers long prompts"
            )
        if not t["prefix_hit_rate"].can_breach:
            notes.append(f"prefix-hit-below-plan on tier {tier.name}: the plan expects no prefix hits")
    fleet = fleet_thresholds(ctx.plan)["prompt_p95"]
    if fleet.value >= _union_bounds(ctx)[-1]:
        notes.append("prompt-p95-above-plan on the fleet: the threshold is above every tier's last bucket bound")
    return tuple(notes)


def _token_bounds(ctx: Context, tier: Tier) -> tuple[float, ...]:
    return build_1_2_5_buckets(tier.max_model_len or ctx.plan.model_of(tier).max_context)


def _union_bounds(ctx: Context) -> tuple[float, ...]:
    return build_1_2_5_buckets(max(t.max_model_len or ctx.plan.model_of(t).max_context for t in ctx.plan.tiers))


def _prompt_dead(ctx: Context, tier: Tier, t: DriftThreshold) -> bool:
    return t.value >= _token_bounds(ctx, tier)[-1]


def _enough(ctx: Context, tier: Tier, window: str) -> str:
    requests = q.REQUEST_RATE.for_tier(ctx.selector(tier), window=window)
    return f" and on () ({requests} * {number(parse_duration(window))} >= {MIN_REQUESTS})"


def _alert(ctx: Context, trigger: str, tier_name: str, expr: str, summary: str, description: str) -> AlertRule:
    d = trigger_def(trigger)
    shown = f"held {_held(d.hold_seconds)}" if d.hold_seconds > 0 else "no hold time"
    return AlertRule(
        alert=alert_name(trigger),
        expr=held_over(expr, d.hold_seconds, ctx.hold_scale),
        hold=None,
        labels={"severity": d.severity.value, "trigger": trigger, **ctx.labels(tier_name)},
        annotations={
            "summary": summary,
            "description": f"{description} Trigger {trigger} ({d.severity.value}, {shown}).",
            "runbook": runbook(trigger),
        },
    )


def _held(seconds: float) -> str:
    return f"{seconds / 3600:g}h" if seconds >= 3600 else f"{seconds / 60:g}m"


def _tier_alerts(ctx: Context, tier: Tier, t: Mapping[str, DriftThreshold]) -> Iterator[AlertRule]:
    sel = ctx.selector(tier)
    yield from _prompt(ctx, tier, t["prompt_p95"])
    if t["prefix_hit_rate"].can_breach:
        prefix, w = t["prefix_hit_rate"], trigger_def("prefix-hit-below-plan").window
        yield _alert(
            ctx, "prefix-hit-below-plan", tier.name,
            f"{q.PREFIX_CACHE_HIT_RATIO.for_tier(sel, window=w)} {prefix.comparison()}{_enough(ctx, tier, w)}",
            f"Prefix cache of tier {tier.name} hits {{{{ $value | humanizePercentage }}}} of prompt tokens",
            f"Prefix-cache hits over queries (tokens) of tier {tier.name} over the last {w}: "
            f"{{{{ $value | humanizePercentage }}}}, below {prefix.value:.1%} = the plan's {prefix.plan:.1%} "
            f"x (1 - breach tolerance {number(prefix.breach)}). Judged on at least {MIN_REQUESTS} finished requests.",
        )  # fmt: skip
    if tier.routing.share > 0:  # a standby tier (the fallback) takes traffic only in degraded mode: no planned peak
        yield _peak(ctx, tier, t["peak_rate"])
    kv_window = trigger_def("kv-pressure").window
    kv = q.KV_USAGE_MAX.for_tier(sel, window=kv_window)
    yield _alert(
        ctx, "kv-pressure", tier.name,
        f"{kv} >= {number(KV_FULL_RATIO)} and on () {q.PREEMPTION_RATE.for_tier(sel, window=kv_window)} > 0",
        f"KV cache of tier {tier.name} {{{{ $value | humanizePercentage }}}} full with preemptions",
        f"The fullest KV cache of tier {tier.name} over the last {kv_window} reached {{{{ $value | humanizePercentage "
        f"}}}} (at least {KV_FULL_RATIO:.0%}) while requests were preempted (rate(vllm:num_preemptions_total) > 0): "
        "sequences are evicted and recomputed.",
    )  # fmt: skip
    calls, w = t["calls_per_request"], trigger_def("tool-call-fanout").window
    yield _alert(
        ctx, "tool-call-fanout", tier.name,
        f"{q.CALLS_PER_USER_REQUEST.for_tier(sel, window=w)} {calls.comparison()}",
        f"{{{{ $value | humanize }}}} model calls per user request on tier {tier.name}",
        f"Gateway model calls over user requests of tier {tier.name} over the last {w}: {{{{ $value | humanize }}}}, "
        f"above {calls.value:.3g} = the plan's {calls.plan:g} x (1 + breach tolerance {number(calls.breach)}).",
    )  # fmt: skip


def _prompt(ctx: Context, tier: Tier, t: DriftThreshold) -> Iterator[AlertRule]:
    if _prompt_dead(ctx, tier, t):
        return
    w = trigger_def("prompt-p95-above-plan").window
    p95 = q.PROMPT_TOKENS_P95.for_tier(ctx.selector(tier), window=w)
    yield _alert(
        ctx, "prompt-p95-above-plan", tier.name, f"{p95} {t.comparison()}{_enough(ctx, tier, w)}",
        f"Prompt p95 of tier {tier.name} is {{{{ $value | humanize }}}} tokens, above plan",
        f"95th percentile of vllm:request_prompt_tokens of tier {tier.name} (model {{{{ $labels.model_name }}}}) over "
        f"the last {w}: {{{{ $value | humanize }}}} tokens, above {t.value:,.0f} = the plan's {t.plan:,.0f} tokens "
        f"({t.note}) x (1 + breach tolerance {number(t.breach)}). Judged on at least {MIN_REQUESTS} finished "
        "requests.",
    )  # fmt: skip


def _peak(ctx: Context, tier: Tier, t: DriftThreshold) -> AlertRule:
    w = trigger_def("traffic-above-peak").window
    peak = q.PEAK_REQUEST_RATE.with_window(w, step="5m").for_tier(ctx.selector(tier))
    calls = number(ctx.plan.workload.calls_per_request)
    observed_calls = q.CALLS_PER_USER_REQUEST.for_tier(ctx.selector(tier), window=w)
    expr = f"{peak} * {calls} / on () ({observed_calls} > 0 or on () vector({calls})) {t.comparison()}"
    return _alert(
        ctx, "traffic-above-peak", tier.name, expr,
        f"Tier {tier.name} peaked at {{{{ $value | humanize }}}} req/s, above the planned peak",
        f"Highest 5-minute request rate of tier {tier.name} over the last {w}, counted at the plan's {calls} model "
        f"calls per user request (scaled by the gateway's calls per request when it reports them): "
        f"{{{{ $value | humanize }}}} req/s, above {t.value:.3g} = the tier's planned peak {t.plan:.3g} req/s "
        f"x (1 + breach tolerance {number(t.breach)}).",
    )  # fmt: skip


def _fleet_alerts(ctx: Context, fleet: Mapping[str, DriftThreshold]) -> Iterator[AlertRule]:
    burst, w = fleet["peak_to_average"], trigger_def("burstier-than-planned").window
    series = f"{FLEET_RATE_1M}{{{PLAN_LABEL}={q.quote(ctx.plan.name)}}}"
    yield _alert(
        ctx, "burstier-than-planned", FLEET,
        f"max_over_time({series}[{w}]) / avg_over_time({series}[{w}]) {burst.comparison()}",
        f"Traffic of plan {ctx.plan.name} peaks at {{{{ $value | humanize }}}}x its average",
        f"Highest 1-minute request rate over the mean rate of all tiers, over the last {w}: {{{{ $value | humanize "
        f"}}}}x, above {burst.value:.3g} = the plan's peak/average {burst.plan:.3g} x (1 + breach tolerance "
        f"{number(burst.breach)}). Recorded rates ({FLEET_RATE_1M}): the window fills from when these rules were "
        "loaded.",
    )  # fmt: skip
    yield from _fleet_prompt(ctx, fleet["prompt_p95"])


def _fleet_prompt(ctx: Context, t: DriftThreshold) -> Iterator[AlertRule]:
    if t.value >= _union_bounds(ctx)[-1]:
        return
    w = trigger_def("prompt-p95-above-plan").window
    above, total = [], []
    for tier in ctx.plan.tiers:
        b = bracket(t.value, _token_bounds(ctx, tier))
        matchers = selector_matchers(ctx.selector(tier))
        above.append((tier.name, count_above(q.PROMPT_TOKENS_BUCKETS, matchers, w, b)))
        total.append((tier.name, count_total(q.PROMPT_TOKENS_BUCKETS, matchers, w, b)))
    share, requests = f"{fleet_sum(above)} / {fleet_sum(total)}", fleet_sum(total)
    seconds = number(parse_duration(w))
    yield _alert(
        ctx, "prompt-p95-above-plan", FLEET,
        f"{share} > (1 - {number(_P95)}) and on () ({requests} * {seconds} >= {MIN_REQUESTS})",
        f"{{{{ $value | humanizePercentage }}}} of prompts are longer than {t.value:,.0f} tokens: fleet p95 above plan",
        f"Over the last {w}, {{{{ $value | humanizePercentage }}}} of the prompts of all tiers were longer than "
        f"{t.value:,.0f} tokens (each tier's count interpolated in its own buckets), more than 5%: the fleet's "
        f"prompt p95 is above {t.value:,.0f} = the plan's {t.plan:,.0f} tokens ({t.note}) x (1 + breach tolerance "
        f"{number(t.breach)}). Judged on at least {MIN_REQUESTS} finished requests.",
    )  # fmt: skip
