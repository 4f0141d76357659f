"""A restart (a new process on the same state file) keeps trigger history, acknowledgements, posted evals
and the advice state, so a deploy neither forgets who knows nor restarts the scale-down cooldown."""

from __future__ import annotations

from collections.abc import Callable

from monitor.observe.model import Measurement
from monitor.service.app import Services
from tests.service.conftest import AUTH, ApiClient
from tests.service.fakes import Clock, FakeObserver, copilot_observation

EVAL = {"model": "llama-70b", "precision": "fp8", "task_set": "support", "score": 0.70, "baseline_score": 0.80,
        "threshold": 0.02}  # fmt: skip


def test_history_acknowledgements_and_evals_survive_a_restart(
    start: Callable[..., Services], observer: FakeObserver, clock: Clock
) -> None:
    first = start()
    api = ApiClient(first.app)
    observer.observations = {"copilot": copilot_observation(prompt_p95=Measurement.of(40_000))}
    first.evaluate_now()
    api.post("/v1/triggers/prompt-p95-above-plan/ack", json={"tier": "copilot", "by": "ana"}, headers=AUTH)
    assert api.post("/v1/evals", json=EVAL, headers=AUTH).status_code == 201
    first.close()

    clock.advance(31 * 60)
    second = start()
    api = ApiClient(second.app)
    second.evaluate_now()
    triggers = {t["id"]: t for t in api.get("/v1/triggers").json()["triggers"]}
    prompt = triggers["prompt-p95-above-plan"]
    assert prompt["first_seen"] == 1_800_000_000.0 and prompt["state"] == "active"  # the hold counted across
    assert [a["by"] for a in prompt["acknowledgements"]] == ["ana"]
    assert "quantization-quality-regression" in triggers  # judged on the eval posted before the restart
    assert [e["task_set"] for e in api.get("/v1/evals").json()["evals"]] == ["support"]


def test_a_resolved_episode_stays_resolved_after_a_restart(
    start: Callable[..., Services], observer: FakeObserver, clock: Clock
) -> None:
    first = start()
    observer.observations = {"copilot": copilot_observation(prompt_p95=Measurement.of(40_000))}
    first.evaluate_now()
    observer.observations = {"copilot": copilot_observation()}
    clock.advance(60)
    first.evaluate_now()
    first.close()
    second = start()
    second.evaluate_now()
    (episode,) = ApiClient(second.app).get("/v1/triggers?state=all").json()["triggers"]
    assert episode["resolved_at"] == 1_800_000_060.0


def _scale_down_time(start: Callable[..., Services], observer: FakeObserver, clock: Clock, restart: bool) -> float:
    """Demand falls to one replica's worth at t0; return when scale-down is first recommended."""
    services = start()
    observer.observations = {"copilot": copilot_observation(demand_rps=10.0, replicas=3.0)}
    t0 = clock.now
    for minute in range(0, 60):
        clock.now = t0 + minute * 60
        if restart and minute == 10:
            services.close()
            services = start()
        rec = services.evaluate_now().evaluation.tiers[0].recommendation  # type: ignore[union-attr]
        assert rec is not None
        if rec.action.value == "scale-down":
            return clock.now - t0
    raise AssertionError("no scale-down within an hour")


def test_the_scale_down_cooldown_survives_a_restart(
    start: Callable[..., Services], observer: FakeObserver, clock: Clock
) -> None:
    """Forgetting low_since on restart would scale down at minute 24 (10 + 14), not 14. At 09:00 in New York,
    inside the copilot's business hours: the cooldown there is a replacement's lead, 14 minutes (its observed
    9-minute cold start and the 5-minute margin; outside them it is a cold start)."""
    clock.now += 6 * 3600
    assert _scale_down_time(start, observer, clock, restart=True) == 14 * 60
