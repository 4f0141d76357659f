"""Benchmark of the forecasting package: speed of fit + forecast, and accuracy on synthetic LLM traffic.

    python benchmarks/bench_forecast.py [--tiers 10] [--days 28] [--targets 3] [--workers 2]

Speed: `forecast()` (regularize, backtest of every candidate at 3 origins, pick, final fit, intervals,
peak, ramp) for `--tiers` series of `--days` days at 5-minute steps, sequentially and over `--workers`
processes.

Accuracy: every tier is a different synthetic series (seed, peak level, timezone, and a start date moved
one day per tier, so the forecast day falls on every weekday and on weekends). For `--targets` successive
days per tier the model sees the history up to midnight local time and forecasts the next 24 h, which is
then compared with what the generator produced:
- next-day peak error = |forecast max - actual max| / actual max
- MASE = sum of MAE / sum of MAE of the weekly seasonal naive (the same 5 minutes one week earlier)
- coverage = share of actual points inside the 80% / 95% bands (nominal 80 / 95)
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from forecasting import (
    ForecastSettings,
    Series,
    TrafficShape,
    forecast,
    forecast_many,
    synthetic_traffic,
)

STEP_SECONDS = 300.0
STEPS_PER_DAY = 288
STEPS_PER_WEEK = 7 * STEPS_PER_DAY
TIMEZONES = ("Europe/Paris", "America/New_York", "Asia/Tokyo", "Europe/London", "America/Los_Angeles")


@dataclass(frozen=True)
class DayScore:
    tier: str
    model: str
    peak_error: float
    mae: float
    naive_mae: float
    coverage_80: float
    coverage_95: float


def tier_series(index: int, days: int) -> Series:
    """Synthetic tier `index`: its own seed, peak (8 to 80 req/s), timezone and start weekday."""
    shape = TrafficShape(peak_rps=8.0 * (1 + index % 10))
    start = datetime(2024, 4, 1) + timedelta(days=index)
    tz = TIMEZONES[index % len(TIMEZONES)]
    return synthetic_traffic(days, step_seconds=STEP_SECONDS, start=start, timezone=tz, shape=shape, seed=100 + index)


def head(series: Series, n: int) -> Series:
    return Series(series.timestamps_s[:n], series.values[:n], series.name)


def time_fits(tiers: int, days: int, workers: int) -> tuple[float, float, dict[str, int]]:
    """(sequential seconds, parallel seconds, picked-model counts) for `tiers` series of `days` days."""
    histories = {f"tier{i}": tier_series(i, days) for i in range(tiers)}
    start = time.perf_counter()
    results = forecast_many(histories, ForecastSettings(horizon_seconds=86_400.0))
    sequential = time.perf_counter() - start
    start = time.perf_counter()
    forecast_many(histories, ForecastSettings(horizon_seconds=86_400.0), workers=workers)
    parallel = time.perf_counter() - start
    picked: dict[str, int] = {}
    for result in results.values():
        picked[result.model] = picked.get(result.model, 0) + 1
    return sequential, parallel, picked


def score_day(series: Series, history_days: int, tier: str) -> DayScore:
    n = history_days * STEPS_PER_DAY
    result = forecast(head(series, n), ForecastSettings(horizon_seconds=86_400.0))
    actual = series.values[n : n + STEPS_PER_DAY]
    naive = series.values[n - STEPS_PER_WEEK : n - STEPS_PER_WEEK + STEPS_PER_DAY]
    bands = result.bands
    return DayScore(
        tier=tier,
        model=result.model,
        peak_error=abs(float(result.mean.max()) - float(actual.max())) / float(actual.max()),
        mae=float(np.mean(np.abs(result.mean - actual))),
        naive_mae=float(np.mean(np.abs(naive - actual))),
        coverage_80=float(np.mean((bands.lower_80 <= actual) & (actual <= bands.upper_80))),
        coverage_95=float(np.mean((bands.lower_95 <= actual) & (actual <= bands.upper_95))),
    )


def accuracy(tiers: int, days: int, targets: int) -> list[DayScore]:
    scores = []
    for i in range(tiers):
        series = tier_series(i, days + targets)
        scores.extend(score_day(series, days + k, f"tier{i}") for k in range(targets))
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiers", type=int, default=10)
    parser.add_argument("--days", type=int, default=28)
    parser.add_argument("--targets", type=int, default=3, help="forecast days scored per tier")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    sequential, parallel, picked = time_fits(args.tiers, args.days, args.workers)
    points = args.days * STEPS_PER_DAY
    print(f"speed: {args.tiers} tiers x {args.days} days x 5 min ({points} points each), 24 h horizon")
    print(f"  fit + forecast, sequential:       {sequential:6.2f} s ({sequential / args.tiers:.2f} s per tier)")
    print(f"  fit + forecast, {args.workers} worker processes: {parallel:6.2f} s")
    print(f"  models picked: {', '.join(f'{m} x{c}' for m, c in sorted(picked.items()))}")

    scores = accuracy(args.tiers, args.days, args.targets)
    peak = np.array([s.peak_error for s in scores])
    mase = sum(s.mae for s in scores) / sum(s.naive_mae for s in scores)
    per_day_mase = np.array([s.mae / s.naive_mae for s in scores])
    print(f"accuracy: {len(scores)} next-day forecasts ({args.tiers} tiers x {args.targets} days), synthetic traffic")
    print(f"  next-day peak error: mean {peak.mean():.1%}, median {np.median(peak):.1%}, max {peak.max():.1%}")
    print(f"  MASE vs weekly seasonal naive: {mase:.3f} (median per day {np.median(per_day_mase):.3f})")
    print(f"  80% interval coverage: {np.mean([s.coverage_80 for s in scores]):.1%} (nominal 80%)")
    print(f"  95% interval coverage: {np.mean([s.coverage_95 for s in scores]):.1%} (nominal 95%)")
    models: dict[str, int] = {}
    for s in scores:
        models[s.model] = models.get(s.model, 0) + 1
    print(f"  models picked: {', '.join(f'{m} x{c}' for m, c in sorted(models.items()))}")


if __name__ == "__main__":
    main()
