"""The SQLite state: episodes open, extend and resolve; evals and advice state round-trip; a writer killed
mid-run loses nothing it had committed and leaves a file that passes the integrity check."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.advice import AdviceState
from monitor.advice.collapse import Collapse
from monitor.service.state import NoOpenEpisode, StateStore
from monitor.triggers import EvalResult, Evidence, Severity, TriggerRecord, TriggerState

ROOT = Path(__file__).resolve().parents[2]


def record(trigger: str = "prompt-p95-above-plan", tier: str = "copilot", first: float = 100.0, last: float = 100.0,
           state: TriggerState = TriggerState.PENDING) -> TriggerRecord:  # fmt: skip
    evidence = Evidence("prompt p95 above plan", {"prompt_p95": 40_000.0}, {"prompt_p95": 2000.0}, ("q",))
    return TriggerRecord(trigger, tier, Severity.WARNING, state, first, last, evidence)


def an_eval(score: float, at: float, task_set: str = "support") -> EvalResult:
    return EvalResult(model="llama-70b", precision="fp8", task_set=task_set, score=score, baseline_score=0.8,
                      threshold=0.02, submitted_at=at)  # fmt: skip


@pytest.fixture
def store(tmp_path: Path) -> Iterator[StateStore]:
    s = StateStore.open(tmp_path / "state.db")
    yield s
    s.close()


def test_an_episode_opens_extends_and_resolves(store: StateStore) -> None:
    store.commit_evaluation([record(last=100.0)], [], {}, 100.0)
    store.commit_evaluation([record(last=160.0, state=TriggerState.ACTIVE)], [], {}, 160.0)
    (open_,) = store.open_episodes()
    assert (open_.record.first_seen, open_.record.last_seen, open_.record.state) == (100.0, 160.0, TriggerState.ACTIVE)
    assert open_.record.evidence.observed == {"prompt_p95": 40_000.0}
    store.commit_evaluation([], [("prompt-p95-above-plan", "copilot")], {}, 220.0)
    assert store.open_episodes() == []
    (closed,) = store.history()
    assert closed.resolved_at == 220.0 and closed.id == open_.id


def test_a_trigger_that_returns_after_resolving_is_a_new_episode(store: StateStore) -> None:
    store.commit_evaluation([record(first=100.0, last=100.0)], [], {}, 100.0)
    store.commit_evaluation([], [("prompt-p95-above-plan", "copilot")], {}, 160.0)
    store.commit_evaluation([record(first=500.0, last=500.0)], [], {}, 500.0)
    newest, oldest = store.history()
    assert (newest.record.first_seen, newest.resolved_at) == (500.0, None)
    assert (oldest.record.first_seen, oldest.resolved_at) == (100.0, 160.0)


def test_acknowledgements_attach_to_the_open_episode_only(store: StateStore) -> None:
    with pytest.raises(NoOpenEpisode, match="does not hold on tier copilot"):
        store.acknowledge("prompt-p95-above-plan", "copilot", "ana", "", 50.0)
    store.commit_evaluation([record()], [], {}, 100.0)
    ack = store.acknowledge("prompt-p95-above-plan", "copilot", "ana", "looking", 120.0)
    (episode,) = store.open_episodes()
    assert store.acknowledgements([episode.id]) == {episode.id: [ack]}


@pytest.mark.parametrize(
    ("posted", "latest_scores"),
    [
        pytest.param([(0.70, 1.0)], [0.70], id="one result is used as posted"),
        pytest.param([(0.70, 1.0), (0.79, 2.0)], [0.79], id="a later re-run of the same task set supersedes"),
        pytest.param([(0.79, 2.0), (0.70, 1.0)], [0.79], id="the latest by submission time wins, not by post order"),
    ],
)
def test_evals_keep_the_latest_per_model_precision_and_task_set(
    store: StateStore, posted: list[tuple[float, float]], latest_scores: list[float]
) -> None:
    for score, at in posted:
        store.add_eval(an_eval(score, at))
    assert [e.score for e in store.evals()] == latest_scores
    assert len(store.evals(latest_only=False)) == len(posted)


def test_advice_state_round_trips(store: StateStore) -> None:
    store.commit_evaluation([], [], {"copilot": AdviceState(low_since=90.0, last_recommended=3)}, 100.0)
    store.commit_evaluation([], [], {"copilot": AdviceState(low_since=None, last_recommended=4)}, 160.0)
    assert store.advice_states() == {"copilot": AdviceState(low_since=None, last_recommended=4)}
    store.commit_evaluation([], [], {"copilot": AdviceState(None, 4, calibration=0.93)}, 220.0)
    assert store.advice_states() == {"copilot": AdviceState(low_since=None, last_recommended=4, calibration=0.93)}
    collapsed = AdviceState(None, 4, 0.93, Collapse(200.0, 3.7))
    store.commit_evaluation([], [], {"copilot": collapsed}, 280.0)
    assert store.advice_states() == {"copilot": collapsed}  # a restart mid-incident still holds the fleet
    store.commit_evaluation([], [], {"copilot": AdviceState(None, 4, 0.93)}, 340.0)
    assert store.advice_states()["copilot"].collapse is None


def _old_state_file(folder: Path, version: int, columns: str, values: str) -> Path:
    """A state file an earlier planwatch wrote: its schema version, and one advice_state row of its columns
    (the first four every version has, then `columns` with `values`)."""
    path = folder / "state.db"
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
            f"INSERT INTO meta VALUES ('schema_version', '{version}');"
            "CREATE TABLE advice_state (tier TEXT PRIMARY KEY, low_since REAL, last_recommended INTEGER,"
            f" updated_at REAL NOT NULL{columns});"
            f"INSERT INTO advice_state VALUES ('copilot', 90.0, 3, 100.0{values});"
        )
    db.close()
    return path


def test_a_state_file_of_schema_1_opens_with_its_rows_and_remembers_calibrations_after(tmp_path: Path) -> None:
    """A planwatch upgraded over its state file: the advice state it kept is read, and the new column is written."""
    path = _old_state_file(tmp_path, 1, "", "")
    store = StateStore.open(path)
    try:
        assert store.advice_states() == {"copilot": AdviceState(low_since=90.0, last_recommended=3)}
        store.commit_evaluation([], [], {"copilot": AdviceState(90.0, 3, calibration=0.88)}, 160.0)
        assert store.advice_states()["copilot"].calibration == 0.88
        assert store._query("SELECT value FROM meta WHERE key = 'schema_version'") == [("3",)]
    finally:
        store.close()
    reopened = StateStore.open(path)  # opening again migrates nothing twice
    try:
        assert reopened.advice_states()["copilot"] == AdviceState(90.0, 3, calibration=0.88)
    finally:
        reopened.close()


def test_a_state_file_of_schema_2_opens_with_its_rows_and_remembers_a_collapse_after(tmp_path: Path) -> None:
    path = _old_state_file(tmp_path, 2, ", calibration REAL", ", 0.88")
    store = StateStore.open(path)
    try:
        assert store.advice_states() == {"copilot": AdviceState(90.0, 3, 0.88)}
        store.commit_evaluation([], [], {"copilot": AdviceState(None, 3, 0.88, Collapse(150.0, 2.5))}, 160.0)
        assert store.advice_states()["copilot"].collapse == Collapse(150.0, 2.5)
        assert store._query("SELECT value FROM meta WHERE key = 'schema_version'") == [("3",)]
    finally:
        store.close()


def test_a_failed_transaction_leaves_the_committed_state(store: StateStore) -> None:
    store.commit_evaluation([record()], [], {}, 100.0)
    broken = record(trigger="kv-pressure")
    object.__setattr__(broken, "evidence", Evidence("x", {"v": object()}))  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        store.commit_evaluation([record(last=200.0), broken], [], {}, 200.0)
    (episode,) = store.open_episodes()
    assert episode.record.last_seen == 100.0


_WRITER = textwrap.dedent(
    """
    import sys
    from monitor.service.state import StateStore
    from monitor.triggers import EvalResult
    store = StateStore.open(sys.argv[1])
    i = 0
    while True:
        i += 1
        store.add_eval(EvalResult(model="m", precision="fp8", task_set=f"t{i}", score=i, baseline_score=i,
                                  threshold=0, submitted_at=float(i)))
        print(i, flush=True)
    """
)


@pytest.mark.slow
def test_a_writer_killed_mid_write_loses_nothing_committed(tmp_path: Path) -> None:
    """SIGKILL a process committing as fast as it can; every row it reported committed is there after."""
    path = tmp_path / "state.db"
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert writer.stdout is not None
    committed = 0
    deadline = time.monotonic() + 30
    while committed < 200 and time.monotonic() < deadline:
        committed = int(writer.stdout.readline())
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    writer.stdout.close()
    assert writer.returncode == -signal.SIGKILL and committed >= 200
    store = StateStore.open(path)
    try:
        assert store.integrity_ok()
        task_sets = {e.task_set for e in store.evals(latest_only=False)}
        assert {f"t{i}" for i in range(1, committed + 1)} <= task_sets
    finally:
        store.close()
