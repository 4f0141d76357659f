"""OpenMetrics samples with timestamps written as TSDB blocks by the direct writer (fleetsim.tsdb_block).

The test harness hands Prometheus its histories this way: the same writer `fleetsim backfill` uses (held
to promtool's blocks sample for sample by tests/fleetsim_backfill, and this module to promtool's golden block
by tests/harness_tests/test_golden_block.py), so no promtool process runs per test.
Blocks are cut at 54 h boundaries, as the promtool import this replaces cut them (`--max-block-duration=162h`,
which promtool rounds down to 2 h x 3^3): weeks of history make a few blocks, not hundreds;
series sharing their timestamps are encoded together. Comment lines (`# TYPE`, `# EOF`) carry nothing the
TSDB stores and are skipped; a sample is `name{labels} value timestamp` with the timestamp in seconds.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from fleetsim.backfill_direct import parse_series
from fleetsim.tsdb_block import BlockWriter, Labels
from fleetsim.tsdb_xor import encode_xor

__all__ = ["TextBlockError", "write_text_blocks"]

BLOCK_MS = 54 * 3600 * 1000


class TextBlockError(ValueError):
    """A sample line that cannot be stored; the message names the line."""


def write_text_blocks(source: str | Iterable[str] | Path, data_dir: Path) -> list[Path]:
    """Every sample of `source` (text, lines or a file) into blocks under `data_dir`; returns the blocks."""
    if isinstance(source, Path):
        source = source.read_text(encoding="utf-8")
    lines = source.splitlines() if isinstance(source, str) else source
    windows: dict[int, dict[Labels, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        labels, stamp, value = _sample(line, number)
        windows[stamp // BLOCK_MS][labels][stamp] = value
    data_dir.mkdir(parents=True, exist_ok=True)
    return [_block(data_dir, windows[w]) for w in sorted(windows)]


def _sample(line: str, number: int) -> tuple[Labels, int, float]:
    head, _, rest = line.rpartition("}") if "}" in line else ("", "", line)
    parts = rest.split()
    if not head:
        parts = line.split()
        head, parts = parts[0], parts[1:]
    else:
        head += "}"
    if len(parts) != 2:
        raise TextBlockError(f"line {number}: expected `name{{labels}} value timestamp`, got {line!r}")
    try:
        value, seconds = float(parts[0]), float(parts[1])
    except ValueError:
        raise TextBlockError(f"line {number}: value or timestamp is not a number: {line!r}") from None
    if not math.isfinite(seconds):
        raise TextBlockError(f"line {number}: timestamp {parts[1]!r} is not finite")
    return parse_series(head.encode()), round(seconds * 1000), value


def _block(data_dir: Path, series: dict[Labels, dict[int, float]]) -> Path:
    by_stamps: dict[tuple[int, ...], list[Labels]] = defaultdict(list)
    for labels, points in series.items():
        by_stamps[tuple(sorted(points))].append(labels)
    with BlockWriter(data_dir) as writer:
        for stamps, members in by_stamps.items():
            values = np.array([[series[labels][t] for t in stamps] for labels in members], dtype=np.float64)
            writer.add(members, encode_xor(np.array(stamps, dtype=np.int64), values))
        return writer.close()
