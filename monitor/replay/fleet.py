"""One tier's replicas minute by minute: cold starts, draining scale-down, a queue in front of the replicas.

Per minute m (the decision for m has been applied before it runs):
  ready     replicas whose cold start has passed (a started replica serves nothing before that)
  capacity  ready x the curve's highest stable per-replica rate x 60 s
  served    min(queue + arrivals, capacity); the rest waits in the queue, none is dropped
  wait      the queue ahead of the minute's requests over the ready replicas' service rate (the minute's
            latencies are the curve's at the served per-replica rate, shifted by this wait)
  billed    ready + starting replicas (GPU time runs from the start command, through the cold start)
Scale-down drains: starting replicas are cancelled first (newest first), then ready ones stop taking new
requests; what they hold finishes (the fluid model serves it within the minute), so nothing is lost: at
every minute, arrivals so far = served so far + queue.
"""

from __future__ import annotations

import math
import mmap
from dataclasses import dataclass, field

import numpy as np

from monitor.plan.model import Tier
from monitor.replay.curve import TierCurve

__all__ = ["TierFleet", "TierRecord"]


@dataclass
class TierRecord:
    """Per-minute values of one tier under one policy (filled up to the minute the replay reached)."""

    arrivals: np.ndarray
    served: np.ndarray
    queue: np.ndarray  # waiting at the end of the minute
    ready: np.ndarray
    billed: np.ndarray
    per_replica_rps: np.ndarray
    wait_s: np.ndarray
    started: np.ndarray  # replicas started this minute
    stopped: np.ndarray  # replicas drained or cancelled this minute

    @classmethod
    def empty(cls, minutes: int) -> TierRecord:
        """Zeros in memory shared with forked children: the planwatch policy's refit worker
        (monitor.replay.planwatch) reads the demand history from the record as the replay writes it."""
        return cls(*(_shared_zeros(minutes) for _ in range(9)))


def _shared_zeros(n: int) -> np.ndarray:
    """n float64 zeros in an anonymous shared mapping (MAP_SHARED: a process forked after it sees every write)."""
    return np.frombuffer(mmap.mmap(-1, max(1, n) * 8), dtype=np.float64, count=n)


@dataclass
class TierFleet:
    tier: Tier
    curve: TierCurve | None  # None: the tier takes no traffic
    cold_start_s: float
    record: TierRecord
    ready: int = 0
    starting: list[int] = field(default_factory=list)  # minute each becomes ready
    queue: float = 0.0
    cold_starts_seen: int = 0  # completed cold starts: only then has Prometheus measured one

    @property
    def cold_minutes(self) -> int:
        return max(0, math.ceil(self.cold_start_s / 60.0 - 1e-9))

    @property
    def total(self) -> int:
        return self.ready + len(self.starting)

    def scale(self, minute: int, desired: int) -> None:
        """Start or drain replicas so ready + starting = desired (within the tier's min and max)."""
        desired = min(max(desired, self.tier.replicas.min), self.tier.replicas.max)
        change = desired - self.total
        if change > 0:
            self.starting.extend([minute + self.cold_minutes] * change)
            self.record.started[minute] += change
        elif change < 0:
            self.record.stopped[minute] -= change
            cancel = min(-change, len(self.starting))
            self.starting.sort()
            del self.starting[len(self.starting) - cancel :]
            self.ready -= -change - cancel

    def step(self, minute: int, arrivals: float) -> None:
        came = [s for s in self.starting if s <= minute]
        if came:
            self.ready += len(came)
            self.cold_starts_seen += len(came)
            self.starting = [s for s in self.starting if s > minute]
        rate = self.curve.stable_rps if self.curve else 0.0
        capacity = self.ready * rate * 60.0
        before = self.queue
        offered = before + arrivals
        served = min(offered, capacity)
        self.queue = offered - served
        r = self.record
        r.arrivals[minute], r.served[minute], r.queue[minute] = arrivals, served, self.queue
        r.ready[minute], r.billed[minute] = self.ready, self.total
        r.per_replica_rps[minute] = served / 60.0 / self.ready if self.ready else 0.0
        if capacity > 0:
            r.wait_s[minute] = (before + self.queue) / 2.0 / (capacity / 60.0)
        else:
            r.wait_s[minute] = math.inf if offered > 0 else 0.0

    def waiting_now(self, minute: int) -> float:
        """vllm:num_requests_waiting summed over the tier at the end of `minute`: the queue plus what the
        engines hold waiting at their rate."""
        r = self.record
        inside = self.curve.scalar("waiting", float(r.per_replica_rps[minute])) * r.ready[minute] if self.curve else 0
        return float(r.queue[minute] + inside)
