"""The replay's observer and refits: what they remember or spread over processes gives the numbers they gave."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import monitor.replay.planwatch as planwatch_module
from monitor.observe.dispersion import fit_bursts
from monitor.plan import load_plan
from monitor.replay.demand import profile_demand
from monitor.replay.fleet import TierFleet, TierRecord
from monitor.replay.observe import ReplayObserver
from monitor.replay.run import ReplayConfig, run_replay
from tests.replay.plans import one_tier_plan

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _observer(served: np.ndarray, long_window: str) -> tuple[ReplayObserver, list[int]]:
    plan = one_tier_plan()
    record = TierRecord.empty(served.size)
    record.served[:] = served
    fleet = TierFleet(plan.tiers[0], None, 300.0, record, ready=1)
    clock = [0]
    return ReplayObserver(plan, {"chat": fleet}, 0.0, lambda: clock[0], long_window), clock


@pytest.mark.parametrize(
    ("long_window", "every"),
    [("30m", 1), ("30m", 7), ("2h", 3), ("5h", 1), ("5h", 13)],
    ids=["a window shorter than the replay, read every minute",
         "read every 7 minutes (a longer decision interval)",
         "a window longer than the first reads",
         "a window of several hours, read from hourly block maxima and its two partial ends",
         "blocks completed several at a time between reads"],
)  # fmt: skip
def test_long_window_peaks_read_as_the_replay_advances_equal_the_windows_own_arithmetic(
    long_window: str, every: int
) -> None:
    rng = np.random.default_rng(1)
    served = rng.poisson(300.0, 600) * rng.uniform(0.5, 1.5, 600)  # fractional, as a capped minute serves
    observer, clock = _observer(served, long_window)
    minutes = {"30m": 30, "2h": 120, "5h": 300}[long_window]
    for m in range(1, served.size + 1, every):
        clock[0] = m
        obs = observer.collect(observer.plan, 60.0 * m, "1h")["chat"]
        rates = served[max(0, m - minutes) : m] / 60.0
        if rates.size < 5:
            assert obs.peak_rate.value is None
            continue
        five = np.convolve(rates, np.ones(5) / 5.0, mode="valid")
        assert (obs.peak_rate.value, obs.burst_peak_rate.value, obs.average_rate.value) == (
            float(five.max()), float(rates.max()), float(rates.mean())
        )  # fmt: skip


def test_demand_history_is_known_from_the_first_whole_step_to_the_replays_clock_and_unknown_around_it() -> None:
    observer, clock = _observer(np.full(60, 120.0), "7d")
    clock[0] = 30  # half an hour replayed
    history = observer.demand_history(observer.plan, "chat", -600.0, 3600.0, 300.0)
    known = {t: v for t, v in zip(history.timestamps, history.values, strict=True) if v is not None}
    assert history.timestamps[0] == -300.0 and history.timestamps[-1] == 3600.0
    assert known == {t: 2.0 for t in np.arange(300.0, 1801.0, 300.0).tolist()}


def test_planwatch_in_a_worker_process_decides_exactly_as_in_the_replays_own() -> None:
    plan = one_tier_plan(cold_start="10m")
    demand = profile_demand(plan, (), 3.0, np.random.default_rng(3))  # 3 days: backtested models, not naive ones
    config = ReplayConfig(policies=("planwatch", "static"))  # two policies: with 2 workers each in a process
    one, two = (run_replay(plan, demand, config, workers=w).run("planwatch").fleets["chat"].record for w in (1, 2))
    for name in ("served", "queue", "ready", "billed", "started", "stopped", "wait_s"):
        assert np.array_equal(getattr(one, name), getattr(two, name)), name
    assert one.started[1:].sum() > 0  # the advice moved the fleet: the comparison is not empty


def test_planwatch_with_a_refit_worker_decides_exactly_as_without() -> None:
    """Three days of the capstone plan (backtested models from the third day): with 2 workers some tiers are
    refitted in a forked worker reading the shared records, and every tier's fleet is the same as in one."""
    plan = load_plan(EXAMPLES / "capstone-revised.yaml")
    demand = profile_demand(plan, (), 3.0, np.random.default_rng(5))
    asked: list[tuple[str, ...]] = []
    real = planwatch_module._RefitWorker.ask

    def counting(worker, now, minute, previous):  # type: ignore[no-untyped-def]
        asked.append(tuple(previous))
        real(worker, now, minute, previous)

    config = ReplayConfig(policies=("planwatch",))  # one policy: it runs in this process, its refits in a worker
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(planwatch_module._RefitWorker, "ask", counting)
        runs = [run_replay(plan, demand, config, workers=w).run("planwatch").fleets for w in (1, 2)]
    assert asked and all(asked), "the worker refitted no tier: the comparison is empty"
    assert len(set(asked)) > 1, "the split never moved: a tier's previous forecast never crossed to the other side"
    for tier in runs[0]:
        one, two = runs[0][tier].record, runs[1][tier].record
        for name in ("served", "queue", "ready", "billed", "wait_s"):
            assert np.array_equal(getattr(one, name), getattr(two, name)), (tier, name)


def test_a_failure_in_the_refit_worker_is_raised_not_read_as_no_forecast(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = load_plan(EXAMPLES / "capstone-revised.yaml")
    demand = profile_demand(plan, (), 0.2, np.random.default_rng(5))

    real = planwatch_module.fit_tier

    def broken(observer, plan, tier, now, windows, previous):  # type: ignore[no-untyped-def]
        if tier == "standard":  # the worker's first refit takes every other tier: this one fails in the fork
            raise ZeroDivisionError(f"a bug while refitting {tier}")
        return real(observer, plan, tier, now, windows, previous)

    monkeypatch.setattr(planwatch_module, "fit_tier", broken)
    with pytest.raises(RuntimeError, match=r"refit worker failed[\s\S]*a bug while refitting standard"):
        run_replay(plan, demand, ReplayConfig(policies=("planwatch",)), workers=2)


def test_the_rates_of_now_are_the_last_five_minutes_and_the_windows_rates_the_whole_window() -> None:
    served = np.arange(1.0, 121.0) * 60.0  # minute k serves k requests/s: every window has its own mean
    observer, clock = _observer(served, "7d")
    observer.fleets["chat"].record.queue[:] = np.arange(120.0)  # one more request queued every minute
    clock[0] = 90
    obs = observer.collect(observer.plan, 90 * 60.0, "1h")["chat"]
    assert obs.request_rate_now.value == pytest.approx(np.mean(np.arange(86.0, 91.0)))
    assert obs.demand_rate_now.value == pytest.approx(np.mean(np.arange(86.0, 91.0)) + 5 / 300.0)
    assert obs.request_rate.value == pytest.approx(np.mean(np.arange(31.0, 91.0)))
    assert obs.demand_rate.value == pytest.approx(np.mean(np.arange(31.0, 91.0)) + 60 / 3600.0)
    assert obs.demand_rate_now.window == "5m"


@pytest.mark.parametrize(
    ("long_window", "every"),
    [("8h", 1), ("8h", 11), ("30h", 7)],
    ids=["read every minute", "read every 11 minutes (running sums advanced in steps)",
         "a window longer than the replay"],
)  # fmt: skip
def test_minute_bursts_read_as_the_replay_advances_equal_the_fit_over_the_windows_own_demand(
    long_window: str, every: int
) -> None:
    """The running sums give the fit `fit_bursts` makes of the window's minute demand (served plus the queue's
    growth: what arrived), the series the live observer reads as `ARRIVAL_RATE_1M`."""
    rng = np.random.default_rng(4)
    minutes = 900
    factor = np.where(rng.random(minutes) < 0.1, 4.0, 1.0)
    level = 300.0 * (1.5 + np.sin(np.arange(minutes) / 60.0))  # the level moves: the fit tells noise from bursts
    arrivals = rng.poisson(level * factor).astype(float)
    served, queue, waiting = np.empty(minutes), np.empty(minutes), 0.0
    for i, arrived in enumerate(arrivals):  # 900 a minute at most: bursts queue, and the queue drains after
        served[i] = min(900.0, waiting + arrived)
        waiting = queue[i] = waiting + arrived - served[i]
    observer, clock = _observer(served, long_window)
    observer.fleets["chat"].record.queue[:] = queue
    span = {"8h": 480, "30h": 1800}[long_window]
    demand = served + np.diff(queue, prepend=0.0)
    assert np.allclose(demand, arrivals) and queue.max() > 0  # what arrived, whatever the queue held back
    for m in range(1, minutes + 1, every):
        clock[0] = m
        obs = observer.collect(observer.plan, 60.0 * m, "1h")["chat"]
        fit = fit_bursts(demand[max(0, m - span) : m] / 60.0)
        if fit is None:
            assert obs.minute_overdispersion.value is None
            continue
        assert obs.minute_overdispersion.value == pytest.approx(fit.alpha, rel=1e-9)
        assert obs.minute_overdispersion.samples == fit.minutes
    assert obs.minute_overdispersion.value and obs.minute_overdispersion.value > 0.3  # the bursts (alpha 0.46) read
