"""Every command's tables at the terminal's width: at COLUMNS=100 and 80 no line is wider than the terminal, and
each table's key column (the assumption, the tier, the trigger, the policy, the benchmark run) is still there,
whole, on one line. Long tier and model names are never cut mid-word: the plans here carry names of 30-odd
characters, and where a table's longest words cannot stand side by side its rows become keyed lines.
`report` writes HTML only (its terminal output is a 'wrote' line), so it has no table here.

The live commands (check, measurements) read a day of the support copilot's fleetsim history (its tier and
model renamed long) from a real Prometheus, at 05:00 New York: a forecast, a schedule that stops at
replicas.max, triggers and warnings, so every table and every line under one is printed.
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
# Names as long as real ones get (a tier per product line, a model key after its checkpoint): (text, long).
LONG_NAMES = {
    "support-copilot.yaml": [("- name: copilot\n", "- name: copilot-enterprise-support-replies\n"),
                             ("llama-70b", "llama-3-3-70b-instruct-fp8-dynamic")],
    "capstone.yaml": [("- name: standard\n", "- name: standard-interactive-chat\n"),
                      ("- name: long-context\n", "- name: long-context-enterprise-retrieval\n"),
                      ("llama-70b", "llama-3-3-70b-instruct-fp8-dynamic")],
}  # fmt: skip
LONG_TIER = "copilot-enterprise-support-replies"


def _long_named(plan: str, directory: Path) -> tuple[Path, list[str]]:
    """The example plan with its tier and model names made long, and those names."""
    text = (EXAMPLES / plan).read_text()
    for short, long in LONG_NAMES[plan]:
        assert short in text, f"{plan} no longer has {short!r}: update LONG_NAMES"
        text = text.replace(short, long)
    path = directory / f"long-{plan}"
    path.write_text(text)
    return path, [long.removeprefix("- name: ").strip() for _, long in LONG_NAMES[plan]]


@pytest.fixture(scope="module")
def long_copilot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _long_named("support-copilot.yaml", tmp_path_factory.mktemp("long-names"))[0]


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory, long_copilot: Path) -> Iterator[PrometheusProcess]:
    stack = Stack(tmp_path_factory.mktemp("widths"))
    try:
        yield stack.fleet_history(long_copilot, days=1, step="15s", end=END)
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


def _never_cut(text: str, names: list[str]) -> None:
    """Every occurrence of each name is the whole name: a cell that folds it leaves a line ending in its start."""
    for name in names:
        starts = re.findall(rf"{re.escape(name[:8])}[\w.-]*", text)
        assert starts, f"{name} is not printed at all"
        cut = sorted({s for s in starts if s != name})
        assert not cut, f"{name} cut mid-word as {cut}\n{text}"


@pytest.mark.integration
@pytest.mark.parametrize("columns", WIDTHS)
def test_check_fits_the_terminal_and_keeps_every_assumption(
    prometheus: PrometheusProcess, long_copilot: Path, columns: int
) -> None:
    text = _invoke(["check", str(long_copilot), "--prometheus", prometheus.url, "--at", END], columns)
    # a trigger's row, in the table or heading its keyed lines where the table does not fit
    rows = re.findall(r"^(?:│ ([a-z0-9-]+-[a-z0-9-]+) +│|  ([a-z0-9]+(?:-[a-z0-9]+)+) *$)", text, re.MULTILINE)
    triggers = [t for row in rows for t in row if t and t != LONG_TIER]
    assert triggers, "the copilot's night holds triggers; the table must list them"
    _fits(text, columns, [*(a for a in ASSUMPTIONS if a != "peak_to_average"), LONG_TIER, *triggers])
    _never_cut(text, [LONG_TIER])
    assert "replicas.max is 5" in text.replace("\n", " ")  # the warning under the tables is printed whole


@pytest.mark.integration
@pytest.mark.parametrize("columns", WIDTHS)
def test_measurements_fit_the_terminal(prometheus: PrometheusProcess, long_copilot: Path, columns: int) -> None:
    text = _invoke(["measurements", str(long_copilot), "--prometheus", prometheus.url, "--at", END, "--window",
                    "1d"], columns)  # fmt: skip
    _fits(text, columns, [LONG_TIER])
    _never_cut(text, [LONG_TIER])


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("plan", ["capstone.yaml", "support-copilot.yaml", "capstone-revised.yaml"])
def test_size_fits_the_terminal_and_keeps_every_tier(plan: str, columns: int) -> None:
    tiers = [t.name for t in load_plan(EXAMPLES / plan).tiers]
    _fits(_invoke(["size", str(EXAMPLES / plan)], columns), columns, tiers)


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("plan", list(LONG_NAMES))
def test_size_never_cuts_a_long_tier_or_model_name(tmp_path: Path, plan: str, columns: int) -> None:
    path, names = _long_named(plan, tmp_path)
    text = _invoke(["size", str(path)], columns)
    _fits(text, columns, [t.name for t in load_plan(path).tiers])
    _never_cut(text, names)


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
