"""The advice's calibration and drift's throughput check compare production's generated tokens/s with what the model
says a replica generates: completions/s x the mean output, prompt chunk steps included, not B / TPOT."""

from __future__ import annotations

from dataclasses import replace

import pytest

from monitor.advice.capacity import calibrate
from monitor.advice.model import AdviceSettings
from monitor.drift import tier_drift
from monitor.observe.model import Measurement
from monitor.plan import Plan, Tier, load_plan
from monitor.sizing.capacity import ReplicaModel
from monitor.sizing.tier import replica_model, size_tier
from tests.builders import EXAMPLES, baseline_observation


def _replica(plan: Plan, tier: Tier) -> ReplicaModel:
    eff = tier.efficiency
    return replica_model(plan, tier, eff.bandwidth.expected, eff.compute.expected)


def _generated(replica: ReplicaModel, batch: float) -> float:
    """What a replica matching the model generates, written from the slot's parts: each of B slots runs its prompt's
    chunk steps (the first token) and then output - 1 gaps at the TPOT, for `output` tokens."""
    wl = replica.workload
    slot = replica.slot_prefill_seconds(batch) + (wl.output_mean - 1) * replica.tpot_step(batch).seconds
    return batch * wl.output_mean / slot


# each at or under its tier's SLO batch (2.4, 17.9, 8.7, 164): above it a window's batch is a queue's, and the
# factor the last steady window gave stands (monitor.advice.capacity.calibrate)
CASES = [
    ("capstone-revised.yaml", "long-context", 2.0),
    ("capstone-revised.yaml", "standard", 16.0),
    ("lexa.yaml", "review", 8.0),
    ("support-copilot.yaml", "copilot", 150.0),
]
IDS = [
    "17k-token prompts at a batch of 2 (B / TPOT read 22% high, calibrating to 0.82)",
    "3.5k-token prompts at 16 (B / TPOT 2.2% high, 0.98)",
    "lexa's 14k-token reviews at 8 (B / TPOT 6.6% high, 0.94)",
    "the copilot's baseline batch of 150 (B / TPOT 0.2% high)",
]


@pytest.mark.parametrize(("example", "tier_name", "batch"), CASES, ids=IDS)
def test_production_that_generates_what_the_model_says_calibrates_to_exactly_one(
    example: str, tier_name: str, batch: float
) -> None:
    plan = load_plan(EXAMPLES / example)
    tier = plan.tier(tier_name)
    replica = _replica(plan, tier)
    obs = replace(
        baseline_observation(plan),
        tier=tier_name,
        batch_per_replica=Measurement.of(batch),
        output_tokens_per_second_per_replica=Measurement.of(_generated(replica, batch)),
    )
    settings = replace(AdviceSettings(), min_calibration_batch_fraction=0.0)
    calibrated = calibrate(plan, tier, obs, settings)
    assert calibrated.factor == 1.0 and calibrated.source.startswith("calibrated on production:")
    assert replica.output_tokens_per_second(batch) == pytest.approx(_generated(replica, batch), rel=1e-12)


def test_drift_expects_the_generated_tokens_at_the_observed_batch() -> None:
    plan = load_plan(EXAMPLES / "support-copilot.yaml")
    obs = baseline_observation(plan)
    rows = tier_drift(plan, size_tier(plan, plan.tiers[0]), obs)
    (row,) = [r for r in rows if r.assumption == "throughput_per_replica"]
    assert row.plan == pytest.approx(_generated(_replica(plan, plan.tiers[0]), 150.0), rel=1e-12)
    assert row.ratio == pytest.approx(1.0, abs=1e-9)
