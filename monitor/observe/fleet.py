"""The fleet-wide observation: what all tiers did together, for the plan's workload assumptions.

The plan states its workload for the whole product (24K-token p95 prompts, 12 req/s at peak); routing
cuts it into tier bands, so only the fleet view can be held against those numbers. Tiers are merged here
in Python rather than in PromQL because their selectors may use different labels and their token
histograms different bucket sets (max_model_len differs per deployment).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from monitor.histogram import buckets_by_group, merged_quantile, merged_quantile_bound
from monitor.observe.model import Measurement, TierObservation
from monitor.plan.model import FLEET
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
    queries: Mapping[str, str]
    min_requests: int = 50
    min_history_share: float = MIN_HISTORY_SHARE


def fleet_observation(
    tiers: Mapping[str, TierObservation], inputs: FleetInputs, now: float, window: str
) -> TierObservation:
    return TierObservation(
        tier=FLEET,
        evaluated_at=now,
        window=window,
        request_rate=_sum(t.request_rate for t in tiers.values()),
        peak_rate=_peak(inputs.rate_5m, inputs, inputs.queries.get("rate_5m", "")),
        burst_peak_rate=_peak(inputs.rate_1m, inputs, inputs.queries.get("rate_1m", "")),
        average_rate=_mean_of_sum(inputs.rate_5m, inputs, inputs.queries.get("rate_5m", "")),
        prompt_p50=_quantile(0.5, inputs.prompt_buckets, window, inputs.queries.get("prompt", ""), inputs.min_requests),
        prompt_p95=_quantile(
            0.95, inputs.prompt_buckets, window, inputs.queries.get("prompt", ""), inputs.min_requests
        ),
        output_p50=_quantile(0.5, inputs.output_buckets, window, inputs.queries.get("output", ""), inputs.min_requests),
        output_p95=_quantile(
            0.95, inputs.output_buckets, window, inputs.queries.get("output", ""), inputs.min_requests
        ),
        prefix_hit_rate=_weighted((t.prefix_hit_rate, t.prompt_tokens_rate) for t in tiers.values()),
        error_ratio=_weighted((t.error_ratio, t.request_rate) for t in tiers.values()),
        calls_per_request=_calls(tiers.values()),
        token_buckets=_union_buckets(tiers.values()),
    )


def _union_buckets(tiers: Iterable[TierObservation]) -> dict[str, tuple[float, ...]]:
    """Every bound any tier exposes per token histogram: merged_quantile interpolates at their union."""
    union: dict[str, set[float]] = {}
    for t in tiers:
        for family, bounds in t.token_buckets.items():
            union.setdefault(family, set()).update(bounds)
    return {family: tuple(sorted(bounds)) for family, bounds in union.items()}


def _sum(values: Iterable[Measurement]) -> Measurement:
    known = [(m, m.value) for m in values if m.value is not None]
    if not known:
        return Measurement.unknown("no tier reported a value")
    first = known[0][0]
    return Measurement(sum(v for _, v in known), first.query, first.window, len(known))


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


def _peak(series: Mapping[str, Sequence[float | None]], inputs: FleetInputs, query: str) -> Measurement:
    sums, length = _aligned_sum(series)
    if not sums:
        return Measurement.unknown("no request-rate history", query, inputs.long_window)
    value = Measurement(max(sums), query, inputs.long_window, len(sums))
    return history_gate(value, len(sums) / length, inputs.long_window, inputs.min_history_share)


def _mean_of_sum(series: Mapping[str, Sequence[float | None]], inputs: FleetInputs, query: str) -> Measurement:
    sums, length = _aligned_sum(series)
    if not sums:
        return Measurement.unknown("no request-rate history", query, inputs.long_window)
    value = Measurement(sum(sums) / len(sums), query, inputs.long_window, len(sums))
    return history_gate(value, len(sums) / length, inputs.long_window, inputs.min_history_share)


def _quantile(q: float, samples: Mapping[str, Samples], window: str, query: str, min_requests: int) -> Measurement:
    groups = [g for tier_samples in samples.values() for g in buckets_by_group(tier_samples).values()]
    value = merged_quantile(q, groups)
    if value is None:
        return Measurement.unknown("no observations in the window", query, window)
    requests = sum(max(b.count for b in g) for g in groups) * parse_duration(window)
    if requests < min_requests:
        reason = f"too few requests: {requests:.0f} finished in {window} (need {min_requests})"
        return Measurement.unknown(reason, query, window)
    return Measurement(value, query, window, round(requests), bound=merged_quantile_bound(q, groups))


def _weighted(pairs: Iterable[tuple[Measurement, Measurement]]) -> Measurement:
    """Sum of value x weight over the sum of weights, over tiers where both are known."""
    known = [(v, v.value, w.value) for v, w in pairs if v.value is not None and w.value is not None and w.value > 0]
    if not known:
        return Measurement.unknown("no tier reported both the value and its weight")
    total = sum(weight for _, _, weight in known)
    value = sum(val * weight for _, val, weight in known) / total
    return Measurement(value, known[0][0].query, known[0][0].window, len(known))


def _calls(tiers: Iterable[TierObservation]) -> Measurement:
    """Model calls over user requests, where user requests per tier = model calls / calls per request."""
    pairs = [(t.request_rate.value, t.calls_per_request.value) for t in tiers]
    known = [(r, c) for r, c in pairs if r is not None and c is not None and c > 0 and r > 0]
    if not known:
        return Measurement.unknown("no gateway counters (gateway_model_calls_total, gateway_user_requests_total)")
    calls = sum(r for r, _ in known)
    users = sum(r / c for r, c in known)
    return Measurement(calls / users, "calls per request weighted by tier request rates", "", len(known))
