"""Prometheus 2.42 TSDB blocks written directly from numpy-encoded chunks (fleetsim.tsdb_xor).

A block is a directory <ULID>/ holding chunks/000001.., index, meta.json and tombstones, laid out the way
Prometheus' own writer lays them out, so a fresh Prometheus, `promtool tsdb dump/analyze` and its later
compactions take it as one of their own:

- chunks: a segment starts with magic 0x85BD40DD, version 1 and 3 zero bytes; records are uvarint(len) +
  encoding byte + chunk + CRC32C. A chunk reference is (segment index, 0 for 000001) << 32 | offset. Records
  go to the segment as `add` receives them, so memory holds only references and per-series metadata; a new
  segment starts before one would pass 512 MiB.
- index, format v2, as promtool 2.42 writes it for the same chunks: built by fleetsim.tsdb_index from the
  label sets and the chunk references and times collected here.
- meta.json: level 1, sources [ulid], maxTime = last sample + 1 (exclusive); tombstones: none.
The block is assembled in <ULID>.tmp-for-creation (Prometheus deletes such leftovers when it starts),
fsynced, then renamed into place; a failure removes it.

Costs: `add` writes the bytes and spends ~10 us per new series; `close` builds the index in ~20 us per
series plus ~0.3 us per chunk (mostly Python: it holds the GIL) and fsyncs. The index is paid once per
block, so fewer, longer blocks (several `add` calls each) are cheaper than many short ones.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Self

import crc32c
import numpy as np

from fleetsim.tsdb_index import Labels, build_index
from fleetsim.tsdb_xor import CHUNK_ENCODING_XOR, EncodedChunks, encode_xor, uvarint, uvarint_sizes

__all__ = ["SEGMENT_MAX_BYTES", "BlockWriter", "Labels", "new_ulid", "write_block"]

SEGMENT_MAX_BYTES = 512 * 2**20
_SEGMENT_HEADER = struct.pack(">IB3x", 0x85BD40DD, 1)
_TOMBSTONES = struct.pack(">IBI", 0x0130BA30, 1, crc32c.crc32c(b""))
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_ulid(ms: int | None = None) -> str:
    """26 Crockford base32 characters: 48-bit millisecond time, then 80 random bits."""
    value = ((int(time.time() * 1000) if ms is None else ms) << 80) | int.from_bytes(os.urandom(10), "big")
    return "".join(_CROCKFORD[(value >> (5 * i)) & 31] for i in reversed(range(26)))


class BlockWriter:
    """One block, fed by `add` (series x chunks, in time order per series), committed by `close`.

    Not thread-safe: call it from one thread (encode in workers, add here). As a context manager it
    aborts on an exception and closes (commits) otherwise."""

    def __init__(self, data_dir: Path, *, ulid: str | None = None, segment_bytes: int = SEGMENT_MAX_BYTES) -> None:
        self.ulid = ulid or new_ulid()
        if len(self.ulid) != 26 or set(self.ulid) - set(_CROCKFORD):
            raise ValueError(f"not a ULID: {self.ulid!r}")
        if not len(_SEGMENT_HEADER) < segment_bytes < 2**32:
            raise ValueError("segment_bytes must leave room for records and keep offsets below 2^32")
        self.path = Path(data_dir) / self.ulid
        self._tmp = Path(data_dir) / f"{self.ulid}.tmp-for-creation"
        if self.path.exists():
            raise FileExistsError(f"block {self.path} already exists")
        (self._tmp / "chunks").mkdir(parents=True)
        self._segment_bytes = segment_bytes
        self._segments = 0
        self._file: BinaryIO | None = None
        self._pos = 0
        self._ids: dict[Labels, int] = {}
        self._last_maxt = np.zeros(0, np.int64)
        self._metas: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # sids, mint, maxt, refs
        self._samples = 0
        self._chunks = 0
        self._done = False

    @property
    def num_series(self) -> int:
        return len(self._ids)

    @property
    def num_samples(self) -> int:
        return self._samples

    @property
    def num_chunks(self) -> int:
        return self._chunks

    def add(self, series: Sequence[Labels], encoded: EncodedChunks) -> None:
        """Append the chunks of `series` (row i of `encoded` is series[i]). A series seen before must
        continue after its last chunk; on ValueError nothing was written and the writer stays usable (after
        an OSError, abort)."""
        if self._done:
            raise ValueError("the block writer is closed")
        starts, ends = np.asarray(encoded.starts, np.int64), np.asarray(encoded.ends, np.int64)
        if starts.ndim != 2 or starts.shape[0] != len(series) or ends.shape != starts.shape:
            raise ValueError(f"{len(series)} series but chunk offsets of shape {starts.shape} / {ends.shape}")
        mint = np.broadcast_to(np.asarray(encoded.mint, np.int64), starts.shape)
        maxt = np.broadcast_to(np.asarray(encoded.maxt, np.int64), starts.shape)
        if starts.size == 0:
            return
        sids, new = self._lookup(series)
        self._check_times(series, sids, mint, maxt)
        data, rec_start, rec_end = _records(encoded, starts, ends)
        refs = self._write_records(data, rec_start, rec_end).reshape(starts.shape)
        for labels in new:
            self._ids[labels] = len(self._ids)
        if len(self._ids) > len(self._last_maxt):
            grown = np.full(max(len(self._ids), 2 * len(self._last_maxt)), np.iinfo(np.int64).min, np.int64)
            grown[: len(self._last_maxt)] = self._last_maxt
            self._last_maxt = grown
        self._last_maxt[sids] = maxt[:, -1]
        self._metas.append((sids, mint, maxt, refs))
        self._samples += int(encoded.samples)
        self._chunks += starts.size

    def close(self) -> Path:
        """Write index, meta.json and tombstones, fsync, rename into place; returns the block directory."""
        if self._done:
            raise ValueError("the block writer is closed")
        try:
            if not self._ids:
                raise ValueError("an empty block: nothing was added")
            self._finish_segment()
            sids = np.concatenate([m[0].repeat(m[1].shape[1]) for m in self._metas])
            mint, maxt, refs = (np.concatenate([m[k].ravel() for m in self._metas]) for k in (1, 2, 3))
            _write_file(self._tmp / "index", build_index(list(self._ids), sids, mint, maxt, refs))
            _write_file(self._tmp / "meta.json", self._meta(int(mint.min()), int(maxt.max()) + 1).encode())
            _write_file(self._tmp / "tombstones", _TOMBSTONES)
            _fsync_dir(self._tmp / "chunks")
            _fsync_dir(self._tmp)
            os.rename(self._tmp, self.path)
            _fsync_dir(self.path.parent)
        except BaseException:
            self.abort()
            raise
        self._done = True
        return self.path

    def abort(self) -> None:
        """Drop everything written so far; the writer is closed afterwards."""
        self._done = True
        if self._file is not None:
            self._file.close()
            self._file = None
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is not None:
            self.abort()
        elif not self._done:
            self.close()

    def _lookup(self, series: Sequence[Labels]) -> tuple[np.ndarray, list[Labels]]:
        """Series ids (new series numbered after the known ones) and the new label sets, validated."""
        new: dict[Labels, int] = {}
        ids = []
        for labels in series:
            sid = self._ids.get(labels)
            if sid is None:
                sid = new.get(labels)
                if sid is None:
                    _check_labels(labels)
                    sid = new[labels] = len(self._ids) + len(new)
            ids.append(sid)
        if len(set(ids)) < len(ids):
            twice = next(i for i, sid in enumerate(ids) if sid in ids[:i])  # quadratic, but only when refusing
            raise ValueError(f"series {_show(series[twice])} appears twice in one add")
        return np.array(ids, np.int64), list(new)

    def _check_times(self, series: Sequence[Labels], sids: np.ndarray, mint: np.ndarray, maxt: np.ndarray) -> None:
        last = np.full(len(sids), np.iinfo(np.int64).min, np.int64)
        known = sids < len(self._last_maxt)
        last[known] = self._last_maxt[sids[known]]
        bad = (mint[:, 0] <= last) | (maxt < mint).any(axis=1) | (mint[:, 1:] <= maxt[:, :-1]).any(axis=1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"chunks of {_show(series[i])} overlap or go back in time (previous maxt {last[i]}, "
                f"chunk times {mint[i].tolist()}..{maxt[i].tolist()})"
            )

    def _write_records(self, data: memoryview, rec_start: np.ndarray, rec_end: np.ndarray) -> np.ndarray:
        """Append the records (contiguous in `data`) to the segments, cutting a new one when the current
        would pass the size limit; returns each record's chunk reference."""
        refs = np.empty(len(rec_start), np.int64)
        i = 0
        while i < len(rec_start):
            if self._file is None:
                self._cut()
            room = self._segment_bytes - self._pos
            j = int(np.searchsorted(rec_end, rec_start[i] + room, side="right"))
            if j == i and self._pos > len(_SEGMENT_HEADER):
                self._cut()
                continue
            j = max(j, i + 1)  # a record bigger than a whole segment still goes into one (as Prometheus does)
            assert self._file is not None
            self._file.write(data[rec_start[i] : rec_end[j - 1]])
            refs[i:j] = ((self._segments - 1) << 32) | (self._pos + rec_start[i:j] - rec_start[i])
            self._pos += int(rec_end[j - 1] - rec_start[i])
            i = j
        return refs

    def _cut(self) -> None:
        self._finish_segment()
        self._segments += 1
        self._file = open(self._tmp / "chunks" / f"{self._segments:06d}", "wb")  # noqa: SIM115 - closed in _finish
        self._file.write(_SEGMENT_HEADER)
        self._pos = len(_SEGMENT_HEADER)

    def _finish_segment(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None

    def _meta(self, min_time: int, max_time: int) -> str:
        stats = {"numSamples": self._samples, "numSeries": len(self._ids), "numChunks": self._chunks}
        compaction = {"level": 1, "sources": [self.ulid]}
        meta = {"ulid": self.ulid, "minTime": min_time, "maxTime": max_time, "stats": stats}
        return json.dumps(meta | {"compaction": compaction, "version": 1}, indent="\t")


def write_block(data_dir: Path, series: Sequence[Labels], timestamps_ms: np.ndarray, values: np.ndarray) -> Path:
    """One block of (S, T) values at (T,) timestamps; returns its directory."""
    with BlockWriter(data_dir) as writer:
        writer.add(series, encode_xor(timestamps_ms, values))
        return writer.close()


def _check_labels(labels: Labels) -> None:
    names = [pair[0] for pair in labels]
    if not labels or not all(type(n) is str and type(v) is str and n and v for n, v in labels):
        raise ValueError(f"series {labels!r}: labels must be non-empty (name, value) strings (empty means absent)")
    if names != sorted(set(names)):
        raise ValueError(f"series {_show(labels)}: label names must be unique and sorted")


def _show(labels: Labels) -> str:
    return "{" + ", ".join(f"{n}={v!r}" for n, v in labels) + "}"


def _records(encoded: EncodedChunks, starts: np.ndarray, ends: np.ndarray) -> tuple[memoryview, np.ndarray, np.ndarray]:
    """Segment records of all chunks, row by row, as (bytes, record starts, record ends). encode_xor's
    output already is that (checked by its lengths); other chunk data is framed here, chunk by chunk."""
    raw = encoded.data
    data = (np.ascontiguousarray(raw).view(np.uint8).data if isinstance(raw, np.ndarray) else memoryview(raw)).cast("B")
    starts, ends = starts.ravel(), ends.ravel()
    rec_start = starts - uvarint_sizes(ends - starts) - 1
    if encoded.records:
        contiguous = rec_start[0] == 0 and ends[-1] + 4 == len(data) and bool(np.all(rec_start[1:] == ends[:-1] + 4))
        if not contiguous:
            raise ValueError("EncodedChunks(records=True) whose records are not laid end to end")
        return data, rec_start, ends + 4
    out = bytearray()
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        body = bytes([CHUNK_ENCODING_XOR]) + data[a:b].tobytes()
        out += uvarint(b - a) + body + crc32c.crc32c(body).to_bytes(4, "big")
    framed = ends - starts + uvarint_sizes(ends - starts) + 5
    rec_end = np.cumsum(framed)
    return memoryview(out), rec_end - framed, rec_end


def _write_file(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
