"""`planwatch forecast --help` answers without loading the forecasting stack: its options are declared in a
module that imports none of it, and the command's body imports it when it runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("statsmodels", "scipy", "numpy", "pandas", "forecasting", "monitor.sizing", "monitor.source", "requests")

_PROBE = """import sys
sys.argv = ['planwatch', *sys.argv[1:]]
from monitor.cli.main import main
try:
    main()
except SystemExit:
    pass
print(sorted({m.split('.')[0] if not m.startswith('monitor.') else '.'.join(m.split('.')[:2])
              for m in sys.modules if m.startswith({heavy!r})}), file=sys.stderr)
""".replace("{heavy!r}", repr(HEAVY))


def _loaded(*args: str) -> tuple[subprocess.CompletedProcess[str], str]:
    done = subprocess.run([sys.executable, "-c", _PROBE, *args], cwd=REPO, capture_output=True, text=True, timeout=120)
    return done, done.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("args", "help_text"),
    [
        pytest.param(("forecast", "--help"), "--csv", id="forecast --help loads no forecasting, numpy or adapter"),
        pytest.param(("--help",), "forecast", id="the command list loads none of them either"),
    ],
)
def test_help_loads_nothing_heavy(args: tuple[str, ...], help_text: str) -> None:
    done, loaded = _loaded(*args)
    assert help_text in done.stdout, done.stdout
    assert loaded == "[]", loaded


def test_running_the_command_does_load_the_forecaster(tmp_path: Path) -> None:
    """The other side of the laziness: the body really imports what it needs (a CSV too short to forecast)."""
    csv = tmp_path / "short.csv"
    csv.write_text("timestamp,value\n1700000000,1\n")
    done, loaded = _loaded("forecast", "--csv", str(csv))
    assert "forecasting" in loaded and "statsmodels" in loaded, loaded
    assert "short.csv" in done.stderr


@pytest.mark.parametrize(
    "command",
    [
        pytest.param("check", id="check --help loads no statsmodels: monitor.units reaches only forecasting.durations"),
        pytest.param("size", id="size --help loads no statsmodels"),
        pytest.param("serve", id="serve --help loads no statsmodels"),
    ],
)
def test_other_commands_help_loads_no_forecasting_models(command: str) -> None:
    done, loaded = _loaded(command, "--help")
    assert "Usage" in done.stdout, done.stdout
    assert "statsmodels" not in loaded, loaded


@pytest.mark.parametrize(
    "command",
    [
        pytest.param("check", id="check --help loads no scipy: the sizing imports it where it computes (~0.4 s)"),
        pytest.param("measurements", id="measurements --help loads no scipy"),
        pytest.param("size", id="size --help loads no scipy"),
        pytest.param("replay", id="replay --help loads no scipy: the body imports the replay and matplotlib"),
    ],
)
def test_commands_help_loads_no_scipy(command: str) -> None:
    done, loaded = _loaded(command, "--help")
    assert "Usage" in done.stdout, done.stdout
    assert "scipy" not in loaded, loaded


@pytest.mark.parametrize(
    "command",
    [
        pytest.param("check", id="check --help loads no numpy: the prefix model imports it where it computes"),
        pytest.param("measurements", id="measurements --help loads no numpy"),
        pytest.param("size", id="size --help loads no numpy"),
    ],
)
def test_commands_help_loads_no_numpy(command: str) -> None:
    done, loaded = _loaded(command, "--help")
    assert "Usage" in done.stdout, done.stdout
    assert "numpy" not in loaded, loaded
