"""The replay's per-rate curve is measured densely, on the live engine, where the SLO is decided, and smoothed
without ratcheting."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from monitor.plan import load_plan
from monitor.replay.curve import _rising, live_curve, tier_curve
from monitor.replay.slo import slo_rate

PLAN = load_plan(Path(__file__).resolve().parents[2] / "examples" / "capstone-revised.yaml")


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        pytest.param([1.0, 3.0, 2.0, 4.0], [1.0, 2.5, 2.5, 4.0], id="a high draw is pooled with the dip after it"),
        pytest.param([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], id="a rising column is kept as measured"),
        pytest.param([5.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0], id="one high first draw is pooled with all after"),
    ],
)
def test_a_dip_below_a_lower_rate_is_pooled_not_carried_up_to_every_rate_above(
    rows: list[float], expected: list[float]
) -> None:
    """Isotonic regression: the running maximum made [1, 3, 3, 4] of the first, [5, 5, 5, 5] of the last."""
    assert _rising(rows) == pytest.approx(np.array(expected))


@pytest.mark.parametrize("tier", ["standard", "long-context"])
def test_the_grid_is_dense_around_the_slo_knee(tier: str) -> None:
    curve = tier_curve(PLAN, PLAN.tier(tier))
    knee = slo_rate(PLAN, PLAN.tier(tier), curve)
    near = curve.rates[(curve.rates >= 0.5 * knee) & (curve.rates <= 1.5 * knee)]
    assert near.size >= 8 and np.all(np.diff(curve.rates) > 0)  # placed by the coarse knee, which moves a little


@pytest.mark.slow
@pytest.mark.parametrize("tier", ["standard", "long-context"])
def test_one_replicas_slo_rate_by_the_replays_curve_is_the_live_engines(tier: str) -> None:
    """The aggregate's tails run 5-12% short of the live engine's near the knee, which put one replica's SLO
    rate 9-15% above the live engine's (benchmarks/bench_aggregate_live.py); the replay's curve measures
    the knee on the live engine: within 5% of another seed's live curve of 8,000 calls a rate."""
    curve = tier_curve(PLAN, PLAN.tier(tier))
    live = live_curve(PLAN, PLAN.tier(tier), curve.rates, seed=3, calls=8000)
    assert slo_rate(PLAN, PLAN.tier(tier), curve) == pytest.approx(slo_rate(PLAN, PLAN.tier(tier), live), rel=0.05)


def test_curves_measured_side_by_side_are_the_ones_measured_one_after_the_other() -> None:
    """With workers, the tiers' curves are measured in forked processes (the live knee takes seconds a tier):
    the same seeds give the same curves as measured here, and both are remembered."""
    from fleetsim.scenarios import Effects
    from monitor.replay import run as run_module
    from tests.replay.plans import one_tier_plan

    plan_json = one_tier_plan().model_dump_json(by_alias=True)
    keys = [(plan_json, "chat", Effects(), seed) for seed in (11, 12)]
    for key in keys:
        run_module._CURVES.pop(key, None)
    side_by_side = run_module._tier_curves(keys, 2)
    for key in keys:
        run_module._CURVES.pop(key, None)
    one_by_one = run_module._tier_curves(keys, 1)
    for a, b in zip(side_by_side, one_by_one, strict=True):
        assert (
            np.array_equal(a.rates, b.rates) and np.array_equal(a.ttft, b.ttft) and np.array_equal(a.running, b.running)
        )
    assert all(key in run_module._CURVES for key in keys)
