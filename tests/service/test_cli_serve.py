"""`planwatch serve`: clear one-line errors with exit 2, and a real server that stops cleanly on a signal."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import typer
from typer.testing import CliRunner

from monitor.cli import serve
from monitor.service import app as app_module
from tests.builders import EXAMPLES
from tests.harness.stack import wait_for
from tests.service.fakes import FakeObserver

ROOT = Path(__file__).resolve().parents[2]


def _cli() -> typer.Typer:
    app = typer.Typer(pretty_exceptions_enable=False)
    app.callback()(lambda: None)
    serve.register(app)
    return app


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(_cli(), ["serve", *args], env={"COLUMNS": "300"})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["missing-plan.yaml"], "cannot read", id="a plan that does not exist is named"),
        pytest.param([str(EXAMPLES / "capstone.yaml"), "--config", "nope.yaml"], "nope.yaml: cannot read",
                     id="an unreadable configuration is named"),
        pytest.param([str(EXAMPLES / "capstone.yaml"), "--listen", "8080"], "is not host:port",
                     id="a listen address without a host is refused"),
        pytest.param([str(EXAMPLES / "capstone.yaml"), "--prometheus", "prom:9090"], "no scheme: write http://prom:9090",
                     id="a Prometheus URL without a scheme is refused"),
        pytest.param([], "no plan", id="no plan at all says so"),
    ],
)  # fmt: skip
def test_usage_errors_exit_2_without_a_traceback(tmp_path: Path, args: list[str], message: str) -> None:
    code, output = _invoke(*args, "--state-db", str(tmp_path / "s.db"))
    assert code == 2 and message in output.replace("\n", "") and "Traceback" not in output


def test_a_bad_plan_exits_2_listing_its_problems(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("version: 1\nname: x\n")
    code, output = _invoke(str(plan), "--state-db", str(tmp_path / "s.db"))
    assert code == 2 and "problem(s) in the plan" in output and "workload" in output


@pytest.fixture
def fake_prometheus(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI builds its own observer; give it the fake one."""
    monkeypatch.setattr(app_module, "default_observer", lambda settings: FakeObserver())


@pytest.mark.usefixtures("fake_prometheus")
def test_a_port_in_use_is_a_clear_error(tmp_path: Path, busy_port: int) -> None:
    code, output = _invoke(str(EXAMPLES / "support-copilot.yaml"), "--listen", f"127.0.0.1:{busy_port}",
                           "--state-db", str(tmp_path / "s.db"))  # fmt: skip
    assert code == 2 and f"cannot listen on 127.0.0.1:{busy_port}" in output and "Traceback" not in output


@pytest.mark.usefixtures("fake_prometheus")
def test_a_state_file_that_cannot_be_opened_is_named(tmp_path: Path) -> None:
    code, output = _invoke(str(EXAMPLES / "support-copilot.yaml"), "--state-db", str(tmp_path))
    assert code == 2 and f"cannot open the state file {tmp_path}" in output.replace("\n", "")


_SERVER = textwrap.dedent(
    """
    import sys
    from monitor.cli.serve import run
    from monitor.service.settings import load_settings
    from tests.service.fakes import FakeObserver
    settings = load_settings(overrides={"plan": sys.argv[1], "state_db": sys.argv[2], "listen": sys.argv[3],
                                        "evaluation_interval": "1s"}, env={})
    run(settings, FakeObserver())
    print("returned cleanly", flush=True)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "sig",
    [pytest.param(signal.SIGTERM, id="SIGTERM stops it cleanly"), pytest.param(signal.SIGINT, id="Ctrl-C too")],
)
def test_a_real_server_serves_then_stops_cleanly_on_a_signal(tmp_path: Path, sig: signal.Signals) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(EXAMPLES / "support-copilot.yaml"), str(tmp_path / "s.db"),
         f"127.0.0.1:{port}"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={"PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/readyz"
        wait_for(lambda: httpx.get(url, timeout=2).status_code == 200, 30, "the server to become ready",
                 interval=0.1, ignoring=(httpx.TransportError,))  # fmt: skip
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "returned cleanly" in out and "Application shutdown complete" in err and "Traceback" not in err
