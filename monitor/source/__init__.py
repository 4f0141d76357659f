"""The only code in planwatch that talks to Prometheus (or VictoriaMetrics, Thanos Query, Mimir).

Typed results in, typed errors out; a missing, NaN, stale or down value becomes an unknown measurement
with a reason (`monitor.source.measure`), never 0.
"""

from monitor.source.client import MAX_POINTS_PER_REQUEST, HttpPrometheusSource
from monitor.source.errors import PrometheusUnreachable, QueryError, SourceError
from monitor.source.factory import source_from_settings
from monitor.source.health import check
from monitor.source.measure import describe_labels, gate_down, gate_stale, measurement, measurements_by
from monitor.source.model import InstantResult, Point, RangeResult, Sample, Series, parse_instant, parse_range
from monitor.source.protocol import PrometheusSource
from monitor.source.settings import SourceSettings, TLSOptions

__all__ = [
    "MAX_POINTS_PER_REQUEST",
    "HttpPrometheusSource",
    "InstantResult",
    "Point",
    "PrometheusSource",
    "PrometheusUnreachable",
    "QueryError",
    "RangeResult",
    "Sample",
    "Series",
    "SourceError",
    "SourceSettings",
    "TLSOptions",
    "check",
    "describe_labels",
    "gate_down",
    "gate_stale",
    "measurement",
    "measurements_by",
    "parse_instant",
    "parse_range",
    "source_from_settings",
]
