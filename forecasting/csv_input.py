"""Parse CSV text of (timestamp, value) rows into a `Series`, with errors that name file, line and cell.

Pure: takes the text, not a path, so the CLI owns the file and tests need no files. Timestamps are Unix
seconds or ISO 8601; ISO without an offset is read in `timezone` (UTC by default). Empty, 'nan' and
'null' values are gaps (regularize fills them); anything else that is not a number is an error.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

import numpy as np

from forecasting.calendar import zone
from forecasting.errors import ForecastInputError
from forecasting.series import Series

__all__ = ["CsvFormatError", "parse_csv_series", "parse_timestamp"]

_GAP_TOKENS = frozenset({"", "nan", "null", "none", "na"})
_MILLISECONDS_FROM = 1e11  # Unix seconds reach 1e11 in the year 5138; larger numbers are milliseconds


class CsvFormatError(ForecastInputError):
    """Bad CSV content; str() is 'file:line: what is wrong' (line omitted when not about one line)."""

    def __init__(self, source: str, line: int | None, message: str) -> None:
        self.line = line
        self.detail = message
        where = f"{source}:{line}" if line is not None else source
        super().__init__(message, source=where)


def parse_timestamp(text: str, tz: ZoneInfo) -> float:
    """Unix seconds from '1714371851', '1714371851.5' or ISO 8601 ('2024-04-29T08:00:00+02:00', '...Z')."""
    cell = text.strip()
    try:
        seconds = float(cell)
    except ValueError:
        try:
            moment = datetime.fromisoformat(cell)
        except ValueError:
            raise ValueError(f"timestamp {cell!r} is neither ISO 8601 nor Unix seconds") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=tz)
        return moment.timestamp()
    if not math.isfinite(seconds):
        raise ValueError(f"timestamp {cell!r} is not finite")
    if abs(seconds) >= _MILLISECONDS_FROM:
        raise ValueError(f"timestamp {cell!r} looks like milliseconds; give Unix seconds")
    return seconds


def _parse_value(text: str) -> float:
    cell = text.strip()
    if cell.lower() in _GAP_TOKENS:
        return math.nan
    try:
        value = float(cell)
    except ValueError:
        raise ValueError(f"value {cell!r} is not a number") from None
    if math.isinf(value):
        raise ValueError(f"value {cell!r} is not finite")
    return value


@dataclass(frozen=True)
class _Layout:
    time_index: int
    value_index: int
    has_header: bool


def _layout(
    header: list[str], time_column: str | None, value_column: str | None, source: str, line: int, tz: ZoneInfo
) -> _Layout:
    """Which columns to read, and whether the first row is a header rather than data."""
    names = [cell.strip() for cell in header]
    lowered = [name.lower() for name in names]
    if time_column is None and value_column is None:
        try:
            parse_timestamp(names[0], tz)
            return _Layout(0, 1, has_header=False)
        except ValueError:
            pass
    wanted = (time_column or "timestamp", value_column or "value")
    indices = []
    for position, (name, given) in enumerate(zip(wanted, (time_column, value_column), strict=True)):
        if name.lower() in lowered:
            indices.append(lowered.index(name.lower()))
        elif given is None:
            indices.append(position)  # default names absent: the first two columns
        else:
            raise CsvFormatError(source, line, f"no column {name!r} (columns: {', '.join(names)})")
    return _Layout(indices[0], indices[1], has_header=True)


def parse_csv_series(
    text: str,
    *,
    source: str = "<csv>",
    time_column: str | None = None,
    value_column: str | None = None,
    timezone: str = "UTC",
) -> Series:
    """A `Series` from CSV text; `source` (the file name) prefixes every error message."""
    tz = zone(timezone)
    reader = csv.reader(io.StringIO(text))
    layout: _Layout | None = None
    timestamps: list[float] = []
    values: list[float] = []
    for row in reader:
        line = reader.line_num
        if not any(cell.strip() for cell in row) or row[0].lstrip().startswith("#"):
            continue
        if layout is None:
            layout = _layout(row, time_column, value_column, source, line, tz)
            if layout.has_header:
                continue
        needed = max(layout.time_index, layout.value_index) + 1
        if len(row) < needed:
            raise CsvFormatError(source, line, f"expected at least {needed} columns, got {len(row)}")
        try:
            timestamps.append(parse_timestamp(row[layout.time_index], tz))
            values.append(_parse_value(row[layout.value_index]))
        except ValueError as exc:
            raise CsvFormatError(source, line, str(exc)) from None
    if not timestamps:
        raise CsvFormatError(source, None, "no data rows")
    return Series(np.array(timestamps), np.array(values), name=source)
