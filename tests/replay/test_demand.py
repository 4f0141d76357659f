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
    ("rows", "gap_rate"),
    [
        pytest.param(
            ["0,100,4", "600,3,4", "1200,0,0", "1800,0,0", "2400,2,5", "3000,160,5"], [112.0, 124.0, 136.0, 148.0],
            id="windows that saw no client and the partial ones around them are interpolated as a gap",
        ),
        pytest.param(["0,100,4", "600,90,4", "1200,,4", "1800,5,4", "2400,200,4"], [125.0, 150.0, 175.0],
                     id="an empty rate is a gap too"),
        pytest.param(["0,100,4", "600,0,3", "1200,200,4"], [0.0], id="a zero that clients reported stays zero"),
    ],
)  # fmt: skip
def test_a_window_that_recorded_nothing_is_a_gap_not_zero_demand(
    tmp_path: Path, rows: list[str], gap_rate: list[float]
) -> None:
    text = "window_start_s,rate_rps,active_clients\n" + "\n".join(rows) + "\n"
    demand = load_demand(one_tier_plan(), _write(tmp_path, "g.csv", text), np.random.default_rng(0))
    per_window = demand.arrivals.sum(axis=0).reshape(-1, 10).sum(axis=1) / 600.0
    inner = per_window[1 : 1 + len(gap_rate)]
    assert inner == pytest.approx(gap_rate, rel=0.1, abs=0.0)


def test_a_gap_routes_by_the_lengths_around_it_not_the_plans_mix(tmp_path: Path) -> None:
    from monitor.plan import load_plan

    head = "window_start_s,rate_rps,active_clients,prompt_p50,prompt_p95\n"
    recorded = [f"{i * 600},5,4,400,600" for i in range(3)] + [f"{i * 600},5,4,400,600" for i in range(6, 9)]
    unseen = [f"{i * 600},0,0,," for i in range(3, 6)]
    text = head + "\n".join(sorted(recorded + unseen, key=lambda row: int(row.split(",")[0]))) + "\n"
    demand = load_demand(load_plan(CAPSTONE), _write(tmp_path, "l.csv", text), np.random.default_rng(0))
    by_tier = dict(zip(demand.tiers, demand.arrivals.sum(axis=1).tolist(), strict=True))
    assert by_tier["fast"] > 8 * 600 * 5 * 0.9 and by_tier["long-context"] == by_tier["standard"] == 0


def test_the_real_servegen_trace_has_no_outage_where_it_recorded_nothing() -> None:
    from monitor.plan import load_plan

    servegen = Path("/work/shared/data/traces/servegen_language_m-mid_10min.csv")
    plan = load_plan(CAPSTONE)
    demand = load_demand(plan, servegen, np.random.default_rng(0), scale_to_peak=True)
    per_10min = demand.total_rps().reshape(-1, 10).mean(axis=1)
    with servegen.open() as f:
        unseen = np.array([row.split(",")[2] == "0" for row in f.readlines()[1:]])
    assert per_10min.size == unseen.size == 14 * 144 and unseen.sum() == 84
    # The 84 windows without a client were read as zero demand before. Each run of them (and the partial window
    # on either side) now lies between the recorded windows around it: at the traffic's level, except where
    # clients did report a partial outage around the gap (day 9.7, ~0.3% of the level), which is kept.
    starts = np.flatnonzero(unseen & ~np.roll(unseen, 1))
    ends = np.flatnonzero(unseen & ~np.roll(unseen, -1))
    assert starts.size == ends.size == 8
    for a, b in zip(starts, ends, strict=True):
        around = per_10min[[a - 2, b + 2]]
        inside = per_10min[a - 1 : b + 2]
        assert around.min() * 0.75 <= inside.mean() <= around.max() * 1.25 + 0.05, (a, b, around, inside)  # Poisson
    assert (per_10min[unseen] > 0.2 * np.median(per_10min)).sum() >= 70


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", "empty trace", id="an empty file is refused"),
        pytest.param(f"{HEAD}0,1\n600,x\n", ":3: rate_rps must be a number", id="a bad rate names its line"),
        pytest.param(f"{HEAD}0,1\n600\n", ":3: expected 2 comma-separated fields", id="a short row names its line"),
        pytest.param("window_start_s,clients\n0,1\n", "no rate or count column", id="a trace without rates is refused"),
        pytest.param(f"{HEAD}0,\n600,\n1200,\n", "no window recorded a rate_rps",
                     id="a trace of gaps is refused"),
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
