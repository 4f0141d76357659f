"""Turn a raw `Series` into a `RegularSeries`: fixed step, counter-reset artefacts removed, gaps filled.

Why each step:
- Models need a fixed step (the seasonal period is a number of steps), so samples are put on a grid
  anchored at the first sample; samples landing in the same cell are averaged.
- A counter reset seen through a naive rate shows up as one negative point, or one point near zero
  between two normal ones. Demand cannot be negative and does not vanish for a single scrape, so such
  points are treated as missing.
- A finished outage is an incident, not demand: demand that falls below `OUTAGE_SHARE` of the last hour's
  where it stayed above it around that time the day or the week before, holds there for at least that hour
  and comes back (an upstream outage, a failed deploy; the traffic returns at once when it is fixed). Its
  points are treated as missing, so they are filled like a gap and no backtest scores against them: a daily
  naive fitted on them forecast the same hours of the next day as another outage (ServeGen's two-hour
  Wednesday afternoon: next-day MASE vs the daily naive 0.897 -> 0.882 without it). Not an outage: the
  daily cycle's own evening fall (it was there the day before), a dip shorter than the hour, one still under
  way at the end of the history (what demand is now), a quiet series' zeros.
- Short gaps are filled by straight lines (demand is smooth over minutes). Long gaps would flatten a
  whole morning ramp, so they are filled from the same time one week (else one day) earlier, shifted so
  the fill meets the observed values at both edges (seasonal fill).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from forecasting.errors import ForecastInputError
from forecasting.series import FloatArray, RegularSeries, Series, steps_per_day, steps_per_week

__all__ = ["OUTAGE_SHARE", "RegularizeReport", "Regularized", "infer_step_seconds", "regularize"]

_MAX_GRID_POINTS = 5_000_000
_RESET_RATIO = 0.2
# Demand below this share of the last hour's, where the daily cycle had no such fall, is an outage, not a
# trend: organic declines (the evening, a holiday) take hours or come every day. The advice's collapse
# (monitor.advice.collapse) is the same event seen live.
OUTAGE_SHARE = 0.1
_QUIET_SHARE = 0.05  # of the series' 95th percentile: below it, a level is quiet and its zeros are real
_OUTAGE_LEVEL_S = 3600.0
_EDGE_POINTS = 3


@dataclass(frozen=True)
class RegularizeReport:
    """What `regularize` did, in counts of grid steps."""

    step_seconds: float
    step_inferred: bool
    input_points: int
    output_points: int
    merged_points: int
    missing_steps: int
    resets_cleaned: int
    interpolated_steps: int
    seasonal_filled_steps: int
    long_gaps_interpolated: int
    outage_steps: int = 0

    def describe(self) -> str:
        """One human-readable line, e.g. '2016 points at 300 s (inferred); 3 reset artefacts removed; ...'."""
        how = "inferred" if self.step_inferred else "given"
        parts = [f"{self.output_points} points at {self.step_seconds:g} s step ({how})"]
        if self.merged_points:
            parts.append(f"{self.merged_points} samples merged into shared steps")
        if self.resets_cleaned:
            parts.append(f"{self.resets_cleaned} counter-reset artefacts removed")
        if self.outage_steps:
            parts.append(f"{self.outage_steps} steps of finished outages treated as missing (an incident, not demand)")
        if self.missing_steps or self.resets_cleaned or self.outage_steps:
            parts.append(
                f"{self.interpolated_steps + self.seasonal_filled_steps} steps filled ({self.missing_steps} missing): "
                f"{self.interpolated_steps} interpolated, {self.seasonal_filled_steps} from the week or day before"
            )
        if self.long_gaps_interpolated:
            parts.append(f"{self.long_gaps_interpolated} long gaps interpolated (no seasonal reference)")
        return "; ".join(parts)


@dataclass(frozen=True, eq=False)
class Regularized:
    """The regular series, what was done, and which of its steps were filled rather than observed."""

    series: RegularSeries
    report: RegularizeReport
    filled: NDArray[np.bool_] | None = None


def infer_step_seconds(timestamps_s: FloatArray, *, source: str | None = None) -> float:
    """The sampling step: the median positive spacing, rounded to a whole second when >= 1 s.

    The median ignores gaps and duplicates, which is why it is used rather than the mean.
    """
    diffs = np.diff(np.sort(timestamps_s))
    diffs = diffs[diffs > 0]
    if diffs.size == 0:
        raise ForecastInputError("cannot infer the step: fewer than two distinct timestamps", source=source)
    step = float(np.median(diffs))
    return float(round(step)) if step >= 1.0 else step


def _to_grid(series: Series, step_seconds: float, downsample: bool) -> tuple[float, FloatArray, int]:
    """Average the finite samples into grid cells; returns (start, values with NaN holes, merged).

    Samples go to the nearest grid point (scrape jitter), or, when `downsample` (the step is at least
    twice the sampling step), to the cell [t_k, t_k + step) that starts at grid point t_k.
    """
    order = np.argsort(series.timestamps_s, kind="stable")
    timestamps, values = series.timestamps_s[order], series.values[order]
    finite = np.isfinite(values)
    if np.count_nonzero(finite) < 2:
        raise ForecastInputError("fewer than two numeric values", source=series.name or None)
    timestamps, values = timestamps[finite], values[finite]
    start = float(timestamps[0])
    position = (timestamps - start) / step_seconds
    index = (np.floor(position + 1e-9) if downsample else np.rint(position)).astype(np.int64)
    size = int(index[-1]) + 1
    if size > _MAX_GRID_POINTS:
        raise ForecastInputError(
            f"{size} grid points at a {step_seconds:g} s step is too many; use a larger step",
            source=series.name or None,
        )
    counts = np.bincount(index, minlength=size)
    sums = np.bincount(index, weights=values, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        grid = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    merged = int(timestamps.size - np.count_nonzero(counts))
    return start, grid, merged


def _clean_resets(values: FloatArray) -> int:
    """Mark reset artefacts as NaN in place: negative points, and lone near-zero drops.

    A lone drop is v[i] < 0.2 x min(v[i-1], v[i+1]) while both neighbours exceed 5% of the series'
    95th percentile (so genuinely quiet periods, where zeros are real, are left alone).
    """
    negative = values < 0
    floor = _quiet_floor(values)
    left, mid, right = values[:-2], values[1:-1], values[2:]
    with np.errstate(invalid="ignore"):
        neighbours = np.fmin(left, right)
        drop = (neighbours > floor) & (mid < _RESET_RATIO * neighbours)
    artefacts = negative.copy()
    artefacts[1:-1] |= drop
    values[artefacts] = np.nan
    return int(np.count_nonzero(artefacts))


def _quiet_floor(values: FloatArray) -> float:
    """The level below which a series is quiet (its zeros are real): 5% of its 95th percentile."""
    return _QUIET_SHARE * float(np.nanpercentile(values, 95))


def _clear_outages(values: FloatArray, step_seconds: float) -> int:
    """Mark the steps of finished outages as NaN in place; returns how many.

    An outage starts at a step below `OUTAGE_SHARE` of the median of the hour before it (a level above the
    quiet floor) where demand stayed above that share around the same time the day or the week before (not
    the daily cycle's own fall), and lasts while demand stays below that share of that level, at least that
    hour; it is finished when a later step is back above it. Gaps inside it do not end it."""
    if values.size < 2 or not np.any(np.isfinite(values)):
        return 0
    hour = max(1, round(_OUTAGE_LEVEL_S / step_seconds))
    padded = np.concatenate([np.full(hour, np.nan), values[:-1]])
    levels = _window_medians(padded, hour)
    with np.errstate(invalid="ignore"):
        starts = np.flatnonzero((levels > _quiet_floor(values)) & (values < OUTAGE_SHARE * levels))
    cleared, after = 0, 0
    for start in starts.tolist():
        line = OUTAGE_SHARE * levels[start]
        if start < after or not _up_then_before(values, start, line, step_seconds, hour):
            continue
        with np.errstate(invalid="ignore"):
            back = np.flatnonzero(values[start:] >= line)
        if back.size == 0:
            break  # still under way at the end of the history: what demand is now (and all after it is in it)
        after = start + int(back[0])
        if after - start < hour:
            continue  # shorter than the hour its level is measured over: a dip in that hour, not an outage
        cleared += int(np.count_nonzero(np.isfinite(values[start:after])))
        values[start:after] = np.nan
    return cleared


def _window_medians(padded: FloatArray, width: int) -> FloatArray:
    """The NaN-skipping median of every `width`-step window. np.nanmedian over a window view goes through
    masked arrays (10x slower than np.median, which a refit every few minutes pays on weeks of steps): the
    plain median where a window has no gap, the NaN-skipping one only for the windows that have one."""
    windows = np.lib.stride_tricks.sliding_window_view(padded, width)
    levels: FloatArray = np.median(windows, axis=1)
    gappy = np.isnan(levels)
    if gappy.any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an hour of only gaps has no level
            levels[gappy] = np.nanmedian(windows[gappy], axis=1)
    return levels


def _up_then_before(values: FloatArray, index: int, line: float, step_seconds: float, hour: int) -> bool:
    """Whether demand stayed above `line` throughout the hour either side of this time of day, the day
    before or the week before: a fall the daily cycle has every evening (a business-hours service going
    quiet, a few minutes earlier or later each day) is the season, not an outage."""
    day = steps_per_day(step_seconds)
    for back in (day, 7 * day):
        window = values[max(0, index - back - hour) : max(0, index - back + hour + 1)]
        window = window[np.isfinite(window)]
        if window.size and bool(np.all(window >= line)):
            return True
    return False


def _runs_of_nan(values: FloatArray) -> list[tuple[int, int]]:
    """(first, stop) index pairs of consecutive NaN runs."""
    missing = np.isnan(values).astype(np.int8)
    edges = np.diff(np.concatenate(([0], missing, [0])))
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist(), strict=True))


def _interpolate(values: FloatArray, first: int, stop: int) -> None:
    left, right = values[first - 1], values[stop]
    weights = np.arange(1, stop - first + 1) / (stop - first + 1)
    values[first:stop] = left + (right - left) * weights


def _seasonal_fill(values: FloatArray, first: int, stop: int, periods: tuple[int, ...]) -> bool:
    """Fill [first, stop) from one period earlier (else later), offset to meet both edges; False if none fits.

    fill[i] = v[i - p] + offset_left + (offset_right - offset_left) x (i - first + 1) / (gap + 1)
    where each offset is the mean of (v - v shifted by p) over up to 3 observed points at that edge.
    """
    n = values.size
    for period in periods:
        for shift in (-period, period):
            lo, hi = first + shift - _EDGE_POINTS, stop + shift + _EDGE_POINTS
            if lo < 0 or hi > n:
                continue
            reference = values[first + shift : stop + shift]
            if np.any(np.isnan(reference)):
                continue
            left_idx = np.arange(max(0, first - _EDGE_POINTS), first)
            right_idx = np.arange(stop, min(n, stop + _EDGE_POINTS))
            left_off = _finite_mean(values[left_idx] - values[left_idx + shift])
            right_off = _finite_mean(values[right_idx] - values[right_idx + shift])
            if not (np.isfinite(left_off) and np.isfinite(right_off)):
                continue
            weights = np.arange(1, stop - first + 1) / (stop - first + 1)
            values[first:stop] = np.maximum(reference + left_off + (right_off - left_off) * weights, 0.0)
            return True
    return False


def _finite_mean(values: FloatArray) -> float:
    """Mean of the finite values; NaN when there is none (an edge of only gaps), without numpy's warning."""
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else float("nan")


def _fill_gaps(values: FloatArray, step_seconds: float, max_interpolate_steps: int) -> tuple[int, int, int]:
    """Fill NaN runs in place, oldest first; returns (interpolated, seasonal, long gaps interpolated)."""
    periods = tuple(p for p in (steps_per_week(step_seconds), steps_per_day(step_seconds)) if p)
    interpolated = seasonal = long_interpolated = 0
    for first, stop in _runs_of_nan(values):
        length = stop - first
        if first == 0 or stop == values.size:  # only reset cleaning can open an edge gap: hold the neighbour
            values[first:stop] = values[stop] if first == 0 else values[first - 1]
            interpolated += length
            continue
        if length > max_interpolate_steps and _seasonal_fill(values, first, stop, periods):
            seasonal += length
            continue
        _interpolate(values, first, stop)
        interpolated += length
        long_interpolated += int(length > max_interpolate_steps)
    return interpolated, seasonal, long_interpolated


def regularize(
    series: Series,
    step_seconds: float | None = None,
    *,
    max_interpolate_seconds: float = 1800.0,
    clean_resets: bool = True,
    clear_outages: bool = True,
) -> Regularized:
    """Put `series` on a fixed grid, clean reset artefacts and fill gaps; report what was done.

    `step_seconds` defaults to the inferred sampling step; a larger one averages the samples of each step.
    The grid spans the first to the last numeric sample, so there are no leading or trailing gaps to invent.
    """
    inferred = step_seconds is None
    source = series.name or None
    step = infer_step_seconds(series.timestamps_s, source=source) if step_seconds is None else float(step_seconds)
    if not step > 0:
        raise ForecastInputError(f"step must be positive, got {step} s", source=source)
    downsample = not inferred and len(series) > 1 and step >= 2 * infer_step_seconds(series.timestamps_s, source=source)
    start, grid, merged = _to_grid(series, step, downsample)
    missing_before = int(np.count_nonzero(np.isnan(grid)))
    resets = _clean_resets(grid) if clean_resets and grid.size >= 3 else 0
    outages = _clear_outages(grid, step) if clear_outages else 0
    filled = np.isnan(grid)
    max_steps = max(0, int(max_interpolate_seconds // step))
    interpolated, seasonal, long_interpolated = _fill_gaps(grid, step, max_steps)
    report = RegularizeReport(
        step_seconds=step,
        step_inferred=inferred,
        input_points=len(series),
        output_points=int(grid.size),
        merged_points=merged,
        missing_steps=missing_before,
        resets_cleaned=resets,
        interpolated_steps=interpolated,
        seasonal_filled_steps=seasonal,
        long_gaps_interpolated=long_interpolated,
        outage_steps=outages,
    )
    return Regularized(RegularSeries(start, step, grid, series.name), report, filled)
