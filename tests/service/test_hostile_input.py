"""The API under hostile input: numbers that are not numbers, poisoned stored rows, oversized bodies."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from monitor.service.app import Services
from tests.service.conftest import AUTH, ApiClient
from tests.service.fakes import FakeCollector, copilot_observation

EVAL = {"model": "llama-70b", "precision": "fp8", "task_set": "support-replies", "score": 0.71,
        "baseline_score": 0.80, "threshold": 0.02}  # fmt: skip


def _raw(body: dict[str, object], field: str, literal: str) -> bytes:
    """A JSON body whose `field` is written as `literal` (1e999 and NaN are valid to Python's json)."""
    return json.dumps({**body, field: "__X__"}).replace('"__X__"', literal).encode()


@pytest.mark.parametrize(
    ("field", "literal", "reason"),
    [
        pytest.param("score", "1e999", "finite", id="a score of 1e999 (infinity once parsed) is refused"),
        pytest.param("score", "NaN", "finite", id="a NaN score is refused"),
        pytest.param("baseline_score", "-Infinity", "finite", id="a -Infinity baseline is refused"),
        pytest.param("score", "true", "valid number", id="true is not a score"),
        pytest.param("score", '"0.8"', "valid number", id="a string holding a number is not a score"),
        pytest.param("score", "1e300", "less than or equal", id="a score of 1e300 is out of range"),
        pytest.param("threshold", "1e308", "less than or equal", id="a threshold of 1e308 is out of range"),
        pytest.param("submitted_at", "-1", "greater than or equal", id="a negative submission time is refused"),
        pytest.param("task_set", json.dumps("t" * 10_000), "at most 200", id="a 10 kB task set name is refused"),
        pytest.param("precision", json.dumps("p" * 100), "at most 32", id="a 100-character precision is refused"),
    ],
)
def test_an_eval_with_a_bad_number_or_string_is_422(
    services: Services, api: ApiClient, field: str, literal: str, reason: str
) -> None:
    response = api.post(
        "/v1/evals", content=_raw(EVAL, field, literal), headers={**AUTH, "Content-Type": "application/json"}
    )
    assert response.status_code == 422, response.text
    assert f"body.{field}" in response.json()["message"] and reason in response.json()["message"]
    assert api.get("/v1/evals").json()["evals"] == []


def _poison(db: Path) -> None:
    """What the service stored for `"score": 1e999` before the API refused it: the payload holds null."""
    payload = json.dumps({**EVAL, "score": None, "submitted_at": 1.0})
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO eval_results (model, precision, task_set, submitted_at, payload) VALUES (?, ?, ?, ?, ?)",
            ("llama-70b", "fp8", "support-replies", 1.0, payload),
        )


def test_a_poisoned_eval_row_is_skipped_counted_and_the_service_keeps_evaluating(
    start: Callable[..., Services], collector: FakeCollector, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    collector.observations = {"copilot": copilot_observation()}
    first = start()
    first.close()
    _poison(tmp_path / "state.db")
    for _ in range(2):  # and again after a restart: the row is still there, still skipped
        services = start()
        api = ApiClient(services.app)
        assert api.post("/v1/evals", json={**EVAL, "score": 0.79}, headers=AUTH).status_code == 201
        with caplog.at_level(logging.WARNING, logger="planwatch.state"):
            services.evaluate_now()
        assert api.get("/readyz").status_code == 200, api.get("/readyz").json()
        assert api.get("/v1/recommendations").status_code == 200
        assert [e["score"] for e in api.get("/v1/evals").json()["evals"]][-1] == 0.79
        metrics = api.get("/metrics").text
        assert 'planwatch_state_rows_skipped_total{table="eval_results"} 1.0' in metrics
        assert "planwatch_recommended_replicas{" in metrics
        assert any("eval_results row 1 is unreadable" in r.getMessage() for r in caplog.records)
        services.close()
