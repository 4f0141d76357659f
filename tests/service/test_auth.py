"""Writes need the configured bearer token (401 with `WWW-Authenticate: Bearer` otherwise); reads need it
only when `protect_reads` is set; probes and /metrics never do."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from monitor.observe.model import Measurement
from monitor.service.app import Services
from tests.service.conftest import AUTH, TOKEN, ApiClient
from tests.service.fakes import FakeObserver, copilot_observation

EVAL = {"model": "llama-70b", "precision": "fp8", "task_set": "t", "score": 0.8, "baseline_score": 0.8, "threshold": 0}
WRITES = [
    pytest.param("/v1/evals", EVAL, id="posting an eval"),
    pytest.param("/v1/triggers/prompt-p95-above-plan/ack", {"tier": "copilot", "by": "ana"}, id="acknowledging"),
]
BAD_CREDENTIALS = [
    pytest.param({}, "needs 'Authorization: Bearer", id="no token"),
    pytest.param({"Authorization": "Bearer not-the-token"}, "not the configured api_token", id="a wrong token"),
    pytest.param({"Authorization": f"Bearer {TOKEN}x"}, "not the configured api_token", id="the token plus a char"),
    pytest.param({"Authorization": f"Basic {TOKEN}"}, "needs 'Authorization: Bearer", id="another scheme"),
    pytest.param({"Authorization": TOKEN}, "needs 'Authorization: Bearer", id="the token without a scheme"),
]


@pytest.fixture
def breaching(services: Services, observer: FakeObserver) -> Services:
    """A trigger holds, so an authorized acknowledgement succeeds."""
    observer.observations = {"copilot": copilot_observation(prompt_p95=Measurement.of(40_000))}
    services.evaluate_now()
    return services


@pytest.mark.parametrize(("path", "body"), WRITES)
@pytest.mark.parametrize(("headers", "detail"), BAD_CREDENTIALS)
def test_writes_refuse_missing_or_wrong_tokens(
    breaching: Services, path: str, body: dict[str, Any], headers: dict[str, str], detail: str
) -> None:
    response = ApiClient(breaching.app).post(path, json=body, headers=headers)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert detail in response.json()["detail"]


@pytest.mark.parametrize(("path", "body"), WRITES)
def test_writes_accept_the_configured_token(breaching: Services, path: str, body: dict[str, Any]) -> None:
    assert ApiClient(breaching.app).post(path, json=body, headers=AUTH).status_code == 201


@pytest.mark.parametrize(("path", "body"), WRITES)
def test_without_a_configured_token_writes_are_refused(
    start: Callable[..., Services], path: str, body: dict[str, Any]
) -> None:
    services = start(api_token=None)
    services.evaluate_now()
    response = ApiClient(services.app).post(path, json=body, headers=AUTH)
    assert response.status_code == 401 and "no api_token configured" in response.json()["detail"]


@pytest.mark.parametrize(
    ("path", "headers", "status"),
    [
        pytest.param("/v1/recommendations", {}, 401, id="a protected read without a token is refused"),
        pytest.param("/v1/triggers?state=all", {"Authorization": "Bearer x"}, 401, id="a wrong token is refused"),
        pytest.param("/v1/plan", AUTH, 200, id="a protected read with the token is served"),
        pytest.param("/healthz", {}, 200, id="the liveness probe stays open"),
        pytest.param("/readyz", {}, 200, id="the readiness probe stays open"),
        pytest.param("/metrics", {}, 200, id="the scrape stays open"),
    ],
)
def test_protected_reads(start: Callable[..., Services], path: str, headers: dict[str, str], status: int) -> None:
    services = start(protect_reads=True)
    services.evaluate_now()
    response = ApiClient(services.app).get(path, headers=headers)
    assert response.status_code == status
    if status == 401:
        assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_reads_are_open_by_default(services: Services) -> None:
    services.evaluate_now()
    assert ApiClient(services.app).get("/v1/recommendations").status_code == 200
