"""Catalog query cost against a real Prometheus: per-tier instant queries, and the recording-rule group.

    PYTHONPATH=. python benchmarks/bench_queries.py [--tiers 4] [--replicas 12] [--hours 2] [--step 15]

Backfills `hours` of vLLM V1 + dcgm-exporter series for `tiers` x `replicas` (ending now, so the recording
rules find data), starts Prometheus with `rules/recording.yml`, then prints for every catalog query the
median latency of its per-tier rendering (the advisor's query) and of its all-tiers rendering (the rule),
and Prometheus's own evaluation time of the whole rule group. Loopback only; bounded in size and time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

from fleetsim.promstack import PrometheusConfig, PrometheusProcess
from fleetsim.text_blocks import write_text_blocks
from monitor.queries import ALL
from monitor.source import HttpPrometheusSource, SourceSettings
from tests.harness.history import History, times
from tests.queries.fleet_history import ITL_BUCKETS, TTFT_BUCKETS

RULES = Path(__file__).resolve().parents[1] / "rules" / "recording.yml"


def history(tiers: int, replicas: int, hours: float, step: float) -> str:
    end = float(int(time.time()) - 5)
    h = History(end - hours * 3600, end, step)
    ttft = {le: 1.0 for le in TTFT_BUCKETS[5:12]} | {le: 0.0 for le in TTFT_BUCKETS if le not in TTFT_BUCKETS[5:12]}
    itl = {le: 10.0 for le in ITL_BUCKETS[:4]} | {le: 0.0 for le in ITL_BUCKETS[4:]}
    for t in range(tiers):
        for r in range(replicas):
            pod = f"t{t}-{r}"
            labels = {"job": "vllm", "instance": f"{pod}:8000", "namespace": "llm", "pod": pod, "tier": f"t{t}",
                      "model_name": f"model-{t}", "engine": "0"}  # fmt: skip
            for reason in ("stop", "length", "abort", "error", "repetition"):
                h.counter("vllm:request_success", labels | {"finished_reason": reason}, 1.0)
            h.gauge("vllm:num_requests_running", labels, 8.0)
            h.gauge("vllm:num_requests_waiting", labels, 1.0)
            h.gauge("vllm:kv_cache_usage_perc", labels, 0.5)
            h.counter("vllm:generation_tokens", labels, 500.0)
            h.histogram("vllm:time_to_first_token_seconds", labels, ttft)
            h.histogram("vllm:inter_token_latency_seconds", labels, itl)
            gpu = {"job": "dcgm", "instance": f"node-{pod}:9400", "gpu": "0", "pod": pod, "namespace": "llm",
                   "Hostname": f"node-{pod}"}  # fmt: skip
            h.gauge("DCGM_FI_DEV_GPU_UTIL", gpu, 90.0)
            target = {k: labels[k] for k in ("job", "instance", "namespace", "pod", "tier")}
            h.raw("up", target, [(ts, 1.0) for ts in times(h.start, h.end, h.step)])
    return h.text()


def median_seconds(source: HttpPrometheusSource, expr: str, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        source.instant(expr)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiers", type=int, default=4)
    parser.add_argument("--replicas", type=int, default=12)
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--step", type=float, default=15.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-queries-") as tmp:
        started = time.perf_counter()
        text = history(args.tiers, args.replicas, args.hours, args.step)
        blocks = write_text_blocks(text, Path(tmp) / "data")
        print(f"history: {len(text) / 1e6:.1f} MB text, {len(blocks)} blocks, {time.perf_counter() - started:.1f}s")
        config = PrometheusConfig(rule_files=(RULES,), data_dir=Path(tmp) / "data", evaluation_interval="5s")
        with PrometheusProcess.start(config) as prom, HttpPrometheusSource(SourceSettings(url=prom.url)) as src:
            print(f"{'query':62s} {'per tier ms':>12s} {'all tiers ms':>13s}")
            for query in ALL:
                one = median_seconds(src, query.for_tier({"tier": "t0"}))
                every = median_seconds(src, query.for_all_tiers())
                print(f"{query.name:62s} {one * 1000:12.1f} {every * 1000:13.1f}")
            time.sleep(6)
            with urllib.request.urlopen(f"{prom.url}/api/v1/rules", timeout=10) as response:
                groups = json.load(response)["data"]["groups"]
            for group in groups:
                print(f"rule group {group['name']}: {len(group['rules'])} rules, "
                      f"evaluated in {group['evaluationTime'] * 1000:.1f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
