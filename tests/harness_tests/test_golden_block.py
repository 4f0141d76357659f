"""The direct writer's blocks read back exactly as promtool's own block of the same text.

tests/fixtures/promtool-block holds `history.om` (eight series over ten minutes: gauges with an escaped
label value, one histogram, an `up` with a gap and a zero) and the block
`promtool tsdb create-blocks-from openmetrics history.om` (Prometheus 2.42) made from it, kept as the
golden: the harness writes every test's history with fleetsim.text_blocks, and this is what holds that
writer to promtool through a real Prometheus's query API.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from fleetsim.text_blocks import write_text_blocks
from tests.harness.stack import Stack, api_query

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "promtool-block"
END = 1_790_000_600  # the history's last sample


def _samples(url: str) -> dict[frozenset[tuple[str, str]], list[list[object]]]:
    rows = api_query(url, '{__name__=~".+"}[11m]', at=END)
    return {frozenset(r["metric"].items()): r["values"] for r in rows}


def test_a_real_prometheus_serves_the_direct_writers_block_as_promtools_own(tmp_path: Path, stack: Stack) -> None:
    promtool_data = tmp_path / "promtool"
    promtool_data.mkdir()
    for block in GOLDEN.iterdir():
        if block.is_dir():
            shutil.copytree(block, promtool_data / block.name)
    direct_data = tmp_path / "direct"
    write_text_blocks(GOLDEN / "history.om", direct_data)
    reference = _samples(stack.prometheus(data_dir=promtool_data).url)
    direct = _samples(stack.prometheus(data_dir=direct_data).url)
    assert len(reference) == 8 and sum(len(v) for v in reference.values()) == 325
    assert direct == reference
