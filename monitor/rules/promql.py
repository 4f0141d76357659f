"""PromQL the rules add around the catalog's queries: a bucket read at one bound, the share of observations
above a threshold (linear interpolation inside the bucket), a sum over the plan's tiers and numbers
written the way a reviewer checks them (durations: `monitor.units.format_duration`).

Every vLLM series here comes from a catalog query (`monitor.queries`) rendered with the tier's selector plus
an `le` matcher; nothing in this module names a metric.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from monitor.queries.query import Query, Rendering
from monitor.queries.selector import Matcher, Selector, quote, validate_label_name
from monitor.rules.buckets import Bracket

__all__ = [
    "TIER_PART_LABEL",
    "bucket_count",
    "count_above",
    "count_total",
    "fleet_sum",
    "le_matcher",
    "number",
    "selector_matchers",
    "share_above",
]

# The label that keeps the tiers apart inside a fleet-wide sum (two tiers may serve the same model).
TIER_PART_LABEL = "plan_tier"


def number(value: float) -> str:
    """`value` to 12 significant digits (`1.2`, `2437.5`, `14.4`, `1`; 0.6000000000000001 -> `0.6`): exact
    to far below the 1e-9 slack `monitor.drift.judge` allows at its boundaries."""
    if not math.isfinite(value):
        raise ValueError(f"{value!r} cannot be written into a rule")
    return f"{value:.12g}"


def le_matcher(bound: float) -> str:
    """`le` at one bucket bound. Finite bounds match both spellings of a whole number (`1.0` as Python's
    prometheus_client writes it, `1` as other exporters and normalizing stores do)."""
    if math.isinf(bound):
        return Matcher("le", "=", "+Inf").render()
    text = repr(float(bound))
    if "e" in text:
        raise ValueError(f"bucket bound {bound!r} is written in exponent form; not supported")
    if text.endswith(".0"):
        return Matcher("le", "=~", re.escape(text[:-2]) + r"(\.0)?").render()
    return Matcher("le", "=", text).render()


def selector_matchers(selector: Selector | Mapping[str, str]) -> tuple[str, ...]:
    return tuple(m.render() for m in Selector.of(selector).matchers())


def bucket_count(query: Query, matchers: Sequence[str], window: str, bound: float) -> str:
    """Observations per second at or below `bound` (cumulative bucket), per model: `query` must be a catalog
    bucket query grouped `by (le, model_name)` (TTFT_BUCKETS, ITL_BUCKETS, PROMPT_TOKENS_BUCKETS)."""
    if query.group_by != ("le", "model_name"):
        raise ValueError(f"{query.name} is not a per-bucket query grouped by (le, model_name)")
    rendering = Rendering((*matchers, le_matcher(bound)), (), window, query.step)
    return f"sum by (model_name) ({query.render(rendering)})"


def _at_or_below(query: Query, matchers: Sequence[str], window: str, b: Bracket) -> str:
    """Interpolated count at the threshold: B(lower) + (B(upper) - B(lower)) x (T - lower) / (upper - lower)."""
    if b.upper is None:
        return bucket_count(query, matchers, window, b.lower)
    upper = bucket_count(query, matchers, window, b.upper)
    if b.exact:
        return upper
    t, lo, hi = number(b.threshold), number(b.lower), number(b.upper)
    if b.lower == 0:
        return f"({upper} * {t} / {hi})"
    lower = bucket_count(query, matchers, window, b.lower)
    return f"({lower} + ({upper} - {lower}) * ({t} - {lo}) / ({hi} - {lo}))"


def count_above(query: Query, matchers: Sequence[str], window: str, b: Bracket) -> str:
    """Observations per second above the threshold, per model."""
    total = bucket_count(query, matchers, window, math.inf)
    return f"({total} - {_at_or_below(query, matchers, window, b)})"


def count_total(query: Query, matchers: Sequence[str], window: str, b: Bracket, guard: bool = False) -> str:
    """All observations per second, per model; with `guard`, only models that export the upper bound (so a
    model whose replicas lack it counts neither as good nor in the total)."""
    total = bucket_count(query, matchers, window, math.inf)
    if guard and b.upper is not None:
        return f"({total} and {bucket_count(query, matchers, window, b.upper)})"
    return total


def share_above(query: Query, matchers: Sequence[str], window: str, b: Bracket, guard: bool = False) -> str:
    """Share of observations above the threshold, over the tier's models: sum(above) / sum(total).
    NaN (no alert) when nothing was observed in the window."""
    above = count_above(query, matchers, window, b)
    return f"sum({above}) / sum({count_total(query, matchers, window, b, guard)})"


def fleet_sum(parts: Sequence[tuple[str, str]]) -> str:
    """sum over tiers of per-tier expressions (tier name, expr). Each part is labelled with its tier first,
    so tiers serving the same model are not merged by `or`; a tier without data adds nothing."""
    validate_label_name(TIER_PART_LABEL)
    if not parts:
        raise ValueError("no tiers to sum")
    labelled = [f'label_replace({expr}, "{TIER_PART_LABEL}", {quote(name)}, "", "")' for name, expr in parts]
    return "sum(" + " or ".join(labelled) + ")"
