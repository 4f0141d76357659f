"""The index file of a Prometheus 2.42 TSDB block, built in memory by `build_index` for fleetsim.tsdb_block.

Format v2, as promtool 2.42 writes it (byte for byte for the same chunks; see the tests): symbol table
(sorted, "" included), series sorted by label set and 16-byte aligned (id = offset / 16) with delta-encoded
chunk metas, label indices (2.42 writes them though its reader no longer needs them), postings (the
all-series list under ("", "") first), label offset table, postings offset table sorted by (name, value),
TOC; every section's CRC32C covers exactly its `len` bytes.

It is apart from the block writer because it is a pure function of the series and their chunk metas: the
writer owns the files, the segments and their order of writing, this module only the index's bytes.
"""

from __future__ import annotations

import itertools
import struct

import crc32c
import numpy as np

from fleetsim.tsdb_xor import put_crc32c, uvarint, uvarints, zigzag

__all__ = ["Labels", "build_index"]

Labels = tuple[tuple[str, str], ...]  # sorted by name, __name__ included

_INDEX_HEADER = struct.pack(">IB", 0xBAAAD700, 2)
_ZEROS = bytes(16)


def build_index(labels: list[Labels], sids: np.ndarray, mint: np.ndarray, maxt: np.ndarray, refs: np.ndarray) -> bytes:
    """The index file of series `labels` (by id) whose chunks are (sids, mint, maxt, refs) in time order."""
    order = sorted(range(len(labels)), key=labels.__getitem__)
    rank = np.empty(len(labels), np.int64)
    rank[order] = np.arange(len(labels))
    keys = [("", ""), *sorted({pair for series in labels for pair in series})]  # the all-series list first
    symbols = sorted({s for pair in keys for s in pair})
    sym = {s: i for i, s in enumerate(symbols)}
    pair_refs = dict(zip(keys[1:], _uvarint_groups([(sym[n], sym[v]) for n, v in keys[1:]]), strict=True))
    out = bytearray(_INDEX_HEADER)
    toc = [len(out)]  # symbols, series, label indices, label offset table, postings, postings offset table
    strings = {s: _ustr(s) for s in symbols}  # every name and value: the tables below repeat them
    out += _section(struct.pack(">I", len(symbols)) + b"".join(strings.values()))
    toc.append(len(out))
    metas, counts = _chunk_metas(rank[sids], mint, maxt, refs, len(labels))
    series_ids = []
    for i, n_chunks, chunk_metas in zip(order, counts.tolist(), metas, strict=True):
        out += _ZEROS[: -len(out) % 16]
        series_ids.append(len(out) >> 4)
        pairs = map(pair_refs.__getitem__, labels[i])
        body = b"".join((uvarint(len(labels[i])), *pairs, uvarint(n_chunks), chunk_metas))
        out += uvarint(len(body))
        out += body
        out += _crc(body)
    toc.append(len(out))
    label_table = []
    for name, values in itertools.groupby(keys[1:], key=lambda pair: pair[0]):
        out += _ZEROS[: -len(out) % 4]
        label_table.append(b"\x01" + strings[name] + uvarint(len(out)))
        value_refs = np.array([sym[v] for _, v in values], ">u4")
        out += _section(struct.pack(">II", 1, len(value_refs)) + value_refs.tobytes())
    out += _ZEROS[: -len(out) % 4]
    toc.append(len(out))
    key_of = {pair: k for k, pair in enumerate(keys)}
    members = [(0, *map(key_of.__getitem__, labels[i])) for i in order]
    postings, offsets = _postings(members, series_ids, len(keys))
    postings_table = [
        b"\x02" + strings[n] + strings[v] + uvarint(len(out) + off) for (n, v), off in zip(keys, offsets, strict=True)
    ]
    out += postings
    toc.insert(3, len(out))
    out += _section(struct.pack(">I", len(label_table)) + b"".join(label_table))
    toc.append(len(out))
    out += _section(struct.pack(">I", len(postings_table)) + b"".join(postings_table))
    toc_bytes = struct.pack(">6Q", *toc)
    return bytes(out + toc_bytes + _crc(toc_bytes))


def _postings(members: list[tuple[int, ...]], series_ids: list[int], n_keys: int) -> tuple[bytes, list[int]]:
    """All postings lists (len, count, series ids, CRC32C as big-endian uint32s; every list a multiple of 4
    bytes, so each stays 4-byte aligned) from each series' key indices, and each list's byte offset."""
    key = np.fromiter(itertools.chain.from_iterable(members), np.int64)
    ids = np.repeat(np.array(series_ids, np.int64), [len(m) for m in members])
    by_key = np.argsort(key, kind="stable")  # series come in id order, so each list stays sorted
    key, ids = key[by_key], ids[by_key]
    sizes = np.bincount(key, minlength=n_keys)
    start = np.cumsum(sizes + 3) - (sizes + 3)  # in uint32 words
    words = np.empty(int((sizes + 3).sum()), np.uint32)
    words[start] = 4 * (sizes + 1)
    words[start + 1] = sizes
    words[start[key] + 2 + np.arange(len(key)) - (np.cumsum(sizes) - sizes)[key]] = ids
    data = words.astype(">u4").view(np.uint8)
    put_crc32c(data, 4 * (start + 1), 4 * (start + 2 + sizes))
    return data.tobytes(), (4 * start).tolist()


def _chunk_metas(
    rank: np.ndarray, mint: np.ndarray, maxt: np.ndarray, refs: np.ndarray, n_series: int
) -> tuple[list[bytes], np.ndarray]:
    """Each series' encoded chunk metas (by rank) and chunk counts, varints made by numpy: the first chunk
    is varint mint, uvarint maxt - mint, uvarint ref; the next ones uvarint mint - previous maxt, uvarint
    maxt - mint, varint ref - previous ref."""
    small = rank.astype(np.uint16) if n_series <= 1 << 16 else rank  # 16-bit keys get numpy's radix sort
    by_series = np.argsort(small, kind="stable")  # stable: each series' chunks stay in time order
    rank, mint, maxt, refs = rank[by_series], mint[by_series], maxt[by_series], refs[by_series]
    first = np.ones(len(rank), bool)
    first[1:] = rank[1:] != rank[:-1]
    fields = np.empty((len(rank), 3), np.uint64)
    fields[:, 0] = np.where(first, zigzag(mint), (mint - np.roll(maxt, 1)).view(np.uint64))
    fields[:, 1] = (maxt - mint).view(np.uint64)
    fields[:, 2] = np.where(first, refs.view(np.uint64), zigzag(refs - np.roll(refs, 1)))
    blob, sizes = uvarints(fields.ravel())
    chunk_end = np.cumsum(sizes.reshape(-1, 3).sum(axis=1))
    counts = np.bincount(rank, minlength=n_series)
    bounds = np.concatenate(([0], chunk_end[np.cumsum(counts) - 1])).tolist()
    data = blob.tobytes()
    return [data[a:b] for a, b in itertools.pairwise(bounds)], counts


def _uvarint_groups(groups: list[tuple[int, ...]]) -> list[bytes]:
    """The concatenated uvarints of each tuple of equally many non-negative ints."""
    values = np.array(groups, np.uint64).reshape(len(groups), -1)
    blob, sizes = uvarints(values.ravel())
    bounds = [0, *np.cumsum(sizes.reshape(values.shape).sum(axis=1)).tolist()]
    data = blob.tobytes()
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def _ustr(s: str) -> bytes:
    raw = s.encode()
    return uvarint(len(raw)) + raw


def _crc(data: bytes | bytearray) -> bytes:
    return struct.pack(">I", crc32c.crc32c(data))


def _section(content: bytes) -> bytes:
    """len <4b> + content + CRC32C(content): the framing of every fixed-length index section."""
    return struct.pack(">I", len(content)) + content + _crc(content)
