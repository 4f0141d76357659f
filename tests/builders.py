"""Hand-made inputs for the pure core's tests: a support-copilot tier whose production matches its plan."""

from __future__ import annotations

from pathlib import Path

from monitor.observe.model import Measurement, TierObservation
from monitor.plan import Plan, load_plan

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# Known answers for the copilot (Llama-3.3-70B FP8, TP 4 on H100-SXM-80GB) at a batch of 150, written out rather
# than computed by the sizing under test, so a mistake in the shared model shows in the tests that use them.
# KV budget: 4 GPUs x (0.9 x 80 GB - 70 GB / 4 of FP8 weights - 2 GB runtime) = 210 GB, over FP8 KV at
# 2 (K, V) x 80 layers x 8 KV heads x 128 dims x 1 byte = 163,840 B per token: 1,281,738.28 tokens.
BASELINE_BATCH = 150.0
_KV_BUDGET_TOKENS = 4 * (0.9 * 80e9 - 70e9 / 4 - 2e9) / (2 * 80 * 8 * 128)
# 150 sequences x (mean decode context - cached prefix) + the cached prefix stored once: 143,700 tokens.
_KV_TOKENS_AT_BASELINE = 143_700.0
# A decode step of 150 sequences at the expected efficiencies (0.7 of bandwidth, 0.6 of compute): 32.82 ms.
_TPOT_STEP_AT_BASELINE = 0.032821271581239174
# What a replica generates at that batch: each slot is its prompt's one chunk step (800 uncached tokens beside 150
# decodes, 48.31 ms, yielding the first token) plus 299 gaps at the 32.82 ms TPOT, and, as the slot's first gaps ride
# the chunk step of a prompt queued behind its own (73.4% of the time the replica prefills; half the steps would have
# carried a chunk anyway), 11.4 ms more: 9.8732 s for 300 tokens, so 150 x 300 / 9.8732 = 4,557.78 tokens/s
# (150 / TPOT = 4,570.21 would count the chunk step as a full decode step).
_CHUNK_STEP_AT_BASELINE = 0.04830836491087919
_DECODE_STEP_AT_BASELINE = 0.01733417825159915  # the decode-only step; the TPOT is half of these, half chunk steps
_PREFILLING_AT_BASELINE = 0.7339291264860465  # phi = 150 x 48.31 ms / the slot
_SLOT_SECONDS_AT_BASELINE = (
    _CHUNK_STEP_AT_BASELINE
    + 299 * _TPOT_STEP_AT_BASELINE
    + _PREFILLING_AT_BASELINE * 0.5 * (_CHUNK_STEP_AT_BASELINE - _DECODE_STEP_AT_BASELINE)
)
_OUTPUT_TOKENS_PER_SECOND_AT_BASELINE = BASELINE_BATCH * 300 / _SLOT_SECONDS_AT_BASELINE


def copilot_plan() -> Plan:
    return load_plan(EXAMPLES / "support-copilot.yaml")


def baseline_observation(plan: Plan | None = None) -> TierObservation:
    """What the support copilot shows when production matches its plan exactly (the engine readings are the
    copilot's known answers above whatever `plan` is given; only the tier name and cold start follow it)."""
    plan = plan or copilot_plan()
    tier = plan.tiers[0]
    batch = BASELINE_BATCH
    kv_occupancy = _KV_TOKENS_AT_BASELINE / _KV_BUDGET_TOKENS
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
        kv_occupancy_mean=m(kv_occupancy),
        kv_occupancy_max=m(kv_occupancy * 1.2),
        preemption_rate=m(0.0),
        batch_per_replica=m(batch),
        output_tokens_per_second_per_replica=m(_OUTPUT_TOKENS_PER_SECOND_AT_BASELINE),
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
