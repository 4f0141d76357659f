"""The HTTP API against a fake observer and a driven clock: shapes, filters, writes, validation, OpenAPI."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from pydantic import BaseModel

from monitor.observe.model import Measurement
from monitor.service import schemas
from monitor.service.app import Services
from tests.service.conftest import AUTH, ApiClient
from tests.service.fakes import Clock, FakeObserver, copilot_observation

EVAL = {"model": "llama-70b", "precision": "fp8", "task_set": "support-replies", "score": 0.71,
        "baseline_score": 0.80, "threshold": 0.02}  # fmt: skip
EVALUATED_ROUTES = ["/v1/evaluation", "/v1/observations", "/v1/drift", "/v1/triggers", "/v1/recommendations",
                    "/v1/schedule"]  # fmt: skip


@pytest.mark.parametrize("path", EVALUATED_ROUTES)
def test_before_the_first_evaluation_results_are_503_with_retry_after(api: ApiClient, path: str) -> None:
    response = api.get(path)
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "60" and "no evaluation yet" in response.json()["detail"]


@pytest.mark.parametrize(
    ("path", "key"),
    [
        pytest.param("/v1/plan", "workload", id="the plan is served before any evaluation"),
        pytest.param("/v1/sizing", "fleet", id="the sizing is served before any evaluation"),
        pytest.param("/v1/forecast", "tiers", id="the forecast list is served (empty) before any refit"),
        pytest.param("/healthz", "status", id="the process reports alive at once"),
    ],
)
def test_static_routes_need_no_evaluation(api: ApiClient, path: str, key: str) -> None:
    response = api.get(path)
    assert response.status_code == 200 and key in response.json()


@pytest.mark.parametrize(
    ("path", "shape"),
    [
        pytest.param("/v1/evaluation", schemas.EvaluationResponse, id="the evaluation has its documented shape"),
        pytest.param("/v1/observations", schemas.ObservationsResponse, id="observations have their shape"),
        pytest.param("/v1/drift", schemas.DriftResponse, id="drift has its shape"),
        pytest.param("/v1/triggers", schemas.TriggersResponse, id="open triggers have their shape"),
        pytest.param("/v1/triggers?state=all", schemas.TriggersResponse, id="trigger history has the same shape"),
        pytest.param("/v1/recommendations", schemas.RecommendationsResponse, id="recommendations have their shape"),
        pytest.param("/v1/schedule", schemas.ScheduleResponse, id="the schedule has its shape"),
        pytest.param("/v1/forecast", schemas.ForecastResponse, id="the forecast has its shape"),
        pytest.param("/readyz", schemas.ReadinessResponse, id="readiness has its shape"),
    ],
)
def test_bodies_match_their_documented_models_exactly(
    services: Services, api: ApiClient, observer: FakeObserver, path: str, shape: type[BaseModel]
) -> None:
    """Unknown keys are forbidden in the models, so the OpenAPI docs cannot drift from the bodies."""
    observer.observations = {"copilot": copilot_observation(prompt_p95=Measurement.of(40_000))}
    services.evaluate_now()
    api.post("/v1/triggers/prompt-p95-above-plan/ack", json={"tier": "copilot", "by": "ana"}, headers=AUTH)
    response = api.get(path)
    assert response.status_code == 200, response.text
    shape.model_validate(response.json())


def test_recommendations_say_what_to_run_and_why(services: Services, api: ApiClient, observer: FakeObserver) -> None:
    observer.observations = {"copilot": copilot_observation(demand_rps=70.0, replicas=3.0)}
    services.evaluate_now()
    body = api.get("/v1/recommendations").json()
    (rec,) = body["recommendations"]
    assert (rec["tier"], rec["action"], rec["stale"]) == ("copilot", "scale-up", False)
    assert rec["recommended_replicas"] == 5 and rec["current_replicas"] == 3.0  # ~16 req/s a replica at p95 TPOT
    assert body["evaluated_at"] == 1_800_000_000.0 and body["stale"] is False


@pytest.mark.parametrize(
    ("path", "status", "text"),
    [
        pytest.param("/v1/recommendations?tier=copilot", 200, '"tier":"copilot"', id="a tier filter keeps the tier"),
        pytest.param("/v1/drift?tier=nope", 404, "no tier named 'nope'", id="an unknown tier is a 404 naming it"),
        pytest.param("/v1/forecast?tier=nope", 404, "tiers: copilot", id="the 404 lists the plan's tiers"),
        pytest.param("/v1/triggers?state=firing", 422, "query.state", id="an unknown trigger state names the field"),
        pytest.param("/v1/triggers?state=all&limit=0", 422, "query.limit", id="a limit below one names the field"),
    ],
)
def test_query_parameters(services: Services, api: ApiClient, path: str, status: int, text: str) -> None:
    services.evaluate_now()
    response = api.get(path)
    assert response.status_code == status and text in response.text


def _breach(observer: FakeObserver) -> None:
    observer.observations = {"copilot": copilot_observation(prompt_p95=Measurement.of(40_000))}


@pytest.mark.parametrize(
    ("minutes", "state_filter", "listed"),
    [
        pytest.param(0, "open", ["pending"], id="a new trigger is open and pending"),
        pytest.param(0, "active", [], id="a pending trigger is not active"),
        pytest.param(31, "active", ["active"], id="after its 30-minute hold it is active"),
        pytest.param(31, "pending", [], id="an active trigger is no longer pending"),
        pytest.param(31, "all", ["active"], id="the history lists the open episode"),
    ],
)
def test_triggers_move_from_pending_to_active_after_their_hold(
    services: Services, api: ApiClient, observer: FakeObserver, clock: Clock, minutes: int, state_filter: str,
    listed: list[str],
) -> None:  # fmt: skip
    _breach(observer)
    services.evaluate_now()
    if minutes:
        clock.advance(minutes * 60)
        services.evaluate_now()
    body = api.get(f"/v1/triggers?state={state_filter}").json()
    assert [t["state"] for t in body["triggers"]] == listed
    if listed:
        (t,) = body["triggers"]
        assert t["first_seen"] == 1_800_000_000.0 and t["id"] == "prompt-p95-above-plan"
        assert "40000" in t["evidence"]["summary"].replace(",", "")


def test_a_resolved_trigger_leaves_the_open_list_and_stays_in_history(
    services: Services, api: ApiClient, observer: FakeObserver, clock: Clock
) -> None:
    _breach(observer)
    services.evaluate_now()
    observer.observations = {"copilot": copilot_observation()}
    clock.advance(60)
    services.evaluate_now()
    assert api.get("/v1/triggers").json()["triggers"] == []
    (episode,) = api.get("/v1/triggers?state=all").json()["triggers"]
    assert episode["resolved_at"] == clock.now and episode["first_seen"] == 1_800_000_000.0


def test_an_acknowledgement_records_who_knows_and_hides_nothing(
    services: Services, api: ApiClient, observer: FakeObserver
) -> None:
    _breach(observer)
    services.evaluate_now()
    body = {"tier": "copilot", "by": "ana@example.com", "comment": "the RAG launch; resizing"}
    response = api.post("/v1/triggers/prompt-p95-above-plan/ack", json=body, headers=AUTH)
    assert response.status_code == 201 and response.json()["by"] == "ana@example.com"
    (trigger,) = api.get("/v1/triggers").json()["triggers"]
    assert trigger["acknowledgements"] == [{"by": "ana@example.com", "comment": "the RAG launch; resizing",
                                            "at": 1_800_000_000.0}]  # fmt: skip
    services.evaluate_now()
    (still,) = api.get("/v1/triggers").json()["triggers"]
    assert still["acknowledgements"] and still["state"] == "pending"


@pytest.mark.parametrize(
    ("trigger", "body", "status", "text"),
    [
        pytest.param("no-such-trigger", {"tier": "copilot", "by": "a"}, 404, "no trigger 'no-such-trigger'",
                     id="an unknown trigger id is a 404 naming it"),
        pytest.param("kv-pressure", {"tier": "copilot", "by": "a"}, 409, "does not hold on tier copilot",
                     id="a trigger that does not hold cannot be acknowledged"),
        pytest.param("prompt-p95-above-plan", {"tier": "nope", "by": "a"}, 422, "body.tier: no tier named 'nope'",
                     id="an unknown tier names the field"),
        pytest.param("prompt-p95-above-plan", {"tier": "copilot"}, 422, "body.by: Field required",
                     id="a missing author names the field"),
        pytest.param("prompt-p95-above-plan", {"tier": "copilot", "by": "a", "when": 1}, 422, "body.when",
                     id="an unknown body key names the field"),
    ],
)  # fmt: skip
def test_acknowledgement_errors(
    services: Services, api: ApiClient, observer: FakeObserver, trigger: str, body: dict[str, Any], status: int,
    text: str,
) -> None:  # fmt: skip
    _breach(observer)
    services.evaluate_now()
    response = api.post(f"/v1/triggers/{trigger}/ack", json=body, headers=AUTH)
    assert response.status_code == status
    assert text in str(response.json().get("message") or response.json()["detail"])


def test_a_posted_eval_is_stored_and_judged_by_the_next_evaluation(services: Services, api: ApiClient) -> None:
    services.evaluate_now()
    response = api.post("/v1/evals", json=EVAL, headers=AUTH)
    assert response.status_code == 201
    assert response.json()["failed"] is True and response.json()["eval"]["submitted_at"] == 1_800_000_000.0
    assert api.get("/v1/triggers").json()["triggers"] == []  # not before the next evaluation
    services.evaluate_now()
    ids = [t["id"] for t in api.get("/v1/triggers").json()["triggers"]]
    assert ids == ["quantization-quality-regression"]
    assert [e["task_set"] for e in api.get("/v1/evals").json()["evals"]] == ["support-replies"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        pytest.param({"score": None}, "body.score", id="a missing score names the field"),
        pytest.param({"threshold": -1}, "body.threshold", id="a negative threshold names the field"),
        pytest.param({"model": "gpt-9"}, "body.model", id="a model outside the plan names the field"),
        pytest.param({"seed": 7}, "body.seed", id="an unknown key names the field"),
        pytest.param({"score": "high"}, "body.score", id="a score that is not a number names the field"),
    ],
)
def test_eval_validation_errors_are_422_naming_the_field(api: ApiClient, change: dict[str, Any], field: str) -> None:
    body = {k: v for k, v in {**EVAL, **change}.items() if v is not None}
    response = api.post("/v1/evals", json=body, headers=AUTH)
    assert response.status_code == 422
    assert field in response.json()["message"]


def test_the_openapi_document_describes_every_route(api: ApiClient) -> None:
    doc = api.get("/openapi.json").json()
    operations = [(path, op) for path, item in doc["paths"].items() for op in item.values()]
    assert {p for p, _ in operations} >= {
        "/v1/plan", "/v1/sizing", "/v1/observations", "/v1/drift", "/v1/triggers", "/v1/forecast",
        "/v1/recommendations", "/v1/schedule", "/v1/evals", "/v1/triggers/{trigger_id}/ack", "/healthz", "/readyz",
        "/metrics",
    }  # fmt: skip
    assert all(op.get("summary") for _, op in operations)
    ack = doc["paths"]["/v1/triggers/{trigger_id}/ack"]["post"]
    assert ack["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/AckRequest")
    assert "HTTPBearer" in doc["components"]["securitySchemes"]
    assert {"RecommendationsResponse", "TriggersResponse", "EvalResult"} <= doc["components"]["schemas"].keys()


def test_reads_never_touch_the_observer(services: Services, api: ApiClient, observer: FakeObserver) -> None:
    services.evaluate_now()
    calls = observer.calls
    for path in [*EVALUATED_ROUTES, "/v1/forecast", "/readyz", "/metrics"]:
        assert api.get(path).status_code == 200
    assert observer.calls == calls


def test_an_observation_missing_for_a_tier_is_unknown_not_zero(
    start: Callable[..., Services], observer: FakeObserver
) -> None:
    observer.observations = {"copilot": replace(copilot_observation(), replicas_ready=Measurement.unknown("down"))}
    services = start()
    services.evaluate_now()
    body = ApiClient(services.app).get("/v1/recommendations").json()
    (rec,) = body["recommendations"]
    assert rec["current_replicas"] is None and rec["stale"] is True and rec["recommended_replicas"] == 4
