"""Build the Prometheus-backed collector from the service's settings (`planwatch serve` looks it up here).

The collector (`monitor.collector.PrometheusCollector`) composes this adapter with the query catalog; it is
imported lazily because it imports this package itself.
"""

from __future__ import annotations

import importlib
from typing import Any

from monitor.source.client import HttpPrometheusSource
from monitor.source.settings import SourceSettings

__all__ = ["collector_from_settings", "source_from_settings"]


def source_from_settings(settings: Any) -> HttpPrometheusSource:
    """An HTTP source from `SourceSettings`, a mapping, or the service's `PrometheusSettings`."""
    return HttpPrometheusSource(SourceSettings.from_any(settings))


def collector_from_settings(settings: Any, **options: Any) -> Any:
    """`monitor.collector.PrometheusCollector` over an HTTP source; `options` go to the collector."""
    collector_type = importlib.import_module("monitor.collector").PrometheusCollector
    return collector_type(source_from_settings(settings), **options)
