"""The replay's headline behaviours end to end: the morning ramp with slow cold starts, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from monitor.cli.main import build_app
from monitor.replay.demand import profile_demand
from monitor.replay.run import ReplayConfig, run_replay
from monitor.replay.slo import minute_slo
from tests.builders import EXAMPLES
from tests.replay.plans import one_tier_plan


def test_with_20_minute_cold_starts_reactive_misses_a_morning_ramp_that_planwatch_meets() -> None:
    plan = one_tier_plan(cold_start="20m")
    demand = profile_demand(plan, (), 3.0, np.random.default_rng(3))
    replay = run_replay(plan, demand, ReplayConfig(policies=("reactive", "planwatch")))
    morning = slice(2 * 1440 + 6 * 60, 2 * 1440 + 12 * 60)  # Wednesday 06:00-12:00: two days of history behind
    missed = {}
    for run in replay.runs:
        f = run.fleets["chat"]
        ok = minute_slo(plan, f.tier, f.curve, f.record, demand.minutes).ok
        missed[run.name] = int((~ok & replay.judged)[morning].sum())
    assert missed["planwatch"] == 0
    assert missed["reactive"] > 30


def test_on_the_first_day_planwatch_holds_what_demand_needs_not_the_first_forecasts_spread() -> None:
    # Under a day of history the forecast is a mean and a drift over the night-to-day step, its bound several
    # times the day's demand: unheld, this tier ran 7.6 replicas on average (up to 9) all afternoon where the
    # oracle's need was at most 3 (monitor.forecasts.held_to_plan_peak).
    plan = one_tier_plan(cold_start="20m")
    demand = profile_demand(plan, (), 1.0, np.random.default_rng(3))
    replay = run_replay(plan, demand, ReplayConfig(policies=("planwatch",)))
    afternoon = slice(13 * 60, 18 * 60)
    need = int(replay.required["chat"][afternoon].max())
    billed = replay.run("planwatch").fleets["chat"].record.billed[afternoon]
    assert billed.max() <= need + 1


runner = CliRunner()


def _write(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_cli_prints_json_with_the_stable_keys_and_writes_the_chart(tmp_path: Path) -> None:
    trace = _write(tmp_path, "window_start_s,rate_rps\n" + "".join(f"{i * 600},{3 + i % 4}\n" for i in range(12)))
    out = tmp_path / "out"
    result = runner.invoke(build_app(), [
        "replay", str(EXAMPLES / "support-copilot.yaml"), "--trace", str(trace), "--policy", "static,reactive,oracle",
        "--format", "json", "--out", str(out),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {"plan", "trace", "days", "policies"} <= data.keys()
    keys = {"name", "gpu_hours", "cost_usd", "oracle_ratio", "slo_compliant_minutes_share",
            "requests_over_slo_share", "worst_minute", "scale_events", "tiers"}  # fmt: skip
    assert [p["name"] for p in data["policies"]] == ["static", "reactive", "oracle"]
    for p in data["policies"]:
        assert keys <= p.keys()
        assert keys - {"tiers"} <= p["tiers"][0].keys()
    assert (out / "replay.png").read_bytes()[:4] == b"\x89PNG"
    assert "data:image/png;base64," in (out / "replay.html").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--trace", "{missing}"], "cannot read", id="a missing trace file exits 2"),
        pytest.param(["--trace", "{bad}"], "t.csv:3", id="a malformed line exits 2 with its line number"),
        pytest.param(["--trace", "{empty}"], "empty trace", id="an empty trace exits 2"),
        pytest.param(["--trace", "{good}", "--policy", "magic"], "unknown policy magic",
                     id="an unknown policy exits 2"),
        pytest.param(["--trace", "{good}", "--decision-interval", "90s"], "whole number of minutes",
                     id="a decision interval that is not whole minutes exits 2"),
        pytest.param(["--trace", "{good}", "--format", "xml"], "is not one of", id="an unknown format exits 2"),
        pytest.param(["--trace", "{good}", "--start", "soon"], "not an ISO 8601", id="an unreadable start exits 2"),
        pytest.param(["--trace", "fleetsim", "--scenarios", "nope"], "scenarios", id="an unknown scenario exits 2"),
    ],
)  # fmt: skip
def test_the_cli_refuses_bad_input_with_exit_status_2(tmp_path: Path, args: list[str], message: str) -> None:
    files = {
        "missing": str(tmp_path / "nope.csv"),
        "bad": str(_write(tmp_path, "window_start_s,rate_rps\n0,1\n600,oops\n")),
        "empty": str(_write(tmp_path, "", "e.csv")),
        "good": str(_write(tmp_path, "window_start_s,rate_rps\n0,1\n600,2\n", "g.csv")),
    }
    argv = ["replay", str(EXAMPLES / "support-copilot.yaml"), *[a.format(**files) for a in args]]
    result = runner.invoke(build_app(), argv)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.stderr.split())


def _planwatch_gpu_hours(tmp_path: Path, config: Path | None) -> float:
    """planwatch on the copilot over a morning whose demand falls after the first hour."""
    rates = [40.0] * 6 + [5.0] * 18  # 10-minute windows: an hour at 40 req/s, then three at 5
    trace = _write(tmp_path, "window_start_s,rate_rps\n" + "".join(f"{i * 600},{r}\n" for i, r in enumerate(rates)))
    argv = ["replay", str(EXAMPLES / "support-copilot.yaml"), "--trace", str(trace), "--policy", "planwatch",
            "--start", "2026-01-06T09:00", "--format", "json", "--workers", "1"]  # fmt: skip
    result = runner.invoke(build_app(), argv + (["--config", str(config)] if config else []))
    assert result.exit_code == 0, result.output
    (policy,) = json.loads(result.stdout)["policies"]
    return float(policy["gpu_hours"])


def test_the_planwatch_policy_runs_with_the_service_configuration_it_is_given(tmp_path: Path) -> None:
    held = _write(tmp_path, "advice:\n  scale_down_cooldown: 6h\n", "planwatch.yaml")
    default, configured = _planwatch_gpu_hours(tmp_path, None), _planwatch_gpu_hours(tmp_path, held)
    assert configured > default  # a 6-hour cooldown keeps the morning's replicas through the afternoon


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("advice:\n  cooldown: 6h\n", "cooldown", id="an unknown key exits 2 naming it"),
        pytest.param("forecast_interval: soon\n", "forecast_interval", id="an unreadable duration exits 2"),
    ],
)
def test_a_bad_service_configuration_exits_2_naming_the_key(tmp_path: Path, text: str, message: str) -> None:
    trace = _write(tmp_path, "window_start_s,rate_rps\n0,1\n600,2\n")
    config = _write(tmp_path, text, "planwatch.yaml")
    argv = ["replay", str(EXAMPLES / "support-copilot.yaml"), "--trace", str(trace), "--config", str(config)]
    result = runner.invoke(build_app(), argv)
    assert result.exit_code == 2, result.output
    assert "--config" in result.stderr and message in " ".join(result.stderr.split())
