"""The qualification seed's exercise, examples/lexa.yaml, against the seed's "Done when" list: the online path
and the nightly job sized separately, each surface chosen by the flowchart with the EU residency in it, the
nightly job priced on a batch surface, the GPU count a range with the benchmark that narrows it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from monitor.cli.main import build_app
from monitor.plan import Plan, load_plan
from monitor.sizing.batch import size_batch_jobs
from monitor.sizing.decide import gpu_ranges, plan_decisions
from monitor.sizing.plan_sizing import PlanSizing, size_plan

LEXA = Path(__file__).resolve().parents[2] / "examples" / "lexa.yaml"


@pytest.fixture(scope="module")
def lexa() -> tuple[Plan, PlanSizing]:
    plan = load_plan(LEXA)
    return plan, size_plan(plan)


def test_the_input_is_14k_plus_a_3k_instruction_block(lexa: tuple[Plan, PlanSizing]) -> None:
    plan, sizing = lexa
    wl = sizing.tier("review").sizing.workload
    assert plan.workload.shared_prefix_tokens == 3000
    assert wl.prompt_mean == pytest.approx(17_000, rel=0.01)
    assert wl.cached_prompt_mean == pytest.approx(3000, rel=0.01), "the instruction block is what the cache serves"
    [job] = size_batch_jobs(plan, sizing)
    assert (job.item_prompt_tokens, job.job.shared_prefix_tokens) == (17_000, 3000)


@pytest.mark.parametrize(
    ("path", "label"),
    [
        pytest.param("review", "dedicated in eu", id="the online path is dedicated, pinned to the EU region"),
        pytest.param("nightly-review", "batch in eu", id="the nightly job goes to a batch API in the EU region"),
    ],
)
def test_each_path_gets_its_surface_with_the_residency_in_it(
    lexa: tuple[Plan, PlanSizing], path: str, label: str
) -> None:
    plan, sizing = lexa
    decision = next(d for d, _ in plan_decisions(plan, sizing) if d.path == path)
    assert decision.label == label
    assert decision.branches[0].reason.startswith("data must stay in eu")
    assert decision.mismatch is None


def test_the_nightly_job_is_priced_on_batch_apart_from_the_online_path(lexa: tuple[Plan, PlanSizing]) -> None:
    plan, sizing = lexa
    [job] = size_batch_jobs(plan, sizing)
    api = next(o for o in job.options if o.name == "batch API")
    assert api.usd_per_run == pytest.approx((340 + 12) * 0.45)
    assert {o.name for o in job.options} == {
        "online tier review in its quiet hours", "dedicated or spot pool of H100-SXM-80GB", "batch API"}  # fmt: skip


def test_the_gpu_count_is_a_range_of_24_to_36_with_its_benchmark_as_requests_wait_only_for_the_engines_slots(
    lexa: tuple[Plan, PlanSizing],
) -> None:
    [r] = gpu_ranges(lexa[1])
    # 24-36 GPUs, expected 28: 7 TP4 replicas. Each engine queues its own requests, for the 74 sequences its KV
    # holds; a queue of the SLO batch's 18 slots (which vLLM never withholds) made it 8 (28-48 GPUs). The high end
    # was 40 while the SLO batch was whole sequences: at the pessimistic efficiencies the p95 meets the SLO up to a
    # mean batch of 6.9, not 6, so 9 replicas, not 10 (the slot's shared steps and bunched gaps take back 4% of it)
    assert (r.low, r.expected, r.high) == (24, 28, 36)
    assert "at 1x, 2x and 3x the expected peak" in r.benchmark and "TP4" in r.benchmark


def test_size_shows_it_all() -> None:
    result = CliRunner().invoke(build_app(), ["size", str(LEXA)], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    for text in ("surface for review: dedicated in eu", "surface for nightly-review: batch in eu",
                 "batch job nightly-review", "GPUs at peak for review: "):  # fmt: skip
        assert text in result.output
    data = json.loads(CliRunner().invoke(build_app(), ["size", str(LEXA), "--format", "json"]).output)
    assert [s["label"] for s in data["surfaces"]] == ["dedicated in eu", "batch in eu"]


def test_the_ttft_row_shows_the_wait_of_each_replicas_own_queue() -> None:
    data = json.loads(CliRunner().invoke(build_app(), ["size", str(LEXA), "--format", "json"]).output)
    [row] = [r for r in data["tiers"][0]["hypothesis"] if r["decision"] == "TTFT"]
    assert (
        "(M/M/c in each replica's own queue: c = 74 slots, max_num_seqs or the sequences whose KV fits, at "
        "4.00 req/s / 7 replicas)" in row["why"]
    )
