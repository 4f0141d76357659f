"""A real Prometheus for the service's integration tests: stop() and start() keep its data, so a test can
fill `workdir/data` with fleetsim history first and read it through the product's collector."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

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
