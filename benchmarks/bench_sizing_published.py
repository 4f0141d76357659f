"""The sizing model against published serving measurements (benchmarks/data/published_serving.csv).

    python benchmarks/bench_sizing_published.py [--csv FILE] [--rows]

Each row (engine, model, GPU, TP, dtypes, fixed prompt/output lengths, a concurrency or "saturated") is
written as a one-tier plan with the catalog GPU, the default efficiencies and the engine's default
scheduler limits (max_num_seqs 1024, max_num_batched_tokens 8192, gpu_memory_utilization 0.9, no
prefix hits on random prompts); nothing is tuned per row. `monitor.sizing.measured.predict_run` gives
ITL, TTFT, output throughput and the KV capacity in sequences; the KV capacity is measured where a
closed-loop sweep plateaus (batch = throughput x ITL once queueing starts).

Printed per metric: rows, median |error|, bias (median signed error, + = the model is slow/high), and
the same per tensor-parallel size. Error = predicted / measured - 1.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monitor.plan import Plan
from monitor.sizing.measured import predict_run

DATA = Path(__file__).resolve().parent / "data" / "published_serving.csv"

MODELS = {
    "llama-3.1-8b": {"parameters": 8.03e9, "layers": 32, "attention_heads": 32, "kv_heads": 8, "head_dim": 128},
    "llama-3.3-70b": {"parameters": 70.6e9, "layers": 80, "attention_heads": 64, "kv_heads": 8, "head_dim": 128},
}
MAX_NUM_SEQS = 1024  # vLLM V1's default for the OpenAI server on 80 GB+ GPUs
CHUNK_TOKENS = 8192


@dataclass(frozen=True)
class Row:
    engine: str
    model: str
    gpu: str
    tp: int
    weight_dtype: str
    kv_dtype: str
    prompt: int
    output: int
    concurrency: float | None
    ttft_ms: float | None
    itl_ms: float | None
    throughput: float

    @property
    def config(self) -> tuple[str, str, str, int, int, int]:
        return (self.engine, self.model, self.gpu, self.tp, self.prompt, self.output)


def read_rows(path: Path) -> list[Row]:
    with path.open(newline="") as f:
        return [
            Row(
                r["engine"],
                r["model"],
                r["gpu"],
                int(r["tensor_parallel"]),
                r["weight_dtype"],
                r["kv_dtype"],
                int(r["prompt_tokens"]),
                int(r["output_tokens"]),
                None if r["concurrency"] == "saturated" else float(r["concurrency"]),
                float(r["ttft_ms"]) if r["ttft_ms"] else None,
                float(r["itl_ms"]) if r["itl_ms"] else None,
                float(r["output_tokens_per_second"]),
            )
            for r in csv.DictReader(f)
        ]


def plan_for(row: Row) -> Plan:
    return Plan.model_validate(
        {
            "version": 1,
            "name": "published-row",
            "workload": {
                "arrival": {"peak_rps": 1.0, "average_rps": 1.0, "peak_hours_per_day": 24},
                "prompt_tokens": {"p50": row.prompt, "p95": row.prompt},
                "output_tokens": {"p50": row.output, "p95": row.output},
                "prefix_cache_hit_rate": 0.0,
            },
            "slo": {"ttft_p95": "10s", "tpot_p95": "1s", "availability": 0.99},
            "models": {row.model: MODELS[row.model]},
            "tiers": [
                {
                    "name": "bench",
                    "model": row.model,
                    "gpu": row.gpu,
                    "tensor_parallel": row.tp,
                    "weight_dtype": row.weight_dtype,
                    "kv_cache_dtype": row.kv_dtype,
                    "replicas": {"min": 1, "max": 1, "planned": 1},
                    "max_num_seqs": MAX_NUM_SEQS,
                    "chunked_prefill_tokens": CHUNK_TOKENS,
                    "max_model_len": 32768,
                }
            ],
            "costs": {"gpu_hour_usd": {row.gpu: 1.0}},
        }
    )


def errors(rows: list[Row]) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = defaultdict(list)
    plateau: dict[tuple[str, str, str, int, int, int], list[float]] = defaultdict(list)
    predicted_capacity: dict[tuple[str, str, str, int, int, int], float] = {}
    for row in rows:
        plan = plan_for(row)
        p = predict_run(plan, plan.tiers[0], row.concurrency)
        predicted_capacity[row.config] = p.kv_capacity_sequences
        if row.itl_ms is not None:
            out["ITL"].append((row.tp, p.itl_seconds * 1e3 / row.itl_ms - 1))
            if row.concurrency is not None and row.concurrency > 1.2 * row.throughput * row.itl_ms / 1e3:
                plateau[row.config].append(row.throughput * row.itl_ms / 1e3)
        if row.ttft_ms is not None:
            out["TTFT"].append((row.tp, p.ttft_seconds * 1e3 / row.ttft_ms - 1))
        saturated = row.concurrency is None or bool(plateau.get(row.config))
        if saturated:
            out["saturated throughput"].append((row.tp, p.output_tokens_per_second / row.throughput - 1))
        elif row.concurrency is not None:
            out["throughput below saturation"].append((row.tp, p.output_tokens_per_second / row.throughput - 1))
    for config, batches in plateau.items():
        out["KV capacity"].append((config[3], predicted_capacity[config] / statistics.median(batches) - 1))
    return out


def report(out: dict[str, list[tuple[int, float]]]) -> None:
    print(f"{'metric':<28} {'rows':>5} {'median |err|':>13} {'bias':>8}   per TP (median |err| / bias)")
    for metric, pairs in out.items():
        errs = [e for _, e in pairs]
        per_tp = defaultdict(list)
        for tp, e in pairs:
            per_tp[tp].append(e)
        tps = "  ".join(
            f"TP{tp}: {statistics.median(abs(e) for e in es):.0%}/{statistics.median(es):+.0%} (n={len(es)})"
            for tp, es in sorted(per_tp.items())
        )
        print(
            f"{metric:<28} {len(errs):>5} {statistics.median(abs(e) for e in errs):>13.1%}"
            f" {statistics.median(errs):>+8.1%}   {tps}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=DATA)
    parser.add_argument("--rows", action="store_true", help="print every row's prediction")
    args = parser.parse_args()
    rows = read_rows(args.csv)
    if args.rows:
        for row in rows:
            plan = plan_for(row)
            p = predict_run(plan, plan.tiers[0], row.concurrency)
            print(
                f"{row.engine:<17} {row.model:<14} {row.gpu:<14} TP{row.tp} {row.prompt:>6}/{row.output:<5}"
                f" c={row.concurrency or 'sat':<5} B={p.batch:>6.0f}"
                f" itl {p.itl_seconds * 1e3:6.2f}/{row.itl_ms or 0:6.2f}"
                f" ttft {p.ttft_seconds * 1e3:8.1f}/{row.ttft_ms or 0:8.1f}"
                f" tok/s {p.output_tokens_per_second:8.0f}/{row.throughput:8.0f}"
            )
    print(f"{len(rows)} published rows from {args.csv.name}, default efficiencies, no per-row tuning")
    report(errors(rows))


if __name__ == "__main__":
    main()
