"""Shared fixtures: real Prometheus and Alertmanager processes on free loopback ports.

- `prometheus_factory(jobs=..., targets=..., file_sd=..., rule_files=..., openmetrics=..., data_dir=...)`
  starts a ready Prometheus (scrape and evaluation every 1 s) and stops it after the test;
- `prometheus`: one with no targets; `alertmanager`: one with clustering off;
- `backfilled_prometheus(openmetrics_text_or_lines_or_path, **config)`: history written as TSDB blocks by
  the direct writer (fleetsim.text_blocks) into a fresh data directory, then served;
- `exporter_factory(registry)`: a prometheus_client exporter on loopback for Prometheus to scrape.
A missing binary fails with the install instruction. Helpers live in `tests/harness/`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from fleetsim.promstack import AlertmanagerProcess, PrometheusProcess
from tests.harness.exporter import Exporter
from tests.harness.stack import Stack

PrometheusFactory = Callable[..., PrometheusProcess]
BackfillFactory = Callable[..., PrometheusProcess]
ExporterFactory = Callable[[CollectorRegistry], Exporter]


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    """Processes started through it are stopped when the test ends."""
    s = Stack(tmp_path / "stack")
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def prometheus_factory(stack: Stack) -> PrometheusFactory:
    return stack.prometheus


@pytest.fixture
def prometheus(prometheus_factory: PrometheusFactory) -> PrometheusProcess:
    return prometheus_factory()


@pytest.fixture
def alertmanager(stack: Stack) -> AlertmanagerProcess:
    return stack.alertmanager()


@pytest.fixture
def backfilled_prometheus(stack: Stack) -> BackfillFactory:
    def start(openmetrics: str | Iterable[str] | Path, **config: Any) -> PrometheusProcess:
        return stack.prometheus(openmetrics=openmetrics, **config)

    return start


@pytest.fixture
def exporter_factory() -> Iterator[ExporterFactory]:
    started: list[Exporter] = []

    def start(registry: CollectorRegistry) -> Exporter:
        exporter = Exporter(registry)
        started.append(exporter)
        return exporter

    try:
        yield start
    finally:
        for exporter in started:
            exporter.close()
