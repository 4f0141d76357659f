"""The part of the gap to the oracle no forecast closes: sizing each judged minute on its expected rate at the
plan's availability quantile, against the oracle's need knowing each minute's requests (`monitor.replay.reference`)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from monitor.cli.main import build_app
from monitor.plan import Plan
from monitor.replay.demand import profile_demand
from monitor.replay.reference import availability_price
from monitor.replay.run import Replay, ReplayConfig, run_replay
from tests.replay.plans import one_tier_plan

runner = CliRunner()


def _with_availability(plan: Plan, availability: float) -> Plan:
    return plan.model_copy(update={"slo": plan.slo.model_copy(update={"availability": availability})})


@pytest.fixture(scope="module")
def replay() -> Replay:
    plan = one_tier_plan(planned=4)
    demand = profile_demand(plan, (), 2.0, np.random.default_rng(5))
    return run_replay(plan, demand, ReplayConfig(policies=("static", "oracle")))


def test_sizing_on_the_expected_rate_at_a_high_availability_costs_more_than_the_oracles_need(replay: Replay) -> None:
    price = availability_price(replay)
    assert price.z == pytest.approx(3.09, abs=0.01)
    assert price.oracle_need_gpu_hours > 0 and price.ratio is not None and price.ratio > 1.0
    # the oracle's own need, in GPU-hours over the judged minutes
    need = replay.required["chat"][replay.judged].sum() * 2 / 60.0
    assert price.oracle_need_gpu_hours == pytest.approx(need)
    assert 0.0 <= price.short_minutes_share["chat"] < 0.01


@pytest.mark.parametrize(
    ("lower", "higher"),
    [
        pytest.param(0.99, 0.999, id="99% against 99.9%"),
        pytest.param(0.999, 0.9999, id="99.9% against 99.99%"),
    ],
)
def test_a_higher_availability_costs_more_and_leaves_fewer_minutes_short(
    replay: Replay, lower: float, higher: float
) -> None:
    low = availability_price(replace(replay, plan=_with_availability(replay.plan, lower)))
    high = availability_price(replace(replay, plan=_with_availability(replay.plan, higher)))
    assert high.z > low.z
    assert high.expected_rate_gpu_hours > low.expected_rate_gpu_hours
    assert high.short_minutes_share["chat"] <= low.short_minutes_share["chat"]
    assert high.oracle_need_gpu_hours == low.oracle_need_gpu_hours  # the oracle knows each draw: no quantile


def test_a_replay_with_no_judged_minute_prices_nothing(replay: Replay) -> None:
    none = availability_price(replace(replay, judged=np.zeros_like(replay.judged)))
    assert (none.oracle_need_gpu_hours, none.expected_rate_gpu_hours, none.ratio) == (0.0, 0.0, None)
    assert "n/a" in none.sentence()


def test_the_report_says_it_in_json_in_the_table_and_in_html(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("window_start_s,rate_rps\n" + "".join(f"{i * 600},{3 + i % 4}\n" for i in range(12)))
    plan = str(Path(__file__).resolve().parents[2] / "examples" / "support-copilot.yaml")
    args = ["replay", plan, "--trace", str(trace), "--policy", "static,oracle", "--start", "2026-01-06T09:00"]
    as_json = runner.invoke(build_app(), [*args, "--format", "json", "--out", str(tmp_path / "out")])
    assert as_json.exit_code == 0, as_json.output
    price = json.loads(as_json.stdout)["availability_price"]
    assert set(price) == {"availability", "z", "oracle_need_gpu_hours", "expected_rate_gpu_hours", "ratio",
                          "short_minutes_share"}  # fmt: skip
    assert price["oracle_need_gpu_hours"] > 0 and price["expected_rate_gpu_hours"] >= price["oracle_need_gpu_hours"]
    table = runner.invoke(build_app(), args)
    assert table.exit_code == 0, table.output
    assert "the price of the availability target, which no forecast closes" in " ".join(table.stdout.split())
    assert "the oracle needs" in (tmp_path / "out" / "replay.html").read_text()
