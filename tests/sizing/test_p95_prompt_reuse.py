"""The p95 prompt's uncached tokens follow the plan's reuse rule (shared S, then k of the rest), not the mean share."""

from __future__ import annotations

import pytest

from monitor.plan import load_plan
from monitor.sizing.prefix import PrefixModel
from monitor.sizing.workload import tier_workload
from tests.builders import EXAMPLES


@pytest.mark.parametrize(
    ("example", "tier", "uncached"),
    [
        ("capstone-revised.yaml", "standard", 8036.0),
        ("capstone-revised.yaml", "long-context", 36473.0),
        ("support-copilot.yaml", "copilot", 800.0),
    ],
    ids=[
        "capstone's standard p95 prompt of 10,871 tokens reuses 2,000 + 9.4% of the rest (6,472 at the mean share)",
        "its long-context p95 of 42,265 reuses 18% less than the tier's mean share would say",
        "the seed's copilot: all reuse is the 1,200 shared tokens, so 2,000 - 1,200 = 800 either way",
    ],
)  # fmt: skip
def test_the_p95_prompt_is_uncached_by_the_plans_reuse_rule(example: str, tier: str, uncached: float) -> None:
    plan = load_plan(EXAMPLES / example)
    wl = tier_workload(plan, plan.tier(tier))
    rule = PrefixModel.for_plan(plan)
    s, k = rule.shared_tokens, rule.extra_fraction
    written_out = wl.prompt_p95 - min(wl.prompt_p95 - 1, int(s + k * max(wl.prompt_p95 - s, 0)))
    assert wl.uncached_prompt_p95 == pytest.approx(written_out, abs=1e-9)
    assert wl.uncached_prompt_p95 == pytest.approx(uncached, abs=1.0)
