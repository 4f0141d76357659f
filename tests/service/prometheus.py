"""A real Prometheus for the service's integration tests, and the collector they read it with.

`prometheus_collector(url)` is a small PromQL collector reading two series the test exports (demand and
ready replicas per tier) and taking the rest of the observation from the plan's baseline: enough for a
live recommendation without a vLLM fleet. The outage tests also run monitor.source's collector (through
`default_collector`) against the same Prometheus; with fleetsim-fed history, that one carries the whole test.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import httpx

from monitor.observe.collector import Collector, DemandHistory, SourceHealth
from monitor.observe.model import Measurement, TierObservation
from monitor.plan import Plan
from monitor.source import PrometheusUnreachable
from tests.service.fakes import copilot_observation

PROMETHEUS = shutil.which("prometheus")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PrometheusProcess:
    """`prometheus` on a loopback port scraping one target every second; stop() and start() keep its data."""

    workdir: Path
    target: str
    port: int
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        config = self.workdir / "prometheus.yml"
        config.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            f"scrape_configs:\n  - job_name: fleet\n    static_configs: [{{targets: ['{self.target}']}}]\n"
        )
        assert PROMETHEUS is not None
        log = (self.workdir / "prometheus.log").open("ab")
        self.proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={self.workdir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=log, stderr=log,
        )  # fmt: skip
        log.close()
        self._wait(f"{self.url}/-/ready", timeout)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self.proc = None

    def _wait(self, url: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=1.0) as client:
            while time.monotonic() < deadline:
                try:
                    if client.get(url).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.1)
        raise TimeoutError(f"prometheus at {url} not ready after {timeout} s")


@contextmanager
def running_prometheus(workdir: Path, target: str) -> Iterator[PrometheusProcess]:
    prometheus = PrometheusProcess(workdir, target, free_port())
    prometheus.start()
    try:
        yield prometheus
    finally:
        prometheus.stop()


class ScrapedDemandCollector:
    """Demand and ready replicas per tier from Prometheus (instant queries); the rest as the plan expects.

    A transport failure raises PrometheusUnreachable, as the product's collector does.
    """

    def __init__(self, url: str):
        self.url = url

    def _query(self, expr: str, now: float) -> Measurement:
        try:
            with httpx.Client(timeout=2.0) as client:
                body = client.get(f"{self.url}/api/v1/query", params={"query": expr, "time": now}).json()
        except httpx.TransportError as exc:
            raise PrometheusUnreachable(self.url, str(exc)) from exc
        result = body["data"]["result"]
        if not result:
            return Measurement.unknown("no data", query=expr)
        return Measurement.of(float(result[0]["value"][1]), query=expr)

    def collect(self, plan: Plan, now: float, window: str) -> dict[str, TierObservation]:
        out = {}
        for tier in plan.tiers:
            demand = self._query(f'fleet_demand_rps{{tier="{tier.name}"}}', now)
            ready = self._query(f'fleet_replicas_ready{{tier="{tier.name}"}}', now)
            base = replace(copilot_observation(), tier=tier.name, evaluated_at=now, window=window)
            out[tier.name] = replace(base, demand_rate=demand, request_rate=demand, replicas_ready=ready)
        return out

    def demand_history(self, plan: Plan, tier: str, start: float, end: float, step_seconds: float) -> DemandHistory:
        return DemandHistory(tier, step_seconds, (), (), "fleet_demand_rps")

    def health(self, now: float) -> SourceHealth:
        try:
            with httpx.Client(timeout=2.0) as client:
                client.get(f"{self.url}/-/ready").raise_for_status()
        except httpx.HTTPError as exc:
            return SourceHealth(False, self.url, str(exc))
        return SourceHealth(True, self.url)


def prometheus_collector(url: str) -> Collector:
    """The collector the real-Prometheus tests use (the switch to monitor.source's collector)."""
    return ScrapedDemandCollector(url)
