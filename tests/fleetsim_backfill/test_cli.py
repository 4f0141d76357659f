"""`fleetsim backfill` on bad input says what is wrong in one line and exits 2; the state it writes is what
`fleetsim serve --resume` reads, and every counter continues from the last backfilled sample."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetsim.backfill import command_app
from fleetsim.backfill_run import history_text
from fleetsim.fleet import Fleet, FleetOptions
from fleetsim.server import vllm_text
from fleetsim.state import load_state, save_state
from tests.harness.stack import wait_for

from .helpers import WEDNESDAY_NOON_UTC, diurnal_plan, diurnal_plan_data, spec_for, write_plan

ROOT = Path(__file__).resolve().parents[2]
END = "2024-05-08T12:00Z"


@pytest.fixture
def plan_file(tmp_path: Path) -> Path:
    return write_plan(tmp_path / "plan.yaml", diurnal_plan_data())


def run(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(command_app(), ["backfill", *args], env=env)
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        pytest.param(["--scenario", "nope"], "unknown scenario 'nope'", id="an unknown scenario lists the known ones"),
        pytest.param(["--end", "last tuesday"], "--end 'last tuesday' is not", id="an unreadable end time"),
        pytest.param(
            ["--scenario", "slow-tp", "--scenario-start", "2030-01-01T00:00Z"],
            "outside the history",
            id="a scenario starting after the history ends",
        ),
        pytest.param(["--scenario-start", "-3x"], "not a duration", id="a relative start that is no duration"),
        pytest.param(["--step", "1.5s"], "whole number of seconds", id="a step of a fraction of a second"),
        pytest.param(["--days", "0"], "positive number of days", id="no days of history"),
        pytest.param(
            ["--block", "5h"], "block lengths are 2h, 6h, 18h, 54h", id="a block length that is not a compaction range"
        ),
        pytest.param(["--instance", "localhost"], "is not HOST:PORT", id="an instance without a port"),
        pytest.param(["--vllm-generation", "v2"], "must be one of v1, legacy", id="an unknown vLLM generation"),
        pytest.param(
            ["--state-out", "/nonexistent/dir/state.json"],
            "--state-out directory",
            id="a state file in a missing directory",
        ),
    ],
)
def test_bad_input_is_one_clear_line_and_status_2(
    plan_file: Path, tmp_path: Path, extra: list[str], message: str
) -> None:
    code, output = run(
        [str(plan_file), "--prometheus-data", str(tmp_path / "data"), "--days", "1", "--end", END, *extra]
    )
    assert code == 2, output
    assert message in output and "Traceback" not in output
    assert not (tmp_path / "data").exists()


def test_a_data_directory_in_use_is_refused(plan_file: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "wal").mkdir()
    code, output = run([str(plan_file), "--prometheus-data", str(data), "--end", END])
    assert code == 2 and "is not empty" in output


def test_a_data_directory_that_is_a_file_is_refused(plan_file: Path, tmp_path: Path) -> None:
    (tmp_path / "data").write_text("")
    code, output = run([str(plan_file), "--prometheus-data", str(tmp_path / "data"), "--end", END])
    assert code == 2 and "is not a directory" in output


def test_a_missing_plan_is_reported(tmp_path: Path) -> None:
    code, output = run([str(tmp_path / "none.yaml"), "--prometheus-data", str(tmp_path / "data")])
    assert code == 2 and "cannot read" in output


def test_an_unwritable_data_directory_is_reported(plan_file: Path) -> None:
    code, output = run(
        [str(plan_file), "--prometheus-data", "/proc/fleetsim-backfill/data", "--days", "0.01", "--end", END]
    )
    assert code == 2 and "/proc" in output and "Traceback" not in output


def last_values(text: str) -> dict[str, float]:
    """The last sample of every series in backfilled text, keyed as tests/fleetsim's `counters` keys them."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        name, value, _ = line.rsplit(" ", 2)
        out[name] = float(value)
    return out


def test_the_state_continues_every_counter_from_the_last_backfilled_sample(tmp_path: Path) -> None:
    plan = diurnal_plan(replicas=2)
    end = WEDNESDAY_NOON_UTC
    spec = spec_for(plan, end - 7200, end, step=60)
    buffer = io.BytesIO()
    report = history_text(spec, buffer)
    assert report.state is not None
    save_state(report.state, tmp_path / "state.json")
    state = load_state(tmp_path / "state.json")
    assert state.end_unix == end and sorted(state.pods) == ["fast-0", "fast-1"]
    backfilled = last_values(buffer.getvalue().decode())
    live = Fleet(plan, end, (), FleetOptions(seed=2))
    live.resume(state)
    for pod in ("fast-0", "fast-1"):
        text = vllm_text(live, pod)
        for line in text.splitlines():
            if line.startswith("vllm:") and ("_total{" in line or "_bucket{" in line or "_count{" in line):
                name, value = line.rsplit(" ", 1)
                key = name[:-1] + f',instance="127.0.0.1:9400",job="vllm",namespace="llm",pod="{pod}",tier="fast"}}'
                assert float(value) == pytest.approx(backfilled[key], abs=0.5), key


def test_an_interrupted_direct_backfill_clears_the_directory(plan_file: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "fleetsim.backfill", "backfill", str(plan_file), "--prometheus-data",
                             str(data), "--days", "28", "--end", END], stderr=subprocess.PIPE, env=env)  # fmt: skip
    wait_for(lambda: data.exists() and any(data.iterdir()), 60, "the first block to be written", interval=0.05)
    proc.terminate()
    assert proc.wait(60) != 0
    assert proc.stderr is not None and b"Traceback" not in proc.stderr.read()
    proc.stderr.close()
    assert not data.exists()
