"""`fleetsim batch`: a plan's batch job written as OpenMetrics history, and bad input refused with status 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetsim.cli import app

LEXA = Path(__file__).resolve().parents[2] / "examples" / "lexa.yaml"


def test_the_history_counts_the_jobs_tokens(tmp_path: Path) -> None:
    out = tmp_path / "batch.om"
    argv = ["batch", str(LEXA), "--job", "nightly-review", "--out", str(out), "--end", "2026-12-02T04:00:00Z",
            "--hours", "8"]  # fmt: skip
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert text.endswith("# EOF\n")
    last = [line for line in text.splitlines() if line.startswith("vllm:request_success_total")][-1]
    assert float(last.split()[1]) == pytest.approx(20_000), "by 05:00 Berlin the sized run has done every item"
    assert 'batch_job="nightly-review"' in last and 'tier="batch-nightly-review"' in last


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        pytest.param(["--job", "nope"], "no batch job 'nope'", id="an unknown job is refused"),
        pytest.param(["--job", "nightly-review", "--end", "yesterday"], "neither Unix seconds nor ISO 8601",
                     id="an unreadable end time is refused"),
    ],
)  # fmt: skip
def test_bad_input_exits_2(tmp_path: Path, extra: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["batch", str(LEXA), "--out", str(tmp_path / "x"), *extra])
    assert result.exit_code == 2
    assert message in result.output
