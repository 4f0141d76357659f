"""One definition of the evaluation's JSON (`monitor.shapes`): `planwatch check --format json` and
`GET /v1/evaluation` on the same real Prometheus are instances of the same models, with exactly their keys in
their order (unknown keys forbidden, no key left to a default), so a key added to a model appears in both.
A trigger has the same keys whether or not this release's catalog still has it.

History: an hour of two copilot replicas each finishing a request a second, with ordinary latencies.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from fleetsim.promstack import PrometheusProcess
from monitor import shapes
from monitor.cli.main import build_app
from monitor.export import trigger_shape
from monitor.service import schemas
from monitor.service.app import build_services, default_observer
from monitor.triggers import Evidence, Severity, TriggerRecord, TriggerState, trigger_def
from tests.harness.history import copilot_pods
from tests.harness.stack import Stack
from tests.service.conftest import ApiClient, make_settings

pytestmark = pytest.mark.integration

COPILOT = Path(__file__).resolve().parents[2] / "examples" / "support-copilot.yaml"
END = 1_790_000_000.0
START = END - 3600.0
SECONDS = ("0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf")


def _history() -> str:
    return copilot_pods(START, END, output=("500", 300.0), ttft=(SECONDS, "1", 0.6))


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    stack = Stack(tmp_path_factory.mktemp("shapes"))
    try:
        yield stack.prometheus(openmetrics=_history())
    finally:
        stack.close()


@pytest.fixture(scope="module")
def bodies(prometheus: PrometheusProcess, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """`check --format json` and `/v1/evaluation` of one service evaluation at END, as parsed JSON."""
    argv = ["check", str(COPILOT), "--prometheus", prometheus.url, "--at", str(END), "--window", "1h",
            "--long-window", "1h", "--no-forecast", "--format", "json"]  # fmt: skip
    result = CliRunner().invoke(build_app(), argv)
    assert result.exit_code in (0, 1), result.output
    source = {"url": prometheus.url, "timeout": 30, "retries": 0}
    settings = make_settings(tmp_path_factory.mktemp("shapes-service"), observation_window="1h",
                             long_window="1h", prometheus=source)  # fmt: skip
    services = build_services(settings, default_observer(settings), clock=lambda: END, schedule=False)
    try:
        services.evaluate_now()
        response = ApiClient(services.app).get("/v1/evaluation")
        assert response.status_code == 200, response.text
    finally:
        services.close()
    return {"check": json.loads(result.stdout), "api": response.json()}


@pytest.mark.parametrize(
    ("body", "model"),
    [
        pytest.param("check", shapes.CheckDocument, id="check's JSON is exactly the check document model"),
        pytest.param("api", schemas.EvaluationResponse, id="the API's evaluation is exactly its response model"),
    ],
)
def test_a_body_is_its_model_key_for_key_in_order(
    bodies: dict[str, dict[str, Any]], body: str, model: type[BaseModel]
) -> None:
    """Validating forbids unknown keys; writing the validated instance back gives the same text, so no key is
    missing (filled by a default) and the order is the model's."""
    data = bodies[body]
    again = model.model_validate(data).model_dump(mode="json")
    assert json.dumps(again) == json.dumps(data)


def _keys(value: Any) -> Any:
    """The tree of keys: a dict's keys in order with their values' trees, a list's first element's tree."""
    if isinstance(value, dict):
        return [(k, _keys(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_keys(value[0])] if value else []
    return None


def test_check_and_the_api_write_the_evaluation_with_the_same_keys(bodies: dict[str, dict[str, Any]]) -> None:
    """Both are the evaluation model with one key of their own: check's `forecast`, the API's `source`."""
    check = {k: v for k, v in bodies["check"].items() if k != "forecast"}
    api = {k: v for k, v in bodies["api"].items() if k != "source"}
    assert list(check) == list(shapes.Evaluation.model_fields)
    assert check["tiers"] and check["tiers"][0]["observations"] and check["tiers"][0]["drift"]
    assert _keys(check) == _keys(api)
    assert set(shapes.CheckDocument.model_fields) - set(shapes.Evaluation.model_fields) == {"forecast"}
    assert set(schemas.EvaluationResponse.model_fields) - set(shapes.Evaluation.model_fields) == {"source"}


@pytest.mark.parametrize(
    ("trigger", "known"),
    [
        pytest.param("prompt-p95-above-plan", True, id="a catalog trigger carries its catalog entry"),
        pytest.param("a-trigger-a-past-release-had", False,
                     id="an episode stored by a release whose catalog had the trigger: the same keys, nulls"),
    ],
)  # fmt: skip
def test_a_trigger_has_every_key_whether_or_not_the_catalog_still_has_it(trigger: str, known: bool) -> None:
    evidence = Evidence("prompt p95 40,000 > 2,000", {"prompt_p95": 40_000.0}, {"prompt_p95": 2_000.0})
    record = TriggerRecord(trigger, "copilot", Severity.WARNING, TriggerState.ACTIVE, END - 60, END, evidence)
    data = shapes.dump(trigger_shape(record))
    assert list(data) == list(shapes.Trigger.model_fields)
    entry = trigger_def(trigger) if known else None
    assert (data["title"], data["mitigation"]) == ((entry.title, entry.mitigation) if entry else (None, None))
    assert data["evidence"] == {"summary": "prompt p95 40,000 > 2,000", "observed": {"prompt_p95": 40_000.0},
                                "plan": {"prompt_p95": 2_000.0}, "queries": []}  # fmt: skip
