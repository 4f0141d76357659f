"""The scaling policies a replay compares. Each decides every decision interval how many replicas each tier
should run (ready + starting), from only what was observable before that moment; the oracle alone reads the
whole trace.

static      the plan's planned replicas, always.
reactive    vLLM production-stack's KEDA default: a Prometheus trigger on vllm:num_requests_waiting with
            threshold 5 (helm/templates/scaledobject-vllm.yaml), read as an AverageValue target, so the HPA
            wants ceil(waiting / 5) replicas; the HPA's defaults: 10% tolerance, scale-up at most
            max(100%, 4 pods) per 15 s, scale-down to the highest recommendation of the last 300 s.
predictive  NVIDIA Dynamo SLA-planner style: the next interval's request rate predicted by ARIMA on the
            interval rates (monitor.replay.arima; last value on short history or a failed fit, or always
            with predictor="last"), sized with planwatch's capacity table for that mean rate (as Dynamo
            sizes on its prediction), at most one replica per interval.
oracle      hindsight: per minute the fewest replicas that meet the SLO there (monitor.replay.slo), each
            started one cold start before it is needed: desired(m) = max(required[m .. m + cold start]).
            Why this is optimal: cost is the sum over minutes of replicas running or starting; a replica
            needed at minute s must run from s - cold; keeping it through a gap of g minutes costs g, stopping
            and restarting costs the cold start, and the window maximum keeps it exactly when g <= cold start.
            Tests check it against brute force over every action sequence of a small case.
planwatch   monitor.replay.planwatch: the service's own evaluation.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

from monitor.advice.capacity import capacity_table
from monitor.plan.model import Plan
from monitor.replay.arima import ArimaPredictor
from monitor.replay.fleet import TierFleet

__all__ = [
    "KEDA_WAITING_THRESHOLD",
    "Oracle",
    "Policy",
    "Predictive",
    "Reactive",
    "Static",
]

KEDA_WAITING_THRESHOLD = 5.0  # production-stack's default trigger threshold on vllm:num_requests_waiting
HPA_TOLERANCE = 0.1
HPA_PERIOD_S = 15.0
HPA_SCALE_DOWN_WINDOW_S = 300.0


class Policy(Protocol):
    name: str

    def decide(self, minute: int, fleets: Mapping[str, TierFleet], interval_s: float) -> dict[str, int]:
        """Replicas (ready + starting) per tier from minute `minute` on; records before it are observable."""
        ...


@dataclass
class Static:
    plan: Plan
    name: str = "static"

    def decide(self, minute: int, fleets: Mapping[str, TierFleet], interval_s: float) -> dict[str, int]:
        return {t.name: t.replicas.planned for t in self.plan.tiers}


@dataclass
class Reactive:
    plan: Plan
    name: str = "reactive"
    threshold: float = KEDA_WAITING_THRESHOLD
    _history: dict[str, deque[tuple[int, int]]] = field(default_factory=dict)

    def decide(self, minute: int, fleets: Mapping[str, TierFleet], interval_s: float) -> dict[str, int]:
        return {name: self._tier(name, f, minute, interval_s) for name, f in fleets.items()}

    def _tier(self, name: str, fleet: TierFleet, minute: int, interval_s: float) -> int:
        current = fleet.total
        if minute == 0:
            return current
        waiting = fleet.waiting_now(minute - 1)
        raw = math.ceil(waiting / self.threshold - 1e-9)
        if current > 0 and abs(waiting / (self.threshold * current) - 1.0) <= HPA_TOLERANCE:
            raw = current
        bounds = fleet.tier.replicas
        raw = min(max(raw, bounds.min), bounds.max)
        history = self._history.setdefault(name, deque())
        history.append((minute, raw))
        while history and (minute - history[0][0]) * 60.0 > HPA_SCALE_DOWN_WINDOW_S:
            history.popleft()
        if raw > current:
            allowed = current
            for _ in range(max(1, round(interval_s / HPA_PERIOD_S))):
                allowed = max(2 * allowed, allowed + 4)
            return min(raw, allowed)
        return min(current, max(r for _, r in history))


@dataclass
class Predictive:
    plan: Plan
    name: str = "predictive"
    predictor: Literal["arima", "last"] = "arima"
    _predictors: dict[str, ArimaPredictor] = field(default_factory=dict)

    def decide(self, minute: int, fleets: Mapping[str, TierFleet], interval_s: float) -> dict[str, int]:
        out = {}
        span = max(1, round(interval_s / 60.0))
        for tier in self.plan.tiers:
            fleet = fleets[tier.name]
            current = fleet.total
            if minute == 0:
                out[tier.name] = current
                continue
            r, lo = fleet.record, max(0, minute - span)
            before = r.queue[lo - 1] if lo > 0 else 0.0
            rate = float(r.served[lo:minute].sum() + r.queue[minute - 1] - before) / ((minute - lo) * 60.0)
            if self.predictor == "arima":
                # parameters refitted about hourly, whatever the interval
                refit = max(1, round(3600.0 / interval_s))
                predictor = self._predictors.setdefault(tier.name, ArimaPredictor(refit_every=refit))
                predictor.add(rate)
                rate = predictor.predict()
            needed = capacity_table(self.plan, tier, 1.0).replicas_for(rate)
            step = int(np.sign(needed - current))
            out[tier.name] = current + step
        return out


@dataclass
class Oracle:
    """Replays the hindsight schedule: per tier, `required` replicas per minute (monitor.replay.slo) and the
    cold start in minutes; a decision covers every minute until the next one."""

    required: Mapping[str, np.ndarray]
    cold_minutes: Mapping[str, int]
    name: str = "oracle"

    def decide(self, minute: int, fleets: Mapping[str, TierFleet], interval_s: float) -> dict[str, int]:
        span = max(1, round(interval_s / 60.0))
        return {
            name: int(need[minute : minute + span + self.cold_minutes[name]].max())
            for name, need in self.required.items()
        }


def window_max(need: np.ndarray, ahead: int) -> np.ndarray:
    """max(need[m .. m + ahead]) per m (the end of the trace pads with its last value)."""
    padded = np.concatenate([need, np.full(ahead, need[-1] if need.size else 0)])
    if ahead == 0:
        return need.copy()
    windows = np.lib.stride_tricks.sliding_window_view(padded, ahead + 1)
    out: np.ndarray = windows.max(axis=1)
    return out
