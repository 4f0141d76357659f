"""The package's names load on first use (PEP 562), and each is the object its home module defines."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import forecasting


@pytest.mark.parametrize("name", sorted(forecasting.__all__))
def test_every_exported_name_is_its_home_module_s_object(name: str) -> None:
    value = getattr(forecasting, name)
    where = forecasting._HOME[name]
    assert getattr(importlib.import_module(where), name) is value


def test_regularize_stays_the_function_after_its_module_is_imported() -> None:
    """`forecasting.regularize` is the function even after the module defining it was imported."""
    importlib.import_module("forecasting.regularizing")
    assert callable(forecasting.regularize) and forecasting.regularize.__name__ == "regularize"


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = forecasting.nope


@pytest.mark.parametrize(
    "code",
    [
        pytest.param("import forecasting.durations", id="the duration grammar monitor.units reads loads no numpy"),
        pytest.param(
            "import sys; sys.argv = ['planwatch', 'serve', '--help']\nfrom monitor.cli.main import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass",
            id="planwatch serve --help loads no numpy (it did through forecasting.regularize, ~0.1 s)",
        ),
    ],
)
def test_importing_the_package_does_not_load_numpy(code: str) -> None:
    probe = f"{code}\nimport sys\nprint('numpy' in sys.modules, file=sys.stderr)"
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "False"
