"""The backfill loop: window by window, calls -> latencies -> per-scrape values -> TSDB blocks.

Blocks are written directly (`fleetsim.backfill_direct`); `history_text` renders the same history as
OpenMetrics text, which tests import with promtool as the reference the direct writer is checked against.

History is cut into block windows (one TSDB block each) and, inside a
window, into chunks at scenario start times, so a scenario that changes the engine (slow-tp) applies
exactly from its start. The fleet's pods (names, GPUs, UIDs, creation and readiness) come from a real
`Fleet` populated at the history's start, as `fleetsim serve` would create them, so the state handed to
`fleetsim serve --resume` names the same pods and GPUs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from itertools import pairwise
from pathlib import Path
from typing import BinaryIO

import numpy as np

from fleetsim.aggregate_calls import CallArrays, Serving, Window, draw_calls
from fleetsim.aggregate_latency import CellActivity, TierLatency, apply_latencies
from fleetsim.aggregate_series import TierTotals, TierWindow, tier_window
from fleetsim.backfill_direct import BlockSink
from fleetsim.backfill_gpu import gpu_fields, static_fields
from fleetsim.backfill_layout import FamilyGroup, TierLayout
from fleetsim.backfill_render import dcgm_groups, gateway_groups, ksm_groups, vllm_groups
from fleetsim.backfill_text import TextRenderer, stamp_text
from fleetsim.fleet import TOOL_LATENCY_SECONDS, Fleet, FleetOptions, engine_config
from fleetsim.metrics import Generation
from fleetsim.pods import Pod
from fleetsim.scenarios import Effects, Scenario, effects_at
from fleetsim.state import FleetState, PodState
from fleetsim.tsdb_xor import recycle_freed_memory
from monitor.plan.model import Plan

__all__ = ["BackfillSpec", "RunReport", "history_text", "run_backfill", "simulate"]


@dataclass(frozen=True)
class BackfillSpec:
    plan: Plan
    scenarios: tuple[Scenario, ...]
    start: float  # first scrape stamp (a multiple of step)
    end: float  # last scrape stamp
    step: int
    seed: int
    generation: Generation
    data_dir: Path
    instance: str
    block_seconds: int
    parallel: int = 2
    families: tuple[str, ...] = ()  # series-name globs to keep (default: every series)

    @property
    def stamps(self) -> int:
        return round((self.end - self.start) / self.step) + 1


@dataclass
class RunReport:
    samples: int = 0
    series: int = 0
    windows: int = 0
    text_bytes: int = 0
    model_seconds: float = 0.0  # drawing calls, latencies, per-scrape values
    render_seconds: float = 0.0  # text, or handing groups to the block encoders
    wait_seconds: float = 0.0  # waiting for the encoders
    wall_seconds: float = 0.0
    state: FleetState | None = None


@dataclass
class _Tier:
    index: int
    pods: list[Pod]
    layout: TierLayout
    latency: TierLatency
    totals: TierTotals
    statics: list[dict[str, float]]
    failed_statics: list[dict[str, float]]  # what dcgm reads of a failed pod (XID 79, frame buffer freed)
    energy: np.ndarray
    nvlink: np.ndarray
    serving: np.ndarray  # per pod: False once a scenario failed it (replica-down)
    last: TierWindow | None = None


@dataclass
class _Fleetwide:
    users: np.ndarray  # per tier, cumulative
    calls: np.ndarray
    follow_gap: float = 10.0 + TOOL_LATENCY_SECONDS
    tiers: list[_Tier] = field(default_factory=list)


def run_backfill(spec: BackfillSpec, progress: Callable[[float], None] | None = None) -> RunReport:
    """Write the whole history into spec.data_dir; returns figures and the end state for --resume."""
    began = time.perf_counter()
    fleet = Fleet(spec.plan, spec.start, spec.scenarios, FleetOptions(seed=spec.seed, generation=spec.generation))
    fleet.populate()
    world = _world(spec, fleet)
    report = RunReport()
    rng = np.random.default_rng([spec.seed, 0xBAC0F111])
    _direct(spec, world, rng, report, progress)
    report.state = _state(spec, world)
    report.wall_seconds = time.perf_counter() - began
    return report


def _direct(
    spec: BackfillSpec, world: _Fleetwide, rng: np.random.Generator, report: RunReport,
    progress: Callable[[float], None] | None,
) -> None:  # fmt: skip
    recycle_freed_memory()  # encode calls of tens of MB each: keep their pages instead of faulting them back
    sink = BlockSink(spec.data_dir, spec.parallel)
    try:
        for _, chunks in _windows(spec):
            sink.begin()
            for window in chunks:
                groups = _model(spec, world, window, rng, report)
                _store(sink, _kept(groups, spec.families), window, report)
            began = time.perf_counter()
            sink.end()
            report.wait_seconds += time.perf_counter() - began
            report.windows += 1
            _progress(spec, chunks, progress)
        sink.close()
    except BaseException:
        sink.abort()
        raise


def _progress(spec: BackfillSpec, chunks: list[Window], progress: Callable[[float], None] | None) -> None:
    if progress is not None:
        progress(min(1.0, (chunks[-1].end - spec.start) / max(spec.end - spec.start + spec.step, 1)))


def _world(spec: BackfillSpec, fleet: Fleet) -> _Fleetwide:
    tiers = spec.plan.tiers
    world = _Fleetwide(np.zeros(len(tiers)), np.zeros(len(tiers)))
    effects = effects_at(spec.scenarios, spec.start)
    for i, tier in enumerate(tiers):
        pods = [p for p in fleet.pods.values() if p.tier.name == tier.name]
        if not pods:
            continue
        config = engine_config(spec.plan, tier, effects)
        world.tiers.append(
            _Tier(
                index=i,
                pods=pods,
                layout=TierLayout(pods, spec.generation, spec.instance),
                latency=TierLatency.start(config, len(pods)),
                totals=TierTotals.start(len(pods), config.max_model_len),
                statics=[static_fields(p, spec.start) for p in pods],
                failed_statics=[static_fields(p, spec.start, failed=True) for p in pods],
                serving=np.ones(len(pods), dtype=bool),
                energy=np.zeros(len(pods)),
                nvlink=np.zeros(len(pods)),
            )
        )
    return world


def _windows(spec: BackfillSpec) -> Iterator[tuple[str, list[Window]]]:
    """Block windows (aligned to the block length), each cut at scenario starts into chunks of stamps."""
    cuts = sorted(
        {s.start_unix for s in spec.scenarios if s.start_unix is not None and spec.start < s.start_unix <= spec.end}
    )
    first = spec.start
    last = spec.end
    block = spec.block_seconds
    edge = (first // block) * block
    while edge <= last:
        # stamps in [edge, edge + block): the grid start + k x step need not divide the block length
        lo = _ceil_to(max(first, edge), spec.step, spec.start)
        hi = min(_ceil_to(edge + block, spec.step, spec.start), last + spec.step)
        bounds = [lo, *[_ceil_to(c, spec.step, spec.start) for c in cuts if lo < c < hi], hi]
        chunks = [Window(a, round((b - a) / spec.step), float(spec.step)) for a, b in pairwise(bounds)]
        chunks = [c for c in chunks if c.steps > 0]
        if chunks:
            yield f"{time.strftime('%Y-%m-%dT%H:%M', time.gmtime(edge))}Z", chunks
        edge += block


def _ceil_to(t: float, step: int, origin: float) -> float:
    return origin + np.ceil((t - origin) / step - 1e-9) * step


def history_text(spec: BackfillSpec, out: BinaryIO) -> RunReport:
    """The whole history's OpenMetrics text into one stream, no promtool (for tests and inspection)."""
    fleet = Fleet(spec.plan, spec.start, spec.scenarios, FleetOptions(seed=spec.seed, generation=spec.generation))
    fleet.populate()
    world = _world(spec, fleet)
    report = RunReport()
    rng = np.random.default_rng([spec.seed, 0xBAC0F111])
    renderer = TextRenderer()
    for _, chunks in _windows(spec):
        for window in chunks:
            _render(out, _kept(_model(spec, world, window, rng, report), spec.families), window, renderer, report)
        report.windows += 1
    out.write(b"# EOF\n")
    report.state = _state(spec, world)
    return report


def simulate(spec: BackfillSpec) -> dict[str, TierTotals]:
    """The aggregate model over spec's history without writing anything: each tier's cumulative counters
    and histograms at the end (per replica), for comparisons with the live engine."""
    fleet = Fleet(spec.plan, spec.start, spec.scenarios, FleetOptions(seed=spec.seed, generation=spec.generation))
    fleet.populate()
    world = _world(spec, fleet)
    rng = np.random.default_rng([spec.seed, 0xBAC0F111])
    for _, chunks in _windows(spec):
        for window in chunks:
            _model(spec, world, window, rng, RunReport(), render=False)
    return {t.pods[0].tier.name: t.totals for t in world.tiers}


def _model(
    spec: BackfillSpec,
    world: _Fleetwide,
    window: Window,
    rng: np.random.Generator,
    report: RunReport,
    render: bool = True,
) -> list[FamilyGroup]:
    began = time.perf_counter()
    effects = effects_at(spec.scenarios, window.start)
    configs = tuple(engine_config(spec.plan, tier, effects) for tier in spec.plan.tiers)
    _fail_pods(spec, world, effects)
    offsets = np.cumsum([0] + [len(t.pods) for t in world.tiers])
    replicas: list[tuple[int, ...]] = [() for _ in spec.plan.tiers]
    for t, off in zip(world.tiers, offsets, strict=False):
        replicas[t.index] = tuple(int(off) + r for r in range(len(t.pods)) if t.serving[r])
        t.latency.config = configs[t.index]  # a scenario starting at this chunk may change the engine
    calls = draw_calls(
        spec.plan, spec.scenarios, window, Serving(tuple(replicas), configs), rng, spec.seed, world.follow_gap
    )
    gateway = _gateway(spec, world, calls, window)
    groups: list[FamilyGroup] = []
    e2e: list[np.ndarray] = []
    for t, off in zip(world.tiers, offsets, strict=False):
        mine = np.nonzero((calls.tier == t.index) & (calls.replica >= 0))[0]
        tier_calls = calls.take(mine)
        local = tier_calls.replica - int(off)
        activity = apply_latencies(t.latency, tier_calls, local, window, rng)
        values = tier_window(t.totals, tier_calls, local, activity, window, t.latency.config.num_gpu_blocks * 16)
        t.last = values
        e2e.append((tier_calls.queue + tier_calls.prefill + tier_calls.decode)[~tier_calls.aborted])
        if render:
            groups.extend(_tier_groups(t, values, activity, window))
    if render:
        groups.extend(gateway)
        pods = [p for t in world.tiers for p in t.pods]
        ready = np.concatenate([t.serving for t in world.tiers])
        groups.extend(ksm_groups(pods, ready, spec.instance, window.steps))
    done = np.concatenate(e2e) if e2e else np.empty(0)
    if done.size:
        world.follow_gap = TOOL_LATENCY_SECONDS + float(done.mean())
    report.model_seconds += time.perf_counter() - began
    return groups


def _fail_pods(spec: BackfillSpec, world: _Fleetwide, effects: Effects) -> None:
    """replica-down, as fleetsim.fleet holds failures: `failed_replicas` pods of the failed tier (default the
    tier with the most planned replicas), highest index first, stay failed while the scenario lasts."""
    tier = effects.failed_tier or max(spec.plan.tiers, key=lambda t: t.replicas.planned).name
    for t in world.tiers:
        t.serving[:] = True
        if t.pods[0].tier.name == tier and effects.failed_replicas:
            order = sorted(range(len(t.pods)), key=lambda r: -_index_of(t.pods[r].name))
            t.serving[order[: effects.failed_replicas]] = False


def _index_of(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _tier_groups(t: _Tier, values: TierWindow, activity: CellActivity, window: Window) -> list[FamilyGroup]:
    steps = window.steps
    start = np.array([p.process_start for p in t.pods])
    out = list(vllm_groups(t.layout, values, steps, start, t.serving))
    windows = []
    for r, pod in enumerate(t.pods):
        cells = slice(r * steps, (r + 1) * steps)
        fields = gpu_fields(
            pod,
            activity.busy[cells],
            activity.memory[cells],
            activity.compute[cells],
            activity.tokens[cells],
            window.step,
            float(t.energy[r]),
            float(t.nvlink[r]),
        )
        t.energy[r] = fields["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"][-1]
        t.nvlink[r] = fields["DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"][-1]
        windows.append(fields)
    statics = [ok if up else failed for ok, failed, up in zip(t.statics, t.failed_statics, t.serving, strict=True)]
    out.extend(dcgm_groups(t.layout, windows, statics, steps))
    return out


def _gateway(spec: BackfillSpec, world: _Fleetwide, calls: CallArrays, window: Window) -> list[FamilyGroup]:
    """gateway counters per tier at each stamp: first calls by their tier, every call by its tier (calls
    arriving after the chunk, follow-ups of tool-call chains, are counted at its last stamp)."""
    tiers = len(spec.plan.tiers)
    step = np.clip(window.index(calls.arrival), 0, window.steps - 1)
    index = calls.tier * window.steps + step
    users = np.bincount(index[calls.first_call], minlength=tiers * window.steps).reshape(tiers, -1)
    every = np.bincount(index, minlength=tiers * window.steps).reshape(tiers, -1)
    users_rows = world.users[:, None] + np.cumsum(users, axis=1)
    calls_rows = world.calls[:, None] + np.cumsum(every, axis=1)
    world.users, world.calls = users_rows[:, -1].copy(), calls_rows[:, -1].copy()
    names = [t.name for t in spec.plan.tiers]
    return list(gateway_groups(names, users_rows, calls_rows, spec.start, spec.instance, window.steps))


def _kept(groups: list[FamilyGroup], families: tuple[str, ...]) -> list[FamilyGroup]:
    """The groups whose series name matches one of the --families globs (all when none is given)."""
    if not families:
        return groups
    return [g for g in groups if any(fnmatchcase(_name(g), pattern) for pattern in families)]


def _name(group: FamilyGroup) -> str:
    return group.group.prefixes[0].split(b"{", 1)[0].decode()


def _render(
    out: BinaryIO, groups: list[FamilyGroup], window: Window, renderer: TextRenderer, report: RunReport
) -> None:
    began = time.perf_counter()
    stamps = stamp_text(window.stamps())
    for g in sorted(groups, key=lambda g: g.order):
        report.samples += renderer.write(out, g.group, stamps)
        report.series += len(g.group.prefixes) if report.windows == 0 else 0
    report.render_seconds += time.perf_counter() - began


def _store(sink: BlockSink, groups: list[FamilyGroup], window: Window, report: RunReport) -> None:
    began = time.perf_counter()
    stamps_ms = np.rint(np.asarray(window.stamps(), dtype=np.float64) * 1000.0).astype(np.int64)
    for g in sorted(groups, key=lambda g: g.order):
        report.samples += sink.add(g.group, stamps_ms)
        report.series += len(g.group.prefixes) if report.windows == 0 else 0
    sink.flush(stamps_ms)
    report.render_seconds += time.perf_counter() - began


def _state(spec: BackfillSpec, world: _Fleetwide) -> FleetState:
    """What `fleetsim serve --resume` continues from: the values at the last stamp."""
    pods: dict[str, PodState] = {}
    for t in world.tiers:
        for r, pod in enumerate(t.pods):
            pods[pod.name] = PodState(
                pod.tier.name,
                pod.created,
                pod.ready_time if t.serving[r] else None,
                pod.process_start,
                _vllm_state(t, r),
                [{"energy_mj": float(t.energy[r]), "nvlink_bytes": float(t.nvlink[r])} for _ in pod.gpus],
            )
    gateway = {
        tier.name: {"user_requests": float(world.users[i]), "model_calls": float(world.calls[i])}
        for i, tier in enumerate(spec.plan.tiers)
    }
    return FleetState(spec.generation, spec.end, pods, gateway)


def _vllm_state(t: _Tier, r: int) -> dict[str, object]:
    """VllmMetrics.to_state's shape: counters by canonical key ({label: value} when labelled), histograms
    as cumulative counts per le and their sum."""
    last = t.last
    counters: dict[str, object] = {}
    if last is not None:
        for key, rows in last.counters.items():
            name, _, label = key.partition("|")
            value = float(np.rint(rows[r, -1]))
            if label:
                counters.setdefault(name, {})[label] = value  # type: ignore[index]
            else:
                counters[name] = value
    histograms = {
        key: {"buckets": [round(c) for c in t.totals.buckets[key][r].tolist()], "sum": float(t.totals.sums[key][r])}
        for key in t.totals.buckets
    }
    return {"counters": counters, "histograms": histograms}
