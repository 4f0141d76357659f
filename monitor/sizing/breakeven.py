"""Serverless against dedicated (the qualification seed's Step 7), with its formula written out.

monthly tokens = average req/s x tokens per request (input + output) x 2.592e6 s
serverless     = monthly tokens / 1e6 x $P per 1M tokens
dedicated      = GPU-hours per day x 30 x $R per GPU-hour  (peak GPUs x peak hours + floor GPUs x the rest)
breakeven      = dedicated / $P x 1e6 tokens per month: above it, dedicated costs less
effective      = dedicated / (monthly tokens / 1e6) per 1M tokens, only if autoscaling holds that floor
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.plan.model import Plan
from monitor.sizing.plan_sizing import SizedTier
from monitor.units import SECONDS_PER_MONTH

__all__ = ["Breakeven", "tier_breakeven"]


@dataclass(frozen=True)
class Breakeven:
    tokens_per_month: float
    serverless_usd_per_million: float
    dedicated_usd_per_month: float
    tokens_formula: str = ""
    dedicated_formula: str = ""

    @classmethod
    def of_rate(cls, tokens_per_second: float, dedicated_usd_per_month: float, price: float) -> Breakeven:
        return cls(tokens_per_second * SECONDS_PER_MONTH, price, dedicated_usd_per_month)

    @property
    def serverless_usd_per_month(self) -> float:
        return self.tokens_per_month / 1e6 * self.serverless_usd_per_million

    @property
    def breakeven_tokens_per_month(self) -> float:
        return self.dedicated_usd_per_month / self.serverless_usd_per_million * 1e6

    @property
    def effective_usd_per_million(self) -> float | None:
        return self.dedicated_usd_per_month / (self.tokens_per_month / 1e6) if self.tokens_per_month else None

    @property
    def above(self) -> bool:
        """Volume above breakeven: dedicated costs less than serverless."""
        return self.tokens_per_month > self.breakeven_tokens_per_month

    def lines(self) -> list[str]:
        """The seed's Step 7, one formula a line, with this path's numbers."""
        p, millions = self.serverless_usd_per_million, self.tokens_per_month / 1e6
        ratio = self.tokens_per_month / self.breakeven_tokens_per_month if self.breakeven_tokens_per_month else 0.0
        side = "above" if self.above else "below"
        out = [
            f"monthly tokens = {self.tokens_formula or 'observed'} = {self.tokens_per_month / 1e9:,.1f} B tokens",
            f"serverless     = {millions:,.0f} M x ${p:.2f} per 1M tokens = "
            f"${self.serverless_usd_per_month:,.0f}/month",
            f"dedicated      = {self.dedicated_formula or 'GPU-hours used x price'} = "
            f"${self.dedicated_usd_per_month:,.0f}/month",
            f"breakeven      = ${self.dedicated_usd_per_month:,.0f} / ${p:.2f} per 1M = "
            f"{self.breakeven_tokens_per_month / 1e9:,.1f} B tokens/month; volume is {ratio:.2f}x, {side} it",
        ]
        effective = self.effective_usd_per_million
        if effective is not None:
            out.append(
                f"effective      = ${self.dedicated_usd_per_month:,.0f} / {millions:,.0f} M = ${effective:.2f} per 1M "
                "tokens dedicated, only if autoscaling holds that floor"
            )
        return out


def tier_breakeven(plan: Plan, sized: SizedTier) -> Breakeven | None:
    """The tier's planned volume priced both ways; None without a serverless price in the plan."""
    price = plan.costs.serverless_usd_per_million_tokens
    if price is None:
        return None
    c, wl, tp = sized.cost, sized.sizing.workload, sized.sizing.tier.tensor_parallel
    hours = plan.workload.arrival.peak_hours_per_day
    return Breakeven(
        tokens_per_month=c.tokens_per_month,
        serverless_usd_per_million=price,
        dedicated_usd_per_month=c.cost_per_month_usd,
        tokens_formula=f"{wl.average_rps:g} req/s x {wl.context_mean:,.0f} tok x {SECONDS_PER_MONTH:.4g} s",
        dedicated_formula=f"(peak {c.replicas_at_peak * tp} GPUs x {hours:g} h + floor "
        f"{c.replicas_at_average * tp} GPUs x {24 - hours:g} h) = {c.gpu_hours_per_day:,.0f} GPU-h/day x 30 x "
        f"${c.gpu_hour_usd:.2f}",
    )
