"""The measurement plan's judgements from hand-made readings: load levels, item by item, and the record that
keeps what was measured once."""

from __future__ import annotations

import pytest

from monitor.measurements import Item, Readings, Status, TierReadings, judge_plan, merge_record
from monitor.measurements.judge import load_level
from monitor.measurements.model import LoadPoint
from monitor.observe.model import Measurement
from monitor.plan import Plan, load_plan
from monitor.sizing.plan_sizing import size_plan
from monitor.triggers import EvalResult
from tests.builders import EXAMPLES, baseline_observation, copilot_plan

LAT = (0.1, 0.2, 0.3), (0.02, 0.03, 0.04)


def _points(*levels: float, n: int = 3) -> tuple[LoadPoint, ...]:
    return tuple(LoadPoint(1000.0 + 300 * i + 10_000 * j, m, *LAT) for j, m in enumerate(levels) for i in range(n))


def _judge(plan: Plan | None = None, evals: tuple[EvalResult, ...] = (), **tier: object) -> dict[tuple[str, str], Item]:
    plan = plan or copilot_plan()
    readings = {t.name: TierReadings(t.name, baseline_observation(plan), **tier) for t in plan.tiers}  # type: ignore[arg-type]
    items = judge_plan(plan, size_plan(plan), Readings("1d", 0.0, 86_400.0, readings, evals))
    return {(i.id, i.tier): i for i in items}


@pytest.mark.parametrize(
    ("multiple", "level"),
    [
        pytest.param(0.5, None, id="half the sized peak is no load level"),
        pytest.param(0.75, 1, id="three quarters of the sized peak counts as 1x"),
        pytest.param(1.49, 1, id="just under 1.5 is still 1x"),
        pytest.param(1.5, 2, id="1.5 is 2x"),
        pytest.param(2.5, 3, id="2.5 and above is 3x"),
        pytest.param(7.0, 3, id="far above is 3x too"),
    ],
)
def test_load_levels(multiple: float, level: int | None) -> None:
    assert load_level(multiple) == level


@pytest.mark.parametrize(
    ("load", "status"),
    [
        pytest.param(_points(1.0), Status.PARTLY, id="history only at 1x is partly measured"),
        pytest.param(_points(1.0, 2.0, 3.0), Status.MEASURED, id="history at 1x, 2x and 3x is measured"),
        pytest.param(_points(1.0, n=2), Status.NOT_YET, id="two steps at a level are not enough"),
        pytest.param(_points(0.3), Status.NOT_YET, id="history below 1x measures no level"),
    ],
)
def test_latency_at_load(load: tuple[LoadPoint, ...], status: Status) -> None:
    item = _judge(load=load)[("latency-at-load", "copilot")]
    assert item.status is status
    if status is Status.MEASURED:
        assert item.values["ttft_p95_2x"] == pytest.approx(0.2)
        assert (item.first_seen, item.last_seen) == (1000.0, 1000.0 + 600 + 20_000)


def test_a_replica_down_and_the_refused_100k_prompt_are_partly_the_failure_story() -> None:
    item = _judge(replicas_down_max=Measurement.of(1.0), prompts_over_100k=Measurement.unknown("no data"))[
        ("failure-behaviour", "copilot")
    ]
    assert item.status is Status.PARTLY
    assert "a 100K-token request: refused by max_model_len 8,192" in item.evidence[2]
    assert "rolling deploy or restart: pods started in the window" in item.evidence[3]


def test_goodput_from_histograms_is_a_lower_bound() -> None:
    item = _judge()[("goodput-at-slo", "copilot")]
    assert item.status is Status.PARTLY
    assert item.values["goodput_request_share_lower_bound"] == pytest.approx(0.98)


def test_posted_evals_answer_the_quality_item() -> None:
    capstone = load_plan(EXAMPLES / "capstone.yaml")
    fp8 = EvalResult(model="llama-70b", precision="fp8", task_set="code", score=0.8, baseline_score=0.82,
                     threshold=0.03, submitted_at=1.0)  # fmt: skip
    assert _judge(capstone)[("quantization-quality", "fleet")].status is Status.NOT_YET
    partly = _judge(capstone, (fp8,))[("quantization-quality", "fleet")]
    assert partly.status is Status.PARTLY, "the 8B fallback's eval is still missing"
    fallback = fp8.model_copy(update={"model": "llama-8b", "precision": "bf16"})
    fast = fp8.model_copy(update={"model": "llama-8b"})
    assert _judge(capstone, (fp8, fallback))[("quantization-quality", "fleet")].status is Status.PARTLY, "8B FP8"
    assert _judge(capstone, (fp8, fallback, fast))[("quantization-quality", "fleet")].status is Status.MEASURED


def test_tp_scaling_needs_one_model_at_two_tps() -> None:
    plan = copilot_plan()
    assert _judge(plan)[("tp-scaling", "fleet")].status is Status.NOT_YET
    tp8 = plan.tiers[0].model_copy(update={"name": "copilot-tp8", "tensor_parallel": 8})
    two = plan.model_copy(update={"tiers": (plan.tiers[0], tp8)})
    item = _judge(two)[("tp-scaling", "fleet")]
    assert item.status is Status.MEASURED
    assert set(item.values) == {"llama-70b:tp4:tokens_per_second_per_gpu", "llama-70b:tp8:tokens_per_second_per_gpu"}


def _item(status: Status, first: float | None, last: float | None) -> Item:
    return Item("cold-start", "Cold start", "copilot", status, ("e",), first, last)


@pytest.mark.parametrize(
    ("before", "now", "kept"),
    [
        pytest.param(_item(Status.MEASURED, 10, 20), _item(Status.NOT_YET, None, None), _item(Status.MEASURED, 10, 20),
                     id="a measured item stays measured when its history has aged out"),
        pytest.param(_item(Status.PARTLY, 10, 20), _item(Status.MEASURED, 30, 40), _item(Status.MEASURED, 10, 40),
                     id="a fuller judgement replaces it and the dates span both"),
        pytest.param(_item(Status.MEASURED, 10, 20), _item(Status.MEASURED, 30, 40), _item(Status.MEASURED, 10, 40),
                     id="a new measurement extends the date range"),
    ],
)  # fmt: skip
def test_the_record_keeps_what_was_measured(before: Item, now: Item, kept: Item) -> None:
    assert merge_record({(before.id, before.tier): before}, [now]) == [kept]
