"""Backfill written straight into TSDB blocks (`fleetsim.tsdb_block`), no text and no promtool in between.

promtool 2.42 parses about 0.25 M OpenMetrics samples per CPU-second, so four weeks of a dozen replicas
(~750 M samples) would take it three quarters of an hour on two cores; the aggregate model itself produces
them in well under a minute. Here every series of a chunk of history is stacked into one matrix and
encoded as XOR chunks in one call on a worker thread (numpy releases the GIL in its loops; one big call
instead of one per family saves its fixed cost) while the main thread computes the next chunk, and each
block window becomes one block.

The values stored are exactly those the text path stores: the same fixed-point rounding, then the division
by a power of ten, which is correctly rounded like promtool's decimal parse (`tests` compare both paths).
"""

from __future__ import annotations

import re
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np

from fleetsim.backfill_text import SeriesGroup, fixed_point
from fleetsim.tsdb_block import BlockWriter, Labels
from fleetsim.tsdb_xor import EncodedChunks, encode_xor

__all__ = ["BlockSink", "parse_series"]

# Gathered samples that make an encoder call on their own: big enough that a call's fixed cost is nothing,
# small enough that a wide fleet (1,000 replicas are ~400k series) is not stacked into gigabytes at once.
_CALL_SAMPLES = 8_000_000
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
_UNESCAPE = re.compile(r"\\(.)")


def parse_series(prefix: bytes) -> Labels:
    """`name{a="b",...}` in exposition form -> the label set, sorted by name, `__name__` included. A label
    with an empty value is left out, as Prometheus stores it (an empty value means the label is absent)."""
    text = prefix.decode()
    name, _, body = text.partition("{")
    pairs = {"__name__": name.strip()}
    for key, raw in _LABEL.findall(body.rstrip().removesuffix("}")):
        if raw:
            pairs[key] = _UNESCAPE.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), raw)
    return tuple(sorted(pairs.items()))


class BlockSink:
    """One block per window. Groups are gathered per chunk of history (`add`), and each chunk is stacked
    and encoded on a worker (`flush`); encoded chunks are added to the block in the order they came."""

    def __init__(self, data_dir: Path, threads: int = 2) -> None:
        self.data_dir = data_dir
        self._pool = ThreadPoolExecutor(max_workers=max(1, threads - 1), thread_name_prefix="xor")
        self._backlog = max(1, threads - 1)
        self._pending: deque[tuple[list[Labels], Future[EncodedChunks]]] = deque()
        self._writer: BlockWriter | None = None
        self._labels: dict[bytes, Labels] = {}
        self._gathered: list[tuple[list[Labels], np.ndarray]] = []
        self._gathered_samples = 0
        self.blocks: list[Path] = []

    def begin(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._writer = BlockWriter(self.data_dir)

    def add(self, group: SeriesGroup, stamps_ms: np.ndarray) -> int:
        """Gather one group's samples, stamped `stamps_ms` like every group of the chunk being built;
        returns the number of samples."""
        if group.values.size == 0:
            return 0
        values = fixed_point(group.values, group.decimals) / 10.0**group.decimals
        self._gathered.append(([self._label_set(p) for p in group.prefixes], values))
        self._gathered_samples += values.size
        if self._gathered_samples >= _CALL_SAMPLES:
            self.flush(stamps_ms)
        return int(group.values.size)

    def flush(self, stamps_ms: np.ndarray) -> None:
        """Encode what was gathered since the last flush, all stamped `stamps_ms`, on the worker."""
        if not self._gathered:
            return
        labels = [one for group, _ in self._gathered for one in group]
        values = np.vstack([v for _, v in self._gathered])
        self._gathered, self._gathered_samples = [], 0
        self._pending.append((labels, self._pool.submit(encode_xor, stamps_ms, values)))
        while len(self._pending) > self._backlog:
            self._add_oldest()

    def end(self) -> None:
        """Finish the open block: every queued chunk encoded and added, then written and renamed into place."""
        while self._pending:
            self._add_oldest()
        if self._writer is not None:
            if self._writer.num_series:
                self.blocks.append(self._writer.close())
            else:
                self._writer.abort()
            self._writer = None

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def abort(self) -> None:
        """Drop the open block (nothing half-written is left in the data directory) and the queued work."""
        for _, future in self._pending:
            future.cancel()
        self._pending.clear()
        self._gathered, self._gathered_samples = [], 0
        if self._writer is not None:
            self._writer.abort()
            self._writer = None
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _add_oldest(self) -> None:
        labels, future = self._pending.popleft()
        encoded = future.result()
        if self._writer is None:
            raise RuntimeError("BlockSink.flush() outside begin() / end()")
        self._writer.add(labels, encoded)

    def _label_set(self, prefix: bytes) -> Labels:
        found = self._labels.get(prefix)
        if found is None:
            found = self._labels[prefix] = parse_series(prefix)
        return found
