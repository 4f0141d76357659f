"""Typed query results, and the one parser from Prometheus API JSON to them (shared by the HTTP source and
the API response body, so a response parses the same from any source).

Timestamps are Unix seconds (float). Values are floats as Prometheus sent them, NaN and infinities included:
deciding what a NaN *means* (an empty histogram) is `monitor.source.measure`'s job, not the parser's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from monitor.source.errors import QueryError

__all__ = [
    "InstantResult",
    "Point",
    "RangeResult",
    "Sample",
    "Series",
    "parse_instant",
    "parse_range",
]

ResultType = Literal["vector", "scalar"]


def _labels(raw: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(raw))


@dataclass(frozen=True)
class Sample:
    """One series' value at one instant. `timestamp` is what the API returned: the evaluation time for
    instant queries (Prometheus stamps results with it), so sample age needs `timestamp()` in PromQL."""

    labels: Mapping[str, str]
    value: float
    timestamp: float

    @property
    def finite(self) -> bool:
        return math.isfinite(self.value)

    def to_json(self) -> dict[str, Any]:
        return {"metric": dict(self.labels), "value": [self.timestamp, _num(self.value)]}


@dataclass(frozen=True)
class InstantResult:
    """The answer to an instant query: zero or more samples (a scalar result is one unlabelled sample)."""

    query: str
    evaluated_at: float
    samples: tuple[Sample, ...]
    result_type: ResultType = "vector"

    @property
    def empty(self) -> bool:
        return not self.samples

    def to_json(self) -> dict[str, Any]:
        """The API response body this result parses from (for recorded fixtures)."""
        if self.result_type == "scalar" and self.samples:
            s = self.samples[0]
            return _body("scalar", [s.timestamp, _num(s.value)])
        return _body("vector", [s.to_json() for s in self.samples])


@dataclass(frozen=True)
class Point:
    timestamp: float
    value: float


@dataclass(frozen=True)
class Series:
    """One series of a range query; missing steps are simply absent (a gap is not a zero)."""

    labels: Mapping[str, str]
    points: tuple[Point, ...]

    def timestamps(self) -> tuple[float, ...]:
        return tuple(p.timestamp for p in self.points)

    def values(self) -> tuple[float, ...]:
        return tuple(p.value for p in self.points)

    def to_json(self) -> dict[str, Any]:
        return {"metric": dict(self.labels), "values": [[p.timestamp, _num(p.value)] for p in self.points]}


@dataclass(frozen=True)
class RangeResult:
    query: str
    start: float
    end: float
    step: float
    series: tuple[Series, ...]

    @property
    def empty(self) -> bool:
        return not self.series

    def to_json(self) -> dict[str, Any]:
        return _body("matrix", [s.to_json() for s in self.series])


def _num(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


def _body(result_type: str, result: Any) -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": result_type, "result": result}}


def _float(raw: Any, query: str) -> float:
    try:
        return float(raw)
    except (TypeError, ValueError):
        raise QueryError(query, 200, "bad_response", f"value {raw!r} is not a number") from None


def infer_result_type(result: Any) -> str:
    """prometheus-api-client returns only `data.result`; its shape tells the type."""
    if isinstance(result, list) and len(result) == 2 and not isinstance(result[0], dict):
        return "scalar"
    if isinstance(result, list) and result and isinstance(result[0], dict) and "values" in result[0]:
        return "matrix"
    return "vector"


def parse_instant(query: str, evaluated_at: float, result: Any, result_type: str | None = None) -> InstantResult:
    """`data.result` of /api/v1/query as typed samples. A matrix (a range selector) or string result is a
    QueryError: planwatch's instant queries return vectors or scalars."""
    kind = result_type or infer_result_type(result)
    if kind == "scalar":
        ts, value = result
        return InstantResult(query, evaluated_at, (Sample(_labels({}), _float(value, query), float(ts)),), "scalar")
    if kind != "vector":
        raise QueryError(query, 200, "bad_response", f"expected a vector or scalar result, got a {kind}")
    samples = tuple(
        Sample(_labels(item.get("metric", {})), _float(item["value"][1], query), float(item["value"][0]))
        for item in result
    )
    return InstantResult(query, evaluated_at, samples, "vector")


def parse_range(query: str, start: float, end: float, step: float, result: Sequence[Any]) -> RangeResult:
    """`data.result` of /api/v1/query_range (a matrix) as typed series."""
    series = tuple(
        Series(
            _labels(item.get("metric", {})),
            tuple(Point(float(ts), _float(v, query)) for ts, v in item.get("values", ())),
        )
        for item in result
    )
    return RangeResult(query, start, end, step, series)
