"""Every file of the hostile-plan corpus (tests/plan/hostile/) is refused the same way by every command that
loads a plan: exit 2, a message naming what is wrong and where, fast and in bounded memory.

Each file's first line says what its message must name (`# expect: tiers[0].selector`, `line`, ...). The
commands run in-process through typer's CliRunner (the same code path as the console script); a few run as
real processes, so the exit status and the peak memory are the operating system's, not the runner's.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from typer.testing import CliRunner

from monitor.cli.main import build_app
from monitor.plan import PlanError, load_plan

CORPUS = Path(__file__).parent / "hostile"
FILES = sorted(CORPUS.glob("*.yaml"))
_EXPECT = re.compile(rb"^# expect: (.+)$", re.MULTILINE)
# Where: a YAML path with a line, or the file/parser with a line, or the root mapping.
_WHERE = re.compile(r"\(line \d+\)|\(root\)")


def _expected(path: Path) -> str:
    match = _EXPECT.search(path.read_bytes()[:200])
    assert match, f"{path.name} has no '# expect:' first line"
    return match.group(1).decode()


def _commands(path: Path, tmp: Path) -> dict[str, list[str]]:
    unreachable = "http://127.0.0.1:9"  # never contacted: the plan is refused first
    return {
        "size": ["size", str(path)],
        "check": ["check", str(path), "--prometheus", unreachable],
        "rules": ["rules", str(path), "--out", str(tmp / "rules.yml")],
        "serve": ["serve", str(path), "--prometheus", unreachable, "--state-db", str(tmp / "state.db")],
    }


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The commands import their modules on first use; time the refusals, not the imports."""
    tmp = tmp_path_factory.mktemp("warm")
    for args in _commands(FILES[0], tmp).values():
        CliRunner().invoke(build_app(), args)


def test_the_corpus_is_large_enough() -> None:
    assert len(FILES) >= 60


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.stem} is refused by size, check, rules and serve")
def test_every_command_refuses_the_file_with_what_and_where(path: Path, tmp_path: Path, warm: None) -> None:
    expected = _expected(path)
    runner = CliRunner()
    for name, args in _commands(path, tmp_path).items():
        started = time.process_time()  # CPU time: other engineers' load on a shared machine does not count
        result = runner.invoke(build_app(), args)
        elapsed = time.process_time() - started
        output = result.stderr + result.stdout
        assert result.exception is None or isinstance(result.exception, SystemExit), (name, result.exception)
        assert result.exit_code == 2, (name, result.exit_code, output[-2000:])
        assert expected in output, (name, expected, output[-2000:])
        assert _WHERE.search(output), (name, output[-2000:])
        assert "Traceback" not in output
        assert elapsed < 1.0, (name, elapsed)
    assert not (tmp_path / "rules.yml").exists()


# RUSAGE_CHILDREN is the largest child this process ever waited for (a backfill earlier in the session may be
# GBs), so the command runs under a fresh wrapper whose only child it is, and the wrapper reports that peak.
_PEAK_OF_CHILD = (
    "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]); "
    "print(f'peak_kib={resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}', file=sys.stderr); "
    "sys.exit(done.returncode)"
)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("alias-bomb", id="a billion-laughs alias bomb is refused in bounded memory"),
        pytest.param("deep-nesting-flow", id="5,000 nested lists are refused in bounded memory"),
        pytest.param("huge-tier-name", id="a 70 kB tier name is refused in bounded memory"),
    ],
)
def test_loading_stays_within_memory(name: str) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(PlanError):
            load_plan(CORPUS / f"{name}.yaml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20, f"{peak / 2**20:.1f} MiB"


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("alias-bomb", id="the alias bomb exits 2 from the console script in bounded memory"),
    ],
)
def test_the_real_process_exits_2(name: str) -> None:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _PEAK_OF_CHILD, sys.executable, "-m", "monitor", "size", str(CORPUS / f"{name}.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    elapsed = time.perf_counter() - started
    assert proc.returncode == 2, proc.stderr
    assert _expected(CORPUS / f"{name}.yaml") in proc.stderr
    assert "Traceback" not in proc.stderr
    assert elapsed < 20, elapsed  # mostly interpreter start-up on a busy machine
    peak_kib = int(proc.stderr.rsplit("peak_kib=", 1)[1])
    assert peak_kib < 400 * 1024, f"{peak_kib / 1024:.0f} MiB"


def test_an_unexpected_error_has_its_own_exit_status(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bug must not read as `check`'s exit 1 (a breach): it exits 70 and says it is a bug."""
    from monitor.cli import main as cli

    def crashing_app() -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(cli, "_app", lambda cls=None: crashing_app)  # the app `main` builds (lazily)
    with pytest.raises(SystemExit) as info:
        cli.main()
    assert info.value.code == 70
    assert "internal error: RuntimeError: boom" in capsys.readouterr().err
