"""Every command's tables at the terminal's width: at COLUMNS=100 and 80 no line is wider than the terminal, and
each table's key column (the assumption, the tier, the trigger, the policy, the benchmark run) is still there,
whole, on one line. `report` writes HTML only (its terminal output is a 'wrote' line), so it has no table here.

The live commands (check, measurements) read a day of the support copilot's fleetsim history from a real
Prometheus, at 05:00 New York: a forecast, a schedule that stops at replicas.max, triggers and warnings, so
every table and every line under one is printed.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetsim.promstack import PrometheusProcess
from forecasting import synthetic_traffic
from monitor.cli.main import build_app
from monitor.plan import ASSUMPTIONS, load_plan
from tests.harness.stack import Stack
from tests.sizing.test_calibrate import result_files  # noqa: F401 (the benchmark result files, a fixture)

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
COPILOT = EXAMPLES / "support-copilot.yaml"
END = "2026-12-01T10:00:00Z"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
WIDTHS = (100, 80)


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    stack = Stack(tmp_path_factory.mktemp("widths"))
    try:
        yield stack.fleet_history(COPILOT, days=1, step="15s", end=END)
    finally:
        stack.close()


def _invoke(args: list[str], columns: int) -> str:
    result = CliRunner().invoke(build_app(), args, env={"COLUMNS": str(columns)})
    assert result.exit_code in (0, 1), result.output  # check exits 1 on a breach: still a table
    return _ANSI.sub("", result.stdout)


def _fits(text: str, columns: int, keys: list[str]) -> None:
    lines = text.splitlines()
    assert lines, "no output"
    widest = max(lines, key=len)
    assert len(widest) <= columns, f"{len(widest)} > {columns}: {widest!r}"
    # a key whole on one line: in a cell, or heading the lines of prose under a narrow table
    missing = [k for k in keys if not any(re.search(rf"(^|[│ ]){re.escape(k)}([│ :]|$)", line) for line in lines)]
    assert not missing, f"key column values lost or broken: {missing}\n{text}"


@pytest.mark.integration
@pytest.mark.parametrize("columns", WIDTHS)
def test_check_fits_the_terminal_and_keeps_every_assumption(prometheus: PrometheusProcess, columns: int) -> None:
    text = _invoke(["check", str(COPILOT), "--prometheus", prometheus.url, "--at", END], columns)
    triggers = re.findall(r"^│ ([a-z0-9-]+-[a-z0-9-]+) +│", text, re.MULTILINE)
    assert triggers, "the copilot's night holds triggers; the table must list them"
    _fits(text, columns, [*(a for a in ASSUMPTIONS if a != "peak_to_average"), "copilot", *triggers])
    assert "replicas.max is 5" in text.replace("\n", " ")  # the warning under the tables is printed whole


@pytest.mark.integration
@pytest.mark.parametrize("columns", WIDTHS)
def test_measurements_fit_the_terminal(prometheus: PrometheusProcess, columns: int) -> None:
    text = _invoke(["measurements", str(COPILOT), "--prometheus", prometheus.url, "--at", END, "--window", "1d"],
                   columns)  # fmt: skip
    _fits(text, columns, ["copilot"])


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("plan", ["capstone.yaml", "support-copilot.yaml", "capstone-revised.yaml"])
def test_size_fits_the_terminal_and_keeps_every_tier(plan: str, columns: int) -> None:
    tiers = [t.name for t in load_plan(EXAMPLES / plan).tiers]
    _fits(_invoke(["size", str(EXAMPLES / plan)], columns), columns, tiers)


@pytest.mark.parametrize("columns", WIDTHS)
def test_the_forecast_table_fits_the_terminal(tmp_path: Path, columns: int) -> None:
    series = synthetic_traffic(7, timezone="America/New_York", seed=3)
    path = tmp_path / "demand.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(("timestamp", "value"))
        writer.writerows(zip(series.timestamps_s, series.values, strict=True))
    text = _invoke(["forecast", "--csv", str(path), "--threshold", "40", "--threshold", "60", "--backtest"], columns)
    _fits(text, columns, ["Demand forecast", "Ramp", "Forecast every"])


@pytest.mark.parametrize("columns", WIDTHS)
def test_the_replay_table_fits_the_terminal_and_keeps_every_policy(tmp_path: Path, columns: int) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("window_start_s,rate_rps\n" + "".join(f"{i * 600},{3 + i % 4}\n" for i in range(12)))
    policies = ["static", "reactive", "oracle"]
    text = _invoke(["replay", str(COPILOT), "--trace", str(trace), "--policy", ",".join(policies)], columns)
    _fits(text, columns, policies)


@pytest.mark.parametrize("columns", WIDTHS)
def test_calibrate_fits_the_terminal_and_keeps_every_run(
    result_files: list[Path],  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
    columns: int,
) -> None:
    args = ["calibrate", str(COPILOT), "--out", str(tmp_path / "calibrated.yaml")]
    for path in result_files:
        args += ["--benchmark", str(path)]
    _fits(_invoke(args, columns), columns, ["vllm-c8.json", "guidellm.json[0]", "aiperf-c96.json"])
