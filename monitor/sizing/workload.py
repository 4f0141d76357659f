"""Step 1 of the seeds, per tier: which traffic each tier receives after routing, and its shape.

Traffic is counted in model calls (user requests x calls_per_request). Prompt lengths follow the
log-normal fitted to the plan's p50/p95; a tier taking prompts in [min, max) sees that band's
conditional distribution, so its mean and p95 are the band's, not the fleet's. Output lengths are
assumed independent of prompt length.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from monitor.plan.model import Plan, Tier
from monitor.sizing.prefix import PrefixModel, plan_prefix_hit_rate
from monitor.sizing.shape import Band, LogNormal

__all__ = ["TierWorkload", "plan_prefix_hit_rate", "tier_lengths", "tier_workload"]


@dataclass(frozen=True)
class TierWorkload:
    """What one tier must serve at peak and on average, per model call. The derived lengths are remembered
    (it is immutable): every TTFT and TPOT estimate reads them."""

    share: float  # of all model calls
    peak_rps: float
    average_rps: float
    prompt_mean: float
    prompt_p50: float
    prompt_p95: float
    output_mean: float
    output_p50: float
    output_p95: float
    prefix_hit_rate: float  # the tier's own: the plan's reuse rule over its band (monitor.sizing.prefix)
    # the p95 prompt's own reusable prefix by that rule; None: the tier's hit rate applies to it as to the mean
    prompt_p95_cached: float | None = None

    @cached_property
    def cached_prompt_mean(self) -> float:
        return self.prompt_mean * self.prefix_hit_rate

    @cached_property
    def uncached_prompt_mean(self) -> float:
        """Prompt tokens that must be computed: prompt x (1 - hit rate) (2,000 x 0.4 = 800 in the seed)."""
        return self.prompt_mean * (1.0 - self.prefix_hit_rate)

    @cached_property
    def cached_prompt_p95(self) -> float:
        """The p95 prompt's reused tokens. Why not p95 x the hit rate: the reuse rule gives every prompt the shared
        S and a fraction k of the rest, so a long prompt reuses a smaller share than the mean one (it is long for
        its own content), and the p95 prompt's uncached tokens, L95 - S - k (L95 - S), are more than
        L95 x (1 - hit rate). Since uncached tokens rise with the prompt, they are the p95 of the uncached tokens
        too (capstone's standard tier: 8,036, not 6,472; the seed's copilot, all reuse shared, 800 either way)."""
        if self.prompt_p95_cached is not None:
            return self.prompt_p95_cached
        return self.prompt_p95 * self.prefix_hit_rate

    @cached_property
    def uncached_prompt_p95(self) -> float:
        return self.prompt_p95 - self.cached_prompt_p95

    @cached_property
    def context_mean(self) -> float:
        """Prompt + output: the full sequence the seed uses for KV reads (2,300 tokens)."""
        return self.prompt_mean + self.output_mean

    @cached_property
    def decode_context_mean(self) -> float:
        """Prompt + output / 2: the context a decoding sequence holds on average over its life (a batch
        mixes sequences at every stage), so the KV a decode step reads per sequence."""
        return self.prompt_mean + self.output_mean / 2

    @cached_property
    def context_p95(self) -> float:
        return self.prompt_p95 + self.output_p95


def tier_lengths(plan: Plan, tier: Tier) -> tuple[Band, LogNormal]:
    """The prompt lengths a tier receives (the routed band of the plan's log-normal) and its output lengths."""
    w = plan.workload
    prompts = LogNormal.from_percentiles(w.prompt_tokens.p50, w.prompt_tokens.p95)
    outputs = LogNormal.from_percentiles(w.output_tokens.p50, w.output_tokens.p95)
    r = tier.routing.prompt_tokens
    return prompts.band(float(r.min), float(r.max) if r.max is not None else float("inf")), outputs


def tier_workload(plan: Plan, tier: Tier) -> TierWorkload:
    """share = routing.share x P(min <= prompt < max); rates = plan rate x calls per request x share."""
    w = plan.workload
    band, outputs = tier_lengths(plan, tier)
    share = tier.routing.share * band.probability
    calls = w.calls_per_request
    prefix, p95 = PrefixModel.for_plan(plan), band.quantile(0.95)
    return TierWorkload(
        share=share,
        peak_rps=w.arrival.peak_rps * calls * share,
        average_rps=w.arrival.average_rps * calls * share,
        prompt_mean=band.mean,
        prompt_p50=band.quantile(0.50),
        prompt_p95=p95,
        output_mean=outputs.mean,
        output_p50=outputs.median,
        output_p95=outputs.quantile(0.95),
        prefix_hit_rate=prefix.hit_rate(band),
        prompt_p95_cached=_cacheable(prefix, p95),
    )


def _cacheable(prefix: PrefixModel, prompt_tokens: float) -> float:
    import numpy as np  # where it computes, as the prefix model: every command's --help loads this module

    return float(prefix.cacheable(np.asarray([prompt_tokens]))[0])
