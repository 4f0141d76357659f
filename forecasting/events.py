"""What the capacity plan acts on: the next peak and the ramp (upward threshold crossings).

A crossing time is interpolated linearly between the two steps that straddle the threshold:
    t = t[i-1] + (threshold - v[i-1]) / (v[i] - v[i-1]) x (t[i] - t[i-1]).
Every path starts from the last observed value, so demand that is already above a threshold only
"crosses" it after dipping below first (tonight's trough, then tomorrow's ramp).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from forecasting.series import FloatArray

__all__ = ["Peak", "RampCrossing", "crossing_time", "first_upward_crossing", "next_peak", "ramp_crossings"]


@dataclass(frozen=True)
class Peak:
    """Highest forecast mean in the peak window, with the 80% and 95% upper bounds at that time."""

    timestamp_s: float
    value: float
    upper: float
    upper_95: float


@dataclass(frozen=True)
class RampCrossing:
    """When demand is expected to rise through `threshold`.

    `timestamp_s`: the mean crosses (None if it does not within the horizon). `earliest_s`: the upper
    bound crosses, i.e. the earliest plausible time (None if even the upper bound stays below).
    `latest_s`: the lower bound crosses (None if it never does within the horizon).
    """

    threshold: float
    timestamp_s: float | None
    earliest_s: float | None
    latest_s: float | None


def crossing_time(times: FloatArray, values: FloatArray, i: int, threshold: float) -> float:
    """Interpolated time at which `values` reaches `threshold` between steps i - 1 and i."""
    if i == 0:
        return float(times[0])
    before, after = values[i - 1], values[i]
    if after == before or before >= threshold:
        return float(times[i])
    fraction = (threshold - before) / (after - before)
    return float(times[i - 1] + fraction * (times[i] - times[i - 1]))


def first_upward_crossing(values: FloatArray, threshold: float, start: int = 1) -> int | None:
    """Smallest i >= start with values[i-1] < threshold <= values[i], or None."""
    below = values[:-1] < threshold
    above = values[1:] >= threshold
    hits = np.flatnonzero(below & above) + 1
    hits = hits[hits >= start]
    return int(hits[0]) if hits.size else None


def _run_start(values: FloatArray, threshold: float, index: int) -> int:
    """First index of the run of values >= threshold that contains `index`."""
    below = np.flatnonzero(values[: index + 1] < threshold)
    return int(below[-1]) + 1 if below.size else 0


def ramp_crossings(
    timestamps_s: FloatArray,
    mean: FloatArray,
    lower: FloatArray,
    upper: FloatArray,
    thresholds: Sequence[float],
    *,
    last_timestamp_s: float,
    last_value: float,
) -> tuple[RampCrossing, ...]:
    """One `RampCrossing` per threshold, in the order given.

    earliest <= timestamp <= latest always holds: `earliest` is the start of the run of upper >= threshold
    that contains the mean crossing, `latest` the first time at or after it that the lower bound is above.
    """
    times = np.concatenate(([last_timestamp_s], timestamps_s))
    m, lo, up = (np.concatenate(([last_value], band)) for band in (mean, lower, upper))
    crossings = []
    for threshold in thresholds:
        i_mean = first_upward_crossing(m, threshold)
        if i_mean is None:
            i_up = first_upward_crossing(up, threshold)
            earliest = None if i_up is None else crossing_time(times, up, i_up, threshold)
            crossings.append(RampCrossing(float(threshold), None, earliest, None))
            continue
        j = _run_start(up, threshold, i_mean)
        after = np.flatnonzero(lo[i_mean:] >= threshold)
        latest = None if after.size == 0 else crossing_time(times, lo, i_mean + int(after[0]), threshold)
        crossings.append(
            RampCrossing(
                float(threshold),
                crossing_time(times, m, i_mean, threshold),
                crossing_time(times, up, j, threshold),
                latest,
            )
        )
    return tuple(crossings)


def next_peak(
    timestamps_s: FloatArray, mean: FloatArray, upper_80: FloatArray, upper_95: FloatArray, window_steps: int
) -> Peak:
    """The highest mean within the first `window_steps` (one day, or the horizon if shorter)."""
    i = int(np.argmax(mean[: max(1, window_steps)]))
    return Peak(float(timestamps_s[i]), float(mean[i]), float(upper_80[i]), float(upper_95[i]))
