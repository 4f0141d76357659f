"""Start real Prometheus / Alertmanager processes for tests, in any fixture scope, and always stop them.

A missing binary fails the test (it does not skip): a green run must mean the queries met a real PromQL
engine. The failure message says how to install the tools.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from fleetsim.promstack import (
    AlertmanagerConfig,
    AlertmanagerProcess,
    BinaryNotFound,
    ManagedProcess,
    PrometheusConfig,
    PrometheusProcess,
    ScrapeJob,
    find_binaries,
    find_binary,
)
from fleetsim.text_blocks import write_text_blocks
from fleetsim.victoria import VictoriaMetricsProcess

__all__ = ["BACKENDS", "Stack", "api_query", "require_binaries", "wait_for"]

# The query backends integration tests run against: a test parametrized over them meets both engines.
BACKENDS = ("prometheus", "victoria-metrics")


_REPO = Path(__file__).resolve().parents[2]


def require_binaries(*names: str) -> None:
    """Fail (not skip) with the install instruction when a tool is missing (default: all three)."""
    try:
        for name in names:
            find_binary(name)
        if not names:
            find_binaries()
    except BinaryNotFound as exc:
        pytest.fail(str(exc), pytrace=False)


class Stack:
    """Starts processes under `root` (one subdirectory each) and stops them all on `close()`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._procs: list[ManagedProcess] = []
        self._n = 0

    def _dir(self, kind: str) -> Path:
        self._n += 1
        return self.root / f"{kind}-{self._n}"

    def prometheus(
        self,
        jobs: Sequence[ScrapeJob] = (),
        *,
        targets: Sequence[str] = (),
        file_sd: Sequence[Path] = (),
        rule_files: Sequence[Path] = (),
        openmetrics: str | Iterable[str] | Path | None = None,
        data_dir: Path | None = None,
        **config: Any,
    ) -> PrometheusProcess:
        """A ready Prometheus. `targets`/`file_sd` make a job named "test"; `openmetrics` is backfilled
        into its (fresh) data directory before it starts."""
        require_binaries()
        work = self._dir("prometheus")
        jobs = list(jobs)
        if targets or file_sd:
            jobs.append(ScrapeJob("test", targets=tuple(targets), file_sd=tuple(file_sd)))
        if openmetrics is not None:
            data_dir = data_dir or work / "data"
            write_text_blocks(openmetrics, data_dir)
        cfg = PrometheusConfig(jobs=tuple(jobs), rule_files=tuple(rule_files), data_dir=data_dir, **config)
        try:
            proc = PrometheusProcess.start(cfg, workdir=work)
        except BinaryNotFound as exc:
            pytest.fail(str(exc), pytrace=False)
        self._procs.append(proc)
        return proc

    def fleet_history(
        self, plan: Path, *, days: float, step: str, end: str, scenario: str | None = None
    ) -> PrometheusProcess:
        """A Prometheus holding `days` of fleetsim's history of `plan` up to `end` (the `fleetsim backfill`
        command a user runs; fleetsim's default scenario unless `scenario` is given) and scraping nothing."""
        data = self._dir("history") / "data"
        argv = [sys.executable, "-m", "fleetsim", "backfill", str(plan), "--days", str(days), "--step", step,
                "--end", end, "--prometheus-data", str(data),
                *(("--scenario", scenario) if scenario else ())]  # fmt: skip
        done = subprocess.run(argv, cwd=_REPO, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return self.prometheus(data_dir=data)

    def victoria_metrics(
        self,
        jobs: Sequence[ScrapeJob] = (),
        *,
        targets: Sequence[str] = (),
        file_sd: Sequence[Path] = (),
        openmetrics: str | Iterable[str] | None = None,
        **config: Any,
    ) -> VictoriaMetricsProcess:
        """A ready VictoriaMetrics scraping `jobs` (as `prometheus()` does); `openmetrics` is imported first."""
        require_binaries("victoria-metrics")
        jobs = list(jobs)
        if targets or file_sd:
            jobs.append(ScrapeJob("test", targets=tuple(targets), file_sd=tuple(file_sd)))
        cfg = PrometheusConfig(jobs=tuple(jobs), **config)
        try:
            proc = VictoriaMetricsProcess.start(cfg, workdir=self._dir("victoria-metrics"))
        except BinaryNotFound as exc:
            pytest.fail(str(exc), pytrace=False)
        self._procs.append(proc)
        if openmetrics is not None:
            proc.import_openmetrics(openmetrics)
        return proc

    def backend(self, kind: str, jobs: Sequence[ScrapeJob] = (), **kwargs: Any) -> ManagedProcess:
        """A Prometheus or a VictoriaMetrics (`kind` from BACKENDS) with the same scrape jobs and history."""
        if kind == "victoria-metrics":
            return self.victoria_metrics(jobs, **kwargs)
        return self.prometheus(jobs, **kwargs)

    def alertmanager(self, config: AlertmanagerConfig | None = None) -> AlertmanagerProcess:
        require_binaries()
        try:
            proc = AlertmanagerProcess.start(config, workdir=self._dir("alertmanager"))
        except BinaryNotFound as exc:
            pytest.fail(str(exc), pytrace=False)
        self._procs.append(proc)
        return proc

    def close(self) -> None:
        while self._procs:
            self._procs.pop().stop()


def api_query(url: str, expr: str, at: float | None = None) -> list[dict[str, Any]]:
    """`data.result` of an instant query, with nothing of planwatch in between (harness-only checks)."""
    params = {"query": expr} | ({"time": str(at)} if at is not None else {})
    with urllib.request.urlopen(f"{url}/api/v1/query?{urllib.parse.urlencode(params)}", timeout=10) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def wait_for(
    check: Callable[[], Any],
    timeout: float = 15.0,
    what: str = "a condition",
    interval: float = 0.2,
    ignoring: tuple[type[Exception], ...] = (),
) -> Any:
    """Poll `check` until it returns something truthy; its last value otherwise fails the test. Exceptions in
    `ignoring` (a server still starting) count as not yet."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        try:
            value = check()
        except ignoring:
            value = None
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what} (last value: {value!r})", pytrace=False)


def labels_of(result: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    return [dict(item["metric"]) for item in result]
