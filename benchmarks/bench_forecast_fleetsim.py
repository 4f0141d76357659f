"""Forecast accuracy on fleetsim's diurnal traffic, the targets of the forecasting issue:
next-day peak error <= 10%, MASE < 1 against the seasonal naive, 80% interval coverage within 10 points.

Demand is fleetsim's own weekly profile for examples/capstone.yaml (morning ramp in Los Angeles, quieter
weekends, bursts) with Poisson counts per 5-minute step, as the live emulator and backfill draw it. For each
of 7 consecutive days, 28 days of history are fitted and the next 24 hours forecast and scored.

    python benchmarks/bench_forecast_fleetsim.py [--scenario irregular]

The default scenario is "irregular" (day-to-day level and shape, trend, shifts, holidays, as real traces
show): the regular profile ("baseline") repeats itself and flatters any seasonal model.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fleetsim.scenarios import parse_scenarios  # noqa: E402
from fleetsim.workload import rates_at  # noqa: E402
from forecasting import ForecastSettings, Series, forecast  # noqa: E402
from monitor.plan import load_plan  # noqa: E402

STEP, DAY = 300.0, 86_400.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", default="irregular", help="fleetsim scenarios, e.g. baseline or irregular")
    scenarios = parse_scenarios(parser.parse_args().scenario)
    plan = load_plan(ROOT / "examples" / "capstone.yaml")
    start = 1_796_000_000.0 - (1_796_000_000.0 % DAY)
    stamps = start + STEP * np.arange(int(35 * DAY / STEP))
    rng = np.random.default_rng(7)
    demand = rng.poisson(rates_at(plan, stamps, scenarios, seed=7) * STEP) / STEP
    peak_errors, mases, covered, n_points = [], [], 0, 0
    started = time.perf_counter()
    for day in range(28, 35):
        cut = int(day * DAY / STEP)
        history = Series(stamps[:cut], demand[:cut], name="demand")
        result = forecast(history, ForecastSettings(horizon_seconds=DAY, step_seconds=STEP))
        actual = demand[cut : cut + int(DAY / STEP)]
        mean = np.asarray(result.mean)[: len(actual)]
        lower, upper = (
            np.asarray(result.bands.lower_80)[: len(actual)],
            np.asarray(result.bands.upper_80)[: len(actual)],
        )
        naive = demand[cut - int(7 * DAY / STEP) : cut - int(7 * DAY / STEP) + len(actual)]  # last week, same time
        peak_errors.append(abs(mean.max() - actual.max()) / actual.max())
        mases.append(np.abs(mean - actual).mean() / np.abs(naive - actual).mean())
        covered += int(((actual >= lower) & (actual <= upper)).sum())
        n_points += len(actual)
        print(f"day {day}: model {result.model}, peak error {peak_errors[-1]:.1%}, MASE {mases[-1]:.2f}")
    print(f"next-day peak error: mean {np.mean(peak_errors):.1%}, max {np.max(peak_errors):.1%} (target <= 10%)")
    print(f"MASE against the weekly seasonal naive: mean {np.mean(mases):.3f} (target < 1)")
    print(f"80% interval coverage: {covered / n_points:.1%} (target 70-90%)")
    print(f"7 fits of 28 days at 5 min: {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
