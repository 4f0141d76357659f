"""--resume: live counters continue a backfilled history without a jump (fleetsim.state)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleetsim.fleet import Fleet, FleetOptions
from fleetsim.server import gateway_text, vllm_text
from fleetsim.state import StateError, load_state, save_state

from .helpers import parse, run_fleet, tiny_plan
from .test_exposition import counters


def test_a_resumed_fleet_continues_every_counter_from_the_state(tmp_path: Path) -> None:
    history = run_fleet(tiny_plan(rps=5.0), 300)
    path = tmp_path / "state.json"
    save_state(history.state(), path)
    resumed = Fleet(tiny_plan(rps=5.0), history.now, (), FleetOptions(seed=9))
    resumed.resume(load_state(path))
    for pod in ("fast-0", "fast-1"):
        assert counters(vllm_text(resumed, pod)) == counters(vllm_text(history, pod))
        start = parse(vllm_text(resumed, pod))["process_start_time_seconds"].samples[0].value
        assert start == history.pods[pod].process_start
    before = counters(vllm_text(resumed, "fast-0"))
    resumed.advance_to(resumed.now + 60)
    after = counters(vllm_text(resumed, "fast-0"))
    assert all(after[k] >= v for k, v in before.items()) and after != before
    assert parse(gateway_text(resumed))["gateway_user_requests"].samples[0].value > history.tiers["fast"].user_requests


def test_new_pods_after_a_resume_get_fresh_names(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    save_state(run_fleet(tiny_plan(), 10).state(), path)
    resumed = Fleet(tiny_plan(), 0.0, (), FleetOptions())
    resumed.resume(load_state(path))
    resumed.scale("fast", 3)
    assert sorted(resumed.pods) == ["fast-0", "fast-1", "fast-2"]


def test_a_state_with_other_buckets_is_refused(tmp_path: Path) -> None:
    state = run_fleet(tiny_plan(), 10).state()
    state.pods["fast-0"].vllm["histograms"]["vllm:request_prompt_tokens"]["buckets"] = [0, 1]
    resumed = Fleet(tiny_plan(), 0.0, (), FleetOptions())
    with pytest.raises(ValueError, match="buckets"):
        resumed.resume(state)


def test_an_unreadable_state_is_a_state_error(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text("{")
    with pytest.raises(StateError, match="not JSON"):
        load_state(path)
