"""Types of the measurement record: the items (one per line of the capstone's Step 6), what was read to judge
them, and the judged item with its evidence."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from monitor.observe.model import Measurement, TierObservation
from monitor.triggers.model import EvalResult

__all__ = ["ITEMS", "Item", "ItemSpec", "LoadPoint", "Readings", "Status", "TierReadings"]


class Status(StrEnum):
    MEASURED = "measured"
    PARTLY = "partly"
    NOT_YET = "not yet"

    @property
    def rank(self) -> int:
        return (Status.NOT_YET, Status.PARTLY, Status.MEASURED).index(self)


@dataclass(frozen=True)
class ItemSpec:
    id: str
    title: str  # the capstone's words
    scope: str  # "tier" (judged per tier) or "plan" (once)


ITEMS: tuple[ItemSpec, ...] = (
    ItemSpec("latency-at-load", "TTFT and TPOT at p50/p95/p99 at 1x, 2x and 3x expected peak", "tier"),
    ItemSpec("goodput-at-slo", "Goodput at the SLO, not raw tokens/s", "tier"),
    ItemSpec("kv-at-p95-context", "KV occupancy and preemption rate at p95 context", "tier"),
    ItemSpec("prefix-hit-rate", "Prefix-cache hit rate on real traffic", "tier"),
    ItemSpec("quantization-quality", "FP8 quality against BF16, and the fallback's eval", "plan"),
    ItemSpec("tp-scaling", "TP=2 against TP=4 on the actual model", "plan"),
    ItemSpec("cold-start", "Cold-start time for a new replica, including weight load", "tier"),
    ItemSpec(
        "failure-behaviour",
        "Failure behaviour: one replica down, cache full, a 100K-token request, a rolling deploy",
        "tier",
    ),
    ItemSpec("cost-per-request", "Cost per completed request at average and peak traffic", "tier"),
)


@dataclass(frozen=True)
class LoadPoint:
    """One step of history: load per replica as a multiple of the sized peak load, and the latency then."""

    at: float
    load_multiple: float
    ttft: tuple[float | None, float | None, float | None]  # p50, p95, p99 seconds
    tpot: tuple[float | None, float | None, float | None]
    requests_per_second: float | None = None
    gpus: float | None = None
    replicas_down: float | None = None
    kv_max: float | None = None


_NOT_READ = Measurement.unknown("not read")


@dataclass(frozen=True)
class TierReadings:
    tier: str
    observation: TierObservation  # over the whole window
    load: tuple[LoadPoint, ...] = ()
    replicas_down_max: Measurement = _NOT_READ
    prompts_over_100k: Measurement = _NOT_READ
    engine: str = ""
    hardware: str = ""


@dataclass(frozen=True)
class Readings:
    window: str
    start: float
    end: float
    tiers: Mapping[str, TierReadings]
    evals: tuple[EvalResult, ...] = ()


@dataclass(frozen=True)
class Item:
    id: str
    title: str
    tier: str
    status: Status
    evidence: tuple[str, ...]
    first_seen: float | None  # the date range the evidence covers
    last_seen: float | None
    engine: str = ""
    hardware: str = ""
    values: Mapping[str, float | None] = field(default_factory=dict)
