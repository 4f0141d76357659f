"""Units, defined once: bytes and seconds inside planwatch; GB/GiB and ms only at the edges, labelled.

Plan files may write quantities for people ("50ms", "1.2s", "20m", "30GB", "64GiB"); these parsers turn
them into seconds and bytes. Decimal and binary prefixes are kept apart on purpose: the seeds' "GiB"
figures are decimal GB, and a plan that says GiB must mean 2**30.
"""

from __future__ import annotations

import re

from forecasting.durations import duration_seconds, format_duration, is_promql_duration

__all__ = [
    "GB",
    "GIB",
    "MB",
    "MIB",
    "SECONDS_PER_DAY",
    "SECONDS_PER_HOUR",
    "SECONDS_PER_MONTH",
    "TB",
    "format_bytes",
    "format_duration",
    "format_seconds",
    "format_value",
    "parse_bytes",
    "parse_duration",
    "validate_promql_duration",
]

KB, MB, GB, TB = 1e3, 1e6, 1e9, 1e12
KIB, MIB, GIB, TIB = 2**10, 2**20, 2**30, 2**40
SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86_400.0
# A 30-day month, as the seeds count it (2.592e6 s).
SECONDS_PER_MONTH = 30 * SECONDS_PER_DAY

_BYTE_UNITS = {
    "b": 1.0,
    "kb": KB,
    "mb": MB,
    "gb": GB,
    "tb": TB,
    "kib": KIB,
    "mib": MIB,
    "gib": GIB,
    "tib": TIB,
}
_QUANTITY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


def parse_duration(value: str | float | int) -> float:
    """Seconds from a number (already seconds) or a string such as '50ms', '1.2s', '20m', '24h', '7d', '1h30m'.

    The grammar is `forecasting.durations`' (the one of planwatch); a bad value raises ValueError.
    """
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, int | float):
        return float(value)
    return duration_seconds(value)


def validate_promql_duration(value: str) -> str:
    """`value` if it is a duration PromQL accepts in a range (`5m`, `1h30m`); anything else could inject PromQL
    or fail later. The same grammar as `parse_duration`, whole numbers only."""
    if not is_promql_duration(value):
        raise ValueError(
            f"{value!r} is not a PromQL duration planwatch accepts (whole numbers of ms, s, m, h, d, "
            "w: 30s, 5m, 7d, 1h30m)"
        )
    return value


def parse_bytes(value: str | float | int) -> float:
    """Bytes from a number (already bytes) or a string such as '30GB' (1e9) or '64GiB' (2**30)."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a size in bytes")
    if isinstance(value, int | float):
        return float(value)
    match = _QUANTITY.match(value)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _BYTE_UNITS:
        raise ValueError(f"{value!r} is not a size (examples: 30GB, 64GiB, 512MB)")
    return float(match.group(1)) * _BYTE_UNITS[unit]


def format_bytes(n: float, binary: bool = False) -> str:
    """'7.86 GB' or, with binary=True, '7.32 GiB': the unit is always written out."""
    base, units = (1024.0, ["B", "KiB", "MiB", "GiB", "TiB"]) if binary else (1000.0, ["B", "KB", "MB", "GB", "TB"])
    size, i = float(n), 0
    while abs(size) >= base and i < len(units) - 1:
        size /= base
        i += 1
    return f"{size:.3g} {units[i]}" if i == 0 else f"{size:.2f} {units[i]}"


def format_seconds(s: float) -> str:
    """Milliseconds below a second, seconds below two minutes, then minutes or hours."""
    if s != s:  # NaN
        return "unknown"
    if abs(s) < 1.0:
        return f"{s * 1e3:.1f} ms"
    if abs(s) < 120.0:
        return f"{s:.2f} s"
    if abs(s) < 7200.0:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def format_value(value: float | None, unit: str) -> str:
    """A drift value as a reviewer reads it: seconds as ms/s/min, ratios as %, tokens as whole numbers."""
    if value is None or value != value:
        return "unknown"
    if unit == "s":
        return format_seconds(value)
    if unit == "ratio":
        return f"{value:.1%}"
    if unit == "error ratio":
        return f"{value:.3%}"
    if unit == "tokens":
        return f"{value:,.0f} token{'' if round(value) == 1 else 's'}"
    number = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    return f"{number} {unit}"
