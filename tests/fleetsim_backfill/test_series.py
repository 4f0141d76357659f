"""Backfilled series are exactly the series Prometheus stores when it scrapes `fleetsim serve` through its
file_sd: the live exposition of every target plus the target labels, with honor_labels false."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleetsim.fleet import Fleet, FleetOptions
from fleetsim.metrics import Generation
from fleetsim.scenarios import parse_scenarios
from fleetsim.server import dcgm_text, fleet_targets, gateway_text, ksm_text, vllm_text
from monitor.plan.load import load_plan
from monitor.plan.model import Plan

from .helpers import WEDNESDAY_NOON_UTC, backfill_text, diurnal_plan, series_of_text, spec_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
INSTANCE = "127.0.0.1:9555"
Series = frozenset[tuple[str, str]]


def scraped_series(plan: Plan, generation: Generation) -> set[Series]:
    """What a Prometheus scraping the live emulator's file_sd would store (fleetsim.server.fleet_targets)."""
    fleet = Fleet(plan, WEDNESDAY_NOON_UTC, (), FleetOptions(seed=1, generation=generation))
    fleet.populate()
    fleet.advance_to(WEDNESDAY_NOON_UTC + 31)  # past one dcgm sample, so every field has a value
    bodies = {"/gateway/metrics": gateway_text(fleet), "/kube-state-metrics/metrics": ksm_text(fleet)}
    for pod in fleet.pods:
        bodies[f"/replicas/{pod}/metrics"] = vllm_text(fleet, pod)
        bodies[f"/gpus/{pod}/metrics"] = dcgm_text(fleet, pod)
    stored: set[Series] = set()
    for group in fleet_targets(fleet, INSTANCE):
        labels = {k: v for k, v in group["labels"].items() if not k.startswith("__")} | {"instance": INSTANCE}
        for series in series_of_text(bodies[group["labels"]["__metrics_path__"]]):
            exposed = {(f"exported_{k}" if k in labels and k != "__name__" else k): v for k, v in series}
            stored.add(frozenset((exposed | labels).items()))
    return stored


def backfilled_series(plan: Plan, generation: Generation) -> set[Series]:
    spec = spec_for(plan, WEDNESDAY_NOON_UTC, WEDNESDAY_NOON_UTC + 30, generation=generation, instance=INSTANCE)
    return series_of_text(backfill_text(spec))


def without_up(series: set[Series]) -> set[Series]:
    return {s for s in series if ("__name__", "up") not in s}


@pytest.mark.parametrize(
    ("plan_file", "generation"),
    [
        pytest.param("capstone.yaml", "v1", id="the capstone's four tiers in vLLM V1 names are the scraped series"),
        pytest.param("capstone.yaml", "legacy", id="the legacy generation's names and labels are the scraped series"),
        pytest.param("support-copilot.yaml", "v1", id="a TP4 tier has one dcgm series per GPU, as scraped"),
    ],
)
def test_backfilled_series_are_the_scraped_series(plan_file: str, generation: Generation) -> None:
    plan = load_plan(EXAMPLES / plan_file)
    live, backfilled = scraped_series(plan, generation), backfilled_series(plan, generation)
    assert without_up(backfilled) == live, (
        [dict(s) for s in without_up(backfilled) - live][:3],
        [dict(s) for s in live - without_up(backfilled)][:3],
    )


def test_every_target_has_an_up_series() -> None:
    plan = load_plan(EXAMPLES / "capstone.yaml")
    ups = {
        dict(s).get("job", "") + "/" + dict(s).get("pod", "")
        for s in backfilled_series(plan, "v1")
        if ("__name__", "up") in s
    }
    pods = [f"{t.name}-{i}" for t in plan.tiers for i in range(t.replicas.planned)]
    assert ups == {f"{job}/{p}" for job in ("vllm", "dcgm-exporter") for p in pods} | {
        "gateway/",
        "kube-state-metrics/",
    }


def test_families_keeps_only_the_series_matched() -> None:
    spec = spec_for(
        diurnal_plan(), WEDNESDAY_NOON_UTC, WEDNESDAY_NOON_UTC + 30, families=("vllm:request_success*", "up")
    )
    names = {dict(s)["__name__"] for s in series_of_text(backfill_text(spec))}
    assert names == {"vllm:request_success_total", "vllm:request_success_created", "up"}


def test_a_scenario_start_does_not_change_which_series_exist() -> None:
    plan = diurnal_plan()
    start = WEDNESDAY_NOON_UTC
    scenarios = parse_scenarios(f"slow-tp@{start + 3600:.0f},long-prompts@{start + 1800:.0f}")
    with_scenarios = spec_for(plan, start, start + 7200, step=60, scenarios=scenarios)
    plain = spec_for(plan, start, start + 7200, step=60)
    assert series_of_text(backfill_text(with_scenarios)) == series_of_text(backfill_text(plain))
