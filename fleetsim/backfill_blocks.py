"""Time-sliced OpenMetrics files imported by parallel promtool processes into one data directory.

Why sliced: promtool 2.42 `tsdb create-blocks-from openmetrics` parses its whole input once to find the time
range and then once more *per block window* (2 h by default), so 28 days in one file would be parsed 337
times. One file per block window, imported with `--max-block-duration` equal to the window, is parsed
twice. Files of disjoint windows produce disjoint blocks, so several promtool processes can write into the
same output directory at once, and the Python process that renders the next window keeps running meanwhile.

Window files are reused (overwritten, then truncated): writing into pages a file already has is several
times cheaper than growing a fresh file, and the text is the bulk of the work before promtool's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "BLOCK_WINDOW_SECONDS",
    "PROMTOOL_INSTALL_HINT",
    "BlockImportError",
    "BlockImporter",
    "ImportStats",
    "find_promtool",
]

# promtool rounds --max-block-duration down to 2 h x 3^k (2 h, 6 h, 18 h, 54 h); a window must be one of them.
BLOCK_WINDOW_SECONDS = (7200, 21600, 64800, 194400)
PROMTOOL_INSTALL_HINT = "install it with `apt-get install prometheus` (Debian/Ubuntu; promtool ships with it)"
_EOF = b"# EOF\n"


class BlockImportError(RuntimeError):
    """promtool is missing or failed; the message says which window and what promtool printed."""


def find_promtool(promtool: str = "promtool") -> str:
    path = shutil.which(promtool)
    if path is None:
        raise BlockImportError(f"promtool not found on PATH ({promtool!r}); {PROMTOOL_INSTALL_HINT}")
    return path


@dataclass
class ImportStats:
    files: int = 0
    samples: int = 0
    text_bytes: int = 0
    wait_seconds: float = 0.0  # time the renderer waited for promtool (a free window file or process slot)


@dataclass
class _Running:
    process: subprocess.Popen[bytes]
    slot: Path
    label: str
    started: float


class BlockImporter:
    """Hands out window files and runs promtool on each finished one, at most `parallel` at a time."""

    def __init__(
        self,
        data_dir: Path,
        window_seconds: int,
        parallel: int = 2,
        work_dir: Path | None = None,
        promtool: str = "promtool",
    ) -> None:
        if window_seconds not in BLOCK_WINDOW_SECONDS:
            raise ValueError(f"block window {window_seconds}s is not one of {BLOCK_WINDOW_SECONDS}")
        self.promtool = find_promtool(promtool)
        self.data_dir = data_dir
        self.window_seconds = window_seconds
        self.parallel = max(1, parallel)
        self._work = Path(tempfile.mkdtemp(prefix="fleetsim-backfill-", dir=work_dir or _default_work_dir()))
        self._free: deque[Path] = deque(self._work / f"window-{i}.om" for i in range(self.parallel + 1))
        self._running: deque[_Running] = deque()
        self.stats = ImportStats()
        self.promtool_seconds = 0.0

    @contextmanager
    def window(self, label: str) -> Iterator[BinaryIO]:
        """A file to write one window's samples into; on exit it is closed with `# EOF` and imported."""
        slot = self._take_slot()
        slot.touch()
        with open(slot, "r+b") as out:
            yield out
            out.write(_EOF)
            self.stats.text_bytes += out.tell()
            out.truncate()
        self._start(slot, label)

    def close(self) -> None:
        """Wait for every import; raise on the first failure. Removes the window files."""
        try:
            while self._running:
                self._reap(self._running.popleft())
        finally:
            self.abort()

    def abort(self) -> None:
        """Stop running imports (by process id) and remove the window files."""
        for job in self._running:
            job.process.kill()
            job.process.wait()
        self._running.clear()
        shutil.rmtree(self._work, ignore_errors=True)

    def _take_slot(self) -> Path:
        started = time.perf_counter()
        while not self._free:
            self._reap(self._running.popleft())
        self.stats.wait_seconds += time.perf_counter() - started
        return self._free.popleft()

    def _start(self, slot: Path, label: str) -> None:
        started = time.perf_counter()
        while len(self._running) >= self.parallel:
            self._reap(self._running.popleft())
        self.stats.wait_seconds += time.perf_counter() - started
        command = [
            self.promtool,
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            "--quiet",
            f"--max-block-duration={self.window_seconds}s",
            str(slot),
            str(self.data_dir),
        ]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._running.append(_Running(process, slot, label, time.perf_counter()))
        self.stats.files += 1

    def _reap(self, job: _Running) -> None:
        _, err = job.process.communicate()
        self.promtool_seconds += time.perf_counter() - job.started
        self._free.append(job.slot)
        if job.process.returncode != 0:
            tail = err.decode(errors="replace").strip().splitlines()[-5:]
            raise BlockImportError(
                f"promtool failed importing window {job.label} (exit {job.process.returncode}): " + " | ".join(tail)
            )


def _default_work_dir() -> str | None:
    """tmpfs when there is one with room: the window files are written once and read twice."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        usage = shutil.disk_usage(shm)
        if usage.free > 8 * 2**30:
            return str(shm)
    return None
