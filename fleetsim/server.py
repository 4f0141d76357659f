"""The HTTP face of a fleet: every emulated exporter's /metrics and the control API, on one listener.

Routes
  GET  /replicas/{pod}/metrics          vLLM /metrics of one pod (503 while failed: the target is down)
  GET  /gpus/{pod}/metrics              dcgm-exporter fields of that pod's GPUs
  GET  /gateway/metrics                 gateway_user_requests_total / gateway_model_calls_total by tier
  GET  /kube-state-metrics/metrics      kube_pod_created / _status_ready / _status_ready_time
  GET  /fleet                           JSON: tiers, pods (phase, queues, KV usage), scenarios, time
  POST /tiers/{tier}/scale              {"replicas": N}
  POST /scenario                        {"scenarios": ["bursty", "slow-tp@2024-05-01T09:00Z"]}
  POST /replicas/{pod}/fail             the pod fails (restarts after FleetOptions.restart_after)

Simulated time runs at `speed` x wall time; a background task advances the fleet every TICK_SECONDS of
wall time and rewrites the Prometheus file_sd file (atomically) when the set of targets changes. Every
route is `async`, so it runs on the event loop between ticks: a scrape never sees half a step.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException
from fastapi.responses import Response
from pydantic import BaseModel, Field

from fleetsim.exposition import (
    CONTENT_TYPE,
    GpuView,
    PodView,
    cache_config_labels,
    dcgm_labels,
    render_dcgm,
    render_gateway,
    render_ksm,
    render_vllm,
)
from fleetsim.fleet import NAMESPACE, Fleet
from fleetsim.replica import BLOCK_SIZE
from fleetsim.scenarios import ScenarioError, parse_scenarios

__all__ = ["TICK_SECONDS", "FileSD", "SimClock", "create_app", "fleet_targets"]

TICK_SECONDS = 0.1


@dataclass
class SimClock:
    """Simulated Unix time = sim_start + speed x wall seconds elapsed."""

    sim_start: float
    speed: float = 1.0
    wall_start: float = field(default_factory=time.monotonic)

    def now(self) -> float:
        return self.sim_start + (time.monotonic() - self.wall_start) * self.speed


class FileSD:
    """A Prometheus file_sd JSON file, replaced atomically (rename) so Prometheus never reads half of it."""

    def __init__(self, path: Path):
        self.path = path
        self._last: str | None = None

    def update(self, targets: list[dict[str, Any]]) -> bool:
        text = json.dumps(targets, indent=1, sort_keys=True)
        if text == self._last:
            return False
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; Prometheus often runs as another user (nobody)
        os.replace(tmp, self.path)
        self._last = text
        return True


def fleet_targets(fleet: Fleet, address: str) -> list[dict[str, Any]]:
    """file_sd groups. Per-pod targets carry tier, pod and namespace; a vLLM target exists once the server
    listens (not while starting); the fleet-wide gateway and kube-state-metrics targets carry only `job`,
    so their own tier/pod/namespace labels are kept as exposed (no exported_ renaming)."""
    groups: list[dict[str, Any]] = []
    for pod in fleet.pods.values():
        common = {"tier": pod.tier.name, "pod": pod.name, "namespace": NAMESPACE}
        if pod.phase != "starting":
            groups.append(
                {
                    "targets": [address],
                    "labels": common | {"job": "vllm", "__metrics_path__": f"/replicas/{pod.name}/metrics"},
                }
            )
        groups.append(
            {
                "targets": [address],
                "labels": common | {"job": "dcgm-exporter", "__metrics_path__": f"/gpus/{pod.name}/metrics"},
            }
        )
    groups.append({"targets": [address], "labels": {"job": "gateway", "__metrics_path__": "/gateway/metrics"}})
    if fleet.options.kube_state_metrics:
        ksm = {"job": "kube-state-metrics", "__metrics_path__": "/kube-state-metrics/metrics"}
        groups.append({"targets": [address], "labels": ksm})
    return groups


def vllm_text(fleet: Fleet, pod_name: str) -> str:
    pod = _pod(fleet, pod_name)
    if pod.phase in ("starting", "failed"):
        raise HTTPException(503, f"pod {pod_name} is {pod.phase}")
    cfg = pod.replica.config
    generation = fleet.options.generation
    info = cache_config_labels(
        BLOCK_SIZE, pod.tier.kv_cache_dtype.value, pod.tier.gpu_memory_utilization, cfg.num_gpu_blocks, generation
    )
    name = pod.model.served_name or pod.tier.model
    return render_vllm(pod.metrics, name, generation, info, pod.process_start, fleet.options.multiprocess)


def dcgm_text(fleet: Fleet, pod_name: str) -> str:
    pod = _pod(fleet, pod_name)
    model_name = pod.gpu_spec.dcgm_model_name or pod.tier.gpu
    views = [
        GpuView(dcgm_labels(g.index, g.uuid, g.pci_bus_id, model_name, g.node, pod.name, NAMESPACE), g.values)
        for g in pod.gpus
    ]
    return render_dcgm(views)


def ksm_text(fleet: Fleet) -> str:
    views = [
        PodView(NAMESPACE, p.name, p.uid, p.created, p.phase in ("ready", "draining"), p.ready_time)
        for p in fleet.pods.values()
    ]
    return render_ksm(views)


def gateway_text(fleet: Fleet) -> str:
    counts = {name: (ts.user_requests, ts.model_calls) for name, ts in fleet.tiers.items()}
    return render_gateway(counts, fleet.start)


def _pod(fleet: Fleet, name: str) -> Any:
    pod = fleet.pods.get(name)
    if pod is None:
        raise HTTPException(404, f"no pod {name!r}")
    return pod


class ScaleBody(BaseModel):
    replicas: int = Field(ge=0, le=1000)


class ScenarioBody(BaseModel):
    scenarios: list[str]


def create_app(fleet: Fleet, clock: SimClock, file_sd: FileSD | None, address: str) -> FastAPI:
    """The ASGI app; its lifespan runs the simulation loop."""

    def tick() -> None:
        fleet.advance_to(clock.now())
        if file_sd is not None:
            file_sd.update(fleet_targets(fleet, address))

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        tick()
        task = asyncio.create_task(_run(tick))
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    app = FastAPI(title="fleetsim", lifespan=lifespan)

    def text(body: str) -> Response:
        return Response(body, media_type=CONTENT_TYPE)

    @app.get("/replicas/{pod}/metrics")
    async def replica_metrics(pod: str) -> Response:
        return text(vllm_text(fleet, pod))

    @app.get("/gpus/{pod}/metrics")
    async def gpu_metrics(pod: str) -> Response:
        return text(dcgm_text(fleet, pod))

    @app.get("/gateway/metrics")
    async def gateway_metrics() -> Response:
        return text(gateway_text(fleet))

    @app.get("/kube-state-metrics/metrics")
    async def ksm_metrics() -> Response:
        if not fleet.options.kube_state_metrics:
            raise HTTPException(404, "this fleet runs without kube-state-metrics")
        return text(ksm_text(fleet))

    @app.get("/fleet")
    async def describe() -> dict[str, Any]:
        return fleet.describe()

    @app.post("/tiers/{tier}/scale")
    async def scale(tier: str, body: ScaleBody) -> dict[str, Any]:
        if tier not in fleet.tiers:
            raise HTTPException(404, f"no tier {tier!r}; tiers: {', '.join(fleet.tiers)}")
        fleet.scale(tier, body.replicas)
        tick()
        return fleet.describe()

    @app.post("/scenario")
    async def scenario(body: ScenarioBody) -> dict[str, Any]:
        try:
            fleet.set_scenarios(parse_scenarios(body.scenarios))
        except ScenarioError as exc:
            raise HTTPException(400, str(exc)) from None
        tick()
        return fleet.describe()

    @app.post("/replicas/{pod}/fail")
    async def fail(pod: str) -> dict[str, Any]:
        _pod(fleet, pod)
        fleet.fail(pod)
        tick()
        return fleet.describe()

    return app


async def _run(tick: Any) -> None:
    while True:
        await asyncio.sleep(TICK_SECONDS)
        tick()
