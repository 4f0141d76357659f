"""Backfill: the OpenMetrics writer's rules, the harness's direct block writer, and samples read back."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest

from fleetsim.text_blocks import TextBlockError, write_text_blocks
from fleetsim.tsdb import OpenMetricsError, OpenMetricsWriter, format_value
from tests.conftest import BackfillFactory
from tests.harness.stack import api_query

T0 = 1_790_000_000  # 2026-09-22: well inside 60 days of retention, counted back from the newest block


def _text(build: object) -> str:
    out = io.StringIO()
    with OpenMetricsWriter(out) as w:
        build(w)  # type: ignore[operator]
    return out.getvalue()


def test_counter_family_writes_total_samples_and_ends_with_eof() -> None:
    def build(w: OpenMetricsWriter) -> None:
        w.family("vllm:request_success", "counter", 'Finished "requests".\nAll reasons.')
        w.sample("vllm:request_success_total", {"finished_reason": "stop", "model_name": "m"}, 3, T0)

    assert _text(build).splitlines() == [
        '# HELP vllm:request_success Finished "requests".\\nAll reasons.',
        "# TYPE vllm:request_success counter",
        f'vllm:request_success_total{{finished_reason="stop",model_name="m"}} 3.0 {T0}',
        "# EOF",
    ]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        pytest.param(lambda w: w.family("foo_total", "counter"), "without _total",
                     id="a counter family named with _total is refused"),
        pytest.param(lambda w: (w.family("c", "counter"), w.sample("c", {}, 1, T0)), "samples are named c_total",
                     id="a counter sample without _total is refused"),
        pytest.param(lambda w: (w.sample("a", {}, 1, T0), w.sample("a", {}, 2, T0)), "not after",
                     id="a repeated timestamp is refused (promtool would drop it silently)"),
        pytest.param(lambda w: (w.sample("a", {}, 1, T0 + 60), w.sample("a", {}, 2, T0)), "not after",
                     id="a timestamp going back is refused"),
        pytest.param(lambda w: (w.sample("a", {}, 1, T0), w.sample("b", {}, 1, T0), w.sample("a", {}, 1, T0 + 1)),
                     "interleaving", id="returning to a finished family is refused"),
        pytest.param(lambda w: (w.family("h", "histogram"), w.sample("h_bucket", {}, 1, T0)), "'le' label",
                     id="a histogram bucket without le is refused"),
        pytest.param(lambda w: w.sample("a", {"bad-name": "x"}, 1, T0), "label name",
                     id="an invalid label name is refused"),
        pytest.param(lambda w: w.sample("9lives", {}, 1, T0), "metric name", id="an invalid metric name is refused"),
    ],
)  # fmt: skip
def test_writer_refuses_what_openmetrics_or_promtool_would_not_take(build: object, message: str) -> None:
    with pytest.raises(OpenMetricsError, match=message):
        _text(build)


def test_series_of_one_family_may_interleave_in_time() -> None:
    def build(w: OpenMetricsWriter) -> None:
        for t in (T0, T0 + 15):
            for pod in ("a", "b"):
                w.sample("g", {"pod": pod}, 1, t)

    assert _text(build).count("g{pod=") == 4


@pytest.mark.parametrize(
    ("value", "text"),
    [
        pytest.param(math.nan, "NaN", id="NaN is spelt NaN"),
        pytest.param(math.inf, "+Inf", id="positive infinity is +Inf"),
        pytest.param(-math.inf, "-Inf", id="negative infinity is -Inf"),
        pytest.param(12, "12.0", id="integers print as Python floats, like prometheus_client"),
        pytest.param(1.8432e6, "1843200.0", id="large floats round-trip"),
    ],
)
def test_values_are_formatted_for_openmetrics(value: float, text: str) -> None:
    assert format_value(value) == text


def test_a_failed_with_block_removes_the_partial_file(tmp_path: Path) -> None:
    path = tmp_path / "partial.om"
    with pytest.raises(RuntimeError), OpenMetricsWriter(path) as w:
        w.sample("a", {}, 1, T0)
        raise RuntimeError("producer failed")
    assert not path.exists()


@pytest.mark.integration
def test_backfilled_samples_read_back_through_the_api(backfilled_prometheus: BackfillFactory) -> None:
    def build(w: OpenMetricsWriter) -> None:
        w.family("vllm:num_requests_running", "gauge")
        for i in range(5):
            w.sample("vllm:num_requests_running", {"model_name": 'm"1\\', "pod": "p"}, i, T0 + 15 * i)
        w.family("vllm:generation_tokens", "counter")
        for i in range(5):
            w.sample("vllm:generation_tokens_total", {"model_name": "m"}, 100 * i, T0 + 15 * i)

    prom = backfilled_prometheus(_text(build))
    running = api_query(prom.url, "vllm:num_requests_running", at=T0 + 30)
    assert running[0]["metric"]["model_name"] == 'm"1\\'
    assert running[0]["value"][1] == "2"
    rate = api_query(prom.url, "rate(vllm:generation_tokens_total[1m])", at=T0 + 60)
    assert float(rate[0]["value"][1]) == pytest.approx(100 / 15)


@pytest.mark.integration
def test_overlapping_backfills_are_both_served(tmp_path: Path, backfilled_prometheus: BackfillFactory) -> None:
    data = tmp_path / "data"
    write_text_blocks(f"a 1 {T0}\na 2 {T0 + 60}\n", data)
    write_text_blocks([f"b 5 {T0 + 30}\n", "# EOF\n"], data)
    prom = backfilled_prometheus(f"c 9 {T0 + 15}\n", data_dir=data)
    got = {r["metric"]["__name__"]: r["value"][1] for r in api_query(prom.url, "{__name__=~'a|b|c'}", T0 + 60)}
    assert got == {"a": "2", "b": "5", "c": "9"}


def test_a_sample_without_a_timestamp_is_refused_naming_its_line(tmp_path: Path) -> None:
    with pytest.raises(TextBlockError, match="line 2: expected"):
        write_text_blocks(f"a 1 {T0}\na 1\n", tmp_path / "data")


def test_samples_land_in_blocks_cut_at_54_hour_boundaries(tmp_path: Path) -> None:
    edge = 194_400 * (T0 // 194_400 + 1)
    blocks = write_text_blocks(f"a 1 {edge - 60}\na 2 {edge}\na 3 {edge + 60}\n", tmp_path / "data")
    counts = [json.loads((b / "meta.json").read_text())["stats"]["numSamples"] for b in blocks]
    assert counts == [1, 2]
