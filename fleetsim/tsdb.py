"""Timestamped samples as OpenMetrics text: for `promtool tsdb create-blocks-from openmetrics` (`fleetsim
batch`), VictoriaMetrics' import and the test harness's direct block writer (fleetsim.text_blocks).

What promtool 2.42 requires, checked by experiment when the harness still imported with it:
- the input ends with `# EOF`, every sample has a timestamp in Unix **seconds** (a float is fine, read to the
  millisecond; a millisecond integer is taken as seconds, i.e. thousands of years ahead), and no blank lines;
- samples of one series must come in increasing time: an older or equal timestamp is dropped *silently*;
- `# TYPE` lines are optional and not checked against sample names (a counter `foo` with samples `foo` loads),
  and names with `:` (`vllm:...`) load as they are.
The writer is stricter than promtool, following the OpenMetrics spec so the text stays valid for other
tools: a counter family `foo` has samples `foo_total` (and `foo_created`); a histogram `h` has `h_bucket`
(with `le`), `h_count`, `h_sum`, `h_created`; families are not interleaved (a family is written as one
block); timestamps per series strictly increase. Counters exported without `_total` on the wire (every
dcgm-exporter counter) are declared `unknown`: the stored series is the same, only the hint differs.
Series *within* a family may interleave in time (sample by sample), which OpenMetrics discourages and
promtool accepts; producers that can go series by series should.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Literal, Self

__all__ = [
    "MetricType",
    "OpenMetricsError",
    "OpenMetricsWriter",
    "SeriesWriter",
    "escape_label_value",
    "format_value",
]

MetricType = Literal["counter", "gauge", "histogram", "summary", "unknown", "info", "stateset", "gaugehistogram"]
_SUFFIXES: Mapping[str, tuple[str, ...]] = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "gaugehistogram": ("_bucket", "_gcount", "_gsum"),
    "summary": ("", "_count", "_sum", "_created"),
    "info": ("_info",),
}
_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_EOF = "# EOF\n"


class OpenMetricsError(ValueError):
    """The samples would make invalid OpenMetrics text (or text promtool would silently drop)."""


def escape_label_value(value: str) -> str:
    """OpenMetrics label value escaping: backslash, double quote and newline."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    """Python's shortest round-trip float text; NaN and infinities spelt as OpenMetrics wants them."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _format_timestamp(ts: float) -> str:
    if isinstance(ts, int):
        return str(ts)
    return str(int(ts)) if float(ts).is_integer() else f"{ts:.3f}"


def _render_labels(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    parts = []
    for name in sorted(labels):
        if not _LABEL_NAME.match(name):
            raise OpenMetricsError(f"{name!r} is not a valid label name")
        parts.append(f'{name}="{escape_label_value(str(labels[name]))}"')
    return "{" + ",".join(parts) + "}"


class SeriesWriter:
    """One series' line prefix, rendered once; `add` appends a sample in increasing time."""

    __slots__ = ("_last", "_out", "_prefix", "family", "name")

    def __init__(self, out: OpenMetricsWriter, family: str, name: str, labels: Mapping[str, str]) -> None:
        self._out = out
        self.family = family
        self.name = name
        self._prefix = name + _render_labels(labels) + " "
        self._last = -math.inf

    def add(self, timestamp: float, value: float) -> None:
        if timestamp <= self._last:
            raise OpenMetricsError(
                f"{self._prefix.strip()}: timestamp {timestamp} is not after {self._last} "
                "(promtool would drop it silently)"
            )
        self._last = timestamp
        self._out._emit(self.family, f"{self._prefix}{format_value(value)} {_format_timestamp(timestamp)}\n")


@dataclass
class _Family:
    name: str
    type: str
    help: str
    started: bool = False


class OpenMetricsWriter:
    """Streams samples to an OpenMetrics file, one family block after another, then `# EOF`.

    Declare a family with `family()` (optional: an undeclared sample name becomes an `unknown` family of
    that name), then write with `sample()` or, faster, through `series()` handles. Nothing is buffered
    beyond the file object's own buffer; memory grows only with the number of distinct series.
    """

    def __init__(self, target: Path | str | IO[str]) -> None:
        if isinstance(target, (str, Path)):
            self.path: Path | None = Path(target)
            self._fh: IO[str] = open(self.path, "w", encoding="utf-8", buffering=1 << 20)  # noqa: SIM115
            self._owns = True
        else:
            self.path, self._fh, self._owns = None, target, False
        self._families: dict[str, _Family] = {}
        self._sample_family: dict[str, str] = {}
        self._series: dict[tuple[str, tuple[tuple[str, str], ...]], SeriesWriter] = {}
        self._current: str | None = None
        self._finished: set[str] = set()
        self._closed = False
        self.samples = 0

    def family(self, name: str, type: MetricType = "unknown", help: str = "") -> None:
        """Declare a metric family (OpenMetrics names: a counter `foo` has samples `foo_total`)."""
        if not _METRIC_NAME.match(name):
            raise OpenMetricsError(f"{name!r} is not a valid metric name")
        if type == "counter" and name.endswith("_total"):
            raise OpenMetricsError(f"counter family {name!r}: name the family without _total, samples get it")
        if name in self._families:
            raise OpenMetricsError(f"family {name!r} declared twice")
        self._families[name] = _Family(name, type, help)
        for suffix in _SUFFIXES.get(type, ("",)):
            self._sample_family[name + suffix] = name

    def series(self, name: str, labels: Mapping[str, str] | None = None) -> SeriesWriter:
        """The writer of the series `name{labels}`; the same handle for the same name and labels."""
        labels = labels or {}
        key = (name, tuple(sorted(labels.items())))
        handle = self._series.get(key)
        if handle is None:
            family = self._family_of(name, labels)
            handle = self._series[key] = SeriesWriter(self, family, name, labels)
        return handle

    def sample(self, name: str, labels: Mapping[str, str] | None, value: float, timestamp: float) -> None:
        self.series(name, labels).add(timestamp, value)

    def _family_of(self, name: str, labels: Mapping[str, str]) -> str:
        family = self._sample_family.get(name)
        if family is None:
            if name in self._families:
                fam = self._families[name]
                samples = ", ".join(name + s for s in _SUFFIXES.get(fam.type, ("",)))
                raise OpenMetricsError(f"{name!r} is a {fam.type} family; its samples are named {samples}")
            self.family(name, "unknown")
            family = name
        kind = self._families[family].type
        if kind in ("histogram", "gaugehistogram") and name.endswith("_bucket") and "le" not in labels:
            raise OpenMetricsError(f"{name}: a histogram bucket needs an 'le' label")
        return family

    def _emit(self, family: str, line: str) -> None:
        if family != self._current:
            self._start_family(family)
        self._fh.write(line)
        self.samples += 1

    def _start_family(self, family: str) -> None:
        if self._closed:
            raise OpenMetricsError("the writer is closed")
        if family in self._finished:
            raise OpenMetricsError(
                f"family {family!r} was already written and another family followed: OpenMetrics forbids "
                "interleaving families; write one family's samples together"
            )
        if self._current is not None:
            self._finished.add(self._current)
        fam = self._families[family]
        if fam.help:
            self._fh.write(f"# HELP {family} {_escape_help(fam.help)}\n")
        self._fh.write(f"# TYPE {family} {fam.type}\n")
        self._current = family

    def close(self) -> None:
        """Write `# EOF` and close the file (if we opened it). Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._fh.write(_EOF)
        if self._owns:
            self._fh.close()
        else:
            self._fh.flush()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()
            return
        self._closed = True
        if self._owns:
            self._fh.close()
            if self.path is not None:
                self.path.unlink(missing_ok=True)
