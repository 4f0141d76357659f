"""Small plans for replay tests: one 70B tier whose replicas each take a few requests/s, so scaling matters."""

from __future__ import annotations

from monitor.plan import Plan
from monitor.plan.load import parse_plan

__all__ = ["one_tier_plan"]


def one_tier_plan(
    *, planned: int = 4, low: int = 1, high: int = 12, cold_start: str = "5m", window: str = "business_hours"
) -> Plan:
    """A one-tier plan (Llama 70B on two H100s) with the SLO counted in business hours or always."""
    return parse_plan(f"""
version: 1
name: replay-test
workload:
  arrival: {{peak_rps: 12, average_rps: 3, peak_hours_per_day: 6}}
  business_hours: {{timezone: Europe/Berlin, start: "08:00", end: "18:00"}}
  prompt_tokens: {{p50: 1000, p95: 4000}}
  output_tokens: {{p50: 150, p95: 500}}
slo: {{ttft_p95: 2s, tpot_p95: 60ms, availability_window: {window}}}
models:
  llama-70b: {{parameters: 70B, layers: 80, attention_heads: 64, kv_heads: 8, head_dim: 128}}
tiers:
  - name: chat
    model: llama-70b
    gpu: H100-SXM-80GB
    tensor_parallel: 2
    weight_dtype: fp8
    kv_cache_dtype: fp8
    replicas: {{min: {low}, max: {high}, planned: {planned}}}
    cold_start: {cold_start}
    max_model_len: 32768
costs:
  gpu_hour_usd: {{H100-SXM-80GB: 3.0}}
""")
