"""Sizing as plain data with stable keys (the `planwatch size --format json` contract and the API's)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from monitor.sizing.explain import findings, hypothesis_rows
from monitor.sizing.plan_sizing import PlanSizing, SizedTier
from monitor.sizing.tier import OperatingPoint

__all__ = ["sizing_to_dict"]


def sizing_to_dict(sizing: PlanSizing) -> dict[str, Any]:
    plan, fleet = sizing.plan, sizing.fleet
    return {
        "plan": {"name": plan.name, "description": plan.description.strip()},
        "tiers": [_tier(sizing, t) for t in sizing.tiers],
        "fleet": {
            "gpus_at_peak": fleet.gpus_at_peak,
            "gpu_hours_per_day": fleet.gpu_hours_per_day,
            "cost_per_hour_usd_at_peak": fleet.cost_per_hour_usd_at_peak,
            "cost_per_month_usd": fleet.cost_per_month_usd,
            "cost_per_user_request_usd": fleet.cost_per_user_request_usd,
            "tokens_per_month": fleet.tokens_per_month,
            "cost_per_million_tokens_usd": fleet.cost_per_million_tokens_usd,
            "serverless_usd_per_million_tokens": fleet.serverless_usd_per_million_tokens,
            "serverless_cost_per_month_usd": fleet.serverless_cost_per_month_usd,
            "breakeven_tokens_per_month": fleet.breakeven_tokens_per_month,
        },
    }


def _tier(sizing: PlanSizing, sized: SizedTier) -> dict[str, Any]:
    s, c, t = sized.sizing, sized.cost, sized.sizing.tier
    wl, p = s.workload, s.expected
    low, mid, high = s.replicas_range
    return {
        "name": t.name,
        "model": t.model,
        "gpu": t.gpu,
        "tensor_parallel": t.tensor_parallel,
        "weight_dtype": t.weight_dtype.value,
        "kv_cache_dtype": t.kv_cache_dtype.value,
        "share_of_calls": wl.share,
        "peak_rps": wl.peak_rps,
        "average_rps": wl.average_rps,
        "prompt_tokens": {"mean": wl.prompt_mean, "p50": wl.prompt_p50, "p95": wl.prompt_p95},
        "output_tokens": {"mean": wl.output_mean, "p50": wl.output_p50, "p95": wl.output_p95},
        "prefix_hit_rate": wl.prefix_hit_rate,
        "kv_bytes_per_token": s.kv_bytes_per_token,
        "weights_bytes": s.weights_bytes,
        "kv_budget_bytes_per_replica": s.kv_budget_bytes,
        "kv_budget_tokens_per_replica": s.kv_budget_tokens,
        "token_rates_at_peak": {
            "prefill_tokens_per_second": s.prefill_tokens_per_second,
            "uncached_prefill_tokens_per_second": s.uncached_prefill_tokens_per_second,
            "decode_tokens_per_second": s.decode_tokens_per_second,
        },
        "compute_flops_per_second": s.compute_flops_per_second,
        "compute_flops_per_second_without_prefix_cache": s.compute_flops_per_second_without_prefix_cache,
        "gpus_of_pure_compute": s.gpus_of_pure_compute,
        "concurrency_at_peak": s.concurrency_at_peak,
        "kv_bytes_at_peak": {"mean": s.kv_bytes_at_peak_mean, "p95": s.kv_bytes_at_peak_p95},
        "max_batch_at_slo": p.max_batch,
        "batch_constraint": p.batch_constraint,
        "decode_step_seconds": p.decode_step_seconds,
        "tpot_seconds": p.tpot_seconds,
        "tpot_p95_seconds": p.tpot_p95_seconds,
        "chunk_step_seconds": p.chunk_step_seconds,
        "chunk_step_share": p.chunk_share,
        "requests_per_second_per_replica": p.requests_per_second_per_replica,
        "ttft_p95_seconds_estimate": p.ttft.seconds,
        "ttft": {
            "prefill_p95_seconds": p.ttft.prefill_p95_seconds,
            "wait_p95_seconds": p.ttft.wait_p95_seconds,
            "step_in_flight_p95_seconds": p.ttft.step_wait_p95_seconds,
            "prefill_queue_p95_seconds": p.ttft.prefill_wait_p95_seconds,
            "feasible": p.ttft_feasible,
        },
        "slo": {"ttft_p95_seconds": s.ttft_slo_seconds, "tpot_p95_seconds": s.tpot_slo_seconds},
        "replicas_at_peak": {"low": low, "expected": mid, "high": high},
        "replicas_planned": t.replicas.planned,
        "operating_points": {
            "optimistic": _point(s.optimistic),
            "expected": _point(p),
            "pessimistic": _point(s.pessimistic),
        },
        "gpus_at_peak": c.gpus_at_peak,
        "binding_constraint": "standby" if s.standby else p.binding_constraint,
        "cost_per_hour_usd_at_peak": c.cost_per_hour_usd_at_peak,
        "cost_per_month_usd": c.cost_per_month_usd,
        "cost_per_request_usd": c.cost_per_request_usd if c.requests_per_month else None,
        "capacity_curve": [asdict(pt) for pt in s.capacity_curve],
        "hypothesis": [asdict(row) for row in hypothesis_rows(sizing.plan, sized)],
        "findings": findings(sized),
    }


def _point(p: OperatingPoint) -> dict[str, Any]:
    return {
        "bandwidth_efficiency": p.bandwidth_efficiency,
        "compute_efficiency": p.compute_efficiency,
        "max_batch_at_slo": p.max_batch,
        "requests_per_second_per_replica": p.requests_per_second_per_replica,
        "replicas": p.replicas,
        "binding_constraint": p.binding_constraint,
    }
