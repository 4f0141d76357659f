"""Trace replay: the Azure CSV and JSONL formats, typed errors with line numbers, and prefix blocks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fleetsim.fleet import Fleet, FleetOptions
from fleetsim.traces import TraceError, TraceReplay, load_trace

from .helpers import START, tiny_plan, total

AZURE = Path("/work/shared/data/traces/AzureLLMInferenceTrace_conv.csv")


@pytest.mark.skipif(not AZURE.exists(), reason="shared trace not present")
def test_the_azure_conversation_trace_loads_with_its_seven_digit_timestamps():
    trace = load_trace(AZURE)
    assert len(trace) == 19_366
    assert trace.offsets[0] == 0.0
    # rows 1-2: 18:15:46.6805900 and 18:15:50.9951690
    assert trace.offsets[1] == pytest.approx(4.314579, abs=1e-6)
    assert np.percentile(trace.prompt_tokens, 50) == pytest.approx(1020, rel=0.02)
    assert trace.hash_ids is None and 3400 < trace.duration < 3600


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("name", "text", "line", "message"),
    [
        pytest.param("a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,10,5\n"
                     "2023-11-16 18:15:47,ten,5", 3, "integers", id="a CSV token count that is not a number"),
        pytest.param("b.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n16/11/2023 18:15,10,5", 2, "TIMESTAMP",
                     id="a CSV timestamp in another format"),
        pytest.param("c.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.1,10", 2, "3 comma",
                     id="a CSV row with a missing field"),
        pytest.param("d.csv", "TIME,In,Out\n", 1, "expected header", id="a CSV with the wrong header"),
        pytest.param("e.jsonl", '{"timestamp": 0, "input_length": 5, "output_length": 3}\n{"timestamp": 1,',
                     2, "not JSON", id="a JSONL line cut short"),
        pytest.param("f.jsonl", '{"timestamp": "now", "input_length": 5, "output_length": 3}', 1, "seconds",
                     id="a JSONL timestamp that is not seconds"),
        pytest.param("g.jsonl", '{"timestamp": 1, "input_length": 5}', 1, "needs keys",
                     id="a JSONL line without output_length"),
        pytest.param("h.jsonl", '{"timestamp": 1, "input_length": 5, "output_length": 3, "hash_ids": ["a"]}', 1,
                     "hash_ids", id="hash_ids that are not integers"),
    ],
)  # fmt: skip
def test_a_malformed_line_is_reported_with_file_and_line(tmp_path, name, text, line, message):
    path = write(tmp_path, name, text)
    with pytest.raises(TraceError, match=message) as err:
        load_trace(path)
    assert err.value.line == line and str(err.value).startswith(f"{path}:{line}: ")


def test_a_missing_trace_is_a_trace_error(tmp_path):
    with pytest.raises(TraceError, match="cannot read"):
        load_trace(tmp_path / "absent.csv")


def jsonl_trace(tmp_path: Path, shared_blocks: int) -> Path:
    """Two requests per second for a minute; each shares `shared_blocks` 512-token blocks, then its own."""
    lines = []
    for i in range(120):
        blocks = [*range(shared_blocks), 1000 + i]
        lines.append(json.dumps({"timestamp": i / 2, "input_length": 512 * len(blocks), "output_length": 50,
                                 "hash_ids": blocks}))  # fmt: skip
    return write(tmp_path, "t.jsonl", "\n".join(lines))


def test_replay_keeps_the_trace_gaps_and_loops(tmp_path):
    trace = load_trace(jsonl_trace(tmp_path, 2))
    replay = TraceReplay(trace, tiny_plan(), START)
    calls = replay.calls(START, START + 120.0, np.random.default_rng(0))
    assert len(calls) == 240  # the 60-second trace plays twice
    assert calls[1].arrival - calls[0].arrival == pytest.approx(0.5)
    assert calls[120].arrival == pytest.approx(START + 60.0)


@pytest.mark.parametrize(
    ("shared", "rate"),
    [pytest.param(3, 3 / 4, id="three shared blocks of four hit once cached"),
     pytest.param(0, 0.0, id="no shared blocks, no hits")],
)  # fmt: skip
def test_trace_hash_ids_drive_prefix_cache_hits(tmp_path, shared, rate):
    plan = tiny_plan(replicas=1)
    trace = load_trace(jsonl_trace(tmp_path, shared))
    fleet = Fleet(plan, START, (), FleetOptions(seed=1), TraceReplay(trace, plan, START))
    fleet.populate()
    fleet.advance_to(START + 60.0)
    hits = total(fleet, "vllm:prefix_cache_hits") / total(fleet, "vllm:prefix_cache_queries")
    assert hits == pytest.approx(rate, abs=0.02)
