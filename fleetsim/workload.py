"""The synthetic workload: when user requests arrive, how long their prompts and outputs are, which tier
takes them, and how much of each prompt the prefix cache can serve. Pure: time is a parameter and every
random draw comes from a numpy Generator the caller seeds.

Arrival rate = rate_at (a deterministic weekly profile scaled to the plan, times the scenario's rate
multiplier) x burst_multiplier (a seeded, time-indexed on/off modulation, mean 1) -> a non-homogeneous
Poisson process (`arrival_times`).

The weekly profile, in the plan's timezone: on business weekdays a raised-cosine morning ramp from
start - 1 h to start + 1 h, a plateau of peak_hours_per_day, a shoulder at 60% until business end, and a
2-hour evening decay to a quiet night; other days run at 25% of that. Scaled so its maximum is the plan's
peak_rps and its weekly mean is average_rps: rate = base + (peak - base) x shape, base solved from the
mean; when that would need a negative base, rate = peak x shape^gamma with gamma solved instead.

Lengths: log-normal fits to the plan's p50/p95 (`LengthDistribution`, fleetsim's own: the simulator draws
the workload independently of the sizing's model of it), the prompt p95 replaceable by a scenario
(long-prompts). Routing follows the plan (share x prompt range, monitor.plan.load's coverage rule).
Prefix: each call may reuse a prefix shared by all calls (the system prompt and recurring retrieved files);
the reusable length is min(S, L) + k x max(L - S, 0), capped at L - 1, with S = the plan's
shared_prefix_tokens and k solved so the token-weighted hit rate equals the plan's (`PrefixModel`, the
definition sizing uses too: monitor.sizing.prefix).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from statistics import NormalDist
from zoneinfo import ZoneInfo

import numpy as np

from fleetsim.scenarios import Effects, Scenario, effects_at
from monitor.plan.model import Plan
from monitor.sizing.prefix import PrefixModel

__all__ = [
    "BURST_SHARE",
    "BURST_SLOT_SECONDS",
    "SHARED_PREFIX_KEY",
    "Call",
    "LengthDistribution",
    "PrefixModel",
    "WeeklyProfile",
    "WorkloadModel",
    "arrival_times",
    "burst_multiplier",
    "burst_multipliers",
    "intensity_at",
    "max_tokens_for",
    "output_distribution",
    "prompt_distribution",
    "rate_at",
    "rates_at",
    "route",
    "weekly_profile",
]

SHARED_PREFIX_KEY = 0  # prefix_key of the prefix every call shares; -1 means "no reusable prefix"
_MAX_SEGMENT_SECONDS = 5.0
BURST_SLOT_SECONDS = 30.0  # bursts switch on and off on this grid
BURST_SHARE = 0.05  # share of slots that are bursts
_WEEKEND_LEVEL, _SHOULDER_LEVEL, _NIGHT_FLOOR = 0.25, 0.6, 0.02
_MASK64 = (1 << 64) - 1
_WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")  # datetime.weekday() order


@dataclass(frozen=True)
class WeeklyProfile:
    """A plan's arrival profile: rate(shape) = base + (peak - base) x shape^gamma (one of base, gamma-1 is 0)."""

    peak_rps: float
    base_rps: float
    gamma: float
    timezone: str
    weekdays: tuple[int, ...]
    start_hour: float
    end_hour: float
    peak_hours: float
    norm: float = 1.0  # 1 / max of the raw weekly shape

    def shape(self, t_unix: float) -> float:
        """0..1: the profile's shape at t (1 on the weekday plateau)."""
        local = datetime.fromtimestamp(t_unix, ZoneInfo(self.timezone))
        hour = local.hour + local.minute / 60 + (local.second + local.microsecond / 1e6) / 3600
        day = _day_shape(hour, self.start_hour, self.end_hour, self.peak_hours)
        return self.norm * (day if local.weekday() in self.weekdays else _WEEKEND_LEVEL * day)

    def rate(self, shape: float) -> float:
        return self.base_rps + (self.peak_rps - self.base_rps) * shape**self.gamma

    def is_business_day(self, t_unix: float) -> bool:
        return datetime.fromtimestamp(t_unix, ZoneInfo(self.timezone)).weekday() in self.weekdays

    @property
    def night_rps(self) -> float:
        """The quiet-night rate of a business day (the floor the day's shape rises from)."""
        return self.rate(self.norm * _NIGHT_FLOOR)


def _day_shape(hour: float, start: float, end: float, peak_hours: float) -> float:
    """Night floor, cosine ramp around start, plateau, shoulder to business end, cosine decay."""
    plateau_end = start + 1.0 + peak_hours
    shoulder_end = max(end, plateau_end + 1.0)
    if hour < start - 1.0:
        level = 0.0
    elif hour < start + 1.0:
        level = _cos_ramp((hour - start + 1.0) / 2.0)
    elif hour < plateau_end:
        level = 1.0
    elif hour < plateau_end + 1.0:
        level = 1.0 - (1.0 - _SHOULDER_LEVEL) * _cos_ramp(hour - plateau_end)
    elif hour < shoulder_end:
        level = _SHOULDER_LEVEL
    else:
        level = _SHOULDER_LEVEL * (1.0 - _cos_ramp(min(1.0, (hour - shoulder_end) / 2.0)))
    return _NIGHT_FLOOR + (1.0 - _NIGHT_FLOOR) * level


def _cos_ramp(x: float) -> float:
    return 0.5 - 0.5 * math.cos(math.pi * min(max(x, 0.0), 1.0))


def weekly_profile(plan: Plan) -> WeeklyProfile:
    """The plan's profile with base/gamma solved so that max = peak_rps and weekly mean = average_rps."""
    w = plan.workload
    bh = w.business_hours
    return _solve_profile(
        w.arrival.peak_rps,
        w.arrival.average_rps,
        w.arrival.peak_hours_per_day,
        bh.timezone,
        tuple(_WEEKDAYS.index(d.value) for d in bh.weekdays),
        bh.start_hour,
        bh.end_hour,
    )


@lru_cache(maxsize=64)
def _solve_profile(
    peak: float, average: float, peak_hours: float, tz: str, weekdays: tuple[int, ...], start: float, end: float
) -> WeeklyProfile:
    hours = (np.arange(1440) + 0.5) / 60.0
    day = np.array([_day_shape(h, start, end, peak_hours) for h in hours])
    week = np.concatenate([day if d in weekdays else _WEEKEND_LEVEL * day for d in range(7)])
    norm = 1.0 / float(week.max())  # a plan with no business weekday still peaks at peak_rps
    week = week * norm
    target, mean = average / peak, float(week.mean())
    if target >= 1.0 - 1e-12:
        return WeeklyProfile(peak, peak, 1.0, tz, weekdays, start, end, peak_hours, norm)
    if target >= mean:
        base = (average - peak * mean) / (1.0 - mean)
        return WeeklyProfile(peak, base, 1.0, tz, weekdays, start, end, peak_hours, norm)
    lo, hi = 1.0, 64.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if float((week**mid).mean()) > target else (lo, mid)
    return WeeklyProfile(peak, 0.0, (lo + hi) / 2.0, tz, weekdays, start, end, peak_hours, norm)


def rate_at(plan: Plan, t_unix: float, scenarios: Sequence[Scenario] = ()) -> float:
    """Expected user requests/s at t: the weekly profile (made irregular, or replaced by a rate trace, when a
    scenario says so) x the active scenarios' rate multiplier (no bursts)."""
    effects = effects_at(scenarios, t_unix)
    if effects.demand is not None:
        return effects.demand.rate_at(t_unix) * effects.rate_multiplier
    profile = weekly_profile(plan)
    rate = profile.rate(profile.shape(t_unix))
    if effects.irregularity is not None:
        business = profile.is_business_day(t_unix)
        rate = effects.irregularity.apply(t_unix, rate, profile.night_rps, business)
    return rate * effects.rate_multiplier


def rates_at(plan: Plan, t_unix: np.ndarray, scenarios: Sequence[Scenario] = (), seed: int = 0) -> np.ndarray:
    """Vectorised `intensity_at` (profile x rate multiplier x bursts) for history backfill."""
    base = np.array([rate_at(plan, float(t), scenarios) for t in t_unix])
    burstiness = np.array([effects_at(scenarios, float(t)).burstiness for t in t_unix])
    return base * burst_multipliers(t_unix, burstiness, seed)


def burst_multiplier(t_unix: float, burstiness: float, seed: int) -> float:
    """(1 + b) inside a burst slot, 1 outside, divided by 1 + b x BURST_SHARE so the long-run mean is 1.

    Whether a 30-second slot is a burst is a hash of (seed, slot): a pure function of time, so live
    emulation and backfill see the same bursts. With b = 8 a burst runs at 6.4x the average rate.
    """
    if burstiness <= 0:
        return 1.0
    slot = math.floor(t_unix / BURST_SLOT_SECONDS)
    u = _splitmix64((seed * 0x632BE59BD9B4E019 + slot) & _MASK64) / 2.0**64
    return (1.0 + burstiness if u < BURST_SHARE else 1.0) / (1.0 + burstiness * BURST_SHARE)


def burst_multipliers(t_unix: np.ndarray, burstiness: np.ndarray | float, seed: int) -> np.ndarray:
    """Vectorised burst_multiplier (same hash, numpy uint64 arithmetic)."""
    b = np.broadcast_to(np.asarray(burstiness, dtype=float), np.shape(t_unix))
    slots = np.floor(np.asarray(t_unix, dtype=float) / BURST_SLOT_SECONDS).astype(np.int64).astype(np.uint64)
    x = np.uint64((seed * 0x632BE59BD9B4E019) & _MASK64) + slots
    u = _splitmix64_array(x).astype(np.float64) / 2.0**64
    inside = (u < BURST_SHARE) & (b > 0)
    return np.where(b > 0, np.where(inside, 1.0 + b, 1.0) / (1.0 + b * BURST_SHARE), 1.0)


def _splitmix64(x: int) -> int:
    z = (x + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def _splitmix64_array(x: np.ndarray) -> np.ndarray:
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@dataclass(slots=True)
class Call:
    """One model call as the gateway sends it to a tier (a user request is 1..calls_per_request calls)."""

    arrival: float  # Unix seconds (simulated)
    prompt_tokens: int
    output_tokens: int  # where the model would stop by itself
    max_tokens: int  # the request's max_tokens; output reaching it finishes with reason "length"
    tier: str
    prefix_key: int = SHARED_PREFIX_KEY
    cacheable_tokens: int = 0  # leading tokens identical to other calls with the same prefix_key
    hash_ids: tuple[int, ...] | None = None  # trace prefix blocks (512 tokens each), when replayed
    user_request: int = 0
    call_index: int = 0  # 0-based position in the user request's sequential chain
    calls_total: int = 1
    meta: dict[str, float] = field(default_factory=dict)


def intensity_at(plan: Plan, t_unix: float, scenarios: Sequence[Scenario] = (), seed: int = 0) -> float:
    """User requests/s at t including bursts: rate_at x burst_multiplier(active burstiness)."""
    effects = effects_at(scenarios, t_unix)
    return rate_at(plan, t_unix, scenarios) * burst_multiplier(t_unix, effects.burstiness, seed)


def arrival_times(
    plan: Plan, t0: float, t1: float, scenarios: Sequence[Scenario], rng: np.random.Generator, seed: int = 0
) -> np.ndarray:
    """Sorted user-request arrival times in [t0, t1): Poisson counts per short segment at the segment's
    intensity (segments split at burst-slot boundaries, so a burst starts exactly where it should)."""
    out: list[np.ndarray] = []
    edges = _segment_edges(t0, t1)
    for a, b in itertools.pairwise(edges):
        mean = intensity_at(plan, (a + b) / 2.0, scenarios, seed) * (b - a)
        n = int(rng.poisson(mean)) if mean > 0 else 0
        if n:
            out.append(np.sort(rng.uniform(a, b, n)))
    return np.concatenate(out) if out else np.empty(0)


def _segment_edges(t0: float, t1: float) -> list[float]:
    edges = [t0]
    slot_edge = (math.floor(t0 / BURST_SLOT_SECONDS) + 1) * BURST_SLOT_SECONDS
    t = t0
    while t < t1:
        t = min(t1, slot_edge, t + _MAX_SEGMENT_SECONDS)
        if t >= slot_edge:
            slot_edge += BURST_SLOT_SECONDS
        edges.append(t)
    return edges


# The standard normal's 95th percentile: a log-normal with median p50 has p95 = p50 x exp(sigma x Z95).
_Z95 = NormalDist().inv_cdf(0.95)


@dataclass(frozen=True)
class LengthDistribution:
    """Token lengths with ln L ~ Normal(mu, sigma), drawn rounded to whole tokens (at least 1)."""

    mu: float
    sigma: float

    @classmethod
    def from_percentiles(cls, p50: float, p95: float) -> LengthDistribution:
        """The log-normal whose median is p50 and 95th percentile p95 (sigma 0 when they are equal)."""
        return cls(mu=math.log(p50), sigma=math.log(p95 / p50) / _Z95)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.draw(self.mu, self.sigma, rng, n)

    @staticmethod
    def draw(mu: float | np.ndarray, sigma: float | np.ndarray, rng: np.random.Generator, n: int) -> np.ndarray:
        """n lengths, per element when mu and sigma are arrays (one draw of the generator either way)."""
        return np.maximum(1, np.rint(np.exp(mu + sigma * rng.standard_normal(n))))


def prompt_distribution(plan: Plan, effects: Effects | None = None) -> LengthDistribution:
    """Prompt tokens: log-normal through the plan's p50 and p95; long-prompts replaces p95 (p50 kept)."""
    p = plan.workload.prompt_tokens
    p95 = max((effects.prompt_p95_tokens if effects else None) or p.p95, p.p50)
    return LengthDistribution.from_percentiles(p.p50, p95)


def output_distribution(plan: Plan) -> LengthDistribution:
    """Output tokens: log-normal through the plan's p50 and p95."""
    o = plan.workload.output_tokens
    return LengthDistribution.from_percentiles(o.p50, o.p95)


def max_tokens_for(plan: Plan) -> int:
    """The max_tokens clients send: 1.5 x the output p95, so ~1-2% of calls finish with reason "length"."""
    return max(1, math.ceil(plan.workload.output_tokens.p95 * 1.5))


def route(plan: Plan, prompt_tokens: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Tier index per call: among tiers whose [min, max) covers the prompt, pick by routing.share."""
    shares = np.zeros((len(plan.tiers), prompt_tokens.size))
    for i, tier in enumerate(plan.tiers):
        r = tier.routing.prompt_tokens
        covers = (prompt_tokens >= r.min) & (prompt_tokens < (r.max if r.max is not None else np.inf))
        shares[i] = np.where(covers, tier.routing.share, 0.0)
    total = shares.sum(axis=0)
    fallback = int(np.argmax([t.routing.share for t in plan.tiers]))
    cumulative = np.cumsum(shares, axis=0) / np.where(total > 0, total, 1.0)
    pick = (rng.uniform(size=prompt_tokens.size) >= cumulative).sum(axis=0)
    return np.where(total > 0, np.minimum(pick, len(plan.tiers) - 1), fallback)


class WorkloadModel:
    """Draws calls for a plan under scenarios: `calls(times, rng)` for the first call of each user request,
    `follow_up(call, t, rng)` for the next call of a tool-call chain."""

    def __init__(self, plan: Plan, scenarios: Sequence[Scenario] = ()):
        self.plan = plan
        self.scenarios = tuple(scenarios)
        self.outputs = output_distribution(plan)
        self.max_tokens = max_tokens_for(plan)
        self._next_user = 0

    def effects(self, t_unix: float) -> Effects:
        return effects_at(self.scenarios, t_unix)

    def calls_per_request(self, t_unix: float) -> int:
        return max(1, round(self.effects(t_unix).calls_per_request or self.plan.workload.calls_per_request))

    def calls(self, times: np.ndarray, rng: np.random.Generator) -> list[Call]:
        """First calls of user requests arriving at `times` (all drawn with the effects at times[0])."""
        if times.size == 0:
            return []
        effects = self.effects(float(times[0]))
        chain = self.calls_per_request(float(times[0]))
        out = self._draw(times, effects, rng)
        for call in out:
            call.user_request, call.calls_total = self._next_user, chain
            self._next_user += 1
        return out

    def follow_up(self, previous: Call, t_unix: float, rng: np.random.Generator) -> Call:
        """The next sequential model call of the same user request (a fresh prompt and output)."""
        call = self._draw(np.array([t_unix]), self.effects(t_unix), rng)[0]
        call.user_request, call.calls_total = previous.user_request, previous.calls_total
        call.call_index = previous.call_index + 1
        return call

    def _draw(self, times: np.ndarray, effects: Effects, rng: np.random.Generator) -> list[Call]:
        prompts_dist = prompt_distribution(self.plan, effects)
        n = times.size
        prompts = prompts_dist.sample(rng, n)
        outputs = self.outputs.sample(rng, n)
        tiers = route(self.plan, prompts, rng)
        cacheable = PrefixModel.for_plan(self.plan).cacheable(prompts)
        shared = rng.uniform(size=n) < min(1.0, effects.prefix_hit_multiplier)
        names = [t.name for t in self.plan.tiers]
        return [
            Call(
                arrival=float(times[i]),
                prompt_tokens=int(prompts[i]),
                output_tokens=int(outputs[i]),
                max_tokens=self.max_tokens,
                tier=names[int(tiers[i])],
                prefix_key=SHARED_PREFIX_KEY if shared[i] else -1,
                cacheable_tokens=int(cacheable[i]) if shared[i] else 0,
            )
            for i in range(n)
        ]
