"""Real Prometheus and Alertmanager processes on free loopback ports, for tests and `make demo`.

Why real binaries and not a fake: the queries, the recording rules and the adapter are only worth something
if a real PromQL engine agrees with them. Each process gets a generated config in its own work directory, a
port picked at run time (bind port 0 on 127.0.0.1, release, start; retried when another process wins the
race), and is stopped with SIGTERM, then SIGKILL, so no test leaves an orphan behind. stderr goes to a log
file (a pipe nobody reads would fill and block the server); its tail is quoted in every start-up error.

    with PrometheusProcess.start(PrometheusConfig(jobs=(ScrapeJob("vllm", targets=("127.0.0.1:8000",)),))) as prom:
        requests.get(f"{prom.url}/api/v1/query", params={"query": "up"})

Prometheus 2.42 notes: `--storage.tsdb.allow-overlapping-blocks` is a hidden no-op since 2.39 (overlapping
blocks are always accepted and compacted vertically), so it is not passed; retention is counted back from
the newest block, not from the wall clock, and defaults here to 60d so a backfilled 28-day history stays.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from fleetsim.promconfig import RESTORE_VLLM_COLONS, AlertmanagerConfig, PrometheusConfig, ScrapeJob

__all__ = [
    "INSTALL_HINT",
    "RESTORE_VLLM_COLONS",
    "AlertmanagerConfig",
    "AlertmanagerProcess",
    "Binaries",
    "BinaryNotFound",
    "ManagedProcess",
    "ProcessStartError",
    "PrometheusConfig",
    "PrometheusProcess",
    "ScrapeJob",
    "find_binaries",
    "find_binary",
    "free_port",
    "running_processes",
]

INSTALL_HINT = (
    "install the Debian packages with `apt-get install prometheus prometheus-alertmanager victoria-metrics` "
    "(or run `make test`, which installs them)"
)
_ALTERNATIVES: Mapping[str, tuple[str, ...]] = {
    "prometheus": ("prometheus",),
    "promtool": ("promtool",),
    "alertmanager": ("alertmanager", "prometheus-alertmanager"),
    "victoria-metrics": ("victoria-metrics", "victoria-metrics-prod"),
}
_PORT_ATTEMPTS = 5
_STOP_GRACE_SECONDS = 10.0


class BinaryNotFound(RuntimeError):
    """A Prometheus tool is not on PATH; the message says how to install it."""

    def __init__(self, tool: str) -> None:
        names = " or ".join(f"`{n}`" for n in _ALTERNATIVES.get(tool, (tool,)))
        super().__init__(f"{names} not found on PATH: {INSTALL_HINT}")
        self.tool = tool


class ProcessStartError(RuntimeError):
    """A server did not become ready; the message ends with the tail of its log."""


def find_binary(tool: str) -> str:
    """Absolute path of `prometheus`, `promtool` or `alertmanager` (Debian names it prometheus-alertmanager)."""
    for name in _ALTERNATIVES.get(tool, (tool,)):
        path = shutil.which(name)
        if path is not None:
            return path
    raise BinaryNotFound(tool)


@dataclass(frozen=True)
class Binaries:
    prometheus: str
    promtool: str
    alertmanager: str


def find_binaries() -> Binaries:
    """All three tools, or BinaryNotFound naming the first missing one."""
    return Binaries(find_binary("prometheus"), find_binary("promtool"), find_binary("alertmanager"))


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now. Racy by nature; callers retry when the start loses the race."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


_LIVE: weakref.WeakSet[ManagedProcess] = weakref.WeakSet()


@atexit.register
def _stop_leftovers() -> None:
    """A crash between start and stop must not leave servers running after the interpreter exits."""
    for proc in list(_LIVE):
        proc.stop()


class ManagedProcess:
    """A server process started by us: its port, work directory, log, and a clean stop."""

    kind = "server"

    def __init__(
        self, popen: subprocess.Popen[bytes], port: int, workdir: Path, log_path: Path, owns_workdir: bool
    ) -> None:
        self._popen = popen
        self.port = port
        self.workdir = workdir
        self.log_path = log_path
        self._owns_workdir = owns_workdir
        self._stopped = False
        _LIVE.add(self)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self._popen.pid

    def running(self) -> bool:
        return self._popen.poll() is None

    def log_tail(self, lines: int = 25) -> str:
        """The last lines of the server's stderr, for error messages."""
        return _tail(self.log_path, lines)

    def stop(self) -> None:
        """SIGTERM, wait, SIGKILL; idempotent. Removes the work directory if we created it."""
        if self._stopped:
            return
        self._stopped = True
        _terminate(self._popen)
        _LIVE.discard(self)
        if self._owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} pid={self.pid} url={self.url}>"


class PrometheusProcess(ManagedProcess):
    """A running Prometheus; `url` is its HTTP API base."""

    kind = "prometheus"

    def __init__(
        self, *args: Any, config: PrometheusConfig, config_path: Path, data_dir: Path, argv: Sequence[str] = ()
    ) -> None:
        super().__init__(*args)
        self.config = config
        self.config_path = config_path
        self.data_dir = data_dir
        self._argv = tuple(argv)  # the command line it runs, on its port: `restart` runs it again

    def stop_keeping_data(self) -> None:
        """Stop the server as an outage would, keeping its port, configuration and data for `restart`."""
        _terminate(self._popen)

    def restart(self, timeout: float = 30.0) -> None:
        """Start it again after `stop_keeping_data`: the same URL, the same data; waits for `/-/ready`."""
        if self.running():
            return
        with open(self.log_path, "ab") as log:
            self._popen = subprocess.Popen(
                self._argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=self.workdir
            )
        try:
            _wait_ready(self._popen, f"{self.url}/-/ready", timeout, self.kind, self.log_path)
        except BaseException:
            _terminate(self._popen)
            raise

    @classmethod
    def start(
        cls, config: PrometheusConfig | None = None, *, workdir: Path | None = None, timeout: float = 30.0
    ) -> PrometheusProcess:
        """Write the config, start Prometheus on a free port and wait for `/-/ready`."""
        config = config or PrometheusConfig()
        binary = find_binary("prometheus")
        work, owns = _workdir(workdir, "prometheus-")
        config_path = work / "prometheus.yml"
        config_path.write_text(config.render())
        data_dir = Path(config.data_dir) if config.data_dir is not None else work / "data"
        data_dir.mkdir(parents=True, exist_ok=True)

        def argv(port: int) -> list[str]:
            return [
                binary,
                f"--config.file={config_path}",
                f"--web.listen-address=127.0.0.1:{port}",
                f"--storage.tsdb.path={data_dir}",
                f"--storage.tsdb.retention.time={config.retention}",
                "--web.enable-lifecycle",
                "--web.enable-admin-api",
                *config.extra_args,
            ]

        popen, port, log_path = _start_on_free_port(argv, work, "prometheus", timeout, owns)
        return cls(popen, port, work, log_path, owns, config=config, config_path=config_path, data_dir=data_dir,
                   argv=argv(port))  # fmt: skip

    def reload(self, config: PrometheusConfig | None = None, timeout: float = 10.0) -> None:
        """Rewrite the config (if given) and POST /-/reload; rule files are re-read either way."""
        if config is not None:
            self.config = config
            self.config_path.write_text(config.render())
        request = urllib.request.Request(f"{self.url}/-/reload", method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            body = exc.read().decode(errors="replace")
            exc.close()
            raise ProcessStartError(f"prometheus rejected the reload: {body}\n{self.log_tail()}") from None


class AlertmanagerProcess(ManagedProcess):
    """A running Alertmanager with clustering disabled."""

    kind = "alertmanager"

    def __init__(self, *args: Any, config: AlertmanagerConfig, config_path: Path) -> None:
        super().__init__(*args)
        self.config = config
        self.config_path = config_path

    @property
    def address(self) -> str:
        """host:port, as Prometheus's `alerting` section wants it."""
        return f"127.0.0.1:{self.port}"

    @classmethod
    def start(
        cls, config: AlertmanagerConfig | None = None, *, workdir: Path | None = None, timeout: float = 30.0
    ) -> AlertmanagerProcess:
        config = config or AlertmanagerConfig()
        binary = find_binary("alertmanager")
        work, owns = _workdir(workdir, "alertmanager-")
        config_path = work / "alertmanager.yml"
        config_path.write_text(config.render())
        storage = work / "data"
        storage.mkdir(exist_ok=True)

        def argv(port: int) -> list[str]:
            return [
                binary,
                f"--config.file={config_path}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--cluster.listen-address=",
                f"--storage.path={storage}",
            ]

        popen, port, log_path = _start_on_free_port(argv, work, "alertmanager", timeout, owns)
        return cls(popen, port, work, log_path, owns, config=config, config_path=config_path)


def _workdir(workdir: Path | None, prefix: str) -> tuple[Path, bool]:
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
        return workdir, False
    return Path(tempfile.mkdtemp(prefix=f"planwatch-{prefix}")), True


def _start_on_free_port(
    argv: Callable[[int], list[str]], work: Path, kind: str, timeout: float, owns_workdir: bool
) -> tuple[subprocess.Popen[bytes], int, Path]:
    """Start, wait for readiness, retry on a port collision; clean up the work directory on failure."""
    try:
        return _start_with_retries(argv, work, kind, timeout)
    except BaseException:
        if owns_workdir:
            shutil.rmtree(work, ignore_errors=True)
        raise


def _start_with_retries(
    argv: Callable[[int], list[str]], work: Path, kind: str, timeout: float
) -> tuple[subprocess.Popen[bytes], int, Path]:
    for attempt in range(1, _PORT_ATTEMPTS + 1):
        port = free_port()
        log_path = work / f"{kind}.log"
        with open(log_path, "wb") as log:
            popen = subprocess.Popen(argv(port), stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=work)
        try:
            _wait_ready(popen, f"http://127.0.0.1:{port}/-/ready", timeout, kind, log_path)
        except ProcessStartError:
            _terminate(popen)
            if attempt < _PORT_ATTEMPTS and "address already in use" in _tail(log_path, 50):
                continue
            raise
        except BaseException:
            _terminate(popen)
            raise
        return popen, port, log_path
    raise AssertionError("unreachable")  # pragma: no cover


def _wait_ready(popen: subprocess.Popen[bytes], ready_url: str, timeout: float, kind: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if popen.poll() is not None:
            raise ProcessStartError(f"{kind} exited with status {popen.returncode} before it was ready:\n{_tail(log)}")
        if _answers_ok(ready_url):
            return
        time.sleep(0.05)
    raise ProcessStartError(f"{kind} was not ready at {ready_url} after {timeout:.0f}s:\n{_tail(log)}")


def _answers_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1.0) as response:
            response.read()
            return bool(response.status == 200)
    except urllib.error.HTTPError as exc:
        exc.close()
        return False
    except (urllib.error.URLError, OSError):
        return False


def _terminate(popen: subprocess.Popen[bytes]) -> None:
    if popen.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            popen.send_signal(signal.SIGTERM)
        try:
            popen.wait(timeout=_STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                popen.kill()
            popen.wait()
    else:
        popen.wait()


def _tail(path: Path, lines: int = 25) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 16_384))
            text = fh.read().decode(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def running_processes() -> Iterator[ManagedProcess]:
    """Servers started here and not stopped yet (for leak checks in tests)."""
    yield from list(_LIVE)
