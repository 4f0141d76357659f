"""Backfill throughput: N days x R replicas at a given step, written into a fresh data directory.

    PYTHONPATH=. python benchmarks/bench_backfill.py [--days 28] [--step 15s] [--replicas 12] [--parallel 2]
                                                     [--block 6h] [--plan examples/capstone.yaml] [--keep DIR]

Replicas are spread over the plan's tiers in proportion to their planned counts (at least one per tier
that takes traffic). Prints wall time, samples, series, samples/s and where the time went: the model
(calls, latencies, per-scrape values), handing values to the block encoders, and the wait for the encoder
threads.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fleetsim.backfill import Request, execute, resolve_spec


def scaled_plan(source: Path, replicas: int, out: Path) -> Path:
    """The plan with `replicas` pods in total, split like its planned counts (max raised to fit)."""
    data = yaml.safe_load(source.read_text())
    tiers = data["tiers"]
    planned = [max(1, t["replicas"]["planned"]) for t in tiers]
    total = sum(planned)
    counts = [max(1, round(replicas * p / total)) for p in planned]
    counts[planned.index(max(planned))] += replicas - sum(counts)
    for tier, n in zip(tiers, counts, strict=True):
        tier["replicas"] = {
            "min": min(tier["replicas"].get("min", 1), n),
            "max": max(n, tier["replicas"]["max"]),
            "planned": n,
        }
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", type=Path, default=Path("examples/capstone.yaml"))
    parser.add_argument("--days", type=float, default=28.0)
    parser.add_argument("--step", default="15s")
    parser.add_argument("--replicas", type=int, default=12)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--block", default="6h")
    parser.add_argument("--end", default="2024-06-03T00:00Z")
    parser.add_argument("--keep", type=Path, default=None, help="data directory to keep (default: a temp dir)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-backfill-"))
    data_dir = args.keep or work / "data"
    plan = scaled_plan(args.plan, args.replicas, work / "plan.yaml")
    try:
        spec = resolve_spec(
            Request(
                plan,
                data_dir,
                days=args.days,
                step=args.step,
                end=args.end,
                block=args.block,
                parallel=args.parallel,
            )
        )
        self_before = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        report = execute(spec, None)
        wall = time.perf_counter() - started
        mine = resource.getrusage(resource.RUSAGE_SELF)
        python_cpu = (mine.ru_utime - self_before.ru_utime) + (mine.ru_stime - self_before.ru_stime)
        blocks = len([p for p in data_dir.iterdir() if p.is_dir()]) if data_dir.exists() else 0
        print(f"plan                {args.plan} scaled to {args.replicas} replicas, {args.days:g} days at {args.step}")
        print(f"wall                {wall:8.1f} s  (target 180 s)")
        print(f"samples             {report.samples:>14,}  ({report.samples / wall / 1e6:.2f} M/s)")
        print(f"series              {report.series:>14,}")
        size = sum(f.stat().st_size for f in data_dir.rglob("*") if f.is_file()) if data_dir.exists() else 0
        print(f"on disk             {size / 1e9:8.2f} GB  ({size / max(report.samples, 1):.2f} B/sample)")
        print(f"python CPU          {python_cpu:8.1f} s  (one process: model and encoding threads)")
        print(f"model (python)      {report.model_seconds:8.1f} s")
        print(f"queueing (python)   {report.render_seconds:8.1f} s")
        print(f"waited for encoder  {report.wait_seconds:8.1f} s")
        print(f"blocks              {blocks:>8}  cores {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
        bound = python_cpu
        print(f"idle-machine bound  {bound:8.1f} s  (python CPU: one process)")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
