"""How long a request holds its slot (monitor.sizing.capacity): its prompt's chunk steps, sharing full steps with
the prompts queued next to it, then output - 1 gaps that ride, besides the steady share of chunk steps, those of
the prompts queued behind its own. fleetsim's live engine (vLLM's scheduler step by step) is the reference: the
advice's calibration reads production's tokens/s at its running batch against the model's, so a model that runs
faster than the engine reads as slow engines and costs replicas."""

from __future__ import annotations

import numpy as np
import pytest

from monitor.plan import Plan, load_plan
from monitor.replay.curve import live_curve
from monitor.sizing.capacity import ReplicaModel, max_batch_at_slo
from monitor.sizing.tier import replica_model
from tests.builders import EXAMPLES, copilot_plan


def _model(plan: Plan, tier: str) -> ReplicaModel:
    t = plan.tier(tier)
    return replica_model(plan, t, t.efficiency.bandwidth.expected, t.efficiency.compute.expected)


@pytest.fixture(scope="module")
def capstone() -> Plan:
    return load_plan(EXAMPLES / "capstone-revised.yaml")


@pytest.mark.parametrize(
    ("tier", "rates"),
    [
        # 0.995 and 1.002; without the shared steps and the bunched gaps 0.913 and 0.888 (the advice derated by 11%)
        pytest.param("long-context", (0.17, 0.35), id="long-context's tokens/s at the engine's batch within 3%"),
        # 0.984 and 0.981; without them 0.972 and 0.963
        pytest.param("standard", (0.7, 1.35), id="standard's tokens/s at the engine's batch within 3%"),
    ],
)
def test_the_model_generates_what_the_live_engine_does_at_the_batch_it_runs(
    capstone: Plan, tier: str, rates: tuple[float, ...]
) -> None:
    curve = live_curve(capstone, capstone.tier(tier), np.array(rates), seed=7, calls=20_000)
    model = _model(capstone, tier)
    for rate in rates:
        batch = curve.scalar("running", rate)
        ratio = rate * curve.output_tokens / model.output_tokens_per_second(batch)
        assert ratio == pytest.approx(1.0, abs=0.03), (rate, batch)


def test_one_chunk_prompts_share_no_steps_and_long_ones_do(capstone: Plan) -> None:
    """A prompt of one chunk arriving behind another waits for its step to end; one of several chunks starts in
    the leftover of the last step of the one before it, and its own last step carries the head of the next."""
    standard, long_context = _model(capstone, "standard"), _model(capstone, "long-context")
    assert standard.slot_prefill_seconds(10.0) == pytest.approx(standard.prefill_mix(10.0).mean_seconds)
    assert long_context.slot_prefill_seconds(2.0) > long_context.prefill_mix(2.0).mean_seconds
    assert long_context.prefill_mix(2.0).mean_chunks > 2


@pytest.mark.parametrize(
    "batch",
    [
        pytest.param(1.0, id="at a batch of one the replica prefills part of the time"),
        pytest.param(150.0, id="at the copilot's baseline batch it prefills most of it"),
        pytest.param(2000.0, id="past saturation the share stops at all of the time"),
    ],
)
def test_the_share_of_time_prefilling_is_requests_per_second_times_a_prefill(batch: float) -> None:
    model = _model(copilot_plan(), "copilot")
    phi = model.prefilling(batch)
    assert 0.0 < phi <= 1.0
    expected = model.requests_per_second(batch) * model.prefill_mix(batch).mean_seconds
    assert phi == pytest.approx(min(1.0, expected), rel=1e-9) if expected < 1.0 else phi == 1.0


def test_the_slot_is_its_prefill_and_its_gaps_at_the_mean_tpot(capstone: Plan) -> None:
    model = _model(capstone, "long-context")
    for batch in (0.5, 1.0, 2.4, 8.0):
        slot = model.slot_prefill_seconds(batch) + model.gaps * model.tpot_step(batch).seconds
        assert model.slot_seconds(batch) == pytest.approx(slot, rel=1e-12)
        assert model.tpot_step(batch).bunched > 0


@pytest.mark.parametrize(
    ("tier", "whole"),
    [
        pytest.param("long-context", 2, id="long-context meets the TPOT SLO at a mean batch of 2.4, not 2"),
        pytest.param("standard", 17, id="standard at a mean batch between 17 and 18"),
    ],
)
def test_the_slo_batch_is_a_mean_batch_to_a_hundredth(capstone: Plan, tier: str, whole: int) -> None:
    """The batch is the mean of what runs at a rate, and the p95 follows the rate: a whole-sequence floor sized
    long-context's replica at 2 / slot = 0.31 req/s where the live engine meets the SLO at 0.346."""
    model = _model(capstone, tier)
    slo = capstone.slo_for(capstone.tier(tier))[1]
    limit = max_batch_at_slo(model, slo)
    assert limit.constraint == "decode step"
    assert whole < limit.batch < whole + 1
    assert model.tpot_p95(limit.batch) <= slo < model.tpot_p95(limit.batch + 0.01)
