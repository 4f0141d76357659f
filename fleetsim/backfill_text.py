"""OpenMetrics sample text for backfill, built with numpy instead of one f-string per sample.

promtool parses every line of its input twice (once for the time range, once to append), so the text must
be cheap to make and short. Each group of series is rendered as one (series x timestamps x width) byte
array: every line of a group has the same width, so lines are rows and nothing is compacted or joined:

    <name{labels}> <zero-padded fixed-point value> <unix seconds>\\n

Values are non-negative; they are written in fixed point with `decimals` digits after the point and padded
with leading zeros to the group's widest value (Go's strconv.ParseFloat ignores leading zeros, so
"000012.50" reads as 12.5). Timestamps are whole seconds, so the caller keeps the step a whole number of
seconds. Writing goes straight from the array's buffer to the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

__all__ = ["MAX_FIXED_POINT", "SeriesGroup", "TextRenderer", "fixed_point", "stamp_text"]

_ZERO, _SPACE, _POINT, _NEWLINE = ord("0"), ord(" "), ord("."), ord("\n")
# Largest value x 10**decimals that int64 holds with room to spare; larger values are a caller error.
MAX_FIXED_POINT = 9e18


@dataclass(frozen=True)
class SeriesGroup:
    """Series that share a number format: `prefixes[i]` is series i's `name{labels}` in exposition form,
    `values[i, j]` its value at the window's j-th timestamp."""

    prefixes: Sequence[bytes]
    values: np.ndarray
    decimals: int = 0

    def __post_init__(self) -> None:
        if self.values.ndim != 2 or self.values.shape[0] != len(self.prefixes):
            raise ValueError(f"values of shape {self.values.shape} do not fit {len(self.prefixes)} series")


def stamp_text(timestamps: np.ndarray) -> np.ndarray:
    """(T, 12) bytes ' 1714953600\\n' per whole-second Unix timestamp (10 digits until the year 2286)."""
    seconds = np.asarray(timestamps, dtype=np.int64)
    if seconds.size and (seconds.min() < 1_000_000_000 or seconds.max() > 9_999_999_999):
        raise ValueError("timestamps must be 10-digit Unix seconds")
    out = np.empty((seconds.size, 12), dtype=np.uint8)
    out[:, 0] = _SPACE
    out[:, 1:11] = _digits(seconds, 10)
    out[:, 11] = _NEWLINE
    return out


class TextRenderer:
    """Renders groups into one reused scratch buffer: touching fresh pages costs more than formatting."""

    def __init__(self) -> None:
        self._scratch = np.empty(0, dtype=np.uint8)

    def render(self, group: SeriesGroup, stamps: np.ndarray) -> np.ndarray:
        """All lines of a group as a (S, T, L) uint8 view whose bytes are the text, series by series.

        The view is valid until the next call."""
        number = _number_text(fixed_point(group.values, group.decimals), group.decimals)
        series, steps, width = number.shape
        if stamps.shape[0] != steps:
            raise ValueError(f"{stamps.shape[0]} timestamps for {steps} values per series")
        line = max(len(p) for p in group.prefixes) + 1 + width + stamps.shape[1]
        out = self._buffer(series * steps * line).reshape(series, steps, line)
        out[:] = _template(group.prefixes, line)[:, None, :]
        value_end = line - stamps.shape[1]
        out[:, :, value_end - width : value_end] = number
        out[:, :, value_end:] = stamps[None, :, :]
        return out

    def write(self, out: BinaryIO, group: SeriesGroup, stamps: np.ndarray) -> int:
        """Render and write one group; returns the number of samples written."""
        if group.values.size == 0:
            return 0
        out.write(self.render(group, stamps).data)
        return int(group.values.size)

    def _buffer(self, size: int) -> np.ndarray:
        if self._scratch.size < size:
            self._scratch = np.empty(int(size * 1.25), dtype=np.uint8)
        return self._scratch[:size]


def _template(prefixes: Sequence[bytes], line: int) -> np.ndarray:
    """One row per series: its prefix, a space, then '0' padding up to the line width."""
    template = np.full((len(prefixes), line), _ZERO, dtype=np.uint8)
    for i, prefix in enumerate(prefixes):
        template[i, : len(prefix)] = np.frombuffer(prefix, dtype=np.uint8)
        template[i, len(prefix)] = _SPACE
    return template


def fixed_point(values: np.ndarray, decimals: int) -> np.ndarray:
    scaled = np.rint(np.asarray(values, dtype=np.float64) * 10.0**decimals)
    if scaled.size and (not np.isfinite(scaled).all() or scaled.min() < 0 or scaled.max() > MAX_FIXED_POINT):
        raise ValueError(f"values must be finite, >= 0 and below {MAX_FIXED_POINT / 10**decimals:.3g}")
    return scaled.astype(np.int64)


def _number_text(scaled: np.ndarray, decimals: int) -> np.ndarray:
    """(S, T, W) digits of fixed-point integers, with a '.' before the last `decimals` digits."""
    top = int(scaled.max()) if scaled.size else 0
    digits = max(len(str(top)), decimals + 1)
    text = _digits(scaled, digits)
    if not decimals:
        return text
    return np.concatenate(
        [text[..., : digits - decimals], np.full((*text.shape[:-1], 1), _POINT, np.uint8), text[..., -decimals:]],
        axis=-1,
    )


def _digits(values: np.ndarray, width: int) -> np.ndarray:
    """Zero-padded decimal digits (ASCII) of non-negative integers, most significant first."""
    rest = np.array(values, dtype=np.int64, copy=True)
    out = np.empty((*rest.shape, width), dtype=np.uint8)
    for k in range(width - 1, -1, -1):
        rest, digit = np.divmod(rest, 10)
        out[..., k] = digit.astype(np.uint8) + _ZERO
    return out
