"""PromQL that reproduces a number derived from bucket vectors (pure): the query attached to the value.

The observer fetches each histogram once per window as a bucket vector (`sum by (le, model_name) (...)`)
and derives quantiles and SLO shares from it (`monitor.histogram`). The catalog's quantile query returns one
series per model, so on a tier serving two models it does not give the stored number. What is attached
instead is the fetched expression itself, aggregated as the value was:

- `merged(expr, samples)`: the bucket vector with, for each histogram (model) whose highest finite bound is
  below another's, its count at that bound repeated at every higher bound: `merged_quantile`'s convention
  (its +Inf observations count as above every bound beyond its own). Histograms with the same bounds (one
  vLLM version, the latency families) need nothing added: the expression is the fetched one.
- `quantile_expr`: `histogram_quantile(q, sum by (le) (merged))`, which is `merged_quantile` exactly.
- `fraction_over_expr`: the share above a threshold with the same in-bucket interpolation as
  `monitor.histogram.fraction_over`, written as arithmetic on the counts at the bracketing bounds.

The fleet view adds up tiers (`monitor.observe.fleet`); its values are reproduced from the tiers' own
reproducing queries, each tier's series tagged with a `planwatch_tier` label so `or` keeps them side by side
(`tiers_union`), then summed, weighted or, for the week's peak and mean of the summed rate, read through a
subquery on the grid the observer asked on (`over_time`).

Bucket lists that differ inside the range both cover (not one a prefix of the other) are read by
interpolation in `monitor.histogram`, which PromQL cannot express; their query agrees to the interpolation
only. vLLM's bucket lists are prefixes of one another (they are cut at max_model_len).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from monitor.histogram import bracket
from monitor.queries.selector import quote, validate_label_name

__all__ = [
    "TIER_LABEL",
    "fraction_over_expr",
    "merged",
    "over_time",
    "product",
    "quantile_expr",
    "quotient",
    "ratio_of_sums",
    "tagged_samples",
    "tiers_sum",
    "tiers_union",
]

# The label that tells tiers apart in a fleet query (not `tier`: recorded `tier:*` series may carry one).
TIER_LABEL = "planwatch_tier"

Samples = Iterable[tuple[Mapping[str, str], float]]


def _vector(labels: Mapping[str, str]) -> str:
    """A one-sample vector carrying exactly `labels` (the right side of an `and on (...)` filter)."""
    expr = "vector(1)"
    for name, value in labels.items():
        # label_replace expands `$` in its replacement: `$$` is a literal dollar.
        expr = f'label_replace({expr}, "{validate_label_name(name)}", {quote(value.replace("$", "$$"))}, "", "")'
    return expr


def _bounds(samples: Samples) -> dict[tuple[tuple[str, str], ...], dict[float, str]]:
    """Per histogram (the labels besides `le`): bound -> the `le` string Prometheus answered with."""
    out: dict[tuple[tuple[str, str], ...], dict[float, str]] = {}
    for labels, value in samples:
        if "le" not in labels or math.isnan(value):
            continue
        # A recorded series carries its name; the histogram is told apart by its other labels.
        key = tuple(sorted((k, v) for k, v in labels.items() if k not in ("le", "__name__")))
        out.setdefault(key, {})[float(labels["le"])] = labels["le"]
    return out


def merged(expr: str, samples: Samples) -> str:
    """`expr` (a bucket vector), extended so that `sum by (le)` reads it as `merged_quantile` does."""
    groups = _bounds(samples)
    spelled = {le: s for bounds in groups.values() for le, s in bounds.items()}
    union = sorted(le for le in spelled if math.isfinite(le))
    parts = [expr]
    for key, bounds in groups.items():
        finite = [le for le in bounds if math.isfinite(le)]
        if not finite:
            continue
        last = max(finite)
        on = ", ".join(["le", *(k for k, _ in key)])
        at_last = _vector({"le": bounds[last], **dict(key)})
        for le in (x for x in union if x > last):
            parts.append(f'label_replace(({expr}) and on ({on}) {at_last}, "le", {quote(spelled[le])}, "", "")')
    return expr if len(parts) == 1 else " or ".join(f"({p})" for p in parts)


def quantile_expr(q: float, expr: str, samples: Samples) -> str:
    """The quantile of the tier's histograms together, as one series."""
    return f"histogram_quantile({q}, sum by (le) ({merged(expr, samples)}))"


def fraction_over_expr(expr: str, samples: Samples, threshold: float) -> str | None:
    """The share of observations above `threshold`, as one series; None when the buckets cannot read it."""
    groups = _bounds(samples)
    spelled = {le: s for bounds in groups.values() for le, s in bounds.items()}
    finite = [le for le in spelled if math.isfinite(le)]
    total = next((s for le, s in spelled.items() if math.isinf(le)), None)
    if not finite or total is None:
        return None
    br = bracket(threshold, finite)
    if br.upper is None:
        return None
    full = merged(expr, samples)

    def count(le: str) -> str:
        return f"sum(({full}) and on (le) {_vector({'le': le})})"

    upper, f = count(spelled[br.upper]), repr(br.fraction)
    at = f"({upper}) * {f}" if br.lower == 0 else (
        f"{count(spelled[br.lower])} + ({upper} - {count(spelled[br.lower])}) * {f}")  # fmt: skip
    return f"clamp_min({count(total)} - ({at}), 0) / {count(total)}"


def tiers_union(exprs: Mapping[str, str]) -> str:
    """Each tier's series (tier -> expr), tagged with `TIER_LABEL`: distinct label sets, so `or` keeps them all
    and a tier without data adds nothing, as the fleet view's sums skip it."""
    return " or ".join(
        f'label_replace(({expr}), "{TIER_LABEL}", {quote(tier.replace("$", "$$"))}, "", "")'
        for tier, expr in exprs.items()
    )


def tiers_sum(exprs: Mapping[str, str]) -> str:
    """The sum over tiers of one-series expressions, as one series."""
    return f"sum({tiers_union(exprs)})"


def ratio_of_sums(numerators: Mapping[str, str], denominators: Mapping[str, str]) -> str:
    """sum of the numerators over sum of the denominators (each tier's pair one series each)."""
    return f"{tiers_sum(numerators)} / {tiers_sum(denominators)}"


def product(left: str, right: str) -> str:
    """Two one-series expressions multiplied whatever their labels (`on ()`: the result carries none)."""
    return f"({left}) * on () ({right})"


def quotient(left: str, right: str) -> str:
    """Two one-series expressions divided whatever their labels."""
    return f"({left}) / on () ({right})"


def over_time(function: str, expr: str, window: str, step: str) -> str:
    """`function` (max, avg) of `expr` evaluated every `step` over `window`: Prometheus evaluates a subquery at
    the multiples of `step` in [t - window, t], the grid the observer's range query asks on."""
    return f"{function}_over_time(({expr})[{window}:{step}])"


def tagged_samples(
    samples: Mapping[str, Iterable[tuple[Mapping[str, str], float]]],
) -> list[tuple[dict[str, str], float]]:
    """Per-tier bucket samples as `tiers_union` of their expressions answers them: each with its tier label."""
    return [({**labels, TIER_LABEL: tier}, value) for tier, rows in samples.items() for labels, value in rows]
