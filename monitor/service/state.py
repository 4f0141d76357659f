"""What the advisor must remember across restarts, in SQLite: trigger episodes, acknowledgements, posted eval
results and the advice state per tier (so scale-down hysteresis does not restart its cooldown on a deploy).

One connection guarded by a lock (writes are a few per minute; reads are small), WAL journal so readers never
block the writer, `synchronous=FULL` so a commit that returned survives a crash or a power cut, and every
write in one `BEGIN IMMEDIATE ... COMMIT` so a process killed mid-write leaves the last committed state.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from monitor.advice import AdviceState
from monitor.advice.collapse import Collapse
from monitor.measurements.export import item_from_dict, item_to_dict
from monitor.measurements.model import Item
from monitor.triggers import EvalResult, Evidence, Severity, TriggerRecord, TriggerState

__all__ = [
    "MAX_ACKS_PER_EPISODE",
    "Acknowledgement",
    "Episode",
    "NoOpenEpisode",
    "StateStore",
    "TooManyAcknowledgements",
]

SCHEMA_VERSION = 3  # 2: advice_state.calibration; 3: advice_state.collapse_since, collapse_level
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trigger_episodes (
    id INTEGER PRIMARY KEY,
    trigger TEXT NOT NULL,
    tier TEXT NOT NULL,
    severity TEXT NOT NULL,
    state TEXT NOT NULL,
    first_seen REAL NOT NULL,
    last_seen REAL NOT NULL,
    resolved_at REAL,
    evidence TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS one_open_episode ON trigger_episodes (trigger, tier) WHERE resolved_at IS NULL;
CREATE TABLE IF NOT EXISTS acknowledgements (
    id INTEGER PRIMARY KEY,
    episode_id INTEGER NOT NULL REFERENCES trigger_episodes (id),
    by TEXT NOT NULL,
    comment TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS acks_by_episode ON acknowledgements (episode_id);
CREATE TABLE IF NOT EXISTS eval_results (
    id INTEGER PRIMARY KEY,
    model TEXT NOT NULL,
    precision TEXT NOT NULL,
    task_set TEXT NOT NULL,
    submitted_at REAL NOT NULL,
    payload TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS measurement_record (
    item TEXT NOT NULL,
    tier TEXT NOT NULL,
    payload TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (item, tier)
);
CREATE TABLE IF NOT EXISTS advice_state (
    tier TEXT PRIMARY KEY,
    low_since REAL,
    last_recommended INTEGER,
    updated_at REAL NOT NULL,
    calibration REAL,
    collapse_since REAL,
    collapse_level REAL
);
"""
log = logging.getLogger("planwatch.state")
MAX_ACKS_PER_EPISODE = 100
_EPISODE_COLUMNS = "id, trigger, tier, severity, state, first_seen, last_seen, resolved_at, evidence"


def _migrate(db: sqlite3.Connection) -> None:
    """Bring a state file written by an earlier planwatch to this schema, keeping every row: version 1 had no
    advice_state.calibration (its tiers then calibrate afresh on their next steady window), version 2 no
    collapse_since / collapse_level (no collapse of demand in force: `monitor.advice.collapse`)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(advice_state)")}
    for column in ("calibration", "collapse_since", "collapse_level"):
        if column not in columns:
            db.execute(f"ALTER TABLE advice_state ADD COLUMN {column} REAL")


class NoOpenEpisode(LookupError):
    """An acknowledgement for a (trigger, tier) that does not hold now."""


class StateNotWritable(sqlite3.OperationalError):
    """The state file refused a write: disk full, read-only file or directory, a file size limit."""


class TooManyAcknowledgements(ValueError):
    """An episode holds MAX_ACKS_PER_EPISODE already: the list is served with every trigger, so it is bounded."""


@dataclass(frozen=True)
class Acknowledgement:
    id: int
    episode_id: int
    by: str
    comment: str
    at: float


@dataclass(frozen=True)
class Episode:
    """One stretch during which a trigger held on a tier: from first_seen until resolved_at (None: still open)."""

    id: int
    record: TriggerRecord
    resolved_at: float | None


class StateStore:
    def __init__(self, connection: sqlite3.Connection, path: str):
        self._db = connection
        self._lock = threading.Lock()
        self.path = path
        self._unreadable: set[int] = set()
        self.write_problem: str | None = None  # why the last write failed, until one succeeds

    @classmethod
    def open(cls, path: str | Path) -> StateStore:
        """Open (creating if needed) the state file and its folder; ':memory:' for a throwaway store."""
        if str(path) != ":memory:":
            try:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise sqlite3.OperationalError(f"cannot create the folder of {path}: {exc}") from exc
        db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=10.0)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.execute("PRAGMA foreign_keys=ON")
            db.executescript(_SCHEMA)
            _migrate(db)
            db.execute(  # raised, never lowered: a file a newer planwatch wrote keeps its version
                "INSERT INTO meta VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value "
                "WHERE CAST(value AS INTEGER) < CAST(excluded.value AS INTEGER)",
                (str(SCHEMA_VERSION),),
            )
        except sqlite3.Error:
            db.close()
            raise
        return cls(db, str(path))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """All or nothing: a crash before COMMIT leaves the previous committed state. A write the file
        refuses (disk full, read-only, locked) raises StateNotWritable and is remembered for /readyz
        until a write succeeds again."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                except BaseException:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                with suppress(sqlite3.Error):
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                self.write_problem = f"state not writable ({self.path}): {exc}"
                raise StateNotWritable(self.write_problem) from exc
            self.write_problem = None

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    # Evaluation results: trigger episodes and advice state, committed together.

    def commit_evaluation(
        self, holding: Iterable[TriggerRecord], resolved: Iterable[tuple[str, str]], advice: Mapping[str, AdviceState],
        now: float,
    ) -> None:  # fmt: skip
        with self._transaction() as db:
            for r in holding:
                _upsert_episode(db, r)
            for trigger, tier in resolved:
                db.execute(
                    "UPDATE trigger_episodes SET resolved_at = ? "
                    "WHERE trigger = ? AND tier = ? AND resolved_at IS NULL",
                    (now, trigger, tier),
                )
            for tier, s in advice.items():
                collapse = (s.collapse.since, s.collapse.level_rps) if s.collapse else (None, None)
                db.execute(
                    "INSERT INTO advice_state (tier, low_since, last_recommended, updated_at, calibration, "
                    "collapse_since, collapse_level) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tier) DO UPDATE SET "
                    "low_since = excluded.low_since, last_recommended = excluded.last_recommended, "
                    "updated_at = excluded.updated_at, calibration = excluded.calibration, "
                    "collapse_since = excluded.collapse_since, collapse_level = excluded.collapse_level",
                    (tier, s.low_since, s.last_recommended, now, s.calibration, *collapse),
                )

    def open_episodes(self) -> list[Episode]:
        rows = self._query(f"SELECT {_EPISODE_COLUMNS} FROM trigger_episodes WHERE resolved_at IS NULL ORDER BY id")
        return [_episode(row) for row in rows]

    def history(self, limit: int = 100, tier: str | None = None) -> list[Episode]:
        """Newest episodes first, open and resolved."""
        where, params = ("WHERE tier = ?", [tier]) if tier else ("", [])
        rows = self._query(
            f"SELECT {_EPISODE_COLUMNS} FROM trigger_episodes {where} ORDER BY first_seen DESC, id DESC LIMIT ?",
            [*params, limit],
        )
        return [_episode(row) for row in rows]

    def advice_states(self) -> dict[str, AdviceState]:
        rows = self._query(
            "SELECT tier, low_since, last_recommended, calibration, collapse_since, collapse_level FROM advice_state"
        )
        return {
            tier: AdviceState(low, last, factor, None if since is None or level is None else Collapse(since, level))
            for tier, low, last, factor, since, level in rows
        }

    # Acknowledgements: who knows about an episode. They hide nothing.

    def acknowledge(self, trigger: str, tier: str, by: str, comment: str, at: float) -> Acknowledgement:
        with self._transaction() as db:
            row = db.execute(
                "SELECT id FROM trigger_episodes WHERE trigger = ? AND tier = ? AND resolved_at IS NULL",
                (trigger, tier),
            ).fetchone()
            if row is None:
                raise NoOpenEpisode(f"{trigger} does not hold on tier {tier} now: nothing to acknowledge")
            (count,) = db.execute("SELECT count(*) FROM acknowledgements WHERE episode_id = ?", (row[0],)).fetchone()
            if count >= MAX_ACKS_PER_EPISODE:
                raise TooManyAcknowledgements(
                    f"{trigger} on tier {tier} already has {count} acknowledgements (the most one episode keeps)"
                )
            cursor = db.execute(
                "INSERT INTO acknowledgements (episode_id, by, comment, at) VALUES (?, ?, ?, ?)",
                (row[0], by, comment, at),
            )
            return Acknowledgement(int(cursor.lastrowid or 0), row[0], by, comment, at)

    def acknowledgements(self, episode_ids: Iterable[int]) -> dict[int, list[Acknowledgement]]:
        ids = sorted(set(episode_ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self._query(f"SELECT * FROM acknowledgements WHERE episode_id IN ({marks}) ORDER BY at, id", ids)
        out: dict[int, list[Acknowledgement]] = {}
        for id_, episode, by, comment, at in rows:
            out.setdefault(episode, []).append(Acknowledgement(id_, episode, by, comment, at))
        return out

    # Eval results posted by the team.

    def add_eval(self, result: EvalResult) -> int:
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO eval_results (model, precision, task_set, submitted_at, payload) VALUES (?, ?, ?, ?, ?)",
                (result.model, result.precision, result.task_set, result.submitted_at, result.model_dump_json()),
            )
            return int(cursor.lastrowid or 0)

    def evals(self, latest_only: bool = True) -> tuple[EvalResult, ...]:
        """The latest result per (model, precision, task set): a passing re-run supersedes a failed one.

        A stored row that no longer reads as a result (a NaN stored as null before the API refused it, a hand
        edit) is skipped with a warning and counted (`unreadable_rows`): one bad row must not stop every
        evaluation. It is skipped before "latest" is chosen, so an older readable result still counts."""
        rows = self._query("SELECT id, model, precision, task_set, payload FROM eval_results ORDER BY submitted_at, id")
        readable = [(tuple(key), self._eval_row(id_, payload)) for id_, *key, payload in rows]
        results = [(key, result) for key, result in readable if result is not None]
        if not latest_only:
            return tuple(result for _, result in results)
        return tuple(dict(results).values())

    def _eval_row(self, id_: int, payload: str) -> EvalResult | None:
        try:
            return EvalResult.model_validate_json(payload)
        except ValidationError as exc:
            with self._lock:
                first = id_ not in self._unreadable
                self._unreadable.add(id_)
            if first:
                log.warning("eval_results row %d is unreadable and is skipped: %s", id_, _one_line(exc))
            return None

    @property
    def unreadable_rows(self) -> dict[str, int]:
        """Stored rows skipped because they do not read back, by table (distinct rows since start)."""
        with self._lock:
            return {"eval_results": len(self._unreadable)}

    def measurement_record(self) -> dict[tuple[str, str], Item]:
        """The measurement plan's record so far, by (item, tier): it outlives Prometheus's retention."""
        rows = self._query("SELECT payload FROM measurement_record")
        items = [item_from_dict(json.loads(payload)) for (payload,) in rows]
        return {(i.id, i.tier): i for i in items}

    def save_measurement_record(self, items: Iterable[Item], at: float) -> None:
        with self._transaction() as db:
            db.executemany(
                "INSERT INTO measurement_record (item, tier, payload, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (item, tier) DO UPDATE SET payload = excluded.payload, updated_at = excluded.updated_at",
                [(i.id, i.tier, json.dumps(item_to_dict(i)), at) for i in items],
            )

    def integrity_ok(self) -> bool:
        return self._query("PRAGMA integrity_check") == [("ok",)]


def _upsert_episode(db: sqlite3.Connection, r: TriggerRecord) -> None:
    """Extend the open episode of (trigger, tier), or open one."""
    evidence = json.dumps(
        {"summary": r.evidence.summary, "observed": dict(r.evidence.observed), "plan": dict(r.evidence.plan),
         "queries": list(r.evidence.queries)}
    )  # fmt: skip
    updated = db.execute(
        "UPDATE trigger_episodes SET severity = ?, state = ?, last_seen = ?, evidence = ? "
        "WHERE trigger = ? AND tier = ? AND resolved_at IS NULL",
        (r.severity.value, r.state.value, r.last_seen, evidence, r.trigger, r.tier),
    )
    if updated.rowcount == 0:
        db.execute(
            "INSERT INTO trigger_episodes (trigger, tier, severity, state, first_seen, last_seen, evidence) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (r.trigger, r.tier, r.severity.value, r.state.value, r.first_seen, r.last_seen, evidence),
        )


def _episode(row: tuple[Any, ...]) -> Episode:
    id_, trigger, tier, severity, state, first_seen, last_seen, resolved_at, evidence = row
    e = json.loads(evidence)
    record = TriggerRecord(
        trigger=trigger,
        tier=tier,
        severity=Severity(severity),
        state=TriggerState(state),
        first_seen=first_seen,
        last_seen=last_seen,
        evidence=Evidence(e["summary"], e["observed"], e["plan"], tuple(e["queries"])),
    )
    return Episode(id_, record, resolved_at)


def _one_line(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
