"""Live emulation cost: 100 replicas at 100 req/s must fit in one CPU core.

The fleet is advanced the way `fleetsim serve` advances it (every TICK_SECONDS of wall time at speed 1),
and every endpoint is rendered once per 15 s scrape interval, as a Prometheus scraping the whole fleet
would. CPU time is measured with time.process_time(); "core share" = CPU seconds per simulated second,
i.e. the share of one core the emulator needs at --speed 1.

    PYTHONPATH=. python benchmarks/bench_fleetsim_live.py [--replicas 100] [--rps 100] [--seconds 300]
"""

from __future__ import annotations

import argparse
import time

import yaml

from fleetsim.fleet import Fleet, FleetOptions
from fleetsim.server import TICK_SECONDS, dcgm_text, gateway_text, ksm_text, vllm_text
from monitor.plan.load import parse_plan
from monitor.plan.model import Plan

SCRAPE_INTERVAL = 15.0
START = 1_715_007_600.0  # Monday 2024-05-06, 11:00 in New York


def bench_plan(replicas: int, rps: float) -> Plan:
    """The support-copilot plan at a flat `rps` (peak = average) over `replicas` planned replicas."""
    with open("examples/support-copilot.yaml", encoding="utf-8") as f:
        data = yaml.safe_load(f)
    data["workload"]["arrival"].update(peak_rps=rps, average_rps=rps)
    data["tiers"][0]["replicas"] = {"min": 1, "max": replicas, "planned": replicas}
    return parse_plan(yaml.safe_dump(data), source="bench")


def scrape_all(fleet: Fleet) -> int:
    size = len(gateway_text(fleet)) + len(ksm_text(fleet))
    for name, pod in fleet.pods.items():
        size += len(dcgm_text(fleet, name))
        if pod.phase == "ready":
            size += len(vllm_text(fleet, name))
    return size


def run(replicas: int, rps: float, seconds: float) -> dict[str, float]:
    fleet = Fleet(bench_plan(replicas, rps), START, options=FleetOptions(seed=1))
    fleet.populate()
    fleet.advance_to(START + 30.0)  # warm up: batches fill
    sim_cpu = scrape_cpu = 0.0
    t, next_scrape, scraped_bytes, scrapes = fleet.now, fleet.now, 0, 0
    while t < START + 30.0 + seconds:
        t += TICK_SECONDS
        c0 = time.process_time()
        fleet.advance_to(t)
        c1 = time.process_time()
        if t >= next_scrape:
            scraped_bytes += scrape_all(fleet)
            scrapes += 1
            next_scrape += SCRAPE_INTERVAL
        sim_cpu += c1 - c0
        scrape_cpu += time.process_time() - c1
    finished = sum(p.metrics.count("vllm:e2e_request_latency_seconds") for p in fleet.pods.values())
    return {
        "replicas": float(len(fleet.pods)),
        "simulated_seconds": seconds,
        "requests_finished_per_second": finished / (seconds + 30.0),
        "sim_cpu_seconds": sim_cpu,
        "scrape_cpu_seconds": scrape_cpu,
        "core_share": (sim_cpu + scrape_cpu) / seconds,
        "bytes_per_full_scrape": scraped_bytes / max(scrapes, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--rps", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, default=300.0)
    args = parser.parse_args()
    result = run(args.replicas, args.rps, args.seconds)
    for key, value in result.items():
        print(f"{key:32} {value:,.3f}")
    verdict = "OK" if result["core_share"] <= 1.0 else "OVER BUDGET"
    print(f"{'CPU of one core':32} {100 * result['core_share']:.1f}%  ({verdict}: budget 100%)")


if __name__ == "__main__":
    main()
