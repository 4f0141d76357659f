"""The alert rules and planwatch judge a hold the same way: the PromQL `held_over` wraps a condition in, run by
promtool at one instant (no earlier rule evaluation, as after a restart or on backfilled history), fires exactly
when the condition holds now and at every `monitor.triggers.hold.probe_times` sample, the times
`monitor.hold_history` asks Prometheus about for `check` and `serve`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from monitor.rules.model import held_over
from monitor.triggers.hold import probe_times
from tests.harness.stack import require_binaries

HOLD = 1800.0  # 30 minutes, sampled every 10
MINUTES = 130


def _flapping(on: int, off: int, since: int = 0) -> list[int]:
    return [0 if m < since or (m - since) % (on + off) >= on else 1 for m in range(MINUTES)]


def _with_break(at: int) -> list[int]:
    return [0 if m == at else 1 for m in range(MINUTES)]


CASES = [
    pytest.param([1] * MINUTES, 120, True, id="a condition history shows for two hours fires at once"),
    pytest.param(
        _flapping(MINUTES, 0, since=25),
        60,
        False,
        id="one that began 35 minutes ago, after the last step before its hold began (20m), does not fire yet",
    ),
    pytest.param(_flapping(MINUTES, 0, since=25), 61, True, id="a minute later the step at 30m opens the hold: fires"),
    pytest.param(_flapping(4, 3), 120, False, id="a condition that flaps (4 minutes on, 3 off) does not fire"),
    pytest.param(_with_break(100), 120, False, id="one break at a sample (100m) within the hold: does not fire"),
    pytest.param(_with_break(105), 120, True, id="a break between two samples (105m) is missed, as documented"),
    pytest.param([0] * MINUTES, 120, False, id="a condition that never held does not fire"),
]


def _python_fires(values: list[int], now_minute: int) -> bool:
    now = now_minute * 60.0
    return all(values[int(t // 60)] == 1 for t in [now, *probe_times(now, HOLD)])


@pytest.mark.parametrize(("values", "at", "fires"), CASES)
def test_the_rule_and_planwatch_judge_the_hold_alike(tmp_path: Path, values: list[int], at: int, fires: bool) -> None:
    assert _python_fires(values, at) is fires
    (tmp_path / "empty.yml").write_text("groups: []\n")
    expected = [{"labels": 'x{tier="a"}', "value": 1}] if fires else []
    test = {"rule_files": ["empty.yml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": [{"series": 'x{tier="a"}', "values": " ".join(str(v) for v in values)}],
        "promql_expr_test": [{"expr": held_over("x > 0", HOLD), "eval_time": f"{at}m", "exp_samples": expected}],
    }]}  # fmt: skip
    (tmp_path / "hold.test.yml").write_text(yaml.safe_dump(test, width=1_000_000))
    require_binaries()
    done = subprocess.run(["promtool", "test", "rules", "hold.test.yml"], cwd=tmp_path,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        pytest.param(6000.0, [5400.0, 4800.0, 4200.0, 3600.0], id="now on a step: the step at now - hold is the first"),
        pytest.param(
            6060.0, [6000.0, 5400.0, 4800.0, 4200.0], id="a minute past it: from 4200, the last step before 4260"
        ),
    ],
)
def test_samples_are_the_steps_from_the_last_one_before_the_hold(now: float, expected: list[float]) -> None:
    assert probe_times(now, HOLD) == expected
