"""The surface decision held against production: the breakeven triggers against a real Prometheus holding a
week of fleetsim history of the support copilot (4 replicas of TP4 H100, about 15 req/s x 2,300 tokens on
average; volume is judged over a week, the shortest window that holds the weekly cycle). Only the plan's
prices and the tier's surface change between cases, so the same history is judged on both sides of the
breakeven."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from monitor.evaluation import Evaluation
from tests.check.test_scenarios import COPILOT, END, REPO, judge_history

pytestmark = pytest.mark.integration

# Only what the breakeven reads: a week of every series would take a minute to write.
_FAMILIES = "vllm:prompt_tokens*,vllm:generation_tokens*,vllm:num_requests_running,DCGM_FI_DEV_GPU_UTIL,up"
BELOW, ABOVE = "volume-below-dedicated-breakeven", "volume-above-dedicated-breakeven"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("copilot-baseline") / "data"
    argv = [sys.executable, "-m", "fleetsim", "backfill", str(COPILOT), "--days", "8", "--step", "120s", "--end", END,
            "--scenario", "baseline", "--prometheus-data", str(out), "--families", _FAMILIES]  # fmt: skip
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr
    return out


def _variant(tmp: Path, price: float, surface: str) -> Path:
    text = COPILOT.read_text().replace("serverless_usd_per_million_tokens: 0.90",
                                       f"serverless_usd_per_million_tokens: {price}")  # fmt: skip
    line = "    max_model_len: 8192\n"
    text = text.replace(line, f"{line}    surface: {surface}\n")
    path = tmp / f"copilot-{surface}-{price}.yaml"
    path.write_text(text)
    return path


def _judge(data: Path, tmp: Path, price: float, surface: str) -> Evaluation:
    return judge_history(_variant(tmp, price, surface), data, tmp, long_window="7d")


@pytest.mark.parametrize(
    ("price", "surface", "expected"),
    [
        pytest.param(0.90, "dedicated", set(), id="at $0.90 per 1M the copilot's volume is above breakeven: none"),
        pytest.param(0.10, "dedicated", {BELOW},
                     id="at $0.10 per 1M the same volume priced per token costs less than the GPU-hours held"),
        pytest.param(0.90, "serverless", {ABOVE},
                     id="served serverless at $0.90 per 1M, the volume would cost less dedicated as sized"),
        pytest.param(0.10, "serverless", set(), id="served serverless at $0.10 per 1M it stays below breakeven"),
    ],
)  # fmt: skip
def test_breakeven_triggers(data: Path, tmp_path: Path, price: float, surface: str, expected: set[str]) -> None:
    ev = _judge(data, tmp_path, price, surface)
    obs = ev.tiers[0].observation
    assert obs.tokens_rate_long.known and obs.gpus_mean_long.known, (obs.tokens_rate_long, obs.gpus_mean_long)
    found = {t.trigger for t in ev.triggers} & {BELOW, ABOVE}
    assert found == expected


def test_the_evidence_shows_the_formula(data: Path, tmp_path: Path) -> None:
    ev = _judge(data, tmp_path, 0.10, "dedicated")
    (record,) = [t for t in ev.triggers if t.trigger == BELOW]
    assert "monthly tokens = " in record.evidence.summary and "GPUs held x 720 h x $4.00" in record.evidence.summary
    assert record.evidence.observed["gpus_mean"] == pytest.approx(16.0, rel=0.1)  # 4 replicas x TP4, as now sized
    assert record.evidence.queries and all("[7d" in q for q in record.evidence.queries)
