"""The breakeven checks on hand-made observations: what they need to fire, and what keeps them quiet."""

from __future__ import annotations

from dataclasses import replace

import pytest

from monitor.evaluation import EvaluationInputs, evaluate
from monitor.observe.model import Measurement
from monitor.plan import Plan, parse_plan
from tests.builders import EXAMPLES, baseline_observation

COPILOT = (EXAMPLES / "support-copilot.yaml").read_text()
BELOW = "volume-below-dedicated-breakeven"


def _fired(plan: Plan, tokens: Measurement, gpus: Measurement) -> bool:
    obs = replace(baseline_observation(plan), tokens_rate_long=tokens, gpus_mean_long=gpus)
    now = 1_800_000_000.0
    ev = evaluate(EvaluationInputs(plan, {plan.tiers[0].name: obs}, now, held_since=now - 86_400))
    return any(t.trigger == BELOW for t in ev.triggers)


# 5.2 B tokens/month on 12 GPUs held, both over a week.
LOW, GPUS = Measurement.of(2_000.0, window="7d"), Measurement.of(12.0, window="7d")


@pytest.mark.parametrize(
    ("text", "tokens", "gpus", "fired"),
    [
        pytest.param(COPILOT, LOW, GPUS, True, id="5 B tokens a month on 12 GPUs is below the breakeven"),
        pytest.param(COPILOT, Measurement.of(40_000.0, window="7d"), GPUS, False,
                     id="100 B tokens a month is above it"),
        pytest.param(COPILOT, Measurement.of(2_000.0, window="1d"), Measurement.of(12.0, window="1d"), False,
                     id="a day's volume is not judged: a weekend is not the month"),
        pytest.param(COPILOT, Measurement.unknown("no data"), GPUS, False, id="unknown volume is no finding"),
        pytest.param(COPILOT, LOW, Measurement.unknown("no dcgm"), False, id="unknown GPUs held is no finding"),
        pytest.param(COPILOT.replace("  serverless_usd_per_million_tokens: 0.90\n", ""), LOW, GPUS, False,
                     id="without a serverless price there is no breakeven to fall below"),
        pytest.param(COPILOT.replace("    max_model_len: 8192\n", "    max_model_len: 8192\n    routing: {share: 0}\n")
                     .replace("tiers:\n", "tiers:\n  - {name: main, model: llama-70b, gpu: H100-SXM-80GB, "
                              "tensor_parallel: 4, weight_dtype: fp8, kv_cache_dtype: fp8, replicas: "
                              "{min: 1, max: 4, planned: 3}}\n"), LOW, GPUS, False,
                     id="a standby tier is held idle on purpose"),
    ],
)  # fmt: skip
def test_volume_below_breakeven(text: str, tokens: Measurement, gpus: Measurement, fired: bool) -> None:
    plan = parse_plan(text)
    if len(plan.tiers) > 1:  # judge the standby tier, the second
        plan = plan.model_copy(update={"tiers": (plan.tiers[1], plan.tiers[0])})
    assert _fired(plan, tokens, gpus) is fired
