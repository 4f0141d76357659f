"""Real request traces, replayed as the workload instead of the synthetic profile.

Formats (see /work/shared/data/traces/README.md):
  Azure CSV   header TIMESTAMP,ContextTokens,GeneratedTokens; TIMESTAMP a local date-time with up to 7
              fractional digits and no timezone ("2023-11-16 18:15:46.6805900"); no trailing newline.
  JSONL       one object per line: "timestamp" (seconds), "input_length", "output_length", optional
              "hash_ids" (ids of 512-token prefix blocks; equal ids at equal positions are a shared prefix).

The format follows the file extension (.csv, else .jsonl/.json; otherwise a first line starting with
"{" means JSONL). A malformed line raises TraceError naming the file and its 1-based line number.
Replay keeps the trace's inter-arrival times and lengths, starts at the emulator's start time and loops;
calls are routed by the plan, so a trace exercises the plan's tiers with real shapes and burstiness.
Scenarios that reshape arrivals or lengths (over-peak, bursty, long-prompts) do not apply to a replayed
trace; the others (prefix-miss on synthetic prefixes, slow-tp, cold starts, tool-calls, replica-down) do.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from fleetsim.workload import SHARED_PREFIX_KEY, Call, PrefixModel, max_tokens_for, route
from monitor.plan.model import Plan

__all__ = ["TRACE_BLOCK_TOKENS", "Trace", "TraceError", "TraceReplay", "load_trace"]

TRACE_BLOCK_TOKENS = 512  # tokens per hash_ids block in JSONL traces


class TraceError(ValueError):
    """A trace that cannot be read: the file, the 1-based line and what is wrong."""

    def __init__(self, path: str | Path, line: int | None, message: str):
        self.path, self.line = str(path), line
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class Trace:
    """Arrival offsets (seconds from the first request) and lengths, in file order sorted by time."""

    path: str
    offsets: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    hash_ids: tuple[tuple[int, ...], ...] | None

    @property
    def duration(self) -> float:
        """Span of the trace plus one mean gap, so a looped replay keeps its average rate."""
        n = len(self.offsets)
        return float(self.offsets[-1]) * n / (n - 1) if n > 1 and self.offsets[-1] > 0 else 1.0

    def __len__(self) -> int:
        return len(self.offsets)


def load_trace(path: str | Path) -> Trace:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise TraceError(p, None, f"cannot read: {exc.strerror or exc}") from None
    lines = text.splitlines()
    if not lines:
        raise TraceError(p, None, "empty trace")
    is_csv = p.suffix.lower() == ".csv" or (p.suffix.lower() not in (".jsonl", ".json") and lines[0][:1] != "{")
    rows = _csv_rows(p, lines) if is_csv else _jsonl_rows(p, lines)
    if not rows:
        raise TraceError(p, None, "no requests in the trace")
    rows.sort(key=lambda r: r[0])
    times = np.array([r[0] for r in rows])
    hashes = [r[3] for r in rows]
    return Trace(
        path=str(p),
        offsets=times - times[0],
        prompt_tokens=np.array([r[1] for r in rows], dtype=np.int64),
        output_tokens=np.array([r[2] for r in rows], dtype=np.int64),
        hash_ids=tuple(h or () for h in hashes) if any(h is not None for h in hashes) else None,
    )


_Row = tuple[float, int, int, tuple[int, ...] | None]


def _csv_rows(path: Path, lines: list[str]) -> list[_Row]:
    header = [h.strip() for h in lines[0].split(",")]
    if header != ["TIMESTAMP", "ContextTokens", "GeneratedTokens"]:
        raise TraceError(path, 1, f"expected header TIMESTAMP,ContextTokens,GeneratedTokens, got {lines[0]!r}")
    rows: list[_Row] = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split(",")
        if len(fields) != 3:
            raise TraceError(path, number, f"expected 3 comma-separated fields, got {len(fields)}: {line!r}")
        rows.append((_timestamp(path, number, fields[0]), *_lengths(path, number, fields[1], fields[2]), None))
    return rows


def _timestamp(path: Path, number: int, text: str) -> float:
    """'2023-11-16 18:15:46.6805900' -> seconds; the 7th fractional digit is kept (naive, read as UTC)."""
    main, _, fraction = text.strip().partition(".")
    try:
        whole = datetime.strptime(main, "%Y-%m-%d %H:%M:%S")
        frac = float(f"0.{fraction}") if fraction else 0.0
        if fraction and not fraction.isdigit():
            raise ValueError(fraction)
    except ValueError:
        raise TraceError(path, number, f"bad TIMESTAMP {text!r} (expected 2023-11-16 18:15:46.6805900)") from None
    return (whole - datetime(1970, 1, 1)).total_seconds() + frac


def _lengths(path: Path, number: int, prompt: object, output: object) -> tuple[int, int]:
    try:
        p, o = int(str(prompt).strip()), int(str(output).strip())
    except ValueError:
        raise TraceError(path, number, f"token counts must be integers, got {prompt!r}, {output!r}") from None
    if p < 1 or o < 0:
        raise TraceError(path, number, f"prompt tokens must be >= 1 and output >= 0, got {p}, {o}")
    return p, o


def _jsonl_rows(path: Path, lines: list[str]) -> list[_Row]:
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TraceError(path, number, f"not JSON: {exc.msg}") from None
        if not isinstance(obj, dict) or not {"timestamp", "input_length", "output_length"} <= obj.keys():
            raise TraceError(path, number, "needs keys timestamp, input_length, output_length")
        stamp = obj["timestamp"]
        if isinstance(stamp, bool) or not isinstance(stamp, int | float) or not math.isfinite(stamp):
            raise TraceError(path, number, f"timestamp must be a number of seconds, got {stamp!r}")
        hashes = obj.get("hash_ids")
        if hashes is not None and not (isinstance(hashes, list) and all(isinstance(h, int) for h in hashes)):
            raise TraceError(path, number, "hash_ids must be a list of integers")
        prompt, output = _lengths(path, number, obj["input_length"], obj["output_length"])
        rows.append((float(stamp), prompt, output, tuple(hashes) if hashes is not None else None))
    return rows


class TraceReplay:
    """Calls from a trace, looped from `start_unix`: `calls(t0, t1, rng)` gives those arriving in [t0, t1)."""

    def __init__(self, trace: Trace, plan: Plan, start_unix: float):
        self.trace, self.plan, self.start_unix = trace, plan, start_unix
        self.max_tokens = max_tokens_for(plan)
        self.prefix = PrefixModel.for_plan(plan)
        self._next_user = 0

    def _indices(self, t0: float, t1: float) -> Iterator[tuple[int, float]]:
        span = self.trace.duration
        loop = math.floor(max(t0 - self.start_unix, 0.0) / span)
        while True:
            base = self.start_unix + loop * span
            if base >= t1:
                return
            lo = int(np.searchsorted(self.trace.offsets, t0 - base, side="left"))
            hi = int(np.searchsorted(self.trace.offsets, t1 - base, side="left"))
            for i in range(lo, hi):
                yield i, base + float(self.trace.offsets[i])
            loop += 1

    def calls(self, t0: float, t1: float, rng: np.random.Generator) -> list[Call]:
        picked = list(self._indices(t0, t1))
        if not picked:
            return []
        idx = np.array([i for i, _ in picked])
        prompts = self.trace.prompt_tokens[idx]
        tiers = route(self.plan, prompts.astype(float), rng)
        cacheable = self.prefix.cacheable(prompts)
        names = [t.name for t in self.plan.tiers]
        out = []
        for k, (i, at) in enumerate(picked):
            hashes = self.trace.hash_ids[i] if self.trace.hash_ids is not None else None
            out.append(
                Call(
                    arrival=at,
                    prompt_tokens=int(prompts[k]),
                    output_tokens=max(1, int(self.trace.output_tokens[i])),
                    max_tokens=self.max_tokens,
                    tier=names[int(tiers[k])],
                    prefix_key=SHARED_PREFIX_KEY,
                    cacheable_tokens=0 if hashes is not None else int(cacheable[k]),
                    hash_ids=hashes,
                    user_request=self._next_user,
                )
            )
            self._next_user += 1
        return out
