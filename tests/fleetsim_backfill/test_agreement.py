"""The aggregate model and the live step-level engine agree on the same plan, scenario and time.

Both run the same simulated span from an empty fleet (the live fleet steps every engine iteration in
fleetsim.fleet; the aggregate model is fleetsim.backfill_run.simulate). Compared per tier, from the
histograms each exposes, with PromQL's histogram_quantile interpolation:

    request rate (finished requests / s)             within 10 %
    prompt and output tokens, p50 and p95            within 10 %  (same distributions, different draws)
    TTFT p50 and TPOT p50                            within 25 %  (queueing and step mix approximated)

TPOT is the per-token histogram (vllm:inter_token_latency_seconds, V0's time_per_output_token_seconds).
The per-request mean (request_time_per_output_token_seconds) sits on the 25 ms bucket edge for the copilot,
where interpolation turns a 4 % difference of means into 30 % between medians, so it is not compared.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from fleetsim.aggregate_series import TierTotals
from fleetsim.backfill_run import simulate
from fleetsim.fleet import Fleet, FleetOptions
from fleetsim.metrics import VLLM_FAMILIES, Family
from monitor.plan.load import load_plan
from monitor.plan.model import Plan

from .helpers import diurnal_plan, spec_for
from .test_series import EXAMPLES

pytestmark = pytest.mark.slow

_FAMILY = {f.key: f for f in VLLM_FAMILIES}
MIN_REQUESTS = 200
CHECKS = (  # (histogram, quantile, relative tolerance)
    ("vllm:request_prompt_tokens", 0.5, 0.10),
    ("vllm:request_prompt_tokens", 0.95, 0.10),
    ("vllm:request_generation_tokens", 0.5, 0.10),
    ("vllm:request_generation_tokens", 0.95, 0.10),
    ("vllm:time_to_first_token_seconds", 0.5, 0.25),
    ("vllm:inter_token_latency_seconds", 0.5, 0.25),
)


def quantile(cumulative: np.ndarray, family: Family, max_model_len: int, q: float) -> float:
    """histogram_quantile: linear inside the bucket holding rank q x count."""
    bounds = np.asarray(family.bucket_bounds(max_model_len))
    total = cumulative[-1]
    rank = q * total
    i = int(np.searchsorted(cumulative, rank, side="left"))
    if i >= bounds.size:
        return float(bounds[-1])
    low = bounds[i - 1] if i > 0 else 0.0
    below = cumulative[i - 1] if i > 0 else 0.0
    return float(low + (bounds[i] - low) * (rank - below) / max(cumulative[i] - below, 1e-12))


def live_histograms(plan: Plan, start: float, seconds: float) -> dict[str, dict[str, np.ndarray]]:
    fleet = Fleet(plan, start, (), FleetOptions(seed=3))
    fleet.populate()
    fleet.advance_to(start + seconds)
    out: dict[str, dict[str, np.ndarray]] = {}
    for pod in fleet.pods.values():
        tier = out.setdefault(pod.tier.name, {})
        for key in pod.metrics.buckets:
            tier[key] = tier.get(key, 0) + np.asarray(pod.metrics.cumulative(key), dtype=float)
    return out


def aggregate_histograms(totals: dict[str, TierTotals]) -> dict[str, dict[str, np.ndarray]]:
    return {tier: {key: b.sum(axis=0) for key, b in t.buckets.items()} for tier, t in totals.items()}


def local_time(plan: Plan, day: int, hour: int) -> float:
    zone = ZoneInfo(plan.workload.business_hours.timezone)
    return datetime(2024, 5, day, hour, 0, tzinfo=zone).timestamp() // 15 * 15


@pytest.mark.parametrize(
    ("plan", "day", "hour", "minutes"),
    [
        pytest.param(
            load_plan(EXAMPLES / "support-copilot.yaml"),
            8,
            11,
            4,
            id="support copilot at its 50 req/s peak: bulk prefill steps and a batch of ~130",
        ),
        pytest.param(
            load_plan(EXAMPLES / "capstone.yaml"),
            8,
            16,
            20,
            id="capstone tiers in the afternoon shoulder: long prompts queue for prefill",
            marks=pytest.mark.xfail(
                strict=True,
                reason=(
                    "the longest prompts prefill slower in the aggregate: on this tier at 0.02 req/s per replica, "
                    "prompts over 40k tokens take 10.2 s against the live engine's 7.6 s (30 calls each; 20-40k "
                    "+6%, shorter ones within 2%), and near this tier's saturation that queues: TTFT p50 3.9 s "
                    "against 2.9 s, p95 30 s against 9.5 s (the batch-limit gate, once a second queue in front "
                    "of the prefill one, now holds a call only while the batch is full)"
                ),
            ),
        ),
        pytest.param(diurnal_plan(peak=6.0, average=2.0, replicas=2), 8, 12, 20, id="a small 8B tier at its peak"),
    ],
)
def test_aggregate_and_live_engines_agree(plan: Plan, day: int, hour: int, minutes: int) -> None:
    start = local_time(plan, day, hour)
    seconds = minutes * 60.0
    live = live_histograms(plan, start, seconds)
    ours = aggregate_histograms(simulate(spec_for(plan, start, start + seconds - 15, step=15, seed=5)))
    compared = 0
    for tier in plan.tiers:
        lengths = plan.models[tier.model].max_context if tier.max_model_len is None else tier.max_model_len
        count = live.get(tier.name, {}).get("vllm:request_prompt_tokens", np.zeros(1))[-1]
        if count < MIN_REQUESTS:
            continue
        compared += 1
        ours_count = ours[tier.name]["vllm:request_prompt_tokens"][-1]
        assert ours_count / seconds == pytest.approx(count / seconds, rel=0.10), f"{tier.name} request rate"
        for key, q, tolerance in CHECKS:
            want = quantile(live[tier.name][key], _FAMILY[key], lengths, q)
            got = quantile(ours[tier.name][key], _FAMILY[key], lengths, q)
            assert got == pytest.approx(want, rel=tolerance), f"{tier.name} {key} p{q * 100:.0f}"
    assert compared
