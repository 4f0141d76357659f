"""Batch jobs sized apart from the online path (qualification seed, Key Takeaways) and priced three ways."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from monitor.cli.main import build_app
from monitor.plan import Plan, PlanError, parse_plan
from monitor.sizing.batch import BatchSizing, size_batch_job
from monitor.sizing.decide import plan_decisions
from monitor.sizing.plan_sizing import size_plan

COPILOT = Path(__file__).resolve().parents[2] / "examples" / "support-copilot.yaml"

JOB = """
batch_jobs:
  - name: nightly
    model: llama-70b
    items: {items}
    input_tokens: {input_tokens}
    output_tokens: {output_tokens}
    shared_prefix_tokens: 1200
    window: {window}
    batch_usd_per_million_tokens: 0.45
    pool_gpu_hour_usd: 2.0
    runs_on: {runs_on}
"""


NIGHT = '{start: "22:00", end: "06:00"}'


def _plan(items: int = 20_000, input_tokens: str = "40M", output_tokens: str = "2M", window: str = NIGHT,
          runs_on: str = "batch-api", extra: str = "") -> Plan:  # fmt: skip
    job = JOB.format(items=items, input_tokens=input_tokens, output_tokens=output_tokens, window=window,
                     runs_on=runs_on)  # fmt: skip
    return parse_plan(COPILOT.read_text() + job + extra)


def _size(plan: Plan) -> BatchSizing:
    return size_batch_job(plan, size_plan(plan), plan.batch_jobs[0])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param({"window": '{start: "22:00", end: "06:00", deadline: "07:00"}'}, "outside the window",
                     id="a deadline after the window closes is refused"),
        pytest.param({"window": '{start: "22:00", end: "22:00"}'}, "window is empty", id="an empty window is refused"),
        pytest.param({"items": 1_000_000}, "longer than an item's input",
                     id="an instruction block longer than an item's input is refused"),
        pytest.param({"runs_on": "elsewhere"}, "none of batch-api, pool, copilot",
                     id="runs_on must name a surface or a tier"),
        pytest.param({"input_tokens": "lots"}, "not a token count", id="token counts are checked as people write them"),
    ],
)  # fmt: skip
def test_bad_batch_jobs_are_refused(change: dict[str, object], message: str) -> None:
    with pytest.raises(PlanError, match=message):
        _plan(**change)  # type: ignore[arg-type]


def test_a_window_across_midnight_and_tokens_per_day() -> None:
    job = _plan(window='{start: "22:00", end: "06:00", deadline: "05:00"}').batch_jobs[0]
    assert (job.window.hours, job.window.hours_to_deadline) == (8.0, 7.0)
    daily = _plan(items=10_000, runs_on="pool", extra="    per: day\n    runs_per_day: 2\n")
    assert daily.batch_jobs[0].input_tokens_per_run == 20e6


def test_batch_api_is_tokens_times_the_batch_price() -> None:
    api = _size(_plan()).options[2]
    assert api.usd_per_run == pytest.approx(42 * 0.45)
    assert "(40.0 M input + 2.0 M output) x $0.45 per 1M = $19 per run" in api.formula[0]


def test_the_pool_holds_the_replicas_the_deadline_needs() -> None:
    b = _size(_plan(items=200_000, input_tokens="400M", output_tokens="20M"))
    pool = b.options[1]
    cold = 10 / 60
    replicas = math.ceil(b.replica_hours_per_run / (8 - cold))
    assert pool.usd_per_run == pytest.approx((b.replica_hours_per_run + replicas * cold) * 4 * 2.0)
    assert f"= {replicas} of TP4" in pool.formula[0]


def test_the_cached_instruction_block_is_the_prefix_share() -> None:
    b = _size(_plan())
    assert (b.item_prompt_tokens, b.cached_share) == (2000, pytest.approx(0.6))


def test_a_small_job_fits_the_quiet_hours_without_risk() -> None:
    b = _size(_plan())
    quiet = b.options[0]
    assert "off-peak rate = (15.00 x 24 - 50.00 x 6) / 18 = 3.33 req/s" in quiet.formula[0]
    assert quiet.usd_per_run == 0 and quiet.feasible
    assert not b.online_slo_at_risk


@pytest.mark.parametrize(
    ("change", "risk"),
    [
        pytest.param({"items": 2_000_000, "input_tokens": "4B", "output_tokens": "200M"}, "above 80% of saturation",
                     id="a job larger than the quiet hours' idle capacity puts the online SLO at risk"),
        pytest.param({"window": '{start: "06:00", end: "12:00"}'}, "overlaps business hours",
                     id="a window that overlaps business hours puts the online SLO at risk"),
        pytest.param({"items": 2_000, "input_tokens": "20M"}, "exceed copilot's max_model_len",
                     id="items longer than the online tier's max_model_len cannot share it"),
    ],
)  # fmt: skip
def test_sharing_the_online_tier_is_judged(change: dict[str, object], risk: str) -> None:
    b = _size(_plan(**change))  # type: ignore[arg-type]
    assert b.online_slo_at_risk
    assert any(risk in r for r in b.risks), b.risks


def test_a_big_job_on_the_quiet_hours_pays_for_extra_replicas() -> None:
    b = _size(_plan(items=2_000_000, input_tokens="4B", output_tokens="200M"))
    quiet = b.options[0]
    assert quiet.usd_per_run is not None and quiet.usd_per_run > 0
    assert quiet.usd_per_run % (4 * 4.00 * 8) == pytest.approx(0)


def test_a_job_run_on_the_online_tier_is_the_seeds_common_mistake() -> None:
    plan = _plan(runs_on="copilot")
    nightly = next(d for d, _ in plan_decisions(plan, size_plan(plan)) if d.path == "nightly")
    assert nightly.surface == "batch"
    assert nightly.mismatch == "nightly: the plan serves it dedicated, the decision walk chooses batch"


def test_size_prints_the_three_prices_and_the_json_carries_them(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(COPILOT.read_text() + JOB.format(items=20_000, input_tokens="40M", output_tokens="2M",
                    window=NIGHT, runs_on="batch-api"))  # fmt: skip
    table = CliRunner().invoke(build_app(), ["size", str(path)], env={"COLUMNS": "400"})
    assert table.exit_code == 0, table.output
    assert "batch job nightly" in table.output
    assert "running it on copilot: the online SLO is not at risk" in table.output
    data = json.loads(CliRunner().invoke(build_app(), ["size", str(path), "--format", "json"]).output)
    [job] = data["batch_jobs"]
    assert [o["name"] for o in job["options"]] == [
        "online tier copilot in its quiet hours", "dedicated or spot pool of H100-SXM-80GB", "batch API"]  # fmt: skip
    assert job["options"][2]["usd_per_month"] == pytest.approx(42 * 0.45 * 30)
