"""The aggregate model's building blocks against their definitions: the roofline as the live Engine
computes it, the vectorised FIFO against a plain loop, prefill time spread over the steps it spans, and
the windows that cut a history into promtool blocks."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fleetsim.aggregate import PrefillPlan, Roofline, ScanResult, fifo, spread
from fleetsim.backfill_run import _windows
from fleetsim.fleet import engine_config
from fleetsim.scenarios import Effects, parse_scenarios
from monitor.sizing.roofline import prefill_attention_pairs

from .helpers import WEDNESDAY_NOON_UTC, diurnal_plan, spec_for


@pytest.mark.parametrize(
    ("kv_tokens", "tokens", "pairs"),
    [
        pytest.param(0.0, 1.0, 0.0, id="a lone decode token"),
        pytest.param(64 * 3000.0, 64.0, 64 * 3000.0, id="a decode step of 64 sequences"),
        pytest.param(1200.0, 8192.0, prefill_attention_pairs(8000, 1200), id="a full prefill chunk"),
    ],
)
def test_the_linear_roofline_is_the_engines_step(kv_tokens: float, tokens: float, pairs: float) -> None:
    config = engine_config(diurnal_plan(), diurnal_plan().tiers[0], Effects())
    roof = Roofline.of(config)
    step = config.engine.step(kv_tokens, tokens, pairs)
    assert float(roof.memory(np.array(kv_tokens))) == pytest.approx(step.memory_seconds)
    assert float(roof.compute(np.array(tokens), np.array(pairs))) == pytest.approx(step.compute_seconds)


def fifo_by_hand(
    x: list[float], length: list[float], arrival: list[float], patience: float, free: float
) -> tuple[list[float], list[bool]]:
    starts, served = [], []
    for xi, li, ai in zip(x, length, arrival, strict=True):
        begin = max(xi, free)
        if begin - ai > patience:
            starts.append(ai + patience)
            served.append(False)
            continue
        starts.append(begin)
        served.append(True)
        free = begin + li
    return starts, served


@pytest.mark.parametrize(
    ("rate", "service", "patience"),
    [
        pytest.param(1.0, 0.5, 300.0, id="a light load never waits long and nobody leaves"),
        pytest.param(3.0, 0.5, 20.0, id="an overload makes calls leave after their patience"),
        pytest.param(2.0, 0.5, 1e9, id="an infinitely patient overload queues everyone"),
    ],
)
def test_the_vectorised_fifo_matches_a_plain_loop(rate: float, service: float, patience: float) -> None:
    rng = np.random.default_rng(7)
    segments = []
    for _ in range(3):
        arrival = np.sort(rng.uniform(0, 400 / rate, 400)) + 1000.0
        segments.append(arrival)
    arrival = np.concatenate(segments)
    segment = np.repeat(np.arange(3), 400)
    length = rng.exponential(service, arrival.size)
    carried = np.array([-np.inf, 1005.0, -np.inf])
    start, served = fifo(arrival, length, segment, carried, arrival, patience)
    for s in range(3):
        part = segment == s
        free = carried[s]
        want_start, want_served = fifo_by_hand(
            arrival[part].tolist(), length[part].tolist(), arrival[part].tolist(), patience, free
        )
        assert served[part].tolist() == want_served
        assert start[part] == pytest.approx(want_start)


def test_spread_conserves_each_prefills_time_over_the_steps_it_spans() -> None:
    scan = ScanResult(
        scheduled=np.array([5.0, 40.0, 100.0]),
        first_token=np.array([50.0, 41.0, 101.0]),
        served=np.array([True, True, False]),
        steps=np.array([3.0, 1.0, 0.0]),
        segment=np.array([0, 0, 1]),
        work=np.zeros(3),
        memory=np.zeros(3),
    )
    edges = np.arange(0.0, 121.0, 15.0)
    time = spread(scan, scan.length, edges, 2)
    assert time.sum(axis=1) == pytest.approx([45.0 + 1.0, 1.0])
    assert time[0, :4] == pytest.approx([10.0, 15.0, 16.0, 5.0])


def test_a_prefill_plan_of_nothing_scans_to_nothing() -> None:
    empty = np.empty(0)
    plan = PrefillPlan(
        np.empty(0, dtype=np.int64),
        empty,
        empty,
        empty,
        empty,
        empty,
        empty,
        empty,
        empty,
        empty,
        np.zeros(1),
        empty,
        300.0,
    )
    start, served = fifo(plan.ready, plan.work, plan.segment, plan.carried_end, plan.arrival, plan.patience)
    assert start.size == 0 and served.size == 0


@pytest.mark.parametrize(
    ("step", "block"),
    [
        pytest.param(15, 21600, id="15 s stamps in 6 h blocks"),
        pytest.param(7, 21600, id="a step that does not divide the block still never crosses a block edge"),
        pytest.param(60, 7200, id="60 s stamps in 2 h blocks"),
    ],
)
def test_windows_tile_the_history_within_blocks_and_cut_at_scenario_starts(step: int, block: int) -> None:
    end = WEDNESDAY_NOON_UTC - WEDNESDAY_NOON_UTC % step
    cut = end - 5003
    spec = replace(spec_for(diurnal_plan(), end - step * 12340, end, step=step,
                            scenarios=parse_scenarios(f"slow-tp@{cut:.0f}")), block_seconds=block)  # fmt: skip
    stamps, starts = [], []
    for _, chunks in _windows(spec):
        for window in chunks:
            chunk = window.stamps()
            assert (chunk // block == chunk[0] // block).all()
            stamps.extend(chunk.tolist())
            starts.append(window.start)
    assert stamps == list(np.arange(spec.start, spec.end + step / 2, step))
    assert min(s for s in starts if s >= cut) - cut < step
