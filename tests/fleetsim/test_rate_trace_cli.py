"""A real rate trace as fleetsim's demand (`--rate-trace`), and irregular demand as fleetsim's default."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from typer.testing import CliRunner

from fleetsim import DEFAULT_SCENARIO
from fleetsim.backfill import Request
from fleetsim.cli import app
from fleetsim.demo import DemoOptions
from fleetsim.fleet import Fleet, FleetOptions
from fleetsim.rate_trace import default_start, rate_trace_scenario
from fleetsim.scenarios import SCENARIOS, parse_scenarios
from fleetsim.traces import TraceError
from fleetsim.workload import rate_at
from monitor.plan.load import load_plan

CAPSTONE = load_plan("examples/capstone.yaml")
PEAK = CAPSTONE.workload.arrival.peak_rps
SERVEGEN = Path("/work/shared/data/traces/servegen_language_m-mid_10min.csv")


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rates.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_every_entry_point_defaults_to_the_irregular_scenario() -> None:
    assert DEFAULT_SCENARIO == "irregular" and SCENARIOS[DEFAULT_SCENARIO].effects.irregularity is not None
    assert Request(Path("p"), Path("d")).scenario == DEFAULT_SCENARIO
    assert DemoOptions(plan=Path("p")).scenario == DEFAULT_SCENARIO


def test_a_rate_trace_without_dates_starts_a_business_week_scaled_to_the_plan_peak(tmp_path: Path) -> None:
    rates = [100.0, 200.0, 400.0, 300.0, 100.0, 50.0]
    path = _write(tmp_path, "window_start_s,rate_rps\n" + "".join(f"{i * 600},{r}\n" for i, r in enumerate(rates)))
    scenario = rate_trace_scenario(CAPSTONE, path)
    start = default_start(CAPSTONE)
    assert rate_at(CAPSTONE, start + 1200.0, (scenario,)) == pytest.approx(PEAK)
    assert rate_at(CAPSTONE, start + 600.0, (scenario,)) == pytest.approx(PEAK / 2)
    unscaled = rate_trace_scenario(CAPSTONE, path, scale_to_peak=False)
    assert rate_at(CAPSTONE, start + 1200.0, (unscaled,)) == pytest.approx(400.0), "--rate-trace-as-is"


def test_counts_per_window_become_rates_at_their_own_timestamps(tmp_path: Path) -> None:
    text = "timestamp,value\n" + "".join(f"2026-01-06T08:{m:02d}:00,{300 * (1 + m // 5)}\n" for m in range(0, 30, 5))
    scenario = rate_trace_scenario(CAPSTONE, _write(tmp_path, text), scale_to_peak=False)
    other = parse_scenarios("irregular")  # the trace replaces the profile and its irregularity
    at = datetime(2026, 1, 6, 8, 10, tzinfo=ZoneInfo(CAPSTONE.workload.business_hours.timezone)).timestamp()
    assert rate_at(CAPSTONE, at, (*other, scenario)) == pytest.approx(900 / 300.0)


def test_the_real_servegen_trace_drives_the_emulator_for_its_14_days() -> None:
    scenario = rate_trace_scenario(CAPSTONE, SERVEGEN)
    stamps = default_start(CAPSTONE) + np.arange(0.0, 14 * 86_400.0, 600.0)
    rates = np.array([rate_at(CAPSTONE, float(t), (scenario,)) for t in stamps])
    assert rates.max() == pytest.approx(PEAK)
    daily = rates.reshape(14, -1).mean(axis=1)
    assert daily[7:].mean() / daily[:7].mean() > 1.2, "the real trace grows over its two weeks"
    # Day 3.6: two hours without a client (a collection gap, rows 522-533) are demand at the level around them.
    assert rates[522:534].min() > 0.8 * min(rates[519], rates[535])


def test_a_rate_trace_stays_the_demand_when_scenarios_change_at_run_time(tmp_path: Path) -> None:
    path = _write(tmp_path, "window_start_s,rate\n0,1\n600,2\n1200,3\n")
    trace = rate_trace_scenario(CAPSTONE, path)
    fleet = Fleet(CAPSTONE, default_start(CAPSTONE), (trace,), FleetOptions())
    fleet.set_scenarios(parse_scenarios("slow-tp"))
    assert [s.name for s in fleet.scenarios] == ["rate-trace", "slow-tp"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("TIMESTAMP,ContextTokens,GeneratedTokens\n", "no time column", id="a request-level trace"),
        pytest.param("window_start_s,clients\n0,1\n", "no rate or count column", id="a trace without rates"),
        pytest.param("window_start_s,rate\n0,1\n600,x\n", ":3: rate must be a number", id="a bad rate, its line"),
        pytest.param("window_start_s,rate\n0,0\n600,0\n", "peak is 0", id="a silent trace cannot be scaled"),
        pytest.param("window_start_s,rate\n0,1\n0,1\n", "increasing time order", id="a repeated window is refused"),
    ],
)
def test_unusable_rate_traces_are_refused_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(TraceError, match=message):
        rate_trace_scenario(CAPSTONE, path)
    result = CliRunner().invoke(app, ["serve", "examples/capstone.yaml", "--rate-trace", str(path)])
    assert result.exit_code == 2 and "rates.csv" in result.output and message.split(":")[-1] in result.output


def test_a_request_trace_and_a_rate_trace_together_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "window_start_s,rate\n0,1\n600,2\n")
    args = ["serve", "examples/capstone.yaml", "--rate-trace", str(path), "--trace", str(path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and "choose one" in result.output
