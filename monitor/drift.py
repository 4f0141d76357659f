"""The drift report: each plan assumption against what production did, with a status a reviewer can check.

For each assumption the harmful direction is fixed (longer prompts hurt; a lower prefix-hit rate hurts).
The drift is the relative move in that direction,

    higher is harmful:  d = observed / plan - 1
    lower is harmful:   d = 1 - observed / plan

and the status is ok when d <= warn, warn when d <= breach, breach beyond (the plan's tolerances, per
assumption). An unknown observation is status unknown with its reason, never ok.

A quantile read from the histogram's first or top bucket is a bound ("at most 1 token", "above 640 s"), not a
measurement: it is judged at the bound, and the status stands only where the bound decides it (above a bound
that already breaches, the truth breaches too; at most a bound that is ok, the truth is ok). Otherwise the
status is unknown, with the bound and what it could not decide as the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import lru_cache
from typing import Literal

from monitor.histogram import quantile_of_distribution
from monitor.memo import IdentityMemo
from monitor.observe.model import Measurement, TierObservation
from monitor.plan.model import Plan, Tier, Tolerance
from monitor.sizing.buckets import (
    ITL_BOUNDS,
    ITL_BOUNDS_BEFORE_15202,
    TTFT_BOUNDS,
    TTFT_BOUNDS_BEFORE_15202,
    build_1_2_5_buckets,
)
from monitor.sizing.shape import Band, LogNormal
from monitor.sizing.tier import TierSizing, replica_model
from monitor.sizing.workload import plan_prefix_hit_rate, tier_lengths
from monitor.units import format_value, parse_duration

__all__ = [
    "DriftRow",
    "Status",
    "bucket_note",
    "describe_bound",
    "fleet_drift",
    "judge",
    "tier_drift",
    "worst_status",
]

Harm = Literal["higher", "lower"]


class Status(StrEnum):
    OK = "ok"
    WARN = "warn"
    BREACH = "breach"
    UNKNOWN = "unknown"


_SEVERITY = {Status.OK: 0, Status.UNKNOWN: 1, Status.WARN: 2, Status.BREACH: 3}


@dataclass(frozen=True)
class DriftRow:
    assumption: str
    plan: float
    observed: Measurement
    harmful: Harm
    unit: str
    ratio: float | None
    status: Status
    note: str = ""

    @property
    def reason(self) -> str:
        return self.observed.reason


def judge(plan_value: float, observed: Measurement, harmful: Harm, tolerance: Tolerance) -> tuple[float | None, Status]:
    """(observed / plan, status). A plan value of 0 cannot be drifted from relatively: only 'higher' can hurt."""
    if observed.value is None:
        return None, Status.UNKNOWN
    if plan_value == 0:
        hurt = observed.value > 0 if harmful == "higher" else False
        return None, Status.BREACH if hurt else Status.OK
    ratio = observed.value / plan_value
    drift = ratio - 1.0 if harmful == "higher" else 1.0 - ratio
    if drift <= tolerance.warn + 1e-9:
        return ratio, Status.OK
    return ratio, Status.WARN if drift <= tolerance.breach + 1e-9 else Status.BREACH


def worst_status(rows: list[DriftRow]) -> Status:
    return max((r.status for r in rows), key=_SEVERITY.__getitem__, default=Status.OK)


Check = tuple[str, float, Measurement, Harm, str, str]


def tier_drift(plan: Plan, sizing: TierSizing, obs: TierObservation) -> list[DriftRow]:
    """Every assumption that belongs to one tier, in the order a design review reads them."""
    tier = sizing.tier
    standby = Measurement.unknown("standby tier: it takes traffic only in degraded mode, so it has no planned peak")
    peak = _peak_check(sizing.workload.peak_rps, obs, plan.workload.calls_per_request)
    checks: list[Check] = [
        ("peak_rate", 0.0, standby, "higher", "req/s", "") if sizing.standby else peak,
        *_length_checks(plan, sizing, obs),
        ("prefix_hit_rate", sizing.workload.prefix_hit_rate, obs.prefix_hit_rate, "lower", "ratio",
         "hits / queries in tokens"),
        ("ttft_p95", sizing.ttft_slo_seconds, obs.ttft_p95, "higher", "s",
         "against the SLO" + _wide(obs.ttft_p95, "ttft")),
        ("tpot_p95", sizing.tpot_slo_seconds, obs.tpot_p95, "higher", "s",
         "against the SLO" + _wide(obs.tpot_p95, "tpot")),
        *_capacity_checks(plan, sizing, obs),
        ("cold_start", tier.cold_start_seconds, obs.cold_start_p95, "higher", "s", "created to ready, p95"),
        ("calls_per_request", plan.workload.calls_per_request, obs.calls_per_request, "higher", "calls", "gateway"),
        _availability_check(plan, obs),
    ]  # fmt: skip
    return _judge_all(plan, checks)


def fleet_drift(plan: Plan, obs: TierObservation) -> list[DriftRow]:
    """The plan's workload as written (all tiers together): rate, burstiness, lengths, prefix, fan-out."""
    w = plan.workload
    prompts = LogNormal.from_percentiles(w.prompt_tokens.p50, w.prompt_tokens.p95)
    outputs = LogNormal.from_percentiles(w.output_tokens.p50, w.output_tokens.p95)
    prompt_bounds, output_bounds = (
        _exposed(obs, "prompt", _union_bounds(plan)),
        _exposed(obs, "output", _union_bounds(plan)),
    )
    checks: list[Check] = [
        _peak_check(w.arrival.peak_rps * w.calls_per_request, obs, w.calls_per_request),
        ("peak_to_average", w.arrival.peak_rps / w.arrival.average_rps, _weekly(obs.peak_to_average), "higher", "x",
         "highest 1-minute rate over the mean"),
        _through_buckets("prompt_p50", prompts, w.prompt_tokens.p50, 0.5, obs.prompt_p50, prompt_bounds),
        _through_buckets("prompt_p95", prompts, w.prompt_tokens.p95, 0.95, obs.prompt_p95, prompt_bounds),
        _through_buckets("output_p50", outputs, w.output_tokens.p50, 0.5, obs.output_p50, output_bounds),
        _through_buckets("output_p95", outputs, w.output_tokens.p95, 0.95, obs.output_p95, output_bounds),
        ("prefix_hit_rate", plan_prefix_hit_rate(plan), obs.prefix_hit_rate, "lower", "ratio",
         "hits / queries in tokens, weighted by prompt tokens"),
        ("calls_per_request", w.calls_per_request, obs.calls_per_request, "higher", "calls", "gateway"),
        _availability_check(plan, obs),
    ]  # fmt: skip
    return _judge_all(plan, checks)


# KV occupancy puts the plan at risk only as the cache nears full: 4% used where 3% was planned is no risk.
KV_AT_RISK = 0.5


def _vllm_bounds(histogram: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """vLLM's bucket bounds (current, before vLLM #15202) of the TTFT or TPOT histogram."""
    if histogram == "ttft":
        return TTFT_BOUNDS, TTFT_BOUNDS_BEFORE_15202
    return ITL_BOUNDS, ITL_BOUNDS_BEFORE_15202


def _wide(m: Measurement, histogram: str) -> str:
    """bucket_note, unless the observer found the quantile in an edge bucket: then the bound says it."""
    return "" if m.bound is not None else bucket_note(m.value, *_vllm_bounds(histogram))


def describe_bound(m: Measurement, unit: str) -> str:
    """An edge-bucket quantile as what is known of it: 'above 640 s', 'at most 1 token' ('' for a measurement).
    Bucket bounds are round numbers in the histogram's own unit, so they are shown as such."""
    if m.bound is None:
        return ""
    b = m.bound.bound
    shown = f"{b:g} s" if unit == "s" else format_value(b, unit)
    return f"{m.bound.side} {shown}"


def describe_ratio(r: DriftRow) -> str:
    """A drift row's ratio as shown: two decimals, two significant digits below 0.01 (so a tiny ratio does not
    read as 0.00x), '>'/'<=' before it where the observation is a bound (its ratio is a bound too)."""
    if r.ratio is None:
        return "-"
    shown = f"{r.ratio:.2g}x" if 0 < abs(r.ratio) < 0.01 else f"{r.ratio:.2f}x"
    return shown if r.observed.bound is None else (">" if r.observed.bound.side == "above" else "<=") + shown


def describe_observed(r: DriftRow) -> str:
    """A drift row's observation as shown: the bound where it is one ('above 2560 s'), else the value."""
    return describe_bound(r.observed, r.unit) or format_value(r.observed.value, r.unit)


def _judge_bound(
    plan_value: float, observed: Measurement, harmful: Harm, tolerance: Tolerance, unit: str
) -> tuple[float | None, Status, Measurement, str]:
    """Judge an edge-bucket quantile at its bound. Where the truth lies beyond the bound on the harmful side the
    bound is the best case (its warn or breach stands, its ok decides nothing); on the other side it is the worst
    case (its ok stands, its warn or breach decides nothing)."""
    assert observed.bound is not None
    at_bound = replace(observed, value=observed.bound.bound)
    ratio, status = judge(plan_value, at_bound, harmful, tolerance)
    harmful_beyond = (observed.bound.side == "above") == (harmful == "higher")
    edge = "top" if observed.bound.side == "above" else "first"
    known = f"the histogram's {edge} bucket: {describe_bound(observed, unit)}, a bound, not a measurement"
    if (status is not Status.OK) if harmful_beyond else (status is Status.OK):
        least = "at least" if harmful_beyond and status is Status.WARN else ""
        return ratio, status, at_bound, f"; {known}" + (f" ({least} {status.value})" if least else "")
    could = "ok or worse" if harmful_beyond else f"{status.value} or better"
    reason = f"{known}: at the bound it is {status.value}, so the truth could be {could}"
    return ratio, Status.UNKNOWN, replace(at_bound, reason=reason), ""


def bucket_note(value: float | None, bounds: tuple[float, ...], older: tuple[float, ...] = ()) -> str:
    """What a histogram quantile is: histogram_quantile answers the top finite bound when the quantile lies in
    the +Inf bucket (a bound, not a measurement), and interpolates inside a wide bucket (a guess within it)."""
    if value is None or not bounds:
        return ""
    tops = {bounds[-1], *(older[-1:] if older else ())}
    if value >= bounds[-1] or value in tops:
        return f"; the histogram's top bucket: at least {value:g} s, a bound, not a measurement"
    lower = max((b for b in bounds if b < value), default=0.0)
    upper = min(b for b in bounds if b >= value)
    if lower > 0 and upper / lower >= 4:
        return f"; somewhere between {lower:g} s and {upper:g} s (one bucket: histogram_quantile interpolates)"
    return ""


def _weekly(ratio: Measurement) -> Measurement:
    """The plan's peak-to-average is over its weekly mean: a shorter window (a day that holds a quiet Sunday, or
    only working hours) has another mean, so it cannot be judged against the plan."""
    if ratio.value is not None and ratio.window and parse_duration(ratio.window) < 7 * 86_400:
        reason = f"needs a window of 7 days or more (the plan's average is weekly); this one is {ratio.window}"
        return Measurement.unknown(reason, ratio.query, ratio.window)
    return ratio


def _judge_all(plan: Plan, checks: list[Check]) -> list[DriftRow]:
    rows = []
    for name, plan_value, observed, harmful, unit, note in checks:
        tolerance = plan.tolerances.for_assumption(name)
        ratio, status = judge(plan_value, observed, harmful, tolerance)
        if observed.bound is not None and status is not Status.UNKNOWN and math.isfinite(plan_value):
            ratio, status, observed, bound_note = _judge_bound(plan_value, observed, harmful, tolerance, unit)
            note += bound_note
        low_kv = name == "kv_occupancy" and observed.value is not None and observed.value < KV_AT_RISK
        if low_kv and status in (Status.WARN, Status.BREACH):
            status, note = Status.OK, f"{note}; under {KV_AT_RISK:.0%} of the cache on average, not a risk"
        rows.append(DriftRow(name, plan_value, observed, harmful, unit, ratio, status, note))
    return rows


def _peak_check(plan_calls_peak: float, obs: TierObservation, plan_calls: float) -> Check:
    """The sustained (5-minute) peak in user requests: model calls scaled by the plan's over the observed
    calls per request, so tool-call fan-out shows as fan-out and not as more users."""
    peak, calls = obs.peak_rate, obs.calls_per_request
    if peak.value is not None and calls.value:
        scaled = Measurement(peak.value * plan_calls / calls.value, peak.query, peak.window, peak.samples)
        note = f"highest 5-minute rate, counted at the plan's {plan_calls:g} calls per request"
        return ("peak_rate", plan_calls_peak, scaled, "higher", "req/s", note)
    return ("peak_rate", plan_calls_peak, peak, "higher", "req/s", "highest 5-minute rate (model calls)")


def _through_buckets(
    name: str, dist: LogNormal | Band, raw: float, q: float, observed: Measurement, bounds: tuple[float, ...]
) -> Check:
    seen = _read_through_buckets(dist, q, bounds)
    return (name, seen, observed, "higher", "tokens", f"plan {raw:,.0f} reads as {seen:,.0f} through vLLM's buckets")


@lru_cache(maxsize=256)
def _read_through_buckets(dist: LogNormal | Band, q: float, bounds: tuple[float, ...]) -> float:
    """The plan's quantile as histogram_quantile reads it: a pure function of the plan, asked every evaluation."""
    return quantile_of_distribution(q, dist.cdf, bounds)


def _exposed(obs: TierObservation, family: str, planned: tuple[float, ...]) -> tuple[float, ...]:
    """The bucket bounds the server exposes for `family` where the observation has them (another max_model_len
    than the plan's, custom buckets), else the bounds the plan implies."""
    return obs.token_buckets.get(family) or planned


def _union_bounds(plan: Plan) -> tuple[float, ...]:
    """1-2-5 bounds are nested, so the tiers' union is the set of the longest max_model_len."""
    longest = max(t.max_model_len or plan.model_of(t).max_context for t in plan.tiers)
    return build_1_2_5_buckets(longest)


def _length_checks(plan: Plan, sizing: TierSizing, obs: TierObservation) -> list[Check]:
    """Prompt and output quantiles of the tier's band, the plan read through the token buckets the server exposes
    (vLLM's 1-2-5 buckets up to the tier's max_model_len where the observation does not say).

    histogram_quantile interpolates inside a bucket, so production that matches a plan of exactly 300
    output tokens reads as 485; the plan is pushed through the same buckets before the two are compared.
    """
    tier, wl = sizing.tier, sizing.workload
    prompts, outputs, planned = _tier_shapes(plan, tier)
    prompt_bounds, output_bounds = _exposed(obs, "prompt", planned), _exposed(obs, "output", planned)
    return [
        _through_buckets("prompt_p50", prompts, wl.prompt_p50, 0.5, obs.prompt_p50, prompt_bounds),
        _through_buckets("prompt_p95", prompts, wl.prompt_p95, 0.95, obs.prompt_p95, prompt_bounds),
        _through_buckets("output_p50", outputs, wl.output_p50, 0.5, obs.output_p50, output_bounds),
        _through_buckets("output_p95", outputs, wl.output_p95, 0.95, obs.output_p95, output_bounds),
    ]


_SHAPES: IdentityMemo[tuple[Band, LogNormal, tuple[float, ...]]] = IdentityMemo(256)


def _tier_shapes(plan: Plan, tier: Tier) -> tuple[Band, LogNormal, tuple[float, ...]]:
    """The tier's prompt band, output lengths and token buckets: pure functions of the plan, asked every
    evaluation (every minute of a replay), so remembered per (plan, tier) object as `replica_model` is."""
    return _SHAPES.get((plan, tier), (), lambda: _shapes(plan, tier))


def _shapes(plan: Plan, tier: Tier) -> tuple[Band, LogNormal, tuple[float, ...]]:
    prompts, outputs = tier_lengths(plan, tier)
    return prompts, outputs, build_1_2_5_buckets(tier.max_model_len or plan.model_of(tier).max_context)


def _kv_judged(obs: TierObservation) -> Measurement:
    """The mean occupancy, unless a replica's peak nears full: then the peak, which is what evicts sequences
    (a mean of 26% beside a replica at 100% is not "no risk")."""
    peak = obs.kv_occupancy_max
    if peak.value is not None and peak.value >= KV_AT_RISK:
        return peak
    return obs.kv_occupancy_mean


def _kv_peak_note(obs: TierObservation) -> str:
    peak, mean = obs.kv_occupancy_max, obs.kv_occupancy_mean
    if peak.value is None:
        return ""
    if peak.value >= KV_AT_RISK:
        shown = "unknown" if mean.value is None else f"{mean.value:.0%}"
        return f"; the busiest replica's peak {peak.value:.0%} (mean {shown}) is judged: it is what evicts"
    return f"; peak {peak.value:.0%}"


def _capacity_checks(plan: Plan, sizing: TierSizing, obs: TierObservation) -> list[Check]:
    """KV occupancy and tokens/s per replica, judged at the batch production actually ran, not the plan's.

    A replica running a batch of 40 is compared with what the sizing model says a batch of 40 should do;
    this is the "TP scaling is worse than the vendor chart" check.
    """
    batch = obs.batch_per_replica
    if batch.value is None or batch.value < 1:
        why = batch.reason or "batch below one request"
        unknown = Measurement.unknown(f"no observed batch to compare at ({why})", batch.query, batch.window)
        return [
            ("kv_occupancy", math.nan, unknown, "higher", "ratio", ""),
            ("throughput_per_replica", math.nan, unknown, "lower", "tokens/s", ""),
        ]
    eff = sizing.tier.efficiency
    replica = replica_model(plan, sizing.tier, eff.bandwidth.expected, eff.compute.expected)
    b = batch.value
    note = f"at the observed batch of {b:.1f}"
    # KV occupancy is linear in the batch, so a window's mixed batches average out; tokens/s is concave in it
    tps, unsteady = obs.output_tokens_per_second_per_replica, obs.unsteady_batch(replica.workload.output_mean)
    if unsteady is not None:
        tps = Measurement.unknown(unsteady, tps.query, tps.window)
    return [
        ("kv_occupancy", replica.kv_occupancy(b), _kv_judged(obs), "higher", "ratio", note + _kv_peak_note(obs)),
        ("throughput_per_replica", replica.output_tokens_per_second(b), tps, "lower", "tokens/s", note),
    ]


MIN_EXPECTED_ERRORS = 5.0  # a window resolves an error budget when it would hold this many errors at it


def _availability_check(plan: Plan, obs: TierObservation) -> Check:
    """Errors against the error budget: 1 - availability (0.1% of requests at 99.9%). A window with too
    few requests to hold MIN_EXPECTED_ERRORS errors at the budget is unknown: one error in 300 night-time
    requests is 0.3%, noise rather than a breach of a 0.1% budget."""
    budget = 1.0 - plan.slo.availability
    observed, rate = obs.error_ratio, obs.request_rate
    window = rate.window or obs.window
    if observed.value is not None and rate.value is not None and budget > 0 and window:
        finished = rate.value * parse_duration(window)
        need = MIN_EXPECTED_ERRORS / budget
        if finished < need:
            reason = (
                f"too few requests to resolve a {budget:.2%} error budget: {finished:.0f} in {window}, need {need:.0f}"
            )
            observed = Measurement.unknown(reason, observed.query, observed.window)
    return ("availability", budget, observed, "higher", "error ratio", "errors and aborts vs the budget")
