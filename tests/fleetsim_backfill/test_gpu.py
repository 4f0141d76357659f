"""dcgm fields computed for a window of steps equal what the live pod samples from the same activity."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from fleetsim.backfill_gpu import ACTIVITY_FIELDS, gpu_fields, static_fields
from fleetsim.fleet import Fleet, FleetOptions
from fleetsim.pods import Pod
from monitor.plan.load import load_plan

from .test_series import EXAMPLES, WEDNESDAY_NOON_UTC


def standard_pod() -> Pod:
    fleet = Fleet(load_plan(EXAMPLES / "capstone.yaml"), WEDNESDAY_NOON_UTC, (), FleetOptions(seed=1))
    fleet.populate()
    return fleet.pods["standard-0"]


@pytest.mark.parametrize(
    ("busy", "memory", "compute", "tokens"),
    [
        pytest.param(0.0, 0.0, 0.0, 0.0, id="an idle GPU clocks down and draws idle power"),
        pytest.param(9.0, 4.0, 6.0, 20_000.0, id="a busy GPU reads tensor and DRAM activity from the roofline"),
        pytest.param(15.0, 30.0, 30.0, 1e6, id="activity past the step saturates at 1"),
    ],
)
def test_fields_follow_the_live_sampling_formulas(busy: float, memory: float, compute: float, tokens: float) -> None:
    pod = standard_pod()
    step = 15.0
    live = copy.deepcopy(pod)
    act = live.replica.activity
    act.busy, act.memory, act.compute, act.tokens = busy, memory, compute, tokens
    eff = live.replica.config.engine
    live.sample_gpus(WEDNESDAY_NOON_UTC + step, step, eff.bandwidth_efficiency, eff.compute_efficiency)
    ours = gpu_fields(
        pod, np.array([busy]), np.array([memory]), np.array([compute]), np.array([tokens]), step, 0.0, 0.0
    )
    for name in ACTIVITY_FIELDS:
        assert float(ours[name][-1]) == pytest.approx(live.gpus[0].values[name], rel=1e-9, abs=1e-9), name


def test_static_fields_are_the_loaded_pods_and_leave_the_pod_untouched() -> None:
    pod = standard_pod()
    before = (dict(pod.gpus[0].values), pod.gpus[0].energy_mj)
    fields = static_fields(pod, WEDNESDAY_NOON_UTC)
    assert fields["DCGM_FI_DEV_FB_USED"] > 0 and fields["DCGM_FI_DEV_XID_ERRORS"] == 0
    assert set(fields).isdisjoint(ACTIVITY_FIELDS)
    assert (pod.gpus[0].values, pod.gpus[0].energy_mj) == before
