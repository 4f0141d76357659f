"""The API under hostile input: numbers that are not numbers, poisoned stored rows, oversized bodies."""

from __future__ import annotations

import json
import logging
import resource
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from monitor.observe.model import Measurement
from monitor.service.app import Services
from monitor.service.settings import ConfigError, load_settings
from monitor.service.state import MAX_ACKS_PER_EPISODE
from tests.service.conftest import AUTH, ApiClient
from tests.service.fakes import FakeObserver, copilot_observation

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
    start: Callable[..., Services], observer: FakeObserver, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    observer.observations = {"copilot": copilot_observation()}
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


class _CountingBody:
    """An ASGI receive that hands out a large body in 1 MiB chunks and counts what was taken."""

    def __init__(self, size: int) -> None:
        self.left, self.taken = size, 0

    async def __call__(self) -> dict[str, object]:
        chunk = min(self.left, 2**20)
        self.left -= chunk
        self.taken += chunk
        return {"type": "http.request", "body": b"x" * chunk, "more_body": self.left > 0}


def _send_raw(services: Services, headers: list[tuple[bytes, bytes]], body: _CountingBody) -> tuple[int, bytes]:
    """One POST /v1/evals straight into the ASGI app (no client in between that would buffer the body)."""
    sent: list[dict[str, object]] = []

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/v1/evals", "raw_path": b"/v1/evals", "query_string": b"", "root_path": "",
             "headers": [(b"host", b"planwatch"), (b"content-type", b"application/json"), *headers],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}  # fmt: skip
    anyio.run(services.app, scope, body, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    return int(start["status"]), b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")  # type: ignore[misc]


@pytest.mark.parametrize(
    ("headers", "status", "most_read", "text"),
    [
        pytest.param([(b"content-length", b"314572800")], 401, 0, "Bearer",
                     id="a 300 MB body without a token is refused before one byte is read"),
        pytest.param([(b"authorization", b"Bearer wrong"), (b"content-length", b"314572800")], 401, 0, "not the",
                     id="a 300 MB body with a wrong token is refused before one byte is read"),
        pytest.param([(b"authorization", AUTH["Authorization"].encode()), (b"content-length", b"314572800")], 413,
                     0, "at most 65,536 bytes", id="a declared 300 MB body with the token is 413 unread"),
        pytest.param([(b"authorization", AUTH["Authorization"].encode())], 413, 2 * 2**20, "at most",
                     id="a chunked 300 MB body with the token is cut off after the cap"),
    ],
)  # fmt: skip
def test_a_huge_body_is_refused_without_being_buffered(
    services: Services, headers: list[tuple[bytes, bytes]], status: int, most_read: int, text: str
) -> None:
    body = _CountingBody(300 * 2**20)
    code, answer = _send_raw(services, headers, body)
    assert code == status and text in answer.decode()
    assert body.taken <= most_read


def test_an_empty_api_token_says_writes_are_disabled(start: Callable[..., Services]) -> None:
    services = start(api_token="")
    response = ApiClient(services.app).post("/v1/evals", json=EVAL, headers={"Authorization": "Bearer "})
    assert response.status_code == 401
    assert "writes are disabled" in response.json()["detail"] and "empty" in response.json()["detail"]


def test_acknowledgements_per_episode_are_bounded(services: Services, api: ApiClient, observer: FakeObserver) -> None:
    observer.observations = {"copilot": copilot_observation(prompt_p95=Measurement.of(40_000))}
    services.evaluate_now()
    url = "/v1/triggers/prompt-p95-above-plan/ack"
    body = {"tier": "copilot", "by": "oncall"}
    codes = [api.post(url, json=body, headers=AUTH).status_code for _ in range(MAX_ACKS_PER_EPISODE + 1)]
    assert codes == [201] * MAX_ACKS_PER_EPISODE + [409]
    assert "already has 100 acknowledgements" in api.post(url, json=body, headers=AUTH).json()["detail"]


@contextmanager
def _file_size_limit(limit: int) -> Iterator[None]:
    """RLIMIT_FSIZE for this process: a write past `limit` bytes in any file fails with EFBIG, as on a full
    disk (CPython ignores SIGXFSZ, so the process is not killed)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def test_a_full_disk_says_state_not_writable_in_writes_and_readyz(
    services: Services, api: ApiClient, tmp_path: Path
) -> None:
    services.evaluate_now()
    assert api.get("/readyz").status_code == 200
    files = [tmp_path / "state.db", tmp_path / "state.db-wal"]
    with _file_size_limit(max(f.stat().st_size for f in files if f.exists())):
        codes = []
        for i in range(50):  # until the WAL must grow past the limit
            response = api.post("/v1/evals", json={**EVAL, "task_set": f"t{i}"}, headers=AUTH)
            codes.append(response.status_code)
            if response.status_code != 201:
                break
        ready = api.get("/readyz")
    assert codes[-1] == 503 and "state not writable" in response.json()["detail"]
    assert ready.status_code == 503 and ready.json()["status"] == "degraded"
    assert any("state not writable" in r for r in ready.json()["reasons"]), ready.json()
    assert api.post("/v1/evals", json=EVAL, headers=AUTH).status_code == 201  # space again: writes resume
    services.evaluate_now()
    assert api.get("/readyz").status_code == 200


@pytest.mark.parametrize(
    ("name", "text", "reason"),
    [
        pytest.param("bomb", (Path(__file__).parents[1] / "plan/hostile/alias-bomb.yaml").read_bytes(), "alias bomb",
                     id="a configuration alias bomb is refused with its line"),
        pytest.param("latin1", b'listen: "\xff"\n', "not UTF-8", id="a Latin-1 configuration is refused"),
        pytest.param("inf", b"evaluation_interval: .inf\n", "not a finite number",
                     id="an infinite interval is refused, not an OverflowError in the scheduler"),
    ],
)  # fmt: skip
def test_a_hostile_configuration_file_is_a_config_error(tmp_path: Path, name: str, text: bytes, reason: str) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_bytes(text)
    with pytest.raises(ConfigError, match=reason):
        load_settings(path, env={})
