"""planwatch's own models against statsforecast's (AutoETS, AutoTheta, MSTL + AutoETS) on the real series.

    pip install statsforecast   # not a planwatch dependency: this benchmark is why
    python benchmarks/bench_forecast_libraries.py [--every-hours 6]

Same origins and scoring as bench_forecast_real (rolling origins over the second week, gaps not scored):
MASE over the next day against the daily seasonal naive, MASE at 1 hour ahead against last value, and the
time per fit (the first one separately: it includes numba's compilation). statsforecast models are fitted
on the log of 30-minute block means (their seasonal period 48), as planwatch's models are on 15-30 minute
blocks, and repeated back to the series step.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_forecast_real import DAY, HOUR, TRACES, Grid, load_series, on_grid

from forecasting import make_model, regularize
from forecasting.series import FloatArray

Forecaster = Callable[[Grid, int, int], FloatArray]


def planwatch_model(label: str) -> Forecaster:
    def run(grid: Grid, origin: int, horizon: int) -> FloatArray:
        history = regularize(grid.history(origin)).series
        return np.asarray(make_model(label).fit(history).forecast(horizon).mean)

    return run


def statsforecast_model(make: Callable[[int], Any], block_seconds: float = 1800.0) -> Forecaster:
    def run(grid: Grid, origin: int, horizon: int) -> FloatArray:
        k = max(1, round(block_seconds / grid.step_seconds))
        values = grid.filled[:origin]
        usable = values.size // k * k
        offset = 0.02 * float(values.mean())
        z = np.log(values[values.size - usable :].reshape(-1, k).mean(axis=1) + offset)
        model = make(round(DAY / (grid.step_seconds * k)))
        model.fit(z)
        coarse = np.exp(np.asarray(model.predict(h=-(-horizon // k) + 1)["mean"])) - offset
        return np.asarray(np.maximum(np.repeat(coarse, k)[:horizon], 0.0), dtype=np.float64)

    return run


def score(grid: Grid, forecaster: Forecaster, every_hours: float) -> tuple[float, float, float, float]:
    """(MASE next day vs daily naive, MASE 1 h vs last value, first fit s, median fit s)."""
    step = grid.step_seconds
    day, lead = round(DAY / step), round(HOUR / step) - 1
    origins = [
        o
        for o in range(7 * day, grid.observed.size - day + 1, round(every_hours * HOUR / step))
        if np.isfinite(grid.observed[o - 1])
    ]
    day_error = day_naive = hour_error = hour_naive = 0.0
    times = []
    for origin in origins:
        started = time.perf_counter()
        mean = forecaster(grid, origin, day)
        times.append(time.perf_counter() - started)
        actual = grid.observed[origin : origin + day]
        seen = np.isfinite(actual)
        day_error += float(np.abs(mean - actual)[seen].sum())
        day_naive += float(np.abs(grid.filled[origin - day : origin] - actual)[seen].sum())
        if seen[lead]:
            hour_error += abs(mean[lead] - actual[lead])
            hour_naive += abs(grid.filled[origin - 1] - actual[lead])
    return day_error / day_naive, hour_error / hour_naive, times[0], float(np.median(times[1:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=Path, default=TRACES)
    parser.add_argument("--every-hours", type=float, default=6.0)
    args = parser.parse_args()
    contenders: dict[str, Forecaster] = {
        label: planwatch_model(label) for label in ("holt_winters", "mstl_daily", "profile_level", "combined")
    }
    started = time.perf_counter()
    try:
        models = importlib.import_module("statsforecast.models")
    except ImportError:
        print("statsforecast is not installed: planwatch's models only")
    else:
        print(f"statsforecast import: {time.perf_counter() - started:.1f} s")
        contenders["sf AutoETS"] = statsforecast_model(lambda m: models.AutoETS(season_length=m, model="ZZA"))
        contenders["sf AutoTheta"] = statsforecast_model(lambda m: models.AutoTheta(season_length=m))
        contenders["sf MSTL+AutoETS"] = statsforecast_model(
            lambda m: models.MSTL(season_length=[m], trend_forecaster=models.AutoETS(model="ZZN"))
        )
    for name, series in load_series(args.traces).items():
        grid = on_grid(series, None)
        for label, forecaster in contenders.items():
            day, hour, first, median = score(grid, forecaster, args.every_hours)
            print(
                f"{name:9s} {label:16s} next day MASE vs daily naive {day:.3f}, 1 h vs last value {hour:.3f}; "
                f"first fit {first:.2f} s, then {median * 1000:.0f} ms"
            )


if __name__ == "__main__":
    main()
