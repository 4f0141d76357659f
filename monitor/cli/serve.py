"""`planwatch serve PLAN --prometheus URL`: the advisor service (API, /metrics, scheduled evaluation).

Flags override the configuration file, which `PLANWATCH_*` variables override in turn. Every error a user
can cause (a bad plan, an unreadable configuration, a port in use, a state file that cannot be opened) is
one line and an exit code, never a traceback. Ctrl-C and SIGTERM stop the server, then the jobs (a running
one finishes its commit), then close the state file.
"""

from __future__ import annotations

import gc
import logging
import signal
import socket
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from monitor.cli.common import ExitCode, fail

if TYPE_CHECKING:  # the service stack takes seconds to import: `planwatch serve --help` does not need it
    from monitor.observe.observer import Observer
    from monitor.service.app import Services
    from monitor.service.settings import Settings

__all__ = ["bind", "register", "run", "serve"]


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)


def serve(
    plan_path: Annotated[
        Path | None, typer.Argument(metavar="PLAN", help="Capacity plan YAML (or `plan` in the configuration).")
    ] = None,
    prometheus: Annotated[str | None, typer.Option("--prometheus", help="Prometheus base URL.")] = None,
    listen: Annotated[str | None, typer.Option("--listen", help="host:port to listen on [127.0.0.1:8080].")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="Service configuration YAML.")] = None,
    state_db: Annotated[
        Path | None, typer.Option("--state-db", help="SQLite state file [.planwatch/state.db].")
    ] = None,
    log_level: Annotated[str, typer.Option("--log-level", help="debug, info, warning, error.")] = "info",
) -> None:
    """Serve the advisor: evaluate the plan against Prometheus every minute, refit forecasts hourly, and answer
    /v1/* and /metrics from the latest results."""
    overrides: dict[str, Any] = {"plan": plan_path, "listen": listen, "state_db": state_db}
    overrides = {k: v for k, v in overrides.items() if v is not None}
    if prometheus is not None:
        from monitor.cli.prom_options import check_prometheus_url

        check_prometheus_url(prometheus)
        overrides["prometheus"] = {"url": prometheus}
    settings = _settings_or_exit(config, overrides)
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("apscheduler").setLevel(logging.WARNING)  # a line per job run is noise
    run(settings, log_level=log_level)


def _settings_or_exit(config: Path | None, overrides: dict[str, Any]) -> Settings:
    from monitor.service.settings import ConfigError, load_settings

    try:
        return load_settings(config, overrides)
    except ConfigError as exc:
        fail(str(exc))


def run(settings: Settings, observer: Observer | None = None, log_level: str = "info") -> None:
    """Build (plan, state file, observer), bind (a port in use is a clear error before anything starts),
    then serve until a signal."""
    import uvicorn

    from monitor.service.settings import parse_listen

    host, port = parse_listen(settings.listen)
    services = _services_or_exit(settings, observer)
    try:
        sock = bind(host, port)
    except BaseException:
        services.close()
        raise
    config = uvicorn.Config(services.app, lifespan="on", log_level=log_level, access_log=False)
    config.load()  # uvicorn imports its protocol modules here: load them before freezing the heap
    _freeze_startup_heap()
    sys.setswitchinterval(_GIL_SWITCH_SECONDS)
    server = uvicorn.Server(config)
    try:
        with _signals_end_quietly():
            server.run(sockets=[sock])
    finally:
        services.close()
        sock.close()
    if not server.started:
        fail("the advisor did not start (see the log above)", ExitCode.UNREACHABLE)


# While a job computes (an evaluation: ~85 ms of Python on four tiers), the event loop gives up the GIL at
# every socket call and waits up to the switch interval to get it back: at the default 5 ms, a request of a
# dozen syscalls waits tens of ms. With an evaluation every 5 s, 0.5 ms lowered the benchmark's p99 from
# 157 to 49 ms and from 366 to 229 ms in back-to-back runs on a busy two-core machine.
_GIL_SWITCH_SECONDS = 0.0005


def _freeze_startup_heap() -> None:
    """Exclude what startup built (modules, numpy, statsmodels, the plan) from the cyclic GC: a full collection
    walking those ~200k objects takes ~100 ms holding the GIL, which every request in flight then waits for
    (the benchmark's p99 went from ~700 ms to under 20 ms). Objects made later are collected as usual."""
    gc.collect()
    gc.freeze()


def bind(host: str, port: int) -> socket.socket:
    """A listening socket for uvicorn. proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY only on sockets that
    say they are TCP, and without it every small response waits for the client's delayed ACK (40 ms)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    sock.set_inheritable(True)
    return sock


def _services_or_exit(settings: Settings, observer: Observer | None) -> Services:
    from monitor.plan import PlanError
    from monitor.service.app import build_services
    from monitor.service.settings import ConfigError

    try:
        return build_services(settings, observer)
    except PlanError as exc:
        fail(str(exc))
    except ConfigError as exc:
        fail(str(exc))
    except sqlite3.Error as exc:
        fail(f"cannot open the state file {settings.state_db}: {exc}")


@contextmanager
def _signals_end_quietly() -> Iterator[None]:
    """uvicorn handles SIGINT/SIGTERM with a graceful shutdown, then re-raises the signal to the handler it
    found. Make that handler a no-op, so the process exits 0 after a clean stop instead of dying by signal."""
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
