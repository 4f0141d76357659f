"""Rate-level traces (a rate or a count per time window), read once for the emulator and the replay.

CSV with a header: a time column, `window_start_s` (seconds from the start) or `timestamp` (ISO 8601 or Unix
seconds; no zone means wall-clock time in the plan's timezone, so business days line up); a rate column
`rate_rps` / `rate` (requests/s) or a count column `requests` / `count` / `value` (requests per window);
optional `prompt_p50`, `prompt_p95` token columns. The ServeGen and NAB series in /work/shared/data/traces
are of this kind. A bad field raises TraceError naming the file and its 1-based line.

A window that recorded nothing is a collection gap, not zero demand: an empty rate or count, or an optional
`active_clients` column (ServeGen's count of clients seen in the window) of 0. ServeGen's m-mid trace has 84
such windows in six runs of up to 4 h in which every client of a model serving ~1,800 req/s "stopped" at once
and came back at full rate; read as zeros, they were outages the replay's policies scaled down for and the
forecasts carried into the following days. The windows on either side of a gap are partial (collection
stopped or resumed inside them: ServeGen's window after each gap reads ~14 req/s) and count as gaps too. A
gap's rate is interpolated linearly between the recorded windows on either side (`RateWindows.gaps` says which
were filled); a trace of gaps only is refused.

`fleetsim serve/backfill --rate-trace` makes such a trace the demand (`rate_trace_scenario`, through
`fleetsim.irregularity.rate_trace_demand`); `planwatch replay` turns it into per-minute arrivals
(monitor.replay.demand). Both read it here and place it by `default_start`, so the replay and the emulator
see the same days.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np

from fleetsim.irregularity import rate_trace_demand
from fleetsim.scenarios import Effects, Scenario
from fleetsim.traces import TraceError
from monitor.plan.model import Plan

__all__ = [
    "RATE_TIME_COLUMNS",
    "RATE_TRACE_HELP",
    "RateWindows",
    "default_start",
    "rate_trace_scenario",
    "read_rate_windows",
]

# The option's help, shared by `fleetsim serve` and `fleetsim backfill` (the same trace, placed the same way).
RATE_TRACE_HELP = (
    "A real rate trace as the demand: CSV of window_start_s or timestamp, and rate_rps/rate or a count "
    "(requests/count/value); scaled to the plan's peak, repeating outside its span; lengths stay the plan's."
)

RATE_TIME_COLUMNS = ("window_start_s", "timestamp")
_SEEN_COLUMN = "active_clients"  # 0: the window saw no client at all (a collection gap)
_RATE_COLUMNS = ("rate_rps", "rate")
_COUNT_COLUMNS = ("requests", "count", "value")


@dataclass(frozen=True)
class RateWindows:
    """A rate-level trace's windows, as read."""

    starts: np.ndarray  # seconds from the first window
    expected: np.ndarray  # requests per window (rate x width, or the count)
    counted: bool  # the file gives counts, not rates
    gaps: np.ndarray  # True where the window recorded nothing and its rate was interpolated
    p50: np.ndarray | None
    p95: np.ndarray | None
    first: float | None  # absolute start when the file has timestamps

    @property
    def widths(self) -> np.ndarray:
        return _widths(self.starts)


def _widths(starts: np.ndarray) -> np.ndarray:
    """Each window's span: to the next window's start; the last one spans the median spacing."""
    last = np.median(np.diff(starts)) if starts.size > 1 else 60.0
    return np.diff(starts, append=starts[-1] + last)


def default_start(plan: Plan) -> float:
    """Monday 2026-01-05 00:00 in the plan's timezone: a trace without a date starts a business week."""
    return datetime(2026, 1, 5, tzinfo=ZoneInfo(plan.workload.business_hours.timezone)).timestamp()


def rate_trace_scenario(plan: Plan, path: str | Path, *, scale_to_peak: bool = True) -> Scenario:
    """The trace as fleetsim's demand (it replaces the weekly profile and irregularity; the other scenarios
    still apply): placed at its own timestamps, or at `default_start` when it has none, repeating outside
    its span; scaled so its highest window is the plan's peak (user requests/s) unless `scale_to_peak` is
    False. TraceError names the file when it cannot serve as demand."""
    w = read_rate_windows(path, plan.workload.business_hours.timezone)
    widths = w.widths
    start = w.first if w.first is not None else default_start(plan)
    try:
        demand = rate_trace_demand(
            w.starts,
            w.expected / widths,
            start_unix=start,
            peak_rps=plan.workload.arrival.peak_rps if scale_to_peak else None,
        )
    except ValueError as exc:
        raise TraceError(path, None, str(exc)) from None
    moves = f"demand is the rate trace {Path(path).name} (x{demand.scale:.3g}): arrival rate as recorded"
    return Scenario("rate-trace", moves, Effects(demand=demand))


def read_rate_windows(path: str | Path, timezone: str) -> RateWindows:
    """Read a rate-level CSV (see the module docstring); `timezone` places timestamps without a zone."""
    p = Path(path)
    try:
        with p.open(encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f))
    except OSError as exc:
        raise TraceError(p, None, f"cannot read: {exc.strerror or exc}") from None
    if not rows:
        raise TraceError(p, None, "empty trace")
    header = [h.strip() for h in rows[0]]
    time_col = next((c for c in RATE_TIME_COLUMNS if c in header), None)
    rate_col = next((c for c in _RATE_COLUMNS if c in header), None)
    count_col = next((c for c in _COUNT_COLUMNS if c in header), None)
    if time_col is None:
        raise TraceError(p, 1, f"no time column ({' or '.join(RATE_TIME_COLUMNS)}) in header {rows[0]!r}")
    if rate_col is None and count_col is None:
        wanted = ", ".join(_RATE_COLUMNS + _COUNT_COLUMNS)
        raise TraceError(p, 1, f"no rate or count column (one of {wanted}) in header {rows[0]!r}")
    value_col = rate_col or count_col
    assert value_col is not None
    ti, vi = header.index(time_col), header.index(value_col)
    pi = (
        (header.index("prompt_p50"), header.index("prompt_p95"))
        if {"prompt_p50", "prompt_p95"} <= set(header)
        else None
    )
    si = header.index(_SEEN_COLUMN) if _SEEN_COLUMN in header else None
    zone = ZoneInfo(timezone)
    stamps, values, p50, p95 = [], [], [], []
    for number, row in enumerate(rows[1:], start=2):
        if not row or not "".join(row).strip():
            continue
        if len(row) != len(header):
            raise TraceError(p, number, f"expected {len(header)} comma-separated fields, got {len(row)}")
        stamps.append(_stamp(p, number, row[ti], time_col, zone))
        unseen = si is not None and _number(p, number, row[si], _SEEN_COLUMN) == 0
        values.append(math.nan if unseen else _optional(p, number, row[vi], value_col))
        if pi is not None:
            p50.append(_optional(p, number, row[pi[0]], "prompt_p50"))
            p95.append(_optional(p, number, row[pi[1]], "prompt_p95"))
    if not stamps:
        raise TraceError(p, None, "no windows in the trace")
    t = np.array(stamps)
    first = float(t[0]) if time_col == "timestamp" else None
    starts = t - t[0]
    widths = _widths(starts)
    if np.any(widths <= 0):
        raise TraceError(p, None, "windows must be in increasing time order without repeats")
    v = np.array(values)
    gaps = _with_edges(~np.isfinite(v))
    if gaps.all():
        raise TraceError(p, None, f"no window recorded a {value_col}: every one is a gap")
    rates = v if rate_col else v / widths
    middles = starts + widths / 2.0
    rates = np.where(gaps, np.interp(middles, middles[~gaps], rates[~gaps]), rates)
    has_lengths = pi is not None and any(x > 0 for x in p50)
    p50s, p95s = (_across(np.array(x), gaps, middles) if has_lengths else None for x in (p50, p95))
    return RateWindows(starts, rates * widths, rate_col is None, gaps, p50s, p95s, first)


def _across(values: np.ndarray, gaps: np.ndarray, middles: np.ndarray) -> np.ndarray:
    """Token lengths in the gaps interpolated from the recorded windows that have them (a gap's traffic is the
    traffic around it, not the plan's mix); elsewhere as recorded (NaN: the plan's lengths)."""
    known = ~gaps & (values > 0)
    if not known.any():
        return values
    return np.where(gaps, np.interp(middles, middles[known], values[known]), values)


def _with_edges(gaps: np.ndarray) -> np.ndarray:
    """The gaps and the windows on either side of each: collection stopped or resumed inside those, so their
    rate, taken over the whole window, counts only part of it."""
    edges = gaps.copy()
    edges[:-1] |= gaps[1:]
    edges[1:] |= gaps[:-1]
    return edges


def _number(path: Path, line: int, text: str, column: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise TraceError(path, line, f"{column} must be a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise TraceError(path, line, f"{column} must be a finite number >= 0, got {text!r}")
    return value


def _optional(path: Path, line: int, text: str, column: str) -> float:
    """An optional field: empty is unknown (NaN: a length routes by the plan's; a rate is a gap)."""
    return math.nan if not text.strip() else _number(path, line, text, column)


def _stamp(path: Path, line: int, text: str, column: str, zone: ZoneInfo) -> float:
    """Seconds: window_start_s as is; a timestamp as Unix seconds or ISO 8601 (no zone: the plan's)."""
    if column == "window_start_s":
        return _number(path, line, text, column)
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise TraceError(path, line, f"bad timestamp {text!r} (ISO 8601 or Unix seconds)") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=zone)).timestamp()
