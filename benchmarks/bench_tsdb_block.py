"""Direct TSDB block writing: encode + write throughput, bytes per sample and memory.

    PYTHONPATH=. python benchmarks/bench_tsdb_block.py [--series 4624] [--steps 1440] [--blocks 4]
                                                       [--threads 2] [--keep DIR] [--default-malloc]

Values look like a vLLM fleet's: cumulative histogram bucket counts rising by small Poisson integers
(60 % of series), cumulative seconds with 4 decimals (10 %), gauges with 3-4 decimals (20 %) and constants
(10 %), at a 15 s step, one block per window. Prints M samples/s (wall, and per CPU-second: trust the latter
when other processes share the cores) for: encode + BlockWriter (add, index, meta, fsync, rename) on one
thread; encode in a worker while the main thread writes; encode alone, in whole windows and in calls of 64
series; encode on N threads at once; encode in a worker beside a main thread busy with numpy or with pure
Python (the model's place). Then encode_xor's memory, bytes per sample (chunk records; whole blocks) against
a model of Prometheus' own sequential encoder on a sample of series, and the peak RSS.
By default it calls tsdb_xor.recycle_freed_memory() first (see there); --default-malloc measures without.
"""

from __future__ import annotations

import argparse
import itertools
import resource
import shutil
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fleetsim.tsdb_block import BlockWriter, Labels
from fleetsim.tsdb_xor import EncodedChunks, encode_xor, recycle_freed_memory, uvarint

STEP_MS = 15_000
T0 = 1_714_521_600_000


def fleet_values(n_series: int, n_steps: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    kinds = rng.choice(4, n_series, p=[0.6, 0.1, 0.2, 0.1])
    values = np.empty((n_series, n_steps))
    buckets = kinds == 0  # le buckets of 12-bucket histograms: each cumulative over buckets and time
    n_hist = -(-int(buckets.sum()) // 12)
    per_bucket = rng.poisson(rng.uniform(0.05, 0.8, (n_hist, 12, 1)), (n_hist, 12, n_steps))
    cumulative = np.cumsum(np.cumsum(per_bucket, axis=1), axis=2).reshape(-1, n_steps)
    values[buckets] = cumulative[: int(buckets.sum())] + rng.integers(0, 10**6, (int(buckets.sum()), 1))
    sums = kinds == 1
    values[sums] = np.round(np.cumsum(rng.exponential(0.3, (int(sums.sum()), n_steps)), axis=1), 4)
    gauges = kinds == 2
    level = rng.uniform(0, 100, (int(gauges.sum()), 1))
    values[gauges] = np.round(level + np.cumsum(rng.normal(0, 0.05, (int(gauges.sum()), n_steps)), axis=1), 3)
    values[kinds == 3] = rng.integers(0, 100, (int((kinds == 3).sum()), 1))
    return values


def fleet_series(n_series: int) -> list[Labels]:
    return [
        (("__name__", f"vllm:metric_{i % 40}"), ("instance", f"10.0.{i // 250}.{i % 250}:8000"), ("le", str(i % 12)))
        for i in range(n_series)
    ]


def prometheus_chunk_bytes(ts: np.ndarray, values: np.ndarray, spc: int = 120) -> int:
    """Chunk data bytes Prometheus' own encoder writes for regular timestamps: the same sample count,
    timestamp and first-value bits, and value deltas with its sequential window choice (pure Python)."""
    total = 0
    for row in values.view(np.uint64).tolist():
        for c in range(0, len(row), spc):
            chunk = row[c : c + spc]
            t0 = int(ts[c])
            bits = 16 + 8 * len(uvarint(2 * t0 if t0 >= 0 else -2 * t0 - 1)) + 64
            bits += (8 * len(uvarint(int(ts[1] - ts[0]))) + max(len(chunk) - 2, 0)) if len(chunk) > 1 else 0
            lead, trail = -1, 0
            for a, b in itertools.pairwise(chunk):
                delta = a ^ b
                if delta == 0:
                    bits += 1
                    continue
                new_lead, new_trail = min(64 - delta.bit_length(), 31), (delta & -delta).bit_length() - 1
                if lead < 0 or new_lead < lead or new_trail < trail:
                    lead, trail = new_lead, new_trail
                    bits += 11
                bits += 2 + 64 - lead - trail
            total += -(-bits // 8)
    return total


def timed(label: str, samples: int, run: Callable[[], object]) -> None:
    """Wall and CPU time (all threads) of `run`, as M samples/s: CPU time is the figure to trust when
    other processes share the cores."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{label:34s} {samples / wall / 1e6:6.1f} M samples/s wall, {samples / cpu / 1e6:6.1f} per CPU-second")


def write_blocks(data_dir: Path, series: list[Labels], stamps: list[np.ndarray], windows: list[np.ndarray]) -> None:
    for ts, values in zip(stamps, windows, strict=True):
        with BlockWriter(data_dir) as writer:
            writer.add(series, encode_xor(ts, values))


def pipelined(data_dir: Path, series: list[Labels], stamps: list[np.ndarray], windows: list[np.ndarray]) -> None:
    """The integration's shape: a worker encodes the next window while this thread writes the last."""
    with ThreadPoolExecutor(1) as worker:
        pending = worker.submit(encode_xor, stamps[0], windows[0])
        for k in range(len(windows)):
            encoded = pending.result()
            if k + 1 < len(windows):
                pending = worker.submit(encode_xor, stamps[k + 1], windows[k + 1])
            with BlockWriter(data_dir) as writer:
                writer.add(series, encoded)


def python_work(until: float) -> int:
    n = 0
    while time.perf_counter() < until:
        for _ in range(1000):
            n += 1
    return n


def numpy_work(until: float) -> int:
    data, n = np.random.default_rng(0).random(200_000), 0
    while time.perf_counter() < until:
        np.sort(np.sqrt(data) * 2 + 1)
        n += 1
    return n


def beside(work: Callable[[float], int], ts: np.ndarray, values: np.ndarray) -> None:
    """encode_xor looping in a worker thread while this thread does `work` (the model's place)."""
    solo = work(time.perf_counter() + 1.0)
    stop, done = threading.Event(), [0]

    def encode_until_stopped() -> None:
        while not stop.is_set():
            encode_xor(ts, values)
            done[0] += values.size

    worker = threading.Thread(target=encode_until_stopped)
    started = time.perf_counter()
    worker.start()
    shared = work(started + 4.0) / 4.0
    stop.set()
    worker.join()
    rate = done[0] / (time.perf_counter() - started) / 1e6
    print(f"encode in a worker beside {work.__name__}: {rate:5.1f} M samples/s; main thread keeps {shared / solo:.0%}")


def report_sizes(encoded: EncodedChunks, data_dir: Path, ts: np.ndarray, values: np.ndarray, total: int) -> None:
    blocks = [b for b in data_dir.iterdir() if b.is_dir()]
    block_bytes = sum(f.stat().st_size for b in blocks for f in b.rglob("*") if f.is_file())
    print(f"bytes/sample: {len(encoded.data) / values.size:.3f} in chunk records, {block_bytes / total:.3f} in blocks")
    sample = slice(0, len(values), max(1, len(values) // 300))
    ours = int((encoded.ends[sample] - encoded.starts[sample]).sum())
    theirs = prometheus_chunk_bytes(ts, values[sample])
    n = values[sample].size
    print(f"chunk data of {n} samples: {ours / n:.3f} B/sample here, {theirs / n:.3f} with Prometheus' own encoder")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=4624)
    parser.add_argument("--steps", type=int, default=1440, help="steps per block (1440 x 15 s = 6 h)")
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=None, help="data directory to keep (default: a temp dir)")
    parser.add_argument("--default-malloc", action="store_true", help="skip tsdb_xor.recycle_freed_memory()")
    args = parser.parse_args()
    if not args.default_malloc:
        print(f"recycle_freed_memory(): {recycle_freed_memory()}")
    series = fleet_series(args.series)
    windows = [fleet_values(args.series, args.steps, seed) for seed in range(args.blocks)]
    stamps = [T0 + STEP_MS * (b * args.steps + np.arange(args.steps)) for b in range(args.blocks)]
    total = args.series * args.steps * args.blocks
    print(f"{args.series} series x {args.steps} steps x {args.blocks} blocks = {total / 1e6:.1f} M samples")
    print(f"input: {windows[0].nbytes / 2**20:.0f} MiB of float64 a block")
    data_dir = args.keep or Path(tempfile.mkdtemp(prefix="bench-tsdb-block-"))
    timed("encode + write, one thread:", total, lambda: write_blocks(data_dir / "serial", series, stamps, windows))
    print(f"peak RSS so far: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    timed("encode in a worker + write:", total, lambda: pipelined(data_dir / "pipelined", series, stamps, windows))
    timed("encode only, one thread:", total, lambda: [encode_xor(t, v) for t, v in zip(stamps, windows, strict=True)])
    groups = [(t, v[i : i + 64]) for t, v in zip(stamps, windows, strict=True) for i in range(0, len(v), 64)]
    timed("encode in calls of 64 series:", total, lambda: [encode_xor(t, v) for t, v in groups])
    jobs = list(zip(stamps, windows, strict=True)) * args.threads
    with ThreadPoolExecutor(args.threads) as pool:
        label = f"encode only, {args.threads} threads:"
        timed(label, total * args.threads, lambda: list(pool.map(lambda job: encode_xor(*job), jobs)))
    for work in (numpy_work, python_work):
        beside(work, stamps[0], windows[0])
    tracemalloc.start()
    encoded = encode_xor(stamps[0], windows[0])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"encode_xor memory: {peak / 2**20:.0f} MiB peak for {windows[0].size / 1e6:.2f} M samples (output included)")
    report_sizes(encoded, data_dir / "serial", stamps[0], windows[0], total)
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    if args.keep is None:
        shutil.rmtree(data_dir)


if __name__ == "__main__":
    main()
