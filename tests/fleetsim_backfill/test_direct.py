"""Blocks written directly hold exactly the samples promtool stores for the same history as text, and the sink
leaves nothing half-written behind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fleetsim import DEFAULT_SCENARIO
from fleetsim.backfill import Request, resolve_spec
from fleetsim.backfill_direct import BlockSink, parse_series
from fleetsim.backfill_run import history_text
from fleetsim.backfill_text import SeriesGroup

ROOT = Path(__file__).resolve().parents[2]
COPILOT = ROOT / "examples" / "support-copilot.yaml"
END = "2026-12-01T16:00:00Z"


def _backfill(data: Path, *extra: str) -> None:
    argv = [sys.executable, "-m", "fleetsim", "backfill", str(COPILOT), "--days", "0.4", "--step", "60s",
            "--end", END, "--prometheus-data", str(data), *extra]  # fmt: skip
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def _through_promtool(data: Path, *extra: str) -> None:
    """The reference: the same history as OpenMetrics text (`history_text`), imported by promtool."""
    scenario = extra[extra.index("--scenario") + 1] if "--scenario" in extra else DEFAULT_SCENARIO
    generation = extra[extra.index("--vllm-generation") + 1] if "--vllm-generation" in extra else "v1"
    spec = resolve_spec(Request(COPILOT, data, days=0.4, step="60s", end=END, scenario=scenario,
                                generation=generation))  # fmt: skip
    text = data.parent / f"{data.name}.om"
    with text.open("wb") as out:
        history_text(spec, out)
    argv = ["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=6h", str(text), str(data)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def _dump(data: Path) -> list[str]:
    (data / "wal").mkdir(exist_ok=True)  # promtool tsdb dump opens the head too
    done = subprocess.run(["promtool", "tsdb", "dump", str(data)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return sorted(done.stdout.splitlines())


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param(("--scenario", "baseline"),
                     id="a baseline history is stored sample for sample as promtool stores it"),
        pytest.param((), id="so is one of the default, irregular demand"),
        pytest.param(("--scenario", "slow-tp@2026-12-01T12:17:00Z", "--vllm-generation", "legacy"),
                     id="so is one with a scenario starting mid-block, in the older metric names"),
    ],
)  # fmt: skip
def test_direct_blocks_hold_the_samples_promtool_stores(tmp_path: Path, extra: tuple[str, ...]) -> None:
    _backfill(tmp_path / "direct", *extra)
    _through_promtool(tmp_path / "promtool", *extra)
    direct, reference = _dump(tmp_path / "direct"), _dump(tmp_path / "promtool")
    assert len(direct) > 100_000
    assert direct == reference


@pytest.mark.parametrize(
    ("prefix", "labels"),
    [
        pytest.param(b'up{job="vllm",instance="127.0.0.1:9400"}', (("__name__", "up"), ("instance", "127.0.0.1:9400"),
                     ("job", "vllm")), id="labels come back sorted by name with the metric name"),
        pytest.param(b'x{a="q\\"uote",b="back\\\\slash",c="new\\nline"}', (("__name__", "x"), ("a", 'q"uote'),
                     ("b", "back\\slash"), ("c", "new\nline")), id="escaped quotes, backslashes and newlines are read"),
        pytest.param(b'DCGM_FI_DEV_GPU_UTIL{Hostname="n1",exported_pod="",gpu="0"}', (("Hostname", "n1"),
                     ("__name__", "DCGM_FI_DEV_GPU_UTIL"), ("gpu", "0")),
                     id="an empty label value is left out as Prometheus leaves it out"),
    ],
)  # fmt: skip
def test_series_prefixes_parse_into_label_sets(prefix: bytes, labels: tuple[tuple[str, str], ...]) -> None:
    assert parse_series(prefix) == labels


def test_an_aborted_block_leaves_nothing_in_the_data_directory(tmp_path: Path) -> None:
    sink = BlockSink(tmp_path / "data")
    sink.begin()
    stamps = 1_700_000_000_000 + 15_000 * np.arange(10, dtype=np.int64)
    sink.add(SeriesGroup([b'a{x="1"}', b'a{x="2"}'], np.ones((2, 10)), decimals=0), stamps)
    sink.flush(stamps)
    sink.abort()
    assert list((tmp_path / "data").iterdir()) == []


def test_a_finished_block_holds_every_series_gathered_across_flushes(tmp_path: Path) -> None:
    sink = BlockSink(tmp_path / "data")
    sink.begin()
    for start in (0, 10):
        stamps = 1_700_000_000_000 + 15_000 * (start + np.arange(10, dtype=np.int64))
        sink.add(SeriesGroup([b'a{x="1"}', b'a{x="2"}'], np.arange(20.0).reshape(2, 10) + start, decimals=0), stamps)
        sink.flush(stamps)
    sink.end()
    sink.close()
    (block,) = sink.blocks
    lines = _dump(tmp_path / "data")
    assert len(lines) == 40 and block.parent == tmp_path / "data"
