"""Shared builders for fleetsim tests: small plans, a fleet run in simulated time, exposition parsing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from fleetsim.fleet import Fleet, FleetOptions
from fleetsim.scenarios import Scenario
from fleetsim.server import vllm_text
from monitor.plan.load import parse_plan
from monitor.plan.model import Plan

START = 1_715_007_600.0  # Monday 2024-05-06 15:00 UTC: 11:00 in New York, 08:00 in Los Angeles


def one_tier_plan_data(
    name: str,
    arrival: dict[str, float],
    business_hours: dict[str, str],
    replicas: int,
    max_replicas: int,
    **tier: Any,
) -> dict[str, Any]:
    """One tier `fast` of an 8B FP8 model on H100 (cheap to emulate and to model), as plan YAML data."""
    return {
        "version": 1,
        "name": name,
        "workload": {
            "arrival": arrival,
            "business_hours": business_hours,
            "prompt_tokens": {"p50": 1500, "p95": 6000},
            "output_tokens": {"p50": 150, "p95": 400},
            "shared_prefix_tokens": 600,
            "prefix_cache_hit_rate": 0.3,
        },
        "slo": {"ttft_p95": "1s", "tpot_p95": "50ms"},
        "models": {
            "llama-8b": {
                "parameters": "8B",
                "layers": 32,
                "attention_heads": 32,
                "kv_heads": 8,
                "head_dim": 128,
                "served_name": "meta-llama/Llama-3.1-8B-Instruct",
            },
        },
        "tiers": [
            {
                "name": "fast",
                "model": "llama-8b",
                "gpu": "H100-SXM-80GB",
                "weight_dtype": "fp8",
                "kv_cache_dtype": "fp8",
                "replicas": {"min": 1, "max": max_replicas, "planned": replicas},
                "cold_start": "2m",
                "max_model_len": 32768,
                **tier,
            }
        ],
        "costs": {"gpu_hour_usd": {"H100-SXM-80GB": 3.0}},
    }


def tiny_plan(rps: float = 8.0, replicas: int = 2, **tier: Any) -> Plan:
    """The one-tier plan at a flat rate (peak = average)."""
    arrival = {"peak_rps": rps, "average_rps": rps}
    data = one_tier_plan_data("tiny", arrival, {"timezone": "America/New_York"}, replicas, 16, **tier)
    return parse_plan(yaml.safe_dump(data), source="tiny")


def run_fleet(plan: Plan, seconds: float, scenarios: Sequence[Scenario] = (), seed: int = 1, **options: Any) -> Fleet:
    fleet = Fleet(plan, START, tuple(scenarios), FleetOptions(seed=seed, **options))
    fleet.populate()
    fleet.advance_to(START + seconds)
    return fleet


def total(fleet: Fleet, key: str, label: str | None = None) -> float:
    return sum(p.metrics.value(key, label) for p in fleet.pods.values())


def hist_count(fleet: Fleet, key: str) -> int:
    return sum(p.metrics.count(key) for p in fleet.pods.values())


def parse(text: str) -> dict[str, Any]:
    """name -> family, from prometheus_client's own parser."""
    return {f.name: f for f in text_string_to_metric_families(text)}


def samples(fleet: Fleet, pod: str) -> list[Sample]:
    return [s for f in text_string_to_metric_families(vllm_text(fleet, pod)) for s in f.samples]
