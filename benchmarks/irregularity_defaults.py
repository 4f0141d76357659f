"""Where fleetsim's default irregularity comes from: day-to-day statistics of the two real 14-day traces.

    .venv/bin/python benchmarks/irregularity_defaults.py

Per series (ServeGen's 10-minute rate and the NAB load balancer's 5-minute count, read as
benchmarks/bench_forecast_real.py reads them, gaps left out), over whole UTC days:
- trend per day: the slope of a least-squares line through log daily means;
- level sd: the sd of log daily means around that line (day-to-day level, detrended);
- level memory: the lag-one autocorrelation of those residuals;
- shape sd: the sd of log(daily peak / daily mean) (how much taller or flatter a day's peak is);
- shifts: day-over-day steps of the detrended level larger than 2 level sd, per day.
It prints both, their mean and the milder (smaller in magnitude) of the two, and fleetsim's
`DEFAULT_IRREGULARITY` beside them. The defaults follow the mean of the two, rounded (neither series alone
is "production", and the mean tunes to neither): level sd 0.15, memory 0.4, shape sd 0.15, trend 2%/day
(the signed mean, +2.2%; fleetsim runs it as a triangle wave of period 56 days so a month of backfill stays
within a plan's headroom), shifts 1 in 14 days (between the milder, none in NAB, and the mean, 0.1/day).
Whole days are those with at least 90% of the fullest day's samples (ServeGen has 11 of 14).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_forecast_real import DAY, TRACES, load_series

from fleetsim.irregularity import DEFAULT_IRREGULARITY
from forecasting import Series


def day_statistics(series: Series) -> dict[str, float]:
    """The statistics named in the module docstring, for one series."""
    keep = np.isfinite(series.values)
    stamps, values = series.timestamps_s[keep], series.values[keep]
    days = np.floor(stamps / DAY).astype(np.int64)
    whole = [d for d in np.unique(days) if np.sum(days == d) >= 0.9 * np.max(np.bincount(days - days.min()))]
    means = np.array([values[days == d].mean() for d in whole])
    peaks = np.array([values[days == d].max() for d in whole])
    index = np.array(whole, dtype=float) - whole[0]
    log_means = np.log(means)
    slope, intercept = np.polyfit(index, log_means, 1)
    residual = log_means - (slope * index + intercept)
    level_sd = float(residual.std(ddof=1))
    memory = float(np.corrcoef(residual[:-1], residual[1:])[0, 1])
    steps = np.abs(np.diff(residual))
    return {
        "days": float(len(whole)),
        "trend_per_day": float(slope),
        "level_sd": level_sd,
        "level_memory": memory,
        "shape_sd": float(np.log(peaks / means).std(ddof=1)),
        "largest_step": float(np.exp(steps.max())),
        "shift_per_day": float(np.sum(steps > 2.0 * level_sd) / (len(whole) - 1)),
    }


def main() -> None:
    stats = {name: day_statistics(series) for name, series in load_series(TRACES).items()}
    names = list(stats)
    d = DEFAULT_IRREGULARITY
    default = {
        "trend_per_day": d.trend_per_day,
        "level_sd": d.level_sd,
        "level_memory": d.level_memory,
        "shape_sd": d.shape_sd,
        "shift_per_day": d.shift_per_day,
    }
    print(f"{'statistic':<16}" + "".join(f"{n:>12}" for n in names) + f"{'mean':>10}{'milder':>10}{'default':>10}")
    for key in stats[names[0]]:
        row = [stats[n][key] for n in names]
        mean = float(np.mean(row))
        milder = min(row, key=abs)
        shown = f"{default[key]:>10.3f}" if key in default else f"{'':>10}"
        print(f"{key:<16}" + "".join(f"{v:>12.3f}" for v in row) + f"{mean:>10.3f}{milder:>10.3f}" + shown)


if __name__ == "__main__":
    main()
