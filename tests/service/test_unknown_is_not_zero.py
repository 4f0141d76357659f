"""Prometheus away: the evaluation still runs on all-unknown observations, advice holds (stale), triggers are
carried over rather than resolved, /readyz says why, and everything recovers when Prometheus returns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from monitor.observe.model import Measurement
from monitor.service.app import Services
from monitor.service.results import Outcome
from tests.service.conftest import ApiClient
from tests.service.fakes import Clock, FakeObserver, copilot_observation


def _recommendation(api: ApiClient) -> dict[str, Any]:
    (rec,) = api.get("/v1/recommendations").json()["recommendations"]
    return rec


def test_an_outage_holds_the_fleet_keeps_the_triggers_and_recovers(
    services: Services, api: ApiClient, observer: FakeObserver, clock: Clock
) -> None:
    observer.observations = {"copilot": copilot_observation(demand_rps=70.0, prompt_p95=Measurement.of(40_000))}
    services.evaluate_now()
    assert _recommendation(api)["recommended_replicas"] == 5
    (before,) = api.get("/v1/triggers").json()["triggers"]

    observer.reachable = False
    clock.advance(60)
    services.evaluate_now()
    ready = api.get("/readyz")
    assert ready.status_code == 503 and ready.json()["status"] == "degraded"
    assert any("Prometheus unreachable" in r for r in ready.json()["reasons"])
    rec = _recommendation(api)
    assert (rec["recommended_replicas"], rec["action"], rec["stale"], rec["current_replicas"]) == (
        5,
        "hold",
        True,
        None,
    )
    (held,) = api.get("/v1/triggers").json()["triggers"]
    assert held["held_over_unknown"] is True
    assert (held["first_seen"], held["last_seen"]) == (before["first_seen"], before["last_seen"])
    assert api.get("/v1/triggers?state=all").json()["triggers"][0]["resolved_at"] is None

    clock.advance(31 * 60)  # past the hold time: still not promoted, since nobody saw the condition hold
    services.evaluate_now()
    assert api.get("/v1/triggers").json()["triggers"][0]["state"] == "pending"

    observer.reachable = True
    clock.advance(60)
    services.evaluate_now()
    assert api.get("/readyz").status_code == 200
    assert _recommendation(api)["stale"] is False
    (back,) = api.get("/v1/triggers").json()["triggers"]
    assert back["first_seen"] == before["first_seen"] and back["state"] == "active" and not back["held_over_unknown"]


def test_prometheus_away_at_startup_holds_the_planned_replicas(services: Services, api: ApiClient,
                                                               observer: FakeObserver) -> None:  # fmt: skip
    observer.reachable = False
    services.evaluate_now()
    rec = _recommendation(api)
    assert (rec["recommended_replicas"], rec["stale"]) == (4, True)  # replicas.planned of the plan
    body = api.get("/readyz").json()
    assert body["status"] == "degraded" and body["prometheus"]["reachable"] is False
    assert "no evaluation with data yet" in body["reasons"]
    drift = api.get("/v1/drift").json()
    assert {row["status"] for row in drift["tiers"][0]["drift"]} == {"unknown"}
    assert all(row["observed"] is None for row in drift["tiers"][0]["drift"])


def test_a_series_that_goes_missing_keeps_its_trigger(services: Services, api: ApiClient,
                                                      observer: FakeObserver) -> None:  # fmt: skip
    observer.observations = {"copilot": copilot_observation(prompt_p95=Measurement.of(40_000))}
    services.evaluate_now()
    observer.observations = {"copilot": copilot_observation(prompt_p95=Measurement.unknown("no series"))}
    services.evaluate_now()
    (held,) = api.get("/v1/triggers").json()["triggers"]
    assert held["id"] == "prompt-p95-above-plan" and held["held_over_unknown"] is True
    assert api.get("/readyz").status_code == 200  # Prometheus is fine; one series is missing


@pytest.mark.parametrize(
    ("seconds", "ready"),
    [
        pytest.param(179, True, id="data younger than three intervals is fresh"),
        pytest.param(181, False, id="data older than three intervals makes readyz degraded"),
    ],
)
def test_old_data_is_degraded(services: Services, api: ApiClient, clock: Clock, seconds: float, ready: bool) -> None:
    services.evaluate_now()
    clock.advance(seconds)
    response = api.get("/readyz")
    assert (response.status_code == 200) is ready
    assert response.json()["data_age_seconds"] == seconds
    if not ready:
        assert "the data is 181 s old (limit 180 s)" in response.json()["reasons"]


class _BrokenObserver(FakeObserver):
    def collect(self, plan, now, window):  # type: ignore[no-untyped-def]
        raise RuntimeError("bad response shape")


def test_a_failing_observer_is_reported_and_holds(start: Callable[..., Services], caplog: pytest.LogCaptureFixture,
                                                   ) -> None:  # fmt: skip
    services = start()
    broken = _BrokenObserver()
    object.__setattr__(services.jobs, "observer", broken)
    snapshot = services.evaluate_now()
    assert snapshot.outcome is Outcome.ERROR and "bad response shape" in snapshot.last_error
    body = ApiClient(services.app).get("/readyz").json()
    assert any("observer failed: RuntimeError: bad response shape" in r for r in body["reasons"])
    assert "collecting observations failed" in caplog.text
