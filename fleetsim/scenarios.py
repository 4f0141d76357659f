"""Scenarios: realities that contradict the plan in one way each (the capstone seed's Step 7), as data.

A scenario is a frozen bundle of `Effects` plus an optional start time. The live emulator (fleetsim.fleet)
and the history backfill (fleetsim.backfill) both apply effects only through `effects_at`, so a scenario
moves the same metrics whether it is replayed live or written into history.

Composition: rate, prefix-hit and efficiency multipliers multiply; burstiness, prompt p95 and cold-start
overrides take the largest; calls per request takes the largest; failed replicas add up. Before its start
time a scenario has no effect (baseline), so drift can appear partway through a backfilled history.

Spec strings (CLI and `POST /scenario`): "long-prompts", "bursty,over-peak", "prefix-miss@2024-05-01T09:00Z"
or "slow-tp@1714550400" (start as ISO 8601, assumed UTC when no offset is given, or Unix seconds).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from fleetsim.irregularity import DEFAULT_IRREGULARITY, Irregularity, RateTrace

__all__ = [
    "BASELINE",
    "SCENARIOS",
    "SLOW_TP",
    "Effects",
    "Scenario",
    "ScenarioError",
    "effects_at",
    "format_scenarios",
    "parse_scenarios",
    "parse_time",
]


class ScenarioError(ValueError):
    """An unknown scenario name or an unreadable start time, with the known names."""


SLOW_TP = 0.65  # slow-tp's multiplier: at 0.7 the observed deficit (24.6%) sat on the 25% breach line


@dataclass(frozen=True)
class Effects:
    """How reality departs from the plan. The identity element (all defaults) is the plan itself.

    prompt_p95_tokens      replaces the plan's prompt p95 (p50 kept): moves vllm:request_prompt_tokens p95.
    prefix_hit_multiplier  share of requests whose shared prefix still matches: moves prefix_cache_hits/queries.
    burstiness             arrival-rate multiplier inside bursts minus 1 (0 = plain Poisson); see
                           fleetsim.workload.burst_multiplier: moves the 1-minute peak-to-average ratio.
    rate_multiplier        scales the whole arrival profile: moves rate(vllm:request_success_total) and queues.
    efficiency_multiplier  scales the replicas' true bandwidth and compute efficiency: moves tokens/s per
                           replica at equal batch, TPOT (inter_token_latency) and TTFT.
    cold_start_seconds     replaces each tier's cold start: moves kube_pod_status_ready_time - kube_pod_created.
    calls_per_request      model calls per user request (sequential tool calls): moves
                           gateway_model_calls_total / gateway_user_requests_total.
    failed_replicas        replicas failed while active (of `failed_tier`, default the tier with the most
                           planned replicas): their vLLM target goes down, DCGM_FI_DEV_XID_ERRORS is set.
    """

    prompt_p95_tokens: float | None = None
    prefix_hit_multiplier: float = 1.0
    burstiness: float = 0.0
    rate_multiplier: float = 1.0
    efficiency_multiplier: float = 1.0
    cold_start_seconds: float | None = None
    calls_per_request: float | None = None
    failed_replicas: int = 0
    failed_tier: str | None = None
    irregularity: Irregularity | None = None
    demand: RateTrace | None = None

    def combine(self, other: Effects) -> Effects:
        """Compose two effects (see the module docstring for the rules)."""
        return Effects(
            prompt_p95_tokens=_max_optional(self.prompt_p95_tokens, other.prompt_p95_tokens),
            prefix_hit_multiplier=self.prefix_hit_multiplier * other.prefix_hit_multiplier,
            burstiness=max(self.burstiness, other.burstiness),
            rate_multiplier=self.rate_multiplier * other.rate_multiplier,
            efficiency_multiplier=self.efficiency_multiplier * other.efficiency_multiplier,
            cold_start_seconds=_max_optional(self.cold_start_seconds, other.cold_start_seconds),
            calls_per_request=_max_optional(self.calls_per_request, other.calls_per_request),
            failed_replicas=self.failed_replicas + other.failed_replicas,
            failed_tier=other.failed_tier or self.failed_tier,
            irregularity=other.irregularity or self.irregularity,
            demand=other.demand or self.demand,
        )


def _max_optional(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    return a if b is None else max(a, b)


@dataclass(frozen=True)
class Scenario:
    """A named reality with its effects, active from `start_unix` (None: from the beginning of time)."""

    name: str
    moves: str = field(compare=False)
    effects: Effects
    start_unix: float | None = None

    def active_at(self, t_unix: float) -> bool:
        return self.start_unix is None or t_unix >= self.start_unix

    def starting_at(self, start_unix: float | None) -> Scenario:
        return replace(self, start_unix=start_unix)

    @property
    def spec(self) -> str:
        """The string that parses back to this scenario."""
        return self.name if self.start_unix is None else f"{self.name}@{self.start_unix:g}"


BASELINE = Scenario("baseline", "nothing: the fleet behaves as the plan assumes", Effects())

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        BASELINE,
        Scenario(
            "long-prompts",
            "p95 of vllm:request_prompt_tokens rises to ~40K (p50 unchanged); KV usage, preemptions, TTFT",
            Effects(prompt_p95_tokens=40_000.0),
        ),
        Scenario(
            "prefix-miss",
            "rate(vllm:prefix_cache_hits_total)/rate(vllm:prefix_cache_queries_total) falls to ~0; prefill "
            "compute and TTFT rise",
            Effects(prefix_hit_multiplier=0.02),
        ),
        Scenario(
            "bursty",
            "1-minute peak-to-average of rate(vllm:request_success_total) rises several-fold; queue spikes",
            Effects(burstiness=8.0),
        ),
        Scenario(
            "over-peak",
            "request rate 40% above the planned peak: queue length, TTFT, KV usage",
            Effects(rate_multiplier=1.4),
        ),
        Scenario(
            "slow-tp",
            "every engine step 1 / 0.65 longer than the sizing model's: tokens/s per replica at the observed "
            "batch about 30% below the model (the batch grows with the slowdown), ITL/TPOT and TTFT up",
            Effects(efficiency_multiplier=SLOW_TP),
        ),
        Scenario(
            "slow-cold-start",
            "kube_pod_status_ready_time - kube_pod_created of new pods is 20 minutes",
            Effects(cold_start_seconds=1200.0),
        ),
        Scenario(
            "tool-calls",
            "gateway_model_calls_total / gateway_user_requests_total is 5; vLLM request rate x5",
            Effects(calls_per_request=5.0),
        ),
        Scenario(
            "irregular",
            "demand varies day to day in level and peak shape, trends, shifts for days, drops on holidays "
            "(defaults from the real traces): forecast error and interval width as in production",
            Effects(irregularity=DEFAULT_IRREGULARITY),
        ),
        Scenario(
            "replica-down",
            "one replica fails: up == 0 for its vLLM target, kube_pod_status_ready{condition='false'}, "
            "DCGM_FI_DEV_XID_ERRORS 79; the rest of its tier takes its load",
            Effects(failed_replicas=1),
        ),
    )
}


def parse_scenarios(spec: str | Iterable[str] | None) -> tuple[Scenario, ...]:
    """'a,b@T' or ['a', 'b@T'] -> scenarios; raises ScenarioError naming the known scenarios."""
    if spec is None:
        return ()
    items = spec.split(",") if isinstance(spec, str) else [p for s in spec for p in s.split(",")]
    return tuple(_parse_one(item.strip()) for item in items if item.strip())


def _parse_one(item: str) -> Scenario:
    name, _, start = item.partition("@")
    scenario = SCENARIOS.get(name.strip())
    if scenario is None:
        known = ", ".join(SCENARIOS)
        raise ScenarioError(f"unknown scenario {name.strip()!r}; known scenarios: {known}")
    return scenario.starting_at(parse_time(start.strip(), item)) if start else scenario


def parse_time(text: str, item: str) -> float:
    try:
        value = float(text)
    except ValueError:
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ScenarioError(
                f"{item!r}: start {text!r} is neither Unix seconds nor ISO 8601 (2024-05-01T09:00Z)"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    if not math.isfinite(value):
        raise ScenarioError(f"{item!r}: start {text!r} is not a finite time")
    return value


def effects_at(scenarios: Sequence[Scenario], t_unix: float) -> Effects:
    """The combined effects of the scenarios active at `t_unix` (identity when none is)."""
    combined = Effects()
    for scenario in scenarios:
        if scenario.active_at(t_unix):
            combined = combined.combine(scenario.effects)
    return combined


def format_scenarios(scenarios: Sequence[Scenario]) -> str:
    return ",".join(s.spec for s in scenarios) or "baseline"
