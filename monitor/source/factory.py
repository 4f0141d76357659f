"""Build the HTTP source from settings (the service's, a mapping, or `SourceSettings`).

The observer (`monitor.observer.PrometheusObserver`) composes this adapter with the query catalog; it is
built by the service's composition root (`monitor.service.app`), not here, so the adapter never imports it.
"""

from __future__ import annotations

from typing import Any

from monitor.source.client import HttpPrometheusSource
from monitor.source.settings import SourceSettings

__all__ = ["source_from_settings"]


def source_from_settings(settings: Any) -> HttpPrometheusSource:
    """An HTTP source from `SourceSettings`, a mapping, or the service's `PrometheusSettings`."""
    return HttpPrometheusSource(SourceSettings.from_any(settings))
