"""The control API and file_sd over real HTTP (uvicorn in a thread, the simulation loop running)."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from fleetsim.cli import bind
from fleetsim.fleet import Fleet, FleetOptions
from fleetsim.scenarios import SLOW_TP
from fleetsim.server import FileSD, SimClock, create_app
from tests.harness.stack import wait_for

from .helpers import START, tiny_plan


class Written(FileSD):
    """The server's file_sd, remembering the simulated time of the fleet it was last written (or kept) for: the
    loop's tick advances the fleet, then updates file_sd, so once `at` reaches a time the file shows the fleet
    at or after it."""

    def __init__(self, path: Path, fleet: Fleet) -> None:
        super().__init__(path)
        self.fleet, self.at = fleet, -math.inf

    def update(self, targets: list[dict[str, Any]]) -> bool:
        changed = super().update(targets)
        self.at = self.fleet.now
        return changed


Served = tuple[httpx.Client, Fleet, Written, SimClock]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """2 pods at 40 req/s (each always has requests in flight), driven by the server's own loop."""
    fleet = Fleet(tiny_plan(rps=40.0, replicas=2), START, (), FleetOptions(seed=1))
    fleet.populate()
    sd = Written(tmp_path / "targets.json", fleet)
    sock = bind("127.0.0.1", 0)
    address = f"127.0.0.1:{sock.getsockname()[1]}"
    clock = SimClock(START, speed=1.0)
    app = create_app(fleet, clock, sd, address)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_for(lambda: server.started, 10, "the fleetsim server to start", interval=0.02)
    with httpx.Client(base_url=f"http://{address}") as client:
        yield client, fleet, sd, clock
    server.should_exit = True
    thread.join(10)
    sock.close()


def jump(clock: SimClock, sd: Written, seconds: float) -> None:
    """Move simulated time on and wait for the server's loop to catch up and write file_sd for the new time."""
    clock.sim_start += seconds
    target = clock.now()
    wait_for(lambda: sd.at >= target, 20, "the server's loop to write file_sd for the new time", interval=0.02)


def jobs(sd: Written) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for group in json.loads(sd.path.read_text()):
        labels = group["labels"]
        assert len(group["targets"]) == 1
        out.setdefault(labels["job"], set()).add(labels.get("pod", ""))
    return out


def test_file_sd_lists_every_exporter_with_tier_pod_and_namespace(served):
    client, _, sd, _ = served
    groups = json.loads(sd.path.read_text())
    vllm = [g["labels"] for g in groups if g["labels"]["job"] == "vllm"]
    assert {(g["tier"], g["pod"], g["namespace"], g["__metrics_path__"]) for g in vllm} == {
        ("fast", "fast-0", "llm", "/replicas/fast-0/metrics"),
        ("fast", "fast-1", "llm", "/replicas/fast-1/metrics"),
    }
    for group in groups:
        response = client.get(group["labels"]["__metrics_path__"])
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    dcgm = [g["labels"] for g in groups if g["labels"]["job"] == "dcgm-exporter"]
    assert {g["pod"] for g in dcgm} == {"fast-0", "fast-1"}


def test_scaling_up_adds_a_starting_pod_whose_vllm_target_waits_for_readiness(served):
    client, _, sd, clock = served
    body = client.post("/tiers/fast/scale", json={"replicas": 3}).json()
    phases = {p["pod"]: p["phase"] for p in body["tiers"][0]["pods"]}
    assert phases == {"fast-0": "ready", "fast-1": "ready", "fast-2": "starting"}
    assert jobs(sd)["vllm"] == {"fast-0", "fast-1"} and "fast-2" in jobs(sd)["dcgm-exporter"]
    assert client.get("/replicas/fast-2/metrics").status_code == 503
    jump(clock, sd, 121.0)
    assert jobs(sd)["vllm"] == {"fast-0", "fast-1", "fast-2"}


def test_scaling_down_drains_the_newest_pod_then_removes_it(served):
    client, fleet, sd, clock = served
    jump(clock, sd, 5.0)  # requests in flight on both pods
    body = client.post("/tiers/fast/scale", json={"replicas": 1}).json()
    assert {p["pod"]: p["phase"] for p in body["tiers"][0]["pods"]}["fast-1"] == "draining"
    jump(clock, sd, 130.0)
    assert set(fleet.pods) == {"fast-0"}
    assert jobs(sd)["vllm"] == {"fast-0"} and client.get("/replicas/fast-1/metrics").status_code == 404


def test_a_failed_replica_answers_503_so_its_target_goes_down(served):
    client, _, sd, _ = served
    assert client.post("/replicas/fast-0/fail").status_code == 200
    assert client.get("/replicas/fast-0/metrics").status_code == 503
    assert "fast-0" in jobs(sd)["vllm"]
    assert 'DCGM_FI_DEV_XID_ERRORS{gpu="0"' in client.get("/gpus/fast-0/metrics").text


def test_scenarios_change_at_run_time(served):
    client, fleet, _, _ = served
    assert client.post("/scenario", json={"scenarios": ["slow-tp", "bursty"]}).json()["scenarios"] == "slow-tp,bursty"
    assert fleet.pods["fast-0"].replica.config.engine.bandwidth_efficiency == pytest.approx(0.7 * SLOW_TP)
    assert client.get("/fleet").json()["scenarios"] == "slow-tp,bursty"


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "detail"),
    [
        pytest.param("post", "/scenario", {"scenarios": ["spiky"]}, 400, "unknown scenario", id="unknown scenario"),
        pytest.param("post", "/tiers/nope/scale", {"replicas": 1}, 404, "no tier 'nope'", id="unknown tier"),
        pytest.param("post", "/tiers/fast/scale", {"replicas": -1}, 422, "", id="negative replicas"),
        pytest.param("post", "/replicas/nope/fail", None, 404, "no pod 'nope'", id="failing an unknown pod"),
        pytest.param("get", "/replicas/nope/metrics", None, 404, "no pod", id="metrics of an unknown pod"),
    ],
)  # fmt: skip
def test_bad_requests_are_rejected_with_a_reason(served, method, path, body, status, detail):
    client, _, _, _ = served
    response = client.request(method.upper(), path, json=body)
    assert response.status_code == status
    assert detail in json.dumps(response.json())
