"""A trigger's hold is judged on the history Prometheus holds: a condition history already shows for longer
than its hold is active at first sight (after a restart, in a demo on backfilled days); one that just began
is pending, and `check` and `serve` agree."""

from __future__ import annotations

import pytest

from monitor.evaluation import EvaluationInputs, evaluate
from monitor.hold_history import held_in_history
from monitor.observe.model import Measurement
from monitor.plan import load_plan
from monitor.service.app import Services
from tests.builders import EXAMPLES
from tests.service.conftest import ApiClient
from tests.service.fakes import Clock, FakeObserver, copilot_observation

NOW = 1_800_000_000.0
KEY = ("prompt-p95-above-plan", "copilot")


def _long_prompts(observer: FakeObserver, since: float | None) -> None:
    observer.observations = {"copilot": copilot_observation(prompt_p95=Measurement.of(40_000))}
    observer.since = since


@pytest.mark.parametrize(
    ("began_minutes_ago", "state"),
    [
        pytest.param(120, "active", id="a condition history shows for two hours is active at first sight"),
        pytest.param(41, "active", id="one that history shows past its 30-minute hold and a step is active"),
        pytest.param(29, "pending", id="one that began inside the 30-minute hold is pending"),
        pytest.param(15, "pending", id="one that began 15 minutes ago is pending"),
        pytest.param(None, "pending", id="one that begins now is pending"),
    ],
)
def test_serve_judges_a_new_trigger_on_history(
    services: Services, api: ApiClient, observer: FakeObserver, clock: Clock, began_minutes_ago: int | None,
    state: str,
) -> None:  # fmt: skip
    _long_prompts(observer, None if began_minutes_ago is None else clock.now - began_minutes_ago * 60)
    services.evaluate_now()
    (trigger,) = [t for t in api.get("/v1/triggers").json()["triggers"] if t["id"] == KEY[0]]
    assert trigger["state"] == state


@pytest.mark.parametrize(
    ("began_minutes_ago", "held_from_minutes_ago"),
    [
        pytest.param(120, 40, id="held at every sample back to the last one before the hold began"),
        pytest.param(25, 20, id="held since the sample 20 minutes back, not the one at 30"),
        pytest.param(5, None, id="not at the first probe back: no history hold"),
    ],
)
def test_the_history_hold_is_the_earliest_unbroken_probe(
    began_minutes_ago: int, held_from_minutes_ago: int | None
) -> None:
    plan = load_plan(EXAMPLES / "support-copilot.yaml")
    observer = FakeObserver()
    _long_prompts(observer, NOW - began_minutes_ago * 60)
    now_eval = evaluate(EvaluationInputs(plan, observer.collect(plan, NOW, "1h"), NOW))
    assert KEY in {r.key for r in now_eval.current_triggers}
    held = held_in_history(observer, plan, NOW, "1h", [KEY])
    expected = None if held_from_minutes_ago is None else NOW - held_from_minutes_ago * 60
    assert held.get(KEY) == expected
