"""The fleet: tiers of pods behind a gateway, advanced in simulated time.

`Fleet.advance_to(t)` moves simulated time in quanta of at most QUANTUM seconds: user requests arrive
(synthetic profile or trace), the gateway routes each model call to its tier (round robin over ready
pods), follow-up calls of tool-call chains are sent when the previous call finishes, pods change phase
(cold starts end, failed pods restart, drained pods leave), each replica runs its engine steps, and
dcgm-exporter samples GPUs every `dcgm_interval` seconds. Scenarios change the effects applied from the
moment they are active (fleetsim.scenarios). Nothing here reads the wall clock: the server drives time.
"""

from __future__ import annotations

import heapq
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from fleetsim.metrics import Generation, VllmMetrics
from fleetsim.pods import GpuState, NodePool, Pod, gpu_uuid, pod_uid
from fleetsim.replica import BLOCK_SIZE, EngineConfig, Replica, Request
from fleetsim.scenarios import Effects, Scenario, effects_at, format_scenarios
from fleetsim.state import FleetState, PodState
from fleetsim.traces import TraceReplay
from fleetsim.workload import Call, WorkloadModel, arrival_times
from monitor.plan.model import Plan, Tier
from monitor.sizing.memory import kv_budget_bytes, kv_bytes_per_token
from monitor.sizing.roofline import Engine

__all__ = ["QUANTUM", "Fleet", "FleetOptions", "engine_config"]

QUANTUM = 0.25  # simulated seconds per lock-step of all replicas
TOOL_LATENCY_SECONDS = 0.5  # between a call's last token and the next call of its chain
NAMESPACE = "llm"


@dataclass(frozen=True)
class FleetOptions:
    seed: int = 0
    generation: Generation = "v1"
    kube_state_metrics: bool = True  # a cluster without it: no kube_pod_* series, no target
    multiprocess: bool = False  # vLLM's multiprocess exposition (--api-server-count > 1)
    dcgm_interval: float = 30.0  # dcgm-exporter's default collect interval (§2.2)
    restart_after: float = 60.0  # a failed pod's container is restarted after this long
    drain_timeout: float = 120.0
    client_timeout: float = 300.0


def engine_config(plan: Plan, tier: Tier, effects: Effects, client_timeout: float = 300.0) -> EngineConfig:
    """The replica's true engine: the plan's expected efficiencies x the scenario's multiplier (every part
    of the step slows by it); KV blocks
    from kv_budget_bytes (HBM x TP x gpu_memory_utilization - weights - overhead) / (16 x KV bytes/token)."""
    model, gpu = plan.model_of(tier), plan.gpu(tier.gpu)
    eff = tier.efficiency
    m = effects.efficiency_multiplier
    planned = Engine.for_tier(tier, model, gpu, eff.bandwidth.expected * m, eff.compute.expected * m)
    # a slower engine is slower in every part of its step: attention, all-reduce and per-step overhead too
    engine = replace(
        planned,
        attention_flops=planned.attention_flops * m,
        link_bandwidth_bytes_per_second=planned.link_bandwidth_bytes_per_second * m,
        allreduce_latency_seconds=planned.allreduce_latency_seconds / m,
        step_overhead_seconds=planned.step_overhead_seconds / m,
    )
    blocks = max(
        1, int(kv_budget_bytes(tier, model, gpu) // (kv_bytes_per_token(model, tier.kv_cache_dtype) * BLOCK_SIZE))
    )
    max_len = min(tier.max_model_len or model.max_context, blocks * BLOCK_SIZE)
    return EngineConfig(engine, blocks, tier.chunked_prefill_tokens, tier.max_num_seqs, max_len, client_timeout)


@dataclass
class _TierState:
    tier: Tier
    desired: int
    next_index: int = 0
    rr: int = 0
    config: EngineConfig | None = None
    user_requests: float = 0.0
    model_calls: float = 0.0


@dataclass
class Fleet:
    plan: Plan
    start: float
    scenarios: tuple[Scenario, ...] = ()
    options: FleetOptions = FleetOptions()
    trace: TraceReplay | None = None
    now: float = field(init=False)
    pods: dict[str, Pod] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.now = self.start
        self.rng = np.random.default_rng(self.options.seed)
        self.workload = WorkloadModel(self.plan, self.scenarios)
        self.nodes = NodePool()
        self.tiers = {t.name: _TierState(t, t.replicas.planned) for t in self.plan.tiers}
        self.follow_ups: list[tuple[float, int, Call]] = []
        self._sequence = 0
        self._effects = effects_at(self.scenarios, self.start)
        self._next_sample = self.start + self.options.dcgm_interval
        self._last_sample = self.start
        self.dropped_calls = 0

    # ---- building -----------------------------------------------------------------------------------------
    def populate(self) -> None:
        """Each tier's planned replicas, ready at the start (created one cold start earlier)."""
        for ts in self.tiers.values():
            for _ in range(ts.desired):
                pod = self._create(ts, self.start - self._cold_start(ts.tier))
                pod.become_ready(self.start)

    def resume(self, state: FleetState) -> None:
        """Pods and counters from a backfill's end state (fleetsim.state)."""
        for ts in self.tiers.values():
            ts.desired = 0
        for name, ps in state.pods.items():
            ts = self.tiers[ps.tier]
            ts.desired += 1
            ts.next_index = max(ts.next_index, _index_of(name) + 1)
            pod = self._create(ts, ps.created_unix, name=name)
            pod.process_start = ps.process_start_time_seconds
            pod.metrics.reset(ps.process_start_time_seconds)
            pod.metrics.load_state(ps.vllm)
            if ps.ready_unix is not None:
                pod.phase, pod.ready_time, pod.ready_at = "ready", ps.ready_unix, ps.ready_unix
            for gpu, counters in zip(pod.gpus, ps.gpus, strict=False):
                gpu.energy_mj, gpu.nvlink_bytes = counters.get("energy_mj", 0.0), counters.get("nvlink_bytes", 0.0)
        for tier, counts in state.gateway.items():
            if tier in self.tiers:
                self.tiers[tier].user_requests = counts.get("user_requests", 0.0)
                self.tiers[tier].model_calls = counts.get("model_calls", 0.0)

    def _create(self, ts: _TierState, created: float, name: str | None = None) -> Pod:
        tier = ts.tier
        if name is None:
            name, ts.next_index = f"{tier.name}-{ts.next_index}", ts.next_index + 1
        config = self._config(ts)
        node, indices = self.nodes.allocate(tier.gpu, tier.tensor_parallel)
        seed = self.options.seed
        rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
        replica = Replica(config, VllmMetrics(config.max_model_len, created, self.options.generation), created, rng)
        pod = Pod(
            name,
            tier,
            self.plan.model_of(tier),
            self.plan.gpu(tier.gpu),
            replica,
            created=created,
            ready_at=created + self._cold_start(tier),
            process_start=created,
            gpus=[_gpu(seed, node, i) for i in indices],
            uid=pod_uid(seed, name),
        )
        self.pods[name] = pod
        self._sample(pod, 0.0)  # dcgm-exporter reports a GPU from its first collection on
        return pod

    def _config(self, ts: _TierState) -> EngineConfig:
        if ts.config is None:
            ts.config = engine_config(self.plan, ts.tier, self._effects, self.options.client_timeout)
        return ts.config

    def _cold_start(self, tier: Tier) -> float:
        return self._effects.cold_start_seconds or tier.cold_start_seconds

    # ---- control ------------------------------------------------------------------------------------------
    def set_scenarios(self, scenarios: Sequence[Scenario]) -> None:
        # A rate trace given at start (`fleetsim serve --rate-trace`) stays the demand: POST /scenario changes
        # the rest of reality, not what the fleet is replaying.
        given = tuple(scenarios)
        self.scenarios = tuple(s for s in self.scenarios if s.effects.demand is not None and s not in given) + given
        self.workload = WorkloadModel(self.plan, self.scenarios)
        self._apply_effects()

    def scale(self, tier_name: str, replicas: int) -> None:
        """Scale up: new pods, ready after the cold start. Scale down: starting pods go first, then the
        newest ready ones drain (no new traffic; in-flight requests finish or abort at drain_timeout)."""
        ts = self.tiers[tier_name]
        ts.desired = replicas
        live = [p for p in self._tier_pods(tier_name) if p.phase != "draining"]
        for _ in range(replicas - len(live)):
            self._create(ts, self.now)
        excess = sorted(live, key=lambda p: (p.phase != "starting", -_index_of(p.name)))[: max(0, len(live) - replicas)]
        for pod in excess:
            if pod.phase == "ready":
                pod.phase, pod.drain_deadline = "draining", self.now + self.options.drain_timeout
            else:
                self._remove(pod)

    def fail(self, pod_name: str, held: bool = False) -> None:
        pod = self.pods[pod_name]
        if pod.phase == "failed":
            return
        finished = pod.fail(self.now, None if held else self.options.restart_after)
        pod.held_failed = held
        self._sample(pod, 0.0)  # the XID is reported as it happens
        self._follow_up(finished)

    def _remove(self, pod: Pod) -> None:
        self.nodes.release(pod.gpus[0].node, [g.index for g in pod.gpus])
        del self.pods[pod.name]

    def _tier_pods(self, tier: str) -> list[Pod]:
        return [p for p in self.pods.values() if p.tier.name == tier]

    # ---- time ---------------------------------------------------------------------------------------------
    def advance_to(self, t: float) -> None:
        while self.now < t:
            self._quantum(min(t, self.now + QUANTUM))

    def _quantum(self, t1: float) -> None:
        self._apply_effects()
        self._lifecycle()
        self._dispatch(self._new_calls(self.now, t1) + self._due_follow_ups(t1))
        for pod in list(self.pods.values()):
            if pod.phase in ("ready", "draining"):
                self._follow_up(pod.replica.advance(t1))
        self.now = t1
        if self.now >= self._next_sample:
            self._sample_gpus()

    def _apply_effects(self) -> None:
        effects = effects_at(self.scenarios, self.now)
        if effects.efficiency_multiplier != self._effects.efficiency_multiplier:
            for ts in self.tiers.values():
                ts.config = None
            self._effects = effects
            for pod in self.pods.values():
                pod.replica.config = self._config(self.tiers[pod.tier.name])
        self._effects = effects
        self._hold_failures(effects)

    def _hold_failures(self, effects: Effects) -> None:
        """replica-down: keep `failed_replicas` pods of the target tier failed while the scenario lasts."""
        tier = effects.failed_tier or max(self.plan.tiers, key=lambda t: t.replicas.planned).name
        held = [p for p in self.pods.values() if p.held_failed]
        for pod in held[effects.failed_replicas :]:
            pod.restart(self.now, self._cold_start(pod.tier))
        candidates = sorted((p for p in self._tier_pods(tier) if p.phase == "ready"), key=lambda p: -_index_of(p.name))
        for pod in candidates[: max(0, effects.failed_replicas - len(held))]:
            self.fail(pod.name, held=True)

    def _lifecycle(self) -> None:
        for pod in list(self.pods.values()):
            if pod.phase == "failed" and pod.restart_at is not None and self.now >= pod.restart_at:
                pod.restart(self.now, self._cold_start(pod.tier))
            pod.become_ready(self.now)
            if pod.phase == "draining":
                if pod.replica.load == 0:
                    self._remove(pod)
                elif pod.drain_deadline is not None and self.now >= pod.drain_deadline:
                    pod.replica.abort_all("abort")
                    self._remove(pod)

    def _new_calls(self, t0: float, t1: float) -> list[Call]:
        if self.trace is not None:
            calls = self.trace.calls(t0, t1, self.rng)
            chain = self.workload.calls_per_request(t0)
            for call in calls:
                call.calls_total = chain
            return calls
        times = arrival_times(self.plan, t0, t1, self.scenarios, self.rng, self.options.seed)
        return self.workload.calls(times, self.rng)

    def _due_follow_ups(self, t1: float) -> list[Call]:
        due = []
        while self.follow_ups and self.follow_ups[0][0] < t1:
            due.append(heapq.heappop(self.follow_ups)[2])
        return due

    def _follow_up(self, finished: list[Request]) -> None:
        """The next call of a tool-call chain goes out once the previous call has finished."""
        for r in finished:
            call = r.call
            if call.call_index + 1 < call.calls_total and r.finish_reason in ("stop", "length"):
                at = r.finished_at + TOOL_LATENCY_SECONDS
                self._sequence += 1
                heapq.heappush(self.follow_ups, (at, self._sequence, self.workload.follow_up(call, at, self.rng)))

    def _dispatch(self, calls: list[Call]) -> None:
        calls.sort(key=lambda c: c.arrival)
        ready: dict[str, list[Pod]] = {name: [] for name in self.tiers}
        for pod in self.pods.values():
            if pod.phase == "ready":
                ready[pod.tier.name].append(pod)
        for call in calls:
            ts = self.tiers[call.tier]
            if call.call_index == 0:
                ts.user_requests += 1
            ts.model_calls += 1
            pods = ready[call.tier]
            if not pods:
                self.dropped_calls += 1
                continue
            ts.rr = (ts.rr + 1) % len(pods)
            pods[ts.rr].replica.submit(call)

    def _sample_gpus(self) -> None:
        window = self.now - self._last_sample
        for pod in self.pods.values():
            self._sample(pod, window)
        self._last_sample = self.now
        self._next_sample = self.now + self.options.dcgm_interval

    def _sample(self, pod: Pod, window: float) -> None:
        engine = pod.replica.config.engine
        pod.sample_gpus(self.now, window, engine.bandwidth_efficiency, engine.compute_efficiency)

    def state(self) -> FleetState:
        """The fleet's end state in the resume format (fleetsim.state): what a backfill hands over."""
        pods = {
            p.name: PodState(p.tier.name, p.created, p.ready_time, p.process_start, p.metrics.to_state(),
                             [{"energy_mj": g.energy_mj, "nvlink_bytes": g.nvlink_bytes} for g in p.gpus])
            for p in self.pods.values()
        }  # fmt: skip
        gateway = {n: {"user_requests": t.user_requests, "model_calls": t.model_calls} for n, t in self.tiers.items()}
        return FleetState(self.options.generation, self.now, pods, gateway)

    # ---- views --------------------------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """GET /fleet: tiers, pods with phase and queue lengths, scenarios, simulated time."""
        tiers = []
        for name, ts in self.tiers.items():
            pods = [_pod_view(p) for p in self._tier_pods(name)]
            tiers.append(
                {
                    "name": name,
                    "desired_replicas": ts.desired,
                    "pods": pods,
                    "user_requests": ts.user_requests,
                    "model_calls": ts.model_calls,
                }
            )
        return {
            "now": self.now,
            "scenarios": format_scenarios(self.scenarios),
            "tiers": tiers,
            "dropped_calls": self.dropped_calls,
            "generation": self.options.generation,
        }


def _pod_view(p: Pod) -> dict[str, Any]:
    r = p.replica
    return {
        "pod": p.name,
        "phase": p.phase,
        "created": p.created,
        "ready_time": p.ready_time,
        "waiting": len(r.waiting) + len(r.inbox),
        "running": len(r.running),
        "kv_cache_usage": r.used_blocks / r.config.num_gpu_blocks,
        "node": p.gpus[0].node,
    }


def _index_of(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _gpu(seed: int, node: str, index: int) -> GpuState:
    return GpuState(index=index, uuid=gpu_uuid(seed, node, index), node=node)
