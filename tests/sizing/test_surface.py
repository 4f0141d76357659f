"""The surface decision (qualification seed, section 4) branch by branch, and Step 7's breakeven with the
seed's own numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from monitor.cli.main import build_app
from monitor.plan import PlanError, load_plan, parse_plan
from monitor.plan.constraints import Constraints
from monitor.sizing.breakeven import Breakeven, tier_breakeven
from monitor.sizing.decide import plan_decisions
from monitor.sizing.plan_sizing import size_plan
from monitor.sizing.surface import PathFacts, walk
from monitor.units import SECONDS_PER_MONTH

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
COPILOT = EXAMPLES / "support-copilot.yaml"

# Step 7 of the support copilot: 15 req/s x 2,300 tokens, P = $0.90, 144 GPU-h/day at R = $4.00.
SEED = Breakeven(15 * 2300 * SECONDS_PER_MONTH, 0.90, 144 * 30 * 4.00)
ABOVE = Breakeven(89e9, 0.90, 17_280.0)
BELOW = Breakeven(5e9, 0.90, 17_280.0)


@pytest.mark.parametrize(
    ("value", "expected", "tolerance"),
    [
        pytest.param(SEED.tokens_per_month, 89e9, 0.01, id="15 req/s x 2,300 tokens is about 89 B tokens a month"),
        pytest.param(SEED.serverless_usd_per_month, 80_000, 0.01, id="serverless at $0.90 per 1M is about $80k"),
        pytest.param(SEED.dedicated_usd_per_month, 17_280, 1e-9, id="144 GPU-h/day x 30 x $4 is about $17k"),
        pytest.param(SEED.effective_usd_per_million, 0.19, 0.02, id="dedicated works out at about $0.19 per 1M"),
        pytest.param(SEED.breakeven_tokens_per_month, 19.2e9, 0.01, id="breakeven is $17,280 / $0.90 per 1M"),
    ],
)
def test_step7_with_the_seeds_numbers(value: float | None, expected: float, tolerance: float) -> None:
    assert value == pytest.approx(expected, rel=tolerance)


# The step physics sizes the copilot at 4 TP4 replicas at peak (16 GPUs) where the seed has 3 (12): the same
# volume and serverless price as the seed, a dedicated month of (16 x 6 + 4 x 18) x 30 x $4.00.
SIZED_DEDICATED = (16 * 6 + 4 * 18) * 30 * 4.00


def test_the_copilot_plan_reaches_the_seeds_volume_and_prices_its_own_sized_fleet() -> None:
    plan = load_plan(COPILOT)
    be = tier_breakeven(plan, size_plan(plan).tier("copilot"))
    assert be is not None
    assert (be.tokens_per_month, be.serverless_usd_per_month, be.dedicated_usd_per_month) == pytest.approx(
        (SEED.tokens_per_month, SEED.serverless_usd_per_month, SIZED_DEDICATED), rel=1e-6
    )
    assert be.above
    assert "peak 16 GPUs x 6 h + floor 4 GPUs x 18 h" in be.lines()[2]


def _c(**fields: Any) -> Constraints:
    return Constraints.model_validate(fields)


ONLINE = PathFacts("chat", offline=False, why_offline_or_not="online path", breakeven=ABOVE)
ONLINE_SMALL = PathFacts("tool", offline=False, why_offline_or_not="online path", breakeven=BELOW)
NIGHTLY = PathFacts("nightly", offline=True, why_offline_or_not="runs overnight, deadline 07:00")
EU = {"data_residency": {"scope": "region", "region": "eu"}}


@pytest.mark.parametrize(
    ("constraints", "path", "answers", "label"),
    [
        pytest.param(_c(), ONLINE, "no no unknown yes", "dedicated",
                     id="no constraints, volume above breakeven: dedicated, the eval still to run"),
        pytest.param(_c(data_residency={"scope": "vpc"}), ONLINE, "yes no unknown yes", "BYOC/VPC + dedicated",
                     id="data that must stay in the customer's VPC goes BYOC, then on through the eval question"),
        pytest.param(_c(**EU, vendor_regions=["us"]), ONLINE, "yes no unknown yes", "BYOC/VPC + dedicated in eu",
                     id="a residency region the vendor does not offer leaves only the customer's own account"),
        pytest.param(_c(**EU, vendor_regions=["us", "EU"]), ONLINE, "no no unknown yes", "dedicated in eu",
                     id="a residency region the vendor offers pins the surface to it without BYOC"),
        pytest.param(_c(), NIGHTLY, "no yes", "batch", id="offline work that tolerates hours goes to a batch API"),
        pytest.param(_c(data_residency={"scope": "vpc"}), NIGHTLY, "yes yes", "BYOC/VPC + batch",
                     id="an offline path inside BYOC still runs as batch"),
        pytest.param(_c(open_model_passes_eval=False, strict_percentile_slo=False), ONLINE_SMALL, "no no no yes",
                     "fine-tune (LoRA) + dedicated",
                     id="a model below the bar is fine-tuned, and its weights are then custom: dedicated"),
        pytest.param(_c(open_model_passes_eval=True, strict_percentile_slo=False), ONLINE_SMALL, "no no yes no",
                     "serverless", id="low volume, no strict SLO, stock weights: serverless"),
        pytest.param(_c(open_model_passes_eval=True), ONLINE_SMALL, "no no yes yes", "dedicated",
                     id="a strict percentile SLO alone makes it dedicated"),
        pytest.param(_c(open_model_passes_eval=True, strict_percentile_slo=False, custom_weights=True), ONLINE_SMALL,
                     "no no yes yes", "dedicated", id="custom weights alone make it dedicated"),
        pytest.param(_c(open_model_passes_eval=True, strict_percentile_slo=False), ONLINE, "no no yes yes",
                     "dedicated", id="volume above breakeven alone makes it dedicated"),
        pytest.param(_c(strict_percentile_slo=False), PathFacts("x", False, "online"), "no no unknown no",
                     "serverless", id="without a serverless price the volume is not taken as above breakeven"),
    ],
)  # fmt: skip
def test_flowchart_branches(constraints: Constraints, path: PathFacts, answers: str, label: str) -> None:
    decision = walk(constraints, path)
    assert " ".join(b.answer for b in decision.branches) == answers
    assert decision.label == label
    assert all(b.reason for b in decision.branches)


def test_each_branch_says_why() -> None:
    d = walk(_c(**EU, vendor_regions=["us"]), ONLINE)
    assert "eu" in d.branches[0].reason and "us" in d.branches[0].reason
    assert "89.0 B tokens/month is above the breakeven 19.2 B" in d.branches[-1].reason


def test_a_plan_served_otherwise_than_the_walk_chooses_is_a_finding() -> None:
    plan = load_plan(COPILOT)
    line = "    max_model_len: 8192\n"
    text = COPILOT.read_text().replace(line, f"{line}    surface: serverless\n")
    served = parse_plan(text)
    assert [d.mismatch for d, _ in plan_decisions(plan, size_plan(plan))] == [None]
    [(decision, _)] = plan_decisions(served, size_plan(served))
    assert decision.mismatch == "copilot: the plan serves it serverless, the decision walk chooses dedicated"


def test_a_region_residency_must_name_its_region() -> None:
    text = COPILOT.read_text() + "\nconstraints:\n  data_residency: {scope: region}\n"
    with pytest.raises(PlanError, match="needs the region"):
        parse_plan(text)


def test_size_prints_each_branch_and_the_breakeven_formula() -> None:
    result = CliRunner().invoke(build_app(), ["size", str(COPILOT)], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    assert "surface for copilot: dedicated" in result.output
    assert "Offline work that tolerates hours of latency?" in result.output
    assert "monthly tokens = 15 req/s x 2,300 tok x 2.592e+06 s = 89.4 B tokens" in result.output
    assert "serverless     = 89,424 M x $0.90 per 1M tokens = $80,482/month" in result.output
    assert "= $20,160/month" in result.output  # the sized fleet (SIZED_DEDICATED), not the seed's 12 GPUs


def test_size_json_carries_the_walk() -> None:
    result = CliRunner().invoke(build_app(), ["size", str(COPILOT), "--format", "json"])
    assert result.exit_code == 0, result.output
    [surface] = json.loads(result.output)["surfaces"]
    assert surface["surface"] == "dedicated"
    assert [b["node"] for b in surface["branches"]] == ["A", "B", "C", "D"]
    # $20,160 of GPU-hours at $0.90 per 1M tokens (the seed's 12 GPUs would give 19.2 B)
    assert surface["breakeven"]["breakeven_tokens_per_month"] == pytest.approx(22.4e9, rel=0.01)
