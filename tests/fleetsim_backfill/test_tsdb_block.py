"""Blocks written directly (fleetsim.tsdb_xor + fleetsim.tsdb_block) read back exactly: through a reference
XOR decoder, `promtool tsdb dump` / `analyze`, byte for byte against promtool's own block, and through a
real Prometheus 2.42 serving two adjacent blocks."""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import platform
import re
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import crc32c
import httpx
import numpy as np
import pytest

from fleetsim.tsdb_block import BlockWriter, Labels, write_block
from fleetsim.tsdb_xor import EncodedChunks, encode_xor, recycle_freed_memory, uvarint
from tests.conftest import PrometheusFactory

T0 = 1_714_521_600_000  # 2024-05-01 00:00 UTC, a multiple of 2 h
STEP = 15_000
RNG = np.random.default_rng(20240501)
Dump = dict[Labels, list[tuple[int, float]]]


def steps(n: int, start: int = T0) -> np.ndarray:
    return start + STEP * np.arange(n, dtype=np.int64)


def names(n: int, metric: str = "m") -> list[Labels]:
    return [(("__name__", metric), ("pod", f"p{i}")) for i in range(n)]


def counters(n: int, t: int) -> np.ndarray:
    return np.cumsum(RNG.poisson(3, (n, t)), axis=1).astype(float)


def gauges(n: int, t: int) -> np.ndarray:
    return np.round(RNG.normal(50, 20, (n, t)), 3) + np.round(RNG.random((n, t)), 4)


# -- reading back ------------------------------------------------------------------------------------------


class _Bits:
    def __init__(self, data: bytes, byte: int) -> None:
        self.data, self.pos = data, 8 * byte

    def read(self, n: int) -> int:
        value = 0
        for _ in range(n):
            value = (value << 1) | (self.data[self.pos >> 3] >> (7 - (self.pos & 7)) & 1)
            self.pos += 1
        return value


def _read_uvarint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        value |= (data[i] & 0x7F) << shift
        shift += 7
        i += 1
        if data[i - 1] < 0x80:
            return value, i


def decode_chunk(chunk: bytes) -> list[tuple[int, int]]:
    """(timestamp, float bits) of an XOR chunk, read the way chunkenc's iterator reads it."""
    count = struct.unpack(">H", chunk[:2])[0]
    zigzag, i = _read_uvarint(chunk, 2)
    t, v = (zigzag >> 1) ^ -(zigzag & 1), struct.unpack(">Q", chunk[i : i + 8])[0]
    out = [(t, v)]
    delta, i = _read_uvarint(chunk, i + 8) if count > 1 else (0, i)
    bits, lead, trail = _Bits(chunk, i), 0, 0
    for k in range(1, count):
        if k > 1:
            ones = 0
            while ones < 4 and bits.read(1):
                ones += 1
            width = (0, 14, 17, 20, 64)[ones]
            limit = (0, 1 << 13, 1 << 16, 1 << 19, (1 << 63) - 1)[ones]  # bitRange's asymmetric bounds
            dod = bits.read(width)
            delta += dod - (1 << width) if dod > limit else dod
        t += delta
        if bits.read(1):
            if bits.read(1):
                lead, sig = bits.read(5), bits.read(6) or 64
                trail = 64 - lead - sig
            v ^= bits.read(64 - lead - trail) << trail
        out.append((t, v))
    return out


def decoded(encoded: EncodedChunks) -> list[list[tuple[int, int]]]:
    data = bytes(encoded.data)
    return [
        [s for a, b in zip(starts, ends, strict=True) for s in decode_chunk(data[a:b])]
        for starts, ends in zip(encoded.starts.tolist(), encoded.ends.tolist(), strict=True)
    ]


def dump(data_dir: Path) -> Dump:
    """promtool tsdb dump of a data directory (a copy: dump needs a wal/ and adds chunks_head/)."""
    work = data_dir.parent / f"{data_dir.name}-dump"
    shutil.copytree(data_dir, work)
    (work / "wal").mkdir(exist_ok=True)
    text = subprocess.run(["promtool", "tsdb", "dump", str(work)], check=True, capture_output=True, text=True).stdout
    shutil.rmtree(work)
    out: Dump = {}
    for line in text.splitlines():
        labels, value, stamp = line.rsplit(" ", 2)
        pairs = re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', labels)
        key = tuple((n, ast.literal_eval(f'"{v}"')) for n, v in pairs)
        out.setdefault(key, []).append((int(stamp), float(value)))
    return out


def expected(series: list[Labels], ts: np.ndarray, values: np.ndarray) -> Dump:
    return {s: list(zip(ts.tolist(), row.tolist(), strict=True)) for s, row in zip(series, values, strict=True)}


def same(got: Dump, want: Dump) -> bool:
    """Equal series, times and float bits (any NaN equals any NaN: dump prints them all as NaN)."""

    def bits(v: float) -> int | str:
        return "nan" if math.isnan(v) else struct.unpack(">Q", struct.pack(">d", v))[0]

    def norm(d: Dump) -> dict[Labels, list[tuple[int, int | str]]]:
        return {k: [(t, bits(v)) for t, v in rows] for k, rows in d.items()}

    return norm(got) == norm(want)


# -- the encoder alone ---------------------------------------------------------------------------------------

ENCODER_CASES = [
    pytest.param(steps(1440), np.full((3, 1440), 7.0), 120, id="constants round-trip"),
    pytest.param(steps(1440), counters(20, 1440), 120, id="counters rising by small integers"),
    pytest.param(steps(1440), gauges(20, 1440), 120, id="gauges with three and four decimals"),
    pytest.param(steps(300), RNG.choice([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -1.7e308], (7, 300)), 120,
                 id="special floats keep their exact bits"),
    pytest.param(T0 + np.cumsum(RNG.choice([1, 15_000, 2**13, 2**16, 2**19, 2**22, 2**40], 500)), gauges(4, 500),
                 120, id="timestamp gaps needing every delta-of-delta width"),
    pytest.param(np.array([-(2**62), -5, 0, 2**62]), gauges(2, 4), 120,
                 id="negative and huge timestamps need 10-byte varints and 68-bit gaps"),
    pytest.param(steps(241), counters(3, 241), 7, id="any chunk size, a short last chunk included"),
    pytest.param(steps(50), counters(3, 50), 1, id="one sample per chunk"),
]  # fmt: skip


@pytest.mark.parametrize(("ts", "values", "spc"), ENCODER_CASES)
def test_encoded_chunks_decode_to_the_input(ts: np.ndarray, values: np.ndarray, spc: int) -> None:
    encoded = encode_xor(ts, values, spc)
    assert decoded(encoded) == [list(zip(ts.tolist(), row.view(np.uint64).tolist(), strict=True)) for row in values]
    assert encoded.mint[:, 0].tolist() == [ts[0]] * len(values)
    assert encoded.maxt[:, -1].tolist() == [ts[-1]] * len(values)
    assert encoded.samples == values.size


def test_encoded_data_is_segment_records_end_to_end() -> None:
    encoded = encode_xor(steps(300), gauges(5, 300))
    data, pos = bytes(encoded.data), 0
    for start, end in zip(encoded.starts.ravel().tolist(), encoded.ends.ravel().tolist(), strict=True):
        assert data[pos:start] == uvarint(end - start) + b"\x01"
        assert data[end : end + 4] == crc32c.crc32c(data[start - 1 : end]).to_bytes(4, "big")
        pos = end + 4
    assert pos == len(data)


REFUSED_INPUT = [
    pytest.param([1, 1], (1, 2), 120, "strictly increasing", id="repeated timestamps are refused"),
    pytest.param([2, 1], (1, 2), 120, "strictly increasing", id="timestamps going back are refused"),
    pytest.param([1.0, 2.0], (1, 2), 120, "integer", id="float timestamps are refused"),
    pytest.param([1, 2], (1, 3), 120, "values must be", id="a values/time mismatch is refused"),
    pytest.param([1, 2], (1, 2), 65536, "samples_per_chunk", id="chunks over 65535 samples are refused"),
]


@pytest.mark.parametrize(("ts", "shape", "spc", "message"), REFUSED_INPUT)
def test_encoder_refuses_input_it_cannot_encode(
    ts: list[float], shape: tuple[int, int], spc: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        encode_xor(np.array(ts), np.zeros(shape), spc)


def test_recycling_freed_memory_takes_effect_and_changes_no_byte() -> None:
    ts, values = steps(500), gauges(70, 500)
    before = bytes(encode_xor(ts, values).data)
    assert recycle_freed_memory() is (platform.libc_ver()[0] == "glibc")
    assert bytes(encode_xor(ts, values).data) == before


# -- blocks read back by promtool ----------------------------------------------------------------------------

QUOTED = [(("__name__", "m"), ("path", v)) for v in ('say "hi"', "back\\slash", "héllo wörld ✓", "tab\there", "}, x")]
MANY = [(("__name__", f"m{i % 3}"), ("le", str(i % 7)), ("pod", f"pod-{i:04d}")) for i in range(300)]

ROUND_TRIPS = [
    pytest.param(names(2), steps(240), np.full((2, 240), 1.5), id="a constant series round-trips exactly"),
    pytest.param(names(5), steps(1440), counters(5, 1440), id="a counter that rises every step round-trips exactly"),
    pytest.param(names(5), steps(1440), gauges(5, 1440), id="gauges with decimals round-trip exactly"),
    pytest.param(names(2), steps(200), np.where(RNG.random((2, 200)) < 0.2, np.nan, -gauges(2, 200)),
                 id="NaN and negative numbers round-trip"),
    pytest.param(names(3), T0 + np.cumsum(RNG.choice([1, 999, 15_000, 2**20, 2**30], 400)), gauges(3, 400),
                 id="irregular timestamps with large gaps round-trip"),
    pytest.param(names(3), steps(1), gauges(3, 1), id="a single sample round-trips"),
    pytest.param(names(2), steps(120), counters(2, 120), id="exactly 120 samples make one chunk"),
    pytest.param(names(2), steps(121), counters(2, 121), id="121 samples make two chunks"),
    pytest.param(names(2), steps(241), counters(2, 241), id="241 samples make three chunks"),
    pytest.param(MANY, steps(130), counters(300, 130), id="many series with many label values round-trip"),
    pytest.param(QUOTED, steps(3), gauges(5, 3), id="UTF-8, quotes and backslashes in label values round-trip"),
]  # fmt: skip


@pytest.mark.parametrize(("series", "ts", "values"), ROUND_TRIPS)
def test_promtool_dumps_every_sample_written(
    tmp_path: Path, series: list[Labels], ts: np.ndarray, values: np.ndarray
) -> None:
    block = write_block(tmp_path / "data", series, ts, values)
    assert same(dump(tmp_path / "data"), expected(series, ts, values))
    meta = json.loads((block / "meta.json").read_text())
    chunks = len(series) * -(-len(ts) // 120)
    assert meta["stats"] == {"numSamples": values.size, "numSeries": len(series), "numChunks": chunks}
    assert (meta["minTime"], meta["maxTime"]) == (ts[0], ts[-1] + 1)


def test_several_adds_append_each_series_in_time_order(tmp_path: Path) -> None:
    series = names(4)
    want: Dump = {}
    with BlockWriter(tmp_path / "data") as writer:
        for window, rows in enumerate(([0, 1, 2, 3], [3, 1], [0, 2, 1, 3])):
            ts, values = steps(150, T0 + window * 150 * STEP), counters(len(rows), 150)
            writer.add([series[i] for i in rows], encode_xor(ts, values))
            for i, row in zip(rows, values, strict=True):
                want.setdefault(series[i], []).extend(zip(ts.tolist(), row.tolist(), strict=True))
        assert (writer.num_series, writer.num_samples, writer.num_chunks) == (4, 10 * 150, 10 * 2)
    assert same(dump(tmp_path / "data"), want)


def test_chunks_spread_over_several_segment_files_when_one_is_full(tmp_path: Path) -> None:
    series, ts, values = names(40), steps(480), gauges(40, 480)
    with BlockWriter(tmp_path / "data", segment_bytes=20_000) as writer:
        writer.add(series[:20], encode_xor(ts, values[:20]))
        writer.add(series[20:], encode_xor(ts, values[20:]))
        block = writer.close()
    segments = sorted(p.name for p in (block / "chunks").iterdir())
    assert len(segments) > 5 and segments[:2] == ["000001", "000002"]
    assert all(p.stat().st_size <= 20_000 for p in (block / "chunks").iterdir())
    assert same(dump(tmp_path / "data"), expected(series, ts, values))


def test_chunks_framed_by_the_writer_read_back(tmp_path: Path) -> None:
    ts, values = steps(250), gauges(3, 250)
    records = encode_xor(ts, values)
    data = bytes(records.data)
    loose = b"".join(b"gap" + data[a:b] for a, b in zip(records.starts.ravel(), records.ends.ravel(), strict=True))
    lengths = (records.ends - records.starts).ravel()
    starts = (np.cumsum(lengths + 3) - lengths).reshape(records.starts.shape)
    chunks = EncodedChunks(loose, starts, starts + lengths.reshape(starts.shape), records.mint, records.maxt, 750)
    with BlockWriter(tmp_path / "data") as writer:
        writer.add(names(3), chunks)
    assert same(dump(tmp_path / "data"), expected(names(3), ts, values))


def om_line(series: Labels, t: int, v: float) -> str:
    """An OpenMetrics sample line (label values escaped as OpenMetrics says: backslash, quote, newline)."""
    escaped = (value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") for _, value in series[1:])
    pairs = ",".join(f'{name}="{value}"' for (name, _), value in zip(series[1:], escaped, strict=True))
    return f"{series[0][1]}{{{pairs}}} {v} {t / 1000:.3f}\n"


def test_a_block_of_constants_is_byte_identical_to_promtools_own(tmp_path: Path) -> None:
    series = sorted([*MANY[:40], *QUOTED])
    ts, values = steps(100), np.repeat(RNG.integers(-9, 9, (len(series), 1)).astype(float), 100, axis=1)
    text = "".join(
        om_line(s, t, v)
        for s, row in zip(series, values, strict=True)
        for t, v in zip(ts.tolist(), row.tolist(), strict=True)
    )
    (tmp_path / "in.om").write_text(text + "# EOF\n")
    promtool = ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(tmp_path / "in.om"), str(tmp_path / "ref")]
    subprocess.run(promtool, check=True, capture_output=True)
    theirs = next((tmp_path / "ref").iterdir())
    ours = write_block(tmp_path / "ours", series, ts, values)
    for name in ("index", "chunks/000001", "tombstones"):
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name
    meta = {k: v for k, v in json.loads((ours / "meta.json").read_text()).items() if k not in ("ulid", "compaction")}
    assert meta == {k: v for k, v in json.loads((theirs / "meta.json").read_text()).items() if k in meta}


def test_promtool_analyze_reads_the_block(tmp_path: Path) -> None:
    write_block(tmp_path / "data", MANY, steps(300), counters(300, 300))
    (tmp_path / "data" / "wal").mkdir()
    out = subprocess.run(["promtool", "tsdb", "analyze", str(tmp_path / "data")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "Series: 300" in out.stdout


# -- refusals and clean-up -----------------------------------------------------------------------------------


def padded(encoded: EncodedChunks) -> EncodedChunks:
    return dataclasses.replace(encoded, data=bytes(encoded.data) + b"\x00")


def _after_one_window(writer: BlockWriter) -> None:
    writer.add(names(2), encode_xor(steps(10), counters(2, 10)))


BAD_ADDS = [
    pytest.param(lambda w: w.add(names(2), encode_xor(steps(10), counters(2, 10))), "overlap",
                 id="the same window again is refused"),
    pytest.param(lambda w: w.add(names(1), encode_xor(steps(10, T0 + 9 * STEP), counters(1, 10))), "overlap",
                 id="a chunk starting at the series' last sample is refused"),
    pytest.param(lambda w: w.add(names(1), encode_xor(steps(3, T0 - STEP * 5), counters(1, 3))), "overlap",
                 id="a chunk before the series' last chunk is refused"),
    pytest.param(lambda w: w.add(names(1) * 2, encode_xor(steps(3, T0 * 2), counters(2, 3))), "twice",
                 id="one series twice in one add is refused"),
    pytest.param(lambda w: w.add(names(4)[3:] * 2, encode_xor(steps(3, T0 * 2), counters(2, 3))), "twice",
                 id="a new series twice in one add is refused"),
    pytest.param(lambda w: w.add([(("pod", "x"), ("__name__", "m"))], encode_xor(steps(3), counters(1, 3))),
                 "sorted", id="unsorted label names are refused"),
    pytest.param(lambda w: w.add([(("__name__", "m"), ("pod", ""))], encode_xor(steps(3), counters(1, 3))),
                 "non-empty", id="an empty label value is refused"),
    pytest.param(lambda w: w.add(names(3), encode_xor(steps(3, T0 * 2), counters(2, 3))), "series but",
                 id="more series than rows is refused"),
    pytest.param(lambda w: w.add(names(1), padded(encode_xor(steps(3, T0 * 2), counters(1, 3)))), "end to end",
                 id="records=True data with bytes between records is refused"),
]  # fmt: skip


@pytest.mark.parametrize(("bad_add", "message"), BAD_ADDS)
def test_a_bad_add_is_refused_and_leaves_the_writer_usable(tmp_path: Path, bad_add: Any, message: str) -> None:
    writer = BlockWriter(tmp_path / "data")
    _after_one_window(writer)
    with pytest.raises(ValueError, match=message):
        bad_add(writer)
    writer.add(names(3), encode_xor(steps(10, T0 + 10 * STEP), counters(3, 10)))
    writer.close()
    assert [len(rows) for rows in dump(tmp_path / "data").values()] == [20, 20, 10]


def test_no_block_is_left_behind_on_an_error_or_an_empty_close(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with pytest.raises(RuntimeError), BlockWriter(data) as writer:
        _after_one_window(writer)
        raise RuntimeError("model failed")
    with pytest.raises(ValueError, match="empty"):
        BlockWriter(data).close()
    assert list(data.iterdir()) == []


# -- a real Prometheus -----------------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.slow
def test_prometheus_serves_two_adjacent_blocks_exactly(tmp_path: Path, prometheus_factory: PrometheusFactory) -> None:
    data, window = tmp_path / "data", 480  # two 2-hour blocks at 15 s
    series = [(("__name__", "vllm:num_requests"), ("instance", f"10.0.0.{i}:8000"), ("model", "m")) for i in range(6)]
    ts, values = steps(2 * window), np.vstack([counters(3, 2 * window), gauges(3, 2 * window)])
    for part in (slice(0, window), slice(window, 2 * window)):
        write_block(data, series, ts[part], values[:, part])
    prom = prometheus_factory(data_dir=data)
    with httpx.Client(base_url=prom.url, timeout=30) as client:
        params = {"query": "vllm:num_requests", "start": ts[0] / 1000, "end": ts[-1] / 1000, "step": STEP / 1000}
        body = client.get("/api/v1/query_range", params=params).json()
        got = {
            tuple(sorted(r["metric"].items())): [(round(t * 1000), float(v)) for t, v in r["values"]]
            for r in body["data"]["result"]
        }
        assert same(got, expected(series, ts, values))
        listed = client.get("/api/v1/series", params={"match[]": "vllm:num_requests"}).json()["data"]
        assert sorted(tuple(sorted(s.items())) for s in listed) == sorted(series)
        instances = client.get("/api/v1/label/instance/values").json()["data"]
        assert instances == sorted(dict(s)["instance"] for s in series)
