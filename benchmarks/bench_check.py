"""How long one `planwatch check` takes on a 1,000-replica fleet, and how many queries it issues.

Builds a plan of 1,000 replicas (the revised capstone's four tiers, traffic scaled to keep each replica's
load realistic) and backfills `--minutes` of fleetsim history into a fresh Prometheus. Then it times
collect + evaluate at the end of that history, counting the HTTP queries, twice over:

1. from the raw vLLM / dcgm-exporter / kube-state-metrics series (recording rules switched off);
2. after `rules/recording.yml` has been evaluated over the history (promtool tsdb create-blocks-from
   rules, as for any backfill), from the recorded `tier:*` series, which is what a check does where the
   rules run. The history must reach back over the 6-hour burn window for every window to be recorded.

Run it with different replica counts to see that the query count does not grow with the fleet.

    python benchmarks/bench_check.py [--replicas 1000] [--minutes 400] [--step 60s] [--keep DIR]

`--keep DIR` keeps the history (raw and recorded) in DIR and reuses it on the next run: evaluating the rules
over 1,000 replicas' history takes promtool a quarter of an hour.
"""

from __future__ import annotations

import argparse
import shutil
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
from fleetsim.recorded_history import record_rules  # noqa: E402
from monitor.evaluation import EvaluationInputs, evaluate  # noqa: E402
from monitor.observer import PrometheusObserver, queries_per_tier  # noqa: E402
from monitor.plan import load_plan  # noqa: E402
from monitor.service.app import build_services  # noqa: E402
from monitor.service.settings import Settings  # noqa: E402
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


def backfill(plan: Path, data_dir: Path, minutes: int, end: str, step: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", "from fleetsim.cli import main; main()", "backfill", str(plan), "--days",
         f"{minutes / 1440:.6f}", "--step", step, "--end", end, "--prometheus-data", str(data_dir)],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode:
        sys.exit(f"backfill failed: {done.stderr.strip()}")
    return time.perf_counter() - started


def timed_checks(prom_url: str, plan_path: Path, now: float, long_window: str, recording_rules: bool) -> None:
    plan = load_plan(plan_path)
    source = CountingSource(SourceSettings(url=prom_url, timeout=60))
    observer = PrometheusObserver(source, long_window=long_window, recording_rules=recording_rules)
    mode = "recorded series" if recording_rules else "raw series"
    for label in ("cold", "warm", "warm"):
        CountingSource.calls = 0
        started = time.perf_counter()
        observations = observer.collect(plan, now, "1h")
        evaluate(EvaluationInputs(plan, observations, now))
        seconds = time.perf_counter() - started
        recorded = sum("tier:" in m.query for o in observations.values() for m in vars(o).values()
                       if hasattr(m, "query"))  # fmt: skip
        print(f"check from {mode} ({label}): {seconds:.2f} s, {CountingSource.calls} queries for "
              f"{len(plan.tiers)} tiers ({queries_per_tier(probes=recording_rules)} per tier, independent of "
              f"the replica count); {recorded} readings from tier:* series")  # fmt: skip
    source.close()


def timed_service_cycles(prom_url: str, plan_path: Path, now: float, long_window: str, state: Path) -> None:
    """The advisor's own evaluation job (collect, evaluate, recommend, store in SQLite, publish), as
    `planwatch serve` runs it every minute."""
    settings = Settings(plan=plan_path, prometheus=SourceSettings(url=prom_url, timeout=60), long_window=long_window,
                        state_db=state)  # fmt: skip
    services = build_services(settings, clock=lambda: now, schedule=False)
    try:
        for label in ("first", "next", "next"):
            started = time.perf_counter()
            snapshot = services.evaluate_now()
            seconds = time.perf_counter() - started
            print(f"service evaluation cycle ({label}): {seconds:.2f} s, outcome {snapshot.outcome}")
    finally:
        services.close()


def prepare(args: argparse.Namespace, work: Path, now: float, end: str) -> tuple[Path, Path]:
    """The scaled plan and a data dir with raw history and recorded series (made once, kept with --keep)."""
    plan_path, data, done = work / "plan.yaml", work / "data", work / "recorded.done"
    if done.exists():
        print(f"reusing the history in {work}")
        return plan_path, data
    shutil.rmtree(data, ignore_errors=True)
    scaled_plan(args.replicas, plan_path)
    took = backfill(plan_path, data, args.minutes, end, args.step)
    print(f"backfill: {args.replicas} replicas x {args.minutes} min at {args.step} in {took:.0f} s")
    with PrometheusProcess.start(PrometheusConfig(data_dir=data), workdir=work / "prom-raw") as prom:
        timed_checks(prom.url, plan_path, now, f"{args.minutes - 15}m", recording_rules=False)
        started = time.perf_counter()
        record_rules(prom.url, [ROOT / "rules" / "recording.yml"], now - args.minutes * 60, now, data, "60s")
        print(f"recording rules evaluated over the history in {time.perf_counter() - started:.0f} s")
    done.write_text(f"{args.replicas} {args.minutes} {args.step}\n")
    return plan_path, data


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--minutes", type=int, default=400)
    parser.add_argument("--step", default="60s")
    parser.add_argument("--keep", type=Path, default=None, help="keep (and reuse) the history in this directory")
    args = parser.parse_args()
    end = "2026-12-01T19:00:00Z"  # 11:00 in Los Angeles on a Tuesday: business hours, near the peak
    long_window = f"{args.minutes - 15}m"
    now = datetime.fromisoformat(end.replace("Z", "+00:00")).timestamp()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        plan_path, data = prepare(args, work, now, end)
        with PrometheusProcess.start(PrometheusConfig(data_dir=data), workdir=Path(tmp) / "prom") as prom:
            timed_checks(prom.url, plan_path, now, long_window, recording_rules=True)
            timed_service_cycles(prom.url, plan_path, now, long_window, Path(tmp) / "state.db")


if __name__ == "__main__":
    main()
