"""Model calls of one backfill window, drawn as arrays from the live workload's own definitions.

Same sources as the live fleet (fleetsim.workload, fleetsim.fleet): the arrival intensity `rates_at`
(weekly profile x scenario rate x bursts), `prompt_distribution` / `output_distribution` under the
effects active at each step, `route`, `PrefixModel`, `max_tokens_for`, round-robin over a tier's ready
pods, and the replica's intake rules (prompt clipped to max_model_len - 1, output to max_tokens and the
room left; reason "length" when clipped; hits are whole blocks of the cacheable prefix).

Approximations: user requests are Poisson per scrape step (the live fleet draws per 5 s segment);
follow-up calls of a tool-call chain arrive `k x follow_gap` after the first call instead of when the
previous call finished (follow_gap = tool latency + the previous window's mean e2e latency).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from fleetsim.replica import BLOCK_SIZE, EngineConfig
from fleetsim.scenarios import Effects, Scenario, effects_at
from fleetsim.workload import (
    LengthDistribution,
    PrefixModel,
    max_tokens_for,
    output_distribution,
    prompt_distribution,
    rates_at,
    route,
)
from monitor.plan.model import Plan

__all__ = ["REASONS", "CallArrays", "Serving", "Window", "draw_calls", "step_effects"]

REASONS = ("stop", "length", "abort", "error")  # codes 0..3 in CallArrays.reason


@dataclass(frozen=True)
class Window:
    """Scrape stamps start + j x step for j < steps; calls arriving in (stamp_j - step, stamp_j] belong to j."""

    start: float
    steps: int
    step: float

    @property
    def end(self) -> float:
        return self.start + self.steps * self.step

    def stamps(self) -> np.ndarray:
        return self.start + self.step * np.arange(self.steps)

    def index(self, t: np.ndarray) -> np.ndarray:
        """The first stamp at or after each time (a counter sampled there includes the event)."""
        return np.ceil((t - self.start) / self.step - 1e-9).astype(np.int64)


@dataclass
class CallArrays:
    """One row per model call (struct of arrays); latency columns are filled by fleetsim.backfill_model."""

    replica: np.ndarray  # global replica index
    tier: np.ndarray
    arrival: np.ndarray
    prompt: np.ndarray
    target: np.ndarray  # tokens generated if it runs to the end
    max_tokens: np.ndarray
    hit: np.ndarray  # prefix-cache hit tokens
    shared: np.ndarray  # bool: reuses the shared prefix pool
    reason: np.ndarray  # index into REASONS
    first_call: np.ndarray  # bool: the first call of a user request (gateway_user_requests_total)
    queue: np.ndarray
    prefill: np.ndarray
    decode: np.ndarray
    itl_decode: np.ndarray  # gap of decode-only steps
    itl_prefill: np.ndarray  # gap of prefill-carrying steps
    prefill_gaps: np.ndarray  # how many of the output - 1 gaps were prefill-carrying steps
    chunks: np.ndarray
    batch: np.ndarray  # decoding requests beside it (iteration-token histogram)

    def __len__(self) -> int:
        return int(self.arrival.size)

    def take(self, index: np.ndarray) -> CallArrays:
        return CallArrays(**{f.name: getattr(self, f.name)[index] for f in fields(self)})

    @classmethod
    def concat(cls, parts: Sequence[CallArrays]) -> CallArrays:
        return cls(**{f.name: np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(cls)})

    @classmethod
    def empty(cls) -> CallArrays:
        return cls(**{f.name: np.empty(0, dtype=_DTYPES.get(f.name, np.float64)) for f in fields(cls)})

    # event times
    @property
    def started(self) -> np.ndarray:
        return self.arrival + self.queue

    @property
    def first_token(self) -> np.ndarray:
        return self.started + self.prefill

    @property
    def finished(self) -> np.ndarray:
        return self.first_token + self.decode

    @property
    def aborted(self) -> np.ndarray:
        return self.reason == REASONS.index("abort")


_DTYPES = {
    "replica": np.int64,
    "tier": np.int64,
    "prompt": np.int64,
    "target": np.int64,
    "max_tokens": np.int64,
    "hit": np.int64,
    "shared": np.bool_,
    "reason": np.int64,
    "first_call": np.bool_,
    "prefill_gaps": np.int64,
}


def step_effects(scenarios: Sequence[Scenario], times: np.ndarray) -> list[Effects]:
    """Effects at each time; scenarios only change at their start, so consecutive equal effects are cheap."""
    return [effects_at(scenarios, float(t)) for t in times]


@dataclass(frozen=True)
class Serving:
    """Which replicas serve each tier (global replica indices, round-robin order) and their engines."""

    replicas: tuple[tuple[int, ...], ...]  # per tier
    configs: tuple[EngineConfig, ...]  # per tier


def draw_calls(
    plan: Plan,
    scenarios: Sequence[Scenario],
    window: Window,
    serving: Serving,
    rng: np.random.Generator,
    seed: int,
    follow_gap: float,
) -> CallArrays:
    """Every model call arriving in the window, routed to a tier and a replica (-1 when the tier has no
    ready pod: the gateway counts the call and drops it), with the replica's intake rules applied."""
    mids = window.stamps() - window.step / 2.0
    effects = step_effects(scenarios, mids)
    users = rng.poisson(np.maximum(rates_at(plan, mids, scenarios, seed), 0.0) * window.step)
    per_user = np.array([_chain(plan, e) for e in effects], dtype=np.int64)
    step_of_user = np.repeat(np.arange(window.steps), users)
    arrival = mids[step_of_user] + (rng.uniform(size=step_of_user.size) - 0.5) * window.step
    chain = per_user[step_of_user]
    call_user = np.repeat(np.arange(step_of_user.size), chain)
    position = np.arange(call_user.size) - np.repeat(np.cumsum(chain) - chain, chain)
    arrival = arrival[call_user] + position * follow_gap
    step = step_of_user[call_user]
    calls = _lengths(plan, effects, step, rng)
    tier = route(plan, calls["prompt"].astype(float), rng)
    order = np.argsort(arrival, kind="stable")
    replica = _round_robin(tier[order], serving.replicas)
    out = _intake(plan, serving, tier[order], replica, arrival[order], {k: v[order] for k, v in calls.items()}, rng)
    out.first_call = position[order] == 0
    return out


def _chain(plan: Plan, effects: Effects) -> int:
    """WorkloadModel.calls_per_request at one moment."""
    return max(1, round(effects.calls_per_request or plan.workload.calls_per_request))


def _lengths(plan: Plan, effects: list[Effects], step: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Prompt, output and reusable prefix per call, drawn as WorkloadModel._draw draws them."""
    mu = np.array([prompt_distribution(plan, e).mu for e in effects])[step]
    sigma = np.array([prompt_distribution(plan, e).sigma for e in effects])[step]
    share = np.array([min(1.0, e.prefix_hit_multiplier) for e in effects])[step]
    outputs = output_distribution(plan)
    n = step.size
    prompt = LengthDistribution.draw(mu, sigma, rng, n)
    output = outputs.sample(rng, n)
    shared = rng.uniform(size=n) < share
    cacheable = np.where(shared, PrefixModel.for_plan(plan).cacheable(prompt), 0)
    return {
        "prompt": prompt.astype(np.int64),
        "output": output.astype(np.int64),
        "cacheable": cacheable,
        "shared": shared,
    }


def _round_robin(tier: np.ndarray, replicas: tuple[tuple[int, ...], ...]) -> np.ndarray:
    """The gateway's round robin: the k-th call of a tier goes to its (k mod n)-th ready replica; -1 when the
    tier has none (the live gateway drops those calls)."""
    out = np.full(tier.size, -1, dtype=np.int64)
    for t, pods in enumerate(replicas):
        mine = np.nonzero(tier == t)[0]
        if pods and mine.size:
            out[mine] = np.asarray(pods)[np.arange(mine.size) % len(pods)]
    return out


def _intake(
    plan: Plan,
    serving: Serving,
    tier: np.ndarray,
    replica: np.ndarray,
    arrival: np.ndarray,
    calls: dict[str, np.ndarray],
    rng: np.random.Generator,
) -> CallArrays:
    """Replica.submit's clipping and the prefix lookup (whole blocks, the last prompt token recomputed)."""
    limit = np.array([c.max_model_len for c in serving.configs])[tier]
    error_rate = np.array([c.error_rate for c in serving.configs])[tier]
    max_tokens = np.full(tier.size, max_tokens_for(plan), dtype=np.int64)
    prompt = np.minimum(calls["prompt"], limit - 1)
    cap = np.minimum(max_tokens, limit - prompt)
    target = np.maximum(1, np.minimum(calls["output"], cap))
    reason = np.where(calls["output"] >= cap, REASONS.index("length"), REASONS.index("stop"))
    reason = np.where((reason == 0) & (rng.uniform(size=tier.size) < error_rate), REASONS.index("error"), reason)
    hit = np.minimum(calls["cacheable"] // BLOCK_SIZE * BLOCK_SIZE, (prompt - 1) // BLOCK_SIZE * BLOCK_SIZE)
    zeros = np.zeros(tier.size)
    return CallArrays(
        replica=replica,
        tier=tier,
        arrival=arrival,
        prompt=prompt,
        target=target,
        max_tokens=max_tokens,
        hit=np.maximum(hit, 0),
        shared=calls["shared"] & (hit > 0),
        reason=reason,
        first_call=np.ones(tier.size, dtype=bool),
        queue=zeros,
        prefill=zeros.copy(),
        decode=zeros.copy(),
        itl_decode=zeros.copy(),
        itl_prefill=zeros.copy(),
        prefill_gaps=np.zeros(tier.size, dtype=np.int64),
        chunks=np.ones(tier.size),
        batch=zeros.copy(),
    )
