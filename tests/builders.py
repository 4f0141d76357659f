"""Hand-made inputs for the pure core's tests: a support-copilot tier whose production matches its plan."""

from __future__ import annotations

from pathlib import Path

from monitor.observe.model import Measurement, TierObservation
from monitor.plan import Plan, load_plan
from monitor.sizing.tier import replica_model

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def copilot_plan() -> Plan:
    return load_plan(EXAMPLES / "support-copilot.yaml")


def baseline_observation(plan: Plan | None = None, batch: float = 150.0) -> TierObservation:
    """What the support copilot shows when production matches its plan exactly."""
    plan = plan or copilot_plan()
    tier = plan.tiers[0]
    replica = replica_model(plan, tier, tier.efficiency.bandwidth.expected, tier.efficiency.compute.expected)
    m = Measurement.of
    return TierObservation(
        tier=tier.name,
        evaluated_at=0.0,
        window="1h",
        peak_rate=m(50.0),
        average_rate=m(15.0),
        # Exactly 2,000 and 300 tokens, as vLLM's 1-2-5 buckets report them through histogram_quantile.
        prompt_p50=m(1500),
        prompt_p95=m(1950),
        output_p50=m(350),
        output_p95=m(485),
        prefix_hit_rate=m(0.6),
        ttft_p95=m(0.2),
        tpot_p95=m(0.035),
        kv_occupancy_mean=m(replica.kv_occupancy(batch)),
        kv_occupancy_max=m(replica.kv_occupancy(batch) * 1.2),
        preemption_rate=m(0.0),
        batch_per_replica=m(batch),
        output_tokens_per_second_per_replica=m(batch / replica.tpot_step(batch).seconds),
        cold_start_p95=m(tier.cold_start_seconds * 0.9),
        calls_per_request=m(1.0),
        error_ratio=m(0.0004),
        bad_fraction={
            f"{slo}:{w}": m(0.01 if slo != "errors" else 0.0002)
            for slo in ("ttft", "tpot", "errors")
            for w in ("5m", "30m", "1h", "2h", "6h", "1d", "3d")
        },
    )


def baseline_fleet_observation(plan: Plan | None = None) -> TierObservation:
    """The fleet view of the same matching production (the copilot has one tier, so the shapes agree)."""
    tier = baseline_observation(plan)
    m = Measurement.of
    return TierObservation(
        tier="fleet",
        evaluated_at=0.0,
        window="1h",
        peak_rate=m(50.0),
        burst_peak_rate=m(52.0),
        average_rate=m(15.0),
        prompt_p50=tier.prompt_p50,
        prompt_p95=tier.prompt_p95,
        output_p50=tier.output_p50,
        output_p95=tier.output_p95,
        prefix_hit_rate=m(0.6),
        calls_per_request=m(1.0),
        error_ratio=m(0.0004),
    )
