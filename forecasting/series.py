"""Time series types: a raw `Series` (any timestamps, may have NaN) and a `RegularSeries` (fixed step, no gaps).

Time is always Unix seconds as float; the package never reads a clock. Arrays are stored read-only so the
frozen dataclasses really are immutable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from forecasting.errors import ForecastInputError

__all__ = [
    "SECONDS_PER_DAY",
    "SECONDS_PER_WEEK",
    "RegularSeries",
    "Series",
    "steps_per_day",
    "steps_per_week",
]

SECONDS_PER_DAY = 86_400.0
SECONDS_PER_WEEK = 7 * SECONDS_PER_DAY

FloatArray = NDArray[np.float64]


def _frozen_array(values: ArrayLike, what: str) -> FloatArray:
    try:
        array = np.array(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ForecastInputError(f"{what} must be numbers: {exc}") from exc
    if array.ndim != 1:
        raise ForecastInputError(f"{what} must be one-dimensional, got shape {array.shape}")
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class Series:
    """Observed values at arbitrary timestamps (Unix seconds); NaN values mean "no sample"."""

    timestamps_s: FloatArray
    values: FloatArray
    name: str = ""

    def __post_init__(self) -> None:
        timestamps = _frozen_array(self.timestamps_s, "timestamps")
        values = _frozen_array(self.values, "values")
        if timestamps.size != values.size:
            raise ForecastInputError(f"{timestamps.size} timestamps but {values.size} values", source=self.name or None)
        if not np.all(np.isfinite(timestamps)):
            raise ForecastInputError("timestamps must all be finite", source=self.name or None)
        object.__setattr__(self, "timestamps_s", timestamps)
        object.__setattr__(self, "values", values)

    def __len__(self) -> int:
        return int(self.values.size)


@dataclass(frozen=True, eq=False)
class RegularSeries:
    """Finite values on a fixed grid: value i is at `start_s + i * step_seconds`."""

    start_s: float
    step_seconds: float
    values: FloatArray
    name: str = ""
    _timestamps: FloatArray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        values = _frozen_array(self.values, "values")
        if not self.step_seconds > 0:
            raise ForecastInputError(f"step must be positive, got {self.step_seconds} s")
        if not np.all(np.isfinite(values)):
            raise ForecastInputError("a regular series has no NaN or infinite values; regularize() first")
        timestamps = self.start_s + self.step_seconds * np.arange(values.size, dtype=np.float64)
        timestamps.setflags(write=False)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "_timestamps", timestamps)

    def __len__(self) -> int:
        return int(self.values.size)

    @property
    def timestamps_s(self) -> FloatArray:
        return self._timestamps

    @property
    def end_s(self) -> float:
        """Timestamp of the last value."""
        return self.start_s + (len(self) - 1) * self.step_seconds

    @property
    def duration_days(self) -> float:
        """History length in days, counting each point as one step (288 points at 5 min = 1.0 day)."""
        return len(self) * self.step_seconds / SECONDS_PER_DAY

    def head(self, n_steps: int) -> RegularSeries:
        """The first `n_steps` values: the history as it was at a backtest origin."""
        return RegularSeries(self.start_s, self.step_seconds, self.values[:n_steps], self.name)

    def tail(self, n_steps: int) -> RegularSeries:
        """The last `n_steps` values (all of them if shorter), keeping timestamps right."""
        skip = max(0, len(self) - n_steps)
        return RegularSeries(self.start_s + skip * self.step_seconds, self.step_seconds, self.values[skip:], self.name)

    def future_timestamps(self, horizon_steps: int) -> FloatArray:
        """Timestamps of the next `horizon_steps` steps after the last value."""
        return self.end_s + self.step_seconds * np.arange(1, horizon_steps + 1, dtype=np.float64)

    def to_series(self) -> Series:
        return Series(self.timestamps_s, self.values, self.name)


def steps_per_day(step_seconds: float) -> int:
    """Daily seasonal period in steps, e.g. 288 at 5 minutes; 0 when a day holds fewer than 2 steps."""
    period = round(SECONDS_PER_DAY / step_seconds)
    return period if period >= 2 else 0


def steps_per_week(step_seconds: float) -> int:
    """Weekly seasonal period in steps, e.g. 2016 at 5 minutes; 0 when a week holds fewer than 2 steps."""
    period = round(SECONDS_PER_WEEK / step_seconds)
    return period if period >= 2 else 0
