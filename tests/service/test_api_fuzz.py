"""schemathesis against the real service on a loopback port, reading a real Prometheus: every check
(server errors, response schemas, status codes, content types, auth, Allow headers), with and without
the token. The OpenAPI document must say what the service does, and the service must survive what the
document allows."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from fleetsim.promstack import PrometheusProcess, free_port
from tests.builders import EXAMPLES
from tests.harness.stack import wait_for

pytestmark = [pytest.mark.integration]

TOKEN = "fuzz-t0ken"
ST = shutil.which("st", path=str(Path(sys.executable).parent))


@contextmanager
def _serving(tmp_path: Path, prometheus: PrometheusProcess, protect_reads: bool) -> Iterator[str]:
    port = free_port()
    config = tmp_path / "planwatch.yaml"
    config.write_text(f"protect_reads: {str(protect_reads).lower()}\nevaluation_interval: 5s\n")
    env = {**os.environ, "PLANWATCH_API_TOKEN": TOKEN}
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "monitor", "serve", str(EXAMPLES / "support-copilot.yaml"), "--config", str(config),
         "--prometheus", prometheus.url, "--listen", f"127.0.0.1:{port}", "--state-db", str(tmp_path / "state.db"),
         "--log-level", "warning"],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _ready(url), timeout=60, what="the advisor to be ready")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _schemathesis(url: str, tmp_path: Path, with_token: bool) -> str:
    """One run of every check; the report's tail when anything failed."""
    assert ST is not None
    auth = ["-H", f"Authorization: Bearer {TOKEN}"] if with_token else []
    run = subprocess.run(
        [ST, "run", f"{url}/openapi.json", "--checks", "all", "--max-examples", "8", "--seed", "17",
         "--request-timeout", "10", "--no-color", *auth],
        capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert " passed" in run.stdout and "generated" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]
    return "" if run.returncode == 0 else run.stdout[-6000:] + run.stderr[-2000:]


@pytest.mark.skipif(ST is None, reason="schemathesis is not installed (pip install -e '.[dev]')")
@pytest.mark.parametrize(
    ("protect_reads", "tokens"),
    [
        pytest.param(False, (True, False), id="open reads, with and without the token: nothing found"),
        pytest.param(True, (False,), id="protected reads without the token: every /v1 route is 401 as documented"),
    ],
)
def test_schemathesis_finds_nothing(
    tmp_path: Path, prometheus: PrometheusProcess, protect_reads: bool, tokens: tuple[bool, ...]
) -> None:
    with _serving(tmp_path, prometheus, protect_reads) as url:
        failures = {with_token: _schemathesis(url, tmp_path, with_token) for with_token in tokens}
    assert not any(failures.values()), failures
