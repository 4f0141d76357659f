"""A live fleet (`fleetsim serve` as a subprocess) scraped by a real Prometheus (fleetsim.promstack) through
file_sd at a 1 s scrape interval."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from fleetsim.promstack import PrometheusConfig, PrometheusProcess, ScrapeJob
from fleetsim.victoria import VictoriaMetricsProcess
from tests.harness.stack import require_binaries, wait_for

from .helpers import START, tiny_plan

SPEED = 10.0


@dataclass
class LiveFleet:
    """The emulator's address, its file_sd file and a Prometheus API client scraping it."""

    address: str
    file_sd: Path
    prometheus: httpx.Client
    speed: float

    def query(self, expr: str) -> list[dict[str, Any]]:
        body = self.prometheus.get("/api/v1/query", params={"query": expr}).json()
        assert body["status"] == "success", body
        return list(body["data"]["result"])

    def scalar(self, expr: str) -> float:
        result = self.query(expr)
        assert len(result) == 1, (expr, result)
        return float(result[0]["value"][1])


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


@contextlib.contextmanager
def serve_and_scrape(
    work: Path, generation: str, backend: str = "prometheus", extra: tuple[str, ...] = ()
) -> Iterator[LiveFleet]:
    """`fleetsim serve` (the tiny plan at 5 req/s, --speed 10, `extra` flags) and a Prometheus (or, with
    `backend="victoria-metrics"`, a VictoriaMetrics) scraping its file_sd."""
    require_binaries("victoria-metrics" if backend == "victoria-metrics" else "prometheus")
    plan = work / "plan.yaml"
    plan.write_text(yaml.safe_dump(tiny_plan_data()))
    file_sd = work / "targets.json"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    log = (work / "fleetsim.log").open("wb")
    fleetsim = subprocess.Popen(
        [sys.executable, "-m", "fleetsim.cli", "serve", str(plan), "--listen", "127.0.0.1:0", "--file-sd",
         str(file_sd), "--speed", str(SPEED), "--start", str(START), "--dcgm-interval", "5", "--seed", "4",
         "--vllm-generation", generation, *extra],
        stdout=subprocess.DEVNULL, stderr=log, env=env,
    )  # fmt: skip
    try:
        wait_for(file_sd.exists, 30, "fleetsim's file_sd")
        address = json.loads(file_sd.read_text())[0]["targets"][0]
        config = PrometheusConfig(jobs=(ScrapeJob("fleetsim", file_sd=(file_sd,)),), scrape_interval="1s")
        server = VictoriaMetricsProcess if backend == "victoria-metrics" else PrometheusProcess
        with (
            server.start(config, workdir=work / backend) as prometheus,
            httpx.Client(base_url=prometheus.url, timeout=10) as client,
        ):
            yield LiveFleet(address, file_sd, client, SPEED)
    finally:
        _stop(fleetsim)
        log.close()


@pytest.fixture(scope="session")
def live_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveFleet]:
    # Pinned to baseline: its tests hold the scraped rates to the plan's 5 req/s, which fleetsim's default
    # (irregular) demand moves by the day's level.
    with serve_and_scrape(tmp_path_factory.mktemp("live-v1"), "v1", extra=("--scenario", "baseline")) as live:
        yield live


@pytest.fixture(scope="session")
def live_legacy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveFleet]:
    with serve_and_scrape(tmp_path_factory.mktemp("live-legacy"), "legacy") as live:
        yield live


def tiny_plan_data() -> dict[str, Any]:
    """The helpers' tiny plan at 5 req/s on 2 replicas, as YAML data for the subprocess."""
    plan = tiny_plan(rps=5.0, replicas=2)
    return yaml.safe_load(yaml.safe_dump(plan.model_dump(mode="json", by_alias=True, exclude_defaults=True)))
