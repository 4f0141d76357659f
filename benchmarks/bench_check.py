"""How long one `planwatch check` takes on a 1,000-replica fleet, and how many queries it issues.

Builds a plan of 1,000 replicas (the revised capstone's four tiers, traffic scaled to keep each replica's
load realistic), backfills half an hour of fleetsim history into a fresh Prometheus, then times
collect + evaluate at the end of that history, counting the HTTP queries. Run it twice with different
replica counts to see that the query count does not grow with the fleet.

    python benchmarks/bench_check.py [--replicas 1000] [--minutes 30]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fleetsim.promstack import PrometheusConfig, PrometheusProcess  # noqa: E402
from monitor.collector import PrometheusCollector, queries_per_tier  # noqa: E402
from monitor.evaluation import evaluate  # noqa: E402
from monitor.plan import load_plan  # noqa: E402
from monitor.sizing.plan_sizing import size_plan  # noqa: E402
from monitor.source import HttpPrometheusSource, InstantResult, RangeResult, SourceSettings  # noqa: E402

SHARES = {"fast": 0.10, "standard": 0.50, "long-context": 0.35, "fallback": 0.05}


class CountingSource(HttpPrometheusSource):
    """The HTTP source, counting every query it sends."""

    calls = 0

    def instant(self, query: str, at: float | None = None) -> InstantResult:
        CountingSource.calls += 1
        return super().instant(query, at)

    def range(self, query: str, start: float, end: float, step: float) -> RangeResult:
        CountingSource.calls += 1
        return super().range(query, start, end, step)


def scaled_plan(replicas: int, out: Path) -> Path:
    data = yaml.safe_load((ROOT / "examples" / "capstone-revised.yaml").read_text())
    base = sum(t["replicas"]["planned"] for t in data["tiers"])
    for tier in data["tiers"]:
        n = max(1, round(replicas * SHARES[tier["name"]]))
        tier["replicas"] = {"min": min(tier["replicas"]["min"], n), "max": n, "planned": n}
    factor = replicas / base
    data["workload"]["arrival"] = {k: v * factor if k != "peak_hours_per_day" else v
                                   for k, v in data["workload"]["arrival"].items()}  # fmt: skip
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


def backfill(plan: Path, data_dir: Path, minutes: int, end: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", "from fleetsim.cli import main; main()", "backfill", str(plan), "--days",
         f"{minutes / 1440:.6f}", "--step", "30s", "--end", end, "--prometheus-data", str(data_dir)],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode:
        sys.exit(f"backfill failed: {done.stderr.strip()}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--minutes", type=int, default=30)
    args = parser.parse_args()
    end = "2026-12-01T19:00:00Z"  # 11:00 in Los Angeles on a Tuesday: business hours, near the peak
    with tempfile.TemporaryDirectory() as tmp:
        plan_path = scaled_plan(args.replicas, Path(tmp) / "plan.yaml")
        took = backfill(plan_path, Path(tmp) / "data", args.minutes, end)
        print(f"backfill: {args.replicas} replicas x {args.minutes} min at 30 s in {took:.0f} s")
        plan = load_plan(plan_path)
        now = datetime.fromisoformat(end.replace("Z", "+00:00")).timestamp()
        with PrometheusProcess.start(PrometheusConfig(data_dir=Path(tmp) / "data"), workdir=Path(tmp) / "prom") as prom:
            source = CountingSource(SourceSettings(url=prom.url, timeout=30))
            collector = PrometheusCollector(source, long_window=f"{args.minutes}m")
            for label in ("cold", "warm"):
                CountingSource.calls = 0
                started = time.perf_counter()
                observations = collector.collect(plan, now, f"{min(args.minutes, 15)}m")
                evaluate(plan, size_plan(plan), observations, {}, (), {}, {}, now)
                seconds = time.perf_counter() - started
                print(f"check ({label}): {seconds:.2f} s, {CountingSource.calls} queries for {len(plan.tiers)} tiers "
                      f"({queries_per_tier()} per tier, independent of the {args.replicas} replicas)")  # fmt: skip
            source.close()


if __name__ == "__main__":
    main()
