"""Serving benchmark result files, read into one shape: what was run and what was measured.

Formats (upstream's own field names):
- `vllm bench serve --save-result` JSON: completed, total_input_tokens, total_output_tokens,
  max_concurrency (null: an open-loop request_rate), output_throughput (tokens/s), mean_ttft_ms,
  mean_itl_ms, mean_tpot_ms.
- GuideLLM benchmarks JSON: {"benchmarks": [{"metrics": {name: {"successful": {"mean", "median",
  "percentiles": {...}}}}}]} with time_to_first_token_ms, inter_token_latency_ms,
  output_tokens_per_second, request_concurrency, prompt_token_count, output_token_count; one run each.
- NVIDIA AIPerf / genai-perf profile export JSON: {metric: {"unit", "avg", "p50", ...}} with
  time_to_first_token, inter_token_latency, output_token_throughput, input_sequence_length,
  output_sequence_length; the concurrency top-level or under input_config.
A file that is none of these is refused with its path and what is missing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["BenchmarkRun", "ResultFileError", "read_results"]


class ResultFileError(ValueError):
    """A benchmark result file that cannot be read, with the path and the reason."""


@dataclass(frozen=True)
class BenchmarkRun:
    source: str  # file (and run index)
    tool: str  # "vllm bench serve" | "guidellm" | "aiperf"
    prompt_tokens: float  # mean per request
    output_tokens: float
    concurrency: float | None  # None: open loop / saturated
    ttft_seconds: float  # mean
    itl_seconds: float  # mean
    output_tokens_per_second: float


def read_results(path: Path) -> list[BenchmarkRun]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ResultFileError(f"{path}: not a readable JSON file ({exc})") from exc
    if not isinstance(data, dict):
        raise ResultFileError(f"{path}: expected a JSON object")
    try:
        if "benchmarks" in data:
            return [_guidellm(f"{path}[{i}]", b) for i, b in enumerate(data["benchmarks"])]
        if "mean_ttft_ms" in data:
            return [_vllm(str(path), data)]
        if "time_to_first_token" in data:
            return [_aiperf(str(path), data)]
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        raise ResultFileError(f"{path}: missing or unreadable field {exc}") from exc
    raise ResultFileError(
        f"{path}: neither a vllm bench serve result (mean_ttft_ms), a GuideLLM report (benchmarks) "
        "nor an AIPerf/genai-perf export (time_to_first_token)"
    )


def _vllm(source: str, d: dict[str, Any]) -> BenchmarkRun:
    completed = float(d["completed"])
    itl = d["mean_itl_ms"] if "mean_itl_ms" in d else d["mean_tpot_ms"]
    return BenchmarkRun(
        source=source,
        tool="vllm bench serve",
        prompt_tokens=float(d["total_input_tokens"]) / completed,
        output_tokens=float(d["total_output_tokens"]) / completed,
        concurrency=None if d.get("max_concurrency") is None else float(d["max_concurrency"]),
        ttft_seconds=float(d["mean_ttft_ms"]) / 1e3,
        itl_seconds=float(itl) / 1e3,
        output_tokens_per_second=float(d["output_throughput"]),
    )


def _mean(stat: dict[str, Any]) -> float:
    s = stat.get("successful", stat)
    return float(s["mean"])


def _guidellm(source: str, b: dict[str, Any]) -> BenchmarkRun:
    m = b["metrics"]
    return BenchmarkRun(
        source=source,
        tool="guidellm",
        prompt_tokens=_mean(m["prompt_token_count"]),
        output_tokens=_mean(m["output_token_count"]),
        concurrency=_mean(m["request_concurrency"]),
        ttft_seconds=_mean(m["time_to_first_token_ms"]) / 1e3,
        itl_seconds=_mean(m["inter_token_latency_ms"]) / 1e3,
        output_tokens_per_second=_mean(m["output_tokens_per_second"]),
    )


def _seconds(stat: dict[str, Any]) -> float:
    unit = str(stat.get("unit", "ms"))
    scale = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "us": 1e-6, "ns": 1e-9}[unit]
    return float(stat["avg"]) * scale


def _aiperf(source: str, d: dict[str, Any]) -> BenchmarkRun:
    concurrency = d.get("concurrency")
    config = d.get("input_config", {})
    for keys in (("loadgen", "concurrency"), ("perf_analyzer", "stimulus", "concurrency")):
        node: Any = config
        for k in keys:
            node = node.get(k) if isinstance(node, dict) else None
        concurrency = concurrency if concurrency is not None else node
    return BenchmarkRun(
        source=source,
        tool="aiperf",
        prompt_tokens=float(d["input_sequence_length"]["avg"]),
        output_tokens=float(d["output_sequence_length"]["avg"]),
        concurrency=None if concurrency is None else float(concurrency),
        ttft_seconds=_seconds(d["time_to_first_token"]),
        itl_seconds=_seconds(d["inter_token_latency"]),
        output_tokens_per_second=float(d["output_token_throughput"]["avg"]),
    )
