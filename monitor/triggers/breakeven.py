"""The surface decision held against production: is a path's observed volume still on the side of the
dedicated/serverless breakeven its surface was chosen for? (qualification seed, Step 7 and section 4)

Dedicated tier: the observed token rate priced per token against the GPU-hours it actually held, both over
the long window. Serverless tier: the same observed volume priced per token against what sizing says the tier
would cost dedicated. Either check needs the plan's serverless price; unknown volume or GPUs is no finding.
Volume is judged only over a week or more: a shorter window sees a weekend or a peak day, not the month the
breakeven is about (as burstiness is judged only over the plan's week).
"""

from __future__ import annotations

from monitor.observe.model import Measurement
from monitor.plan.model import FLEET
from monitor.sizing.breakeven import Breakeven, tier_breakeven
from monitor.triggers.model import Evidence, TriggerInputs
from monitor.units import SECONDS_PER_DAY, SECONDS_PER_MONTH, parse_duration

__all__ = ["dedicated_below_breakeven", "serverless_above_breakeven"]

_HOURS_PER_MONTH = SECONDS_PER_MONTH / 3600.0
_A_WEEK = 7 * SECONDS_PER_DAY


def _over_a_week(m: Measurement) -> float | None:
    """The value, if it was measured over a week or more."""
    try:
        return m.value if m.window and parse_duration(m.window) >= _A_WEEK else None
    except ValueError:
        return None


def dedicated_below_breakeven(inputs: TriggerInputs, tier: str) -> Evidence | None:
    plan = inputs.plan
    price = plan.costs.serverless_usd_per_million_tokens
    if tier == FLEET or price is None or plan.tier(tier).surface != "dedicated":
        return None
    if plan.tier(tier).routing.share == 0:  # a standby (fallback) tier is held idle on purpose
        return None
    obs, t = inputs.tiers[tier].observation, plan.tier(tier)
    tokens, gpus = _over_a_week(obs.tokens_rate_long), _over_a_week(obs.gpus_mean_long)
    gpu_hour = plan.costs.gpu_hour_usd.get(t.gpu)
    if tokens is None or gpus is None or gpu_hour is None:
        return None
    be = Breakeven.of_rate(tokens, gpus * gpu_hour * _HOURS_PER_MONTH, price)
    if be.above:
        return None
    held = f"{gpus:.2f} GPUs held x {_HOURS_PER_MONTH:g} h x ${gpu_hour:.2f}"
    be = _described(be, tokens, obs.tokens_rate_long.window, held)
    return Evidence(
        f"observed volume {be.tokens_per_month / 1e9:,.2f} B tokens/month would cost "
        f"${be.serverless_usd_per_month:,.0f} serverless against ${be.dedicated_usd_per_month:,.0f} for the "
        f"GPU-hours held: below the breakeven of {be.breakeven_tokens_per_month / 1e9:,.2f} B. "
        + "; ".join(be.lines()),
        observed={"tokens_per_second": tokens, "gpus_mean": gpus},
        plan={"serverless_usd_per_million_tokens": price, "gpu_hour_usd": gpu_hour},
        queries=_queries(inputs, tier),
    )


def serverless_above_breakeven(inputs: TriggerInputs, tier: str) -> Evidence | None:
    plan = inputs.plan
    if tier == FLEET or plan.tier(tier).surface != "serverless":
        return None
    obs = inputs.tiers[tier].observation
    tokens, planned = _over_a_week(obs.tokens_rate_long), tier_breakeven(plan, inputs.sizing.tier(tier))
    if tokens is None or planned is None:
        return None
    be = Breakeven.of_rate(tokens, planned.dedicated_usd_per_month, planned.serverless_usd_per_million)
    if not be.above:
        return None
    be = _described(be, tokens, obs.tokens_rate_long.window, f"sized dedicated: {planned.dedicated_formula}")
    return Evidence(
        f"observed volume {be.tokens_per_month / 1e9:,.2f} B tokens/month costs ${be.serverless_usd_per_month:,.0f} "
        f"serverless against ${be.dedicated_usd_per_month:,.0f} dedicated as sized: above the breakeven of "
        f"{be.breakeven_tokens_per_month / 1e9:,.2f} B. " + "; ".join(be.lines()),
        observed={"tokens_per_second": tokens},
        plan={
            "serverless_usd_per_million_tokens": be.serverless_usd_per_million,
            "dedicated_usd_per_month": be.dedicated_usd_per_month,
        },
        queries=_queries(inputs, tier),
    )


def _described(be: Breakeven, tokens: float, window: str, dedicated: str) -> Breakeven:
    return Breakeven(
        be.tokens_per_month,
        be.serverless_usd_per_million,
        be.dedicated_usd_per_month,
        tokens_formula=f"{tokens:,.0f} tok/s observed over {window or 'the long window'} x {SECONDS_PER_MONTH:.4g} s",
        dedicated_formula=dedicated,
    )


def _queries(inputs: TriggerInputs, tier: str) -> tuple[str, ...]:
    obs = inputs.tiers[tier].observation
    return tuple(m.query for m in (obs.tokens_rate_long, obs.gpus_mean_long) if m.query)
