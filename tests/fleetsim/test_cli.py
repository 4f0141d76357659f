"""Bad input to `fleetsim serve` ends with one clear line and exit status 2, never a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetsim.cli import app

PLAN = "examples/capstone.yaml"


def bad_trace(tmp_path: Path) -> str:
    path = tmp_path / "trace.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.1,10,5\n2023-11-16 18:15:47.2,x,5")
    return str(path)


def bad_state(tmp_path: Path) -> str:
    path = tmp_path / "state.json"
    path.write_text('{"format": "something-else"}')
    return str(path)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["serve", "missing.yaml"], "missing.yaml", id="a missing plan file"),
        pytest.param(["serve", PLAN, "--scenario", "bursty,spiky"], "unknown scenario 'spiky'",
                     id="an unknown scenario name"),
        pytest.param(["serve", PLAN, "--trace", "TRACE"], "trace.csv:3: token counts must be integers",
                     id="a malformed trace line, with its line number"),
        pytest.param(["serve", PLAN, "--vllm-generation", "v9"], "must be one of v1, legacy, v0, overlap",
                     id="an unknown vLLM generation"),
        pytest.param(["serve", PLAN, "--listen", "localhost"], "is not HOST:PORT", id="a listen address without port"),
        pytest.param(["serve", PLAN, "--resume", "STATE"], "not a fleetsim-state/1 file", id="an unusable state"),
        pytest.param(["serve", PLAN, "--speed", "0"], "must be positive", id="a speed of zero"),
        pytest.param(["serve", PLAN, "--file-sd", "/nonexistent/dir/sd.json"], "does not exist",
                     id="a file_sd path in a missing directory"),
    ],
)  # fmt: skip
def test_bad_input_exits_2_with_a_clear_message(tmp_path, args, message):
    args = [bad_trace(tmp_path) if a == "TRACE" else bad_state(tmp_path) if a == "STATE" else a for a in args]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert message in result.output and "fleetsim: error:" in result.output
    assert ("Traceback" not in result.output and result.exception is None) or isinstance(result.exception, SystemExit)


def test_a_port_in_use_is_reported_by_the_real_entry_point():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "fleetsim.cli", "serve", PLAN, "--listen", f"127.0.0.1:{port}"],
                              capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}: port already in use" in done.stderr
    assert "Traceback" not in done.stderr


def test_scenarios_lists_each_with_the_metric_it_moves():
    result = CliRunner().invoke(app, ["scenarios"])
    assert result.exit_code == 0
    assert "tool-calls" in result.output and "gateway_model_calls_total" in result.output
