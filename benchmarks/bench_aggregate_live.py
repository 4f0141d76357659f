"""The replay's physics (fleetsim's aggregate model) against fleetsim's live step engine, per tier and rate.

    python benchmarks/bench_aggregate_live.py [--plan FILE] [--tiers standard,long-context] [--calls N] [--seed S]

The replay reads each minute's latencies off a per-rate curve measured on the aggregate model
(`monitor.replay.curve.tier_curve`); the live engine (`live_curve`, vLLM's scheduler step by step) is the
finer model it approximates. Both run one replica on the same workload at the aggregate curve's own rates
(2%..95% of what an overloaded replica admits). Printed per tier and rate: TTFT p50 and p95 and TPOT p95 of
each and the aggregate's error (aggregate / live - 1, + = the aggregate is slow); then the rate one replica
takes within the SLO by each curve (`monitor.replay.slo.slo_rate`) and by the sizing model's table
(uncalibrated), which is what planwatch's advice sizes with, and by the replay's own curve, whose rates
around the knee are the live engine's (3,000 calls each). The aggregate curve is measured as the replay
measures its coarse grid (3,000 calls per rate), its knee's rates on the aggregate too; the live one with
--calls per rate.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monitor.advice.capacity import capacity_table
from monitor.plan import load_plan
from monitor.replay.curve import QUANTILES, TierCurve, live_curve, tier_curve
from monitor.replay.slo import p95_at, slo_rate

ROOT = Path(__file__).resolve().parents[1]
P50 = int(np.searchsorted(QUANTILES, 0.5))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", type=Path, default=ROOT / "examples" / "capstone-revised.yaml")
    parser.add_argument("--tiers", default="standard,long-context")
    parser.add_argument("--calls", type=int, default=20_000, help="live engine calls per rate")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    plan = load_plan(args.plan)
    for name in args.tiers.split(","):
        tier = plan.tier(name.strip())
        started = time.perf_counter()
        ours = tier_curve(plan, tier, seed=args.seed, knee_engine="aggregate")
        theirs = live_curve(plan, tier, ours.rates, seed=args.seed, calls=args.calls)
        ttft_slo, tpot_slo = plan.slo_for(tier)
        print(f"\n## {tier.name}: SLO p95 TTFT {ttft_slo:g} s, p95 TPOT {tpot_slo * 1000:g} ms "
              f"({time.perf_counter() - started:.0f} s)")  # fmt: skip
        heads = ("TTFT p50 live / agg", "TTFT p95 live / agg", "TPOT p95 ms live / agg")
        print(f"{'req/s':>7} | " + " | ".join(f"{h:>22}" for h in heads))
        rows = zip(ours.rates, _column(theirs), _column(ours), strict=True)
        errors: dict[str, list[float]] = {"TTFT p50": [], "TTFT p95": [], "TPOT p95": []}
        for rate, live, agg in rows:
            cells = []
            for key, scale, (a, b) in zip(errors, (1.0, 1.0, 1000.0), zip(live, agg, strict=True), strict=True):
                error = b / a - 1.0 if a > 0 else float("nan")
                errors[key].append(error)
                cells.append(f"{a * scale:7.3f} / {b * scale:7.3f} {error:+5.0%}")
            print(f"{rate:7.3f} | " + " | ".join(cells))
        for key, values in errors.items():
            arr = np.asarray(values[:-2])  # the two rates nearest saturation are queues, not the engine
            print(f"  {key}: median error {np.median(arr):+.1%}, range {arr.min():+.1%}..{arr.max():+.1%} "
                  f"(rates up to {ours.rates[-3]:.3f} req/s)")  # fmt: skip
        live_rate, agg_rate = slo_rate(plan, tier, theirs), slo_rate(plan, tier, ours)
        replay_rate = slo_rate(plan, tier, tier_curve(plan, tier, seed=args.seed))
        model = capacity_table(plan, tier, 1.0).capacity_of(1)
        print(f"  one replica within the SLO: live engine {live_rate:.3f} req/s, aggregate {agg_rate:.3f} "
              f"({_error(agg_rate, live_rate)}), the replay's curve (live at the knee) {replay_rate:.3f} "
              f"({_error(replay_rate, live_rate)}), sizing model {model:.3f} ({_error(model, live_rate)})")  # fmt: skip


def _error(value: float, reference: float) -> str:
    """value / reference - 1, or what it is where the live engine meets the SLO at no rate."""
    return f"{value / reference - 1:+.1%}" if reference > 0 else "the live engine meets the SLO at no rate"


def _column(curve: TierCurve) -> list[tuple[float, float, float]]:
    p95_ttft, p95_tpot = p95_at(curve.ttft), p95_at(curve.tpot)
    return [(float(curve.ttft[i, P50]), float(p95_ttft[i]), float(p95_tpot[i])) for i in range(curve.rates.size)]


if __name__ == "__main__":
    main()
