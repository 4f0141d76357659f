"""The CLI as a person meets it: a 100-column terminal, `-` for stdout, fast help, errors that say what to write."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from monitor.cli.main import COMMANDS, build_app

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
PLANWATCH = [sys.executable, "-c", "from monitor.cli.main import main; main()"]
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _run(
    *args: str, columns: int | None = 100, tty_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run([*PLANWATCH, *args], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env=env)  # fmt: skip


def _invoke(*args: str, columns: int | None = 100) -> Any:
    """In process (one import of the commands for the whole file): what the user sees on stdout and stderr."""
    env = {"COLUMNS": str(columns) if columns is not None else None}
    result = CliRunner().invoke(build_app(), list(args), env=env)
    result.returncode = result.exit_code
    return result


def _widest(text: str) -> int:
    return max((len(_ANSI.sub("", line)) for line in text.splitlines()), default=0)


@pytest.mark.parametrize(
    ("args", "columns"),
    [
        pytest.param(("size", str(EXAMPLES / "capstone.yaml")), 100, id="size fits a 100-column terminal"),
        pytest.param(("size", str(EXAMPLES / "capstone-revised.yaml")), 80, id="size fits an 80-column terminal"),
        pytest.param(("--help",), 100, id="the command list fits 100 columns"),
        pytest.param(("check", "--help"), 100, id="check's help fits 100 columns"),
    ],
)
def test_output_respects_the_terminal_width(args: tuple[str, ...], columns: int) -> None:
    done = _invoke(*args, columns=columns)
    assert done.returncode == 0, done.stderr
    assert 0 < _widest(done.stdout) <= columns, done.stdout[:2000]


def test_a_pipe_without_columns_gets_a_readable_fixed_width() -> None:
    done = _invoke("size", str(EXAMPLES / "capstone.yaml"), columns=None)
    assert done.returncode == 0 and 100 < _widest(done.stdout) <= 140


def test_a_standby_tier_has_no_cost_per_request_rather_than_nan() -> None:
    done = _invoke("size", str(EXAMPLES / "capstone.yaml"), columns=200)
    assert "$nan" not in done.stdout and "no routed requests" in done.stdout


@pytest.mark.parametrize(
    ("command", "url", "says"),
    [
        pytest.param("check", "127.0.0.1:9090", "has no scheme: write http://127.0.0.1:9090", id="no scheme"),
        pytest.param("check", "http://127.0.0.1:9090/api/v1", "without /api/v1: http://127.0.0.1:9090", id="API path"),
        pytest.param("check", "ftp://x", "http:// or https://", id="another scheme"),
        pytest.param("serve", "127.0.0.1:9090", "has no scheme: write http://127.0.0.1:9090", id="serve says it too"),
    ],
)
def test_a_prometheus_url_mistake_says_what_to_write(command: str, url: str, says: str) -> None:
    done = _invoke(command, str(EXAMPLES / "capstone.yaml"), "--prometheus", url)
    assert done.returncode == 2
    assert says in done.stderr and "pydantic" not in done.stderr and "Traceback" not in done.stderr


def test_rules_to_dash_is_stdout_and_to_a_file_says_so(tmp_path: Path) -> None:
    to_stdout = _invoke("rules", str(EXAMPLES / "capstone.yaml"), "--out", "-")
    assert to_stdout.returncode == 0 and to_stdout.stdout.lstrip().startswith("#") and "groups:" in to_stdout.stdout
    assert not (REPO / "-").exists()
    out = tmp_path / "capstone-slo.yml"
    to_file = _invoke("rules", str(EXAMPLES / "capstone.yaml"), "--out", str(out))
    assert to_file.returncode == 0 and out.read_text() and f"wrote {out}" in to_file.stderr.replace("\n", "")


def test_version_and_exit_codes_are_documented() -> None:
    version = _run("--version")
    assert re.fullmatch(r"planwatch \d+\.\d+\.\S+\n", version.stdout)
    help_text = _invoke("check", "--help", columns=200).stdout
    for code, meaning in (("0", "ok or warn"), ("1", "breaches"), ("2", "usage or plan error"), ("3", "reached")):
        assert re.search(rf"\b{code}\s+.*{meaning}", help_text), (code, help_text)


def test_help_is_fast_because_commands_load_lazily() -> None:
    started = time.perf_counter()
    done = _run("--help")
    elapsed = time.perf_counter() - started
    assert done.returncode == 0 and all(name in done.stdout for name in COMMANDS)
    modules = subprocess.run(
        [sys.executable, "-c", "import sys\nsys.argv=['planwatch','--help']\nfrom monitor.cli.main import main\n"
         "try:\n    main()\nexcept SystemExit:\n    pass\nprint(sorted(m for m in sys.modules if m.startswith(("
         "'scipy','numpy','forecasting','monitor.sizing','fastapi'))), file=sys.stderr)"],
        capture_output=True, text=True, cwd=REPO,
    )  # fmt: skip
    assert modules.stderr.strip() == "[]", modules.stderr
    assert elapsed < 1.5, f"--help took {elapsed:.2f} s"


def test_the_command_list_is_each_commands_own_first_line() -> None:
    """COMMANDS is what `--help` lists without importing the commands: it must say what each command says."""
    import typer.main

    group = typer.main.get_command(build_app())
    commands = getattr(group, "commands", {})
    assert list(commands) == list(COMMANDS)
    for name, short in COMMANDS.items():
        first_paragraph = " ".join((commands[name].help or "").strip().split("\n\n")[0].split())
        assert first_paragraph == short, name
