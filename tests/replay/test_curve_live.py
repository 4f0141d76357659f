"""The replay's per-rate curve (fleetsim's aggregate model) against fleetsim's live step engine on the same
workload and rates, below saturation, where the SLO is decided: TTFT p50 within 10 %, TTFT p95 within
15 %, TPOT p95 within 15 %, 12,000 calls per rate on each: long-context's TPOT p95 at its point spans
40-52 ms over four seeds of the replay's 3,000 calls, 46-53 ms of 12,000 (`benchmarks/bench_aggregate_live.py`
prints whole curves)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from monitor.plan import load_plan
from monitor.replay.curve import QUANTILES, live_curve, tier_curve
from monitor.replay.slo import p95_at

pytestmark = pytest.mark.slow

PLAN = load_plan(Path(__file__).resolve().parents[2] / "examples" / "capstone-revised.yaml")
P50 = int(np.searchsorted(QUANTILES, 0.5))


@pytest.mark.parametrize(
    ("tier", "points"),
    [
        pytest.param(
            "standard", (3, 5), id="standard at 30 and 50 % of saturation: a batch far from full admits at once"
        ),
        pytest.param("long-context", (4,), id="long-context at 40 %: decodes ride through 30k-token prefills"),
    ],
)
def test_the_aggregate_curve_follows_the_live_engine_below_saturation(tier: str, points: tuple[int, ...]) -> None:
    ours = tier_curve(PLAN, PLAN.tier(tier), calls=12_000)
    rates = ours.rates[list(points)]
    theirs = live_curve(PLAN, PLAN.tier(tier), rates, calls=12_000)
    for k, i in enumerate(points):
        at = f"{tier} at {rates[k]:.3f} req/s"
        assert ours.ttft[i, P50] == pytest.approx(theirs.ttft[k, P50], rel=0.10), f"{at}: TTFT p50"
        assert p95_at(ours.ttft)[i] == pytest.approx(p95_at(theirs.ttft)[k], rel=0.15), f"{at}: TTFT p95"
        assert p95_at(ours.tpot)[i] == pytest.approx(p95_at(theirs.tpot)[k], rel=0.15), f"{at}: TPOT p95"
