"""monitor.histogram is read by every command's --help (through the plan, drift and the observer): it loads numpy
only when FixedBounds runs, so help does not pay for numpy (0.1 s)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.check.test_scenarios import REPO


@pytest.mark.parametrize(
    ("code", "loads_numpy"),
    [
        pytest.param("import monitor.histogram", False, id="importing the histogram module loads no numpy"),
        pytest.param(
            "from monitor.histogram import FixedBounds; FixedBounds([1.0, 2.0]).quantile(0.5, __import__('numpy')"
            ".asarray([[1.0, 2.0, 2.0]]))",
            True,
            id="running FixedBounds does load it",
        ),
    ],
)
def test_the_histogram_module_loads_numpy_only_where_fixed_bounds_runs(code: str, loads_numpy: bool) -> None:
    probe = f"import sys\n{code}\nprint('numpy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(loads_numpy)
