"""The fleet-wide observation: what all tiers did together, for the plan's workload assumptions.

The plan states its workload for the whole product (24K-token p95 prompts, 12 req/s at peak); routing
cuts it into tier bands, so only the fleet view can be held against those numbers. Tiers are merged here
in Python rather than in PromQL because their selectors may use different labels and their token
histograms different bucket sets (max_model_len differs per deployment).

Each fleet value carries the PromQL that reproduces it (`monitor.queries.reproduce`): the reproducing queries
of the tiers that went into the value, summed or weighted as here, and the long window's peak and mean of the
summed request rate as a subquery on the grid the observer read. Where no single query reproduces a value (a
tier's input carried no query), its `query` is empty: none is attached rather than one giving another number.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from monitor.histogram import buckets_by_group, merged_quantile, merged_quantile_bound
from monitor.observe.model import Measurement, TierObservation
from monitor.plan.model import FLEET
from monitor.queries.reproduce import (
    over_time,
    product,
    quantile_expr,
    quotient,
    ratio_of_sums,
    tagged_samples,
    tiers_sum,
    tiers_union,
)
from monitor.units import parse_duration

__all__ = ["MIN_HISTORY_SHARE", "FleetInputs", "covered", "fleet_observation", "history_gate"]

Samples = Sequence[tuple[Mapping[str, str], float]]

# A statistic over a window (the week's peak and mean) is judged only when the history covers this share of
# it: 2.5 minutes of a fresh Prometheus, or a tier deployed an hour ago, say nothing of a week's burstiness.
MIN_HISTORY_SHARE = 0.9


@dataclass(frozen=True)
class FleetInputs:
    """Per-tier raw inputs the fleet view needs beyond the tiers' own measurements."""

    prompt_buckets: Mapping[str, Samples]  # tier -> cumulative bucket rates (labels with `le`)
    output_buckets: Mapping[str, Samples]
    rate_5m: Mapping[str, Sequence[float | None]]  # tier -> request rate series over the long window, aligned
    rate_1m: Mapping[str, Sequence[float | None]]
    long_window: str
    # What each input was read with: "prompt", "output" (the bucket vectors), "rate_5m", "rate_1m" (the rate
    # series, asked on the multiples of their step) -> tier -> expression.
    queries: Mapping[str, Mapping[str, str]]
    min_requests: int = 50
    min_history_share: float = MIN_HISTORY_SHARE


def fleet_observation(
    tiers: Mapping[str, TierObservation], inputs: FleetInputs, now: float, window: str
) -> TierObservation:
    def quantile(q: float, kind: str) -> Measurement:
        samples = inputs.prompt_buckets if kind == "prompt" else inputs.output_buckets
        return _quantile(q, samples, window, inputs.queries.get(kind, {}), inputs.min_requests)

    return TierObservation(
        tier=FLEET,
        evaluated_at=now,
        window=window,
        request_rate=_sum(tiers, lambda t: t.request_rate),
        peak_rate=_peak(inputs.rate_5m, inputs, "rate_5m", "5m"),
        burst_peak_rate=_peak(inputs.rate_1m, inputs, "rate_1m", "1m"),
        average_rate=_mean_of_sum(inputs.rate_5m, inputs),
        prompt_p50=quantile(0.5, "prompt"),
        prompt_p95=quantile(0.95, "prompt"),
        output_p50=quantile(0.5, "output"),
        output_p95=quantile(0.95, "output"),
        prefix_hit_rate=_weighted(tiers, lambda t: (t.prefix_hit_rate, t.prompt_tokens_rate)),
        error_ratio=_weighted(tiers, lambda t: (t.error_ratio, t.request_rate)),
        calls_per_request=_calls(tiers),
        token_buckets=_union_buckets(tiers.values()),
    )


def _union_buckets(tiers: Iterable[TierObservation]) -> dict[str, tuple[float, ...]]:
    """Every bound any tier exposes per token histogram: merged_quantile interpolates at their union."""
    union: dict[str, set[float]] = {}
    for t in tiers:
        for family, bounds in t.token_buckets.items():
            union.setdefault(family, set()).update(bounds)
    return {family: tuple(sorted(bounds)) for family, bounds in union.items()}


def _sum(tiers: Mapping[str, TierObservation], field: Callable[[TierObservation], Measurement]) -> Measurement:
    """The sum over the tiers that reported a value; its query sums those tiers' queries."""
    known = {name: field(t) for name, t in tiers.items() if field(t).value is not None}
    if not known:
        return Measurement.unknown("no tier reported a value")
    first = next(iter(known.values()))
    query = _composed(tiers_sum, {n: m.query for n, m in known.items()})
    return Measurement(sum(m.value or 0.0 for m in known.values()), query, first.window, len(known))


def _composed(build: Callable[[Mapping[str, str]], str], exprs: Mapping[str, str]) -> str:
    """`build(exprs)`, or no query when a tier's input had none: then no single query reproduces the value."""
    return build(exprs) if exprs and all(exprs.values()) else ""


def _aligned_sum(series: Mapping[str, Sequence[float | None]]) -> tuple[list[float], int]:
    """Sum over tiers at each step where at least one tier had data (a tier without data adds nothing), and
    the number of steps of the window."""
    rows = [list(s) for s in series.values() if s]
    if not rows:
        return [], 0
    length = min(len(r) for r in rows)
    sums = []
    for i in range(length):
        values = [r[i] for r in rows if r[i] is not None]
        if values:
            sums.append(float(sum(v for v in values if v is not None)))
    return sums, length


def covered(series: Sequence[float | None]) -> float:
    """Share of a regular series' steps that hold a value: how much of its window the history covers."""
    return sum(v is not None for v in series) / len(series) if series else 0.0


def history_gate(value: Measurement, share: float, window: str, minimum: float = MIN_HISTORY_SHARE) -> Measurement:
    """`value`, or unknown when the history covers less than `minimum` of `window` (`share` of it): then that is
    the reason, whatever else is missing."""
    if share >= minimum:
        return value
    seconds = share * parse_duration(window)
    reason = (f"history covers {share:.1%} of {window} ({_span(seconds)}); a statistic over {window} is judged "
              f"from {minimum:.0%} of it")  # fmt: skip
    return Measurement.unknown(reason, value.query, value.window)


def _span(seconds: float) -> str:
    if seconds >= 86_400:
        return f"{seconds / 86_400:.1f} days"
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def _rate_query(inputs: FleetInputs, kind: str, function: str, step: str) -> str:
    """`function` over the long window of the tiers' summed request rate, every `step`: the observer's range
    query is asked on the multiples of the step, the grid a subquery evaluates on."""
    summed = _composed(tiers_sum, inputs.queries.get(kind, {}))
    return over_time(function, summed, inputs.long_window, step) if summed else ""


def _peak(series: Mapping[str, Sequence[float | None]], inputs: FleetInputs, kind: str, step: str) -> Measurement:
    query = _rate_query(inputs, kind, "max", step)
    sums, length = _aligned_sum(series)
    if not sums:  # a window with steps but no data says how little of it the history covers
        value = Measurement.unknown("no request-rate history", query, inputs.long_window)
        return history_gate(value, 0.0, inputs.long_window, inputs.min_history_share) if length else value
    value = Measurement(max(sums), query, inputs.long_window, len(sums))
    return history_gate(value, len(sums) / length, inputs.long_window, inputs.min_history_share)


def _mean_of_sum(series: Mapping[str, Sequence[float | None]], inputs: FleetInputs) -> Measurement:
    query = _rate_query(inputs, "rate_5m", "avg", "5m")
    sums, length = _aligned_sum(series)
    if not sums:  # a window with steps but no data says how little of it the history covers
        value = Measurement.unknown("no request-rate history", query, inputs.long_window)
        return history_gate(value, 0.0, inputs.long_window, inputs.min_history_share) if length else value
    value = Measurement(sum(sums) / len(sums), query, inputs.long_window, len(sums))
    return history_gate(value, len(sums) / length, inputs.long_window, inputs.min_history_share)


def _quantile(
    q: float, samples: Mapping[str, Samples], window: str, exprs: Mapping[str, str], min_requests: int
) -> Measurement:
    """The quantile of every tier's histograms together; its query reads the tiers' bucket vectors side by side
    (tagged per tier), merged as `merged_quantile` merges them."""
    union = _composed(tiers_union, {tier: exprs.get(tier, "") for tier in samples})
    query = quantile_expr(q, union, tagged_samples(samples)) if union else ""
    groups = [g for tier_samples in samples.values() for g in buckets_by_group(tier_samples).values()]
    value = merged_quantile(q, groups)
    if value is None:
        return Measurement.unknown("no observations in the window", query, window)
    requests = sum(max(b.count for b in g) for g in groups) * parse_duration(window)
    if requests < min_requests:
        reason = f"too few requests: {requests:.0f} finished in {window} (need {min_requests})"
        return Measurement.unknown(reason, query, window)
    return Measurement(value, query, window, round(requests), bound=merged_quantile_bound(q, groups))


def _weighted(
    tiers: Mapping[str, TierObservation], pair: Callable[[TierObservation], tuple[Measurement, Measurement]]
) -> Measurement:
    """Sum of value x weight over the sum of weights, over tiers where both are known (and the weight > 0)."""
    known = {name: (v, w) for name, (v, w) in ((n, pair(t)) for n, t in tiers.items())
             if v.value is not None and w.value is not None and w.value > 0}  # fmt: skip
    if not known:
        return Measurement.unknown("no tier reported both the value and its weight")
    total = sum(w.value or 0.0 for _, w in known.values())
    value = sum((v.value or 0.0) * (w.value or 0.0) for v, w in known.values()) / total
    weighted = {n: product(v.query, w.query) if v.query and w.query else "" for n, (v, w) in known.items()}
    query = _composed(lambda num: ratio_of_sums(num, {n: w.query for n, (_, w) in known.items()}), weighted)
    first = next(iter(known.values()))[0]
    return Measurement(value, query, first.window, len(known))


def _calls(tiers: Mapping[str, TierObservation]) -> Measurement:
    """Model calls over user requests, where user requests per tier = model calls / calls per request."""
    known = {n: (t.request_rate, t.calls_per_request) for n, t in tiers.items()
             if (t.request_rate.value or 0.0) > 0 and (t.calls_per_request.value or 0.0) > 0}  # fmt: skip
    if not known:
        return Measurement.unknown("no gateway counters (gateway_model_calls_total, gateway_user_requests_total)")
    calls = sum(r.value or 0.0 for r, _ in known.values())
    users = sum((r.value or 0.0) / (c.value or 1.0) for r, c in known.values())
    per_tier_users = {n: quotient(r.query, c.query) if r.query and c.query else "" for n, (r, c) in known.items()}
    query = _composed(lambda users_q: ratio_of_sums({n: r.query for n, (r, _) in known.items()}, users_q),
                      per_tier_users)  # fmt: skip
    window = next(iter(known.values()))[1].window
    return Measurement(calls / users, query, window, len(known))
