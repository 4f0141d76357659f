"""The drift report: each plan assumption against what production did, with a status a reviewer can check.

For each assumption the harmful direction is fixed (longer prompts hurt; a lower prefix-hit rate hurts).
The drift is the relative move in that direction,

    higher is harmful:  d = observed / plan - 1
    lower is harmful:   d = 1 - observed / plan

and the status is ok when d <= warn, warn when d <= breach, breach beyond (the plan's tolerances, per
assumption). An unknown observation is status unknown with its reason, never ok.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from monitor.observe.model import Measurement, TierObservation
from monitor.plan.model import Plan, Tolerance
from monitor.sizing.buckets import build_1_2_5_buckets, histogram_quantile
from monitor.sizing.tier import TierSizing, replica_model
from monitor.sizing.workload import tier_lengths

__all__ = ["DriftRow", "Status", "judge", "tier_drift", "worst_status"]

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


def tier_drift(plan: Plan, sizing: TierSizing, obs: TierObservation) -> list[DriftRow]:
    """Every assumption of one tier, in the order a design review reads them."""
    wl, tier = sizing.workload, sizing.tier
    arrival = plan.workload.arrival
    checks: list[tuple[str, float, Measurement, Harm, str, str]] = [
        ("peak_rate", wl.peak_rps, obs.peak_rate, "higher", "req/s", "highest 1-minute rate"),
        ("peak_to_average", arrival.peak_rps / arrival.average_rps, obs.peak_to_average, "higher", "x", ""),
        *_length_checks(plan, sizing, obs),
        ("prefix_hit_rate", wl.prefix_hit_rate, obs.prefix_hit_rate, "lower", "ratio", "hits / queries in tokens"),
        ("ttft_p95", sizing.ttft_slo_seconds, obs.ttft_p95, "higher", "s", "against the SLO"),
        ("tpot_p95", sizing.tpot_slo_seconds, obs.tpot_p95, "higher", "s", "against the SLO"),
        *_capacity_checks(plan, sizing, obs),
        ("cold_start", tier.cold_start_seconds, obs.cold_start_p95, "higher", "s", "created to ready, p95"),
        ("calls_per_request", plan.workload.calls_per_request, obs.calls_per_request, "higher", "calls", "gateway"),
        *_availability_check(plan, obs),
    ]
    rows = []
    for name, plan_value, observed, harmful, unit, note in checks:
        ratio, status = judge(plan_value, observed, harmful, plan.tolerances.for_assumption(name))
        rows.append(DriftRow(name, plan_value, observed, harmful, unit, ratio, status, note))
    return rows


def _length_checks(
    plan: Plan, sizing: TierSizing, obs: TierObservation
) -> list[tuple[str, float, Measurement, Harm, str, str]]:
    """Prompt and output quantiles, the plan read through vLLM's 1-2-5 token buckets as production is.

    histogram_quantile interpolates inside a bucket, so production that matches a plan of exactly 300
    output tokens reads as 485; the plan is pushed through the same buckets before the two are compared.
    """
    tier = sizing.tier
    prompts, outputs = tier_lengths(plan, tier)
    bounds = build_1_2_5_buckets(tier.max_model_len or plan.model_of(tier).max_context)
    checks: list[tuple[str, float, Measurement, Harm, str, str]] = []
    for name, dist, raw, q, observed in (
        ("prompt_p50", prompts, sizing.workload.prompt_p50, 0.5, obs.prompt_p50),
        ("prompt_p95", prompts, sizing.workload.prompt_p95, 0.95, obs.prompt_p95),
        ("output_p50", outputs, sizing.workload.output_p50, 0.5, obs.output_p50),
        ("output_p95", outputs, sizing.workload.output_p95, 0.95, obs.output_p95),
    ):
        seen = histogram_quantile(q, dist.cdf, bounds)
        note = f"plan {raw:,.0f} reads as {seen:,.0f} through vLLM's 1-2-5 buckets"
        checks.append((name, seen, observed, "higher", "tokens", note))
    return checks


def _capacity_checks(
    plan: Plan, sizing: TierSizing, obs: TierObservation
) -> list[tuple[str, float, Measurement, Harm, str, str]]:
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
    return [
        ("kv_occupancy", replica.kv_occupancy(b), obs.kv_occupancy_mean, "higher", "ratio", note),
        (
            "throughput_per_replica",
            b / replica.tpot_step(b).seconds,
            obs.output_tokens_per_second_per_replica,
            "lower",
            "tokens/s",
            note,
        ),
    ]


def _availability_check(plan: Plan, obs: TierObservation) -> list[tuple[str, float, Measurement, Harm, str, str]]:
    """Errors against the error budget: 1 - availability (0.1% of requests at 99.9%)."""
    budget = 1.0 - plan.slo.availability
    return [("availability", budget, obs.error_ratio, "higher", "error ratio", "errors and aborts vs the budget")]
