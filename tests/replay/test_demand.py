"""Traces into per-minute calls per tier: formats, placement in the plan's timezone, scaling, errors."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from monitor.replay.demand import MIN_MINUTES, TraceError, default_start, load_demand, peak_5m_rps
from tests.builders import EXAMPLES
from tests.replay.plans import one_tier_plan

CAPSTONE = EXAMPLES / "capstone-revised.yaml"
HEAD = "window_start_s,rate_rps\n"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _rate_csv(rows: int, rate: float = 2.0, width: int = 600) -> str:
    return "window_start_s,rate_rps\n" + "".join(f"{i * width},{rate}\n" for i in range(rows))


def test_a_rate_level_window_becomes_poisson_arrivals_at_its_rate(tmp_path: Path) -> None:
    plan = one_tier_plan()
    demand = load_demand(plan, _write(tmp_path, "t.csv", _rate_csv(12, 2.0)), np.random.default_rng(0))
    assert demand.minutes == 120
    assert demand.arrivals.sum() / (120 * 60) == pytest.approx(2.0, rel=0.05)
    assert demand.start == default_start(plan)


def test_counts_per_window_are_kept_exactly_and_spread_over_its_minutes(tmp_path: Path) -> None:
    text = "timestamp,requests\n" + "".join(f"2026-01-06T08:{m:02d}:00,{100 + m}\n" for m in range(0, 60, 5))
    demand = load_demand(one_tier_plan(), _write(tmp_path, "c.csv", text), np.random.default_rng(0))
    assert int(demand.arrivals.sum()) == sum(100 + m for m in range(0, 60, 5))
    local = datetime.fromtimestamp(demand.start, ZoneInfo("Europe/Berlin"))
    assert (local.hour, local.minute) == (8, 0)


def test_a_request_level_trace_is_placed_at_its_wall_clock_time_in_the_plan_zone(tmp_path: Path) -> None:
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    lines += [f"2023-11-16 18:{15 + i // 60:02d}:{i % 60:02d}.0000000,{500 if i % 2 else 15000},50" for i in range(900)]
    plan = one_tier_plan()
    demand = load_demand(plan, _write(tmp_path, "a.csv", "\n".join(lines)), np.random.default_rng(0))
    local = datetime.fromtimestamp(demand.start, ZoneInfo("Europe/Berlin"))
    assert (local.date().isoformat(), local.hour, local.minute) == ("2023-11-16", 18, 15)
    assert int(demand.arrivals.sum()) == 900 and demand.minutes == 15


def test_requests_are_routed_by_their_own_prompt_length(tmp_path: Path) -> None:
    from monitor.plan import load_plan

    lines = "".join(f'{{"timestamp": {i}, "input_length": {500 if i % 3 else 20000}, "output_length": 10}}\n'
                    for i in range(1200))  # fmt: skip
    demand = load_demand(load_plan(CAPSTONE), _write(tmp_path, "r.jsonl", lines), np.random.default_rng(0))
    by_tier = dict(zip(demand.tiers, demand.arrivals.sum(axis=1).tolist(), strict=True))
    assert by_tier == {"fast": 800, "standard": 0, "long-context": 400, "fallback": 0}


def test_scale_to_peak_makes_the_highest_5_minute_rate_the_plan_peak(tmp_path: Path) -> None:
    rows = "window_start_s,rate_rps\n" + "".join(f"{i * 600},{100 + 50 * (i % 6)}\n" for i in range(36))
    plan = one_tier_plan()
    demand = load_demand(plan, _write(tmp_path, "s.csv", rows), np.random.default_rng(0), scale_to_peak=True)
    assert peak_5m_rps(demand.total_rps()) == pytest.approx(plan.workload.arrival.peak_rps, rel=0.1)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", "empty trace", id="an empty file is refused"),
        pytest.param(f"{HEAD}0,1\n600,x\n", ":3: rate_rps must be a number", id="a bad rate names its line"),
        pytest.param(f"{HEAD}0,1\n600\n", ":3: expected 2 comma-separated fields", id="a short row names its line"),
        pytest.param("window_start_s,clients\n0,1\n", "no rate or count column", id="a trace without rates is refused"),
        pytest.param(f"{HEAD}0,1\n", f"need at least {MIN_MINUTES}", id="a trace shorter than ten minutes is refused"),
        pytest.param("timestamp,value\nnever,3\n", ":2: bad timestamp", id="an unreadable timestamp names its line"),
        pytest.param(f"{HEAD}600,1\n0,1\n", "increasing time order", id="windows out of order are refused"),
        pytest.param('{"timestamp": 1}\n', ":1: needs keys", id="a JSONL line without lengths names its line"),
    ],
)  # fmt: skip
def test_malformed_traces_are_refused_with_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    name = "bad.jsonl" if text.startswith("{") else "bad.csv"
    with pytest.raises(TraceError, match=message):
        load_demand(one_tier_plan(), _write(tmp_path, name, text), np.random.default_rng(0))
