"""Recorded series for a backfilled history: `promtool tsdb create-blocks-from rules`.

Prometheus evaluates recording rules only from the moment it loads them, so a history written by
`fleetsim backfill` has no `tier:*` series until promtool evaluates the rules over it, against a Prometheus
that serves that history, and writes the results as blocks. Prometheus loads blocks when it starts: the
caller restarts it (or starts the one that will serve) after the blocks are moved into its data directory.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["RecordingBackfillError", "record_rules"]

PROMTOOL_INSTALL_HINT = "install it with `apt-get install prometheus` (Debian/Ubuntu; promtool ships with it)"


class RecordingBackfillError(RuntimeError):
    """promtool is missing or failed; the message says what it printed."""


def record_rules(
    url: str,
    rule_files: Sequence[Path],
    start: float,
    end: float,
    data_dir: Path,
    eval_interval: str = "60s",
    promtool: str = "promtool",
) -> list[Path]:
    """Evaluate `rule_files` every `eval_interval` over [start, end] against the Prometheus at `url`, and
    move the blocks into `data_dir`. Returns the new block directories."""
    binary = shutil.which(promtool)
    if binary is None:
        raise RecordingBackfillError(f"promtool not found on PATH ({promtool!r}); {PROMTOOL_INSTALL_HINT}")
    data_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="recorded-", dir=data_dir.parent) as out:
        argv = [binary, "tsdb", "create-blocks-from", "rules", "--start", str(int(start)), "--end", str(int(end)),
                "--eval-interval", eval_interval, "--url", url, "--output-dir", out,
                *(str(Path(f).resolve()) for f in rule_files)]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RecordingBackfillError(f"promtool could not record the rules: {(done.stderr or done.stdout).strip()}")
        moved = []
        for block in sorted(Path(out).iterdir()):
            if (block / "meta.json").is_file():
                moved.append(Path(shutil.move(str(block), data_dir / block.name)))
    return moved
