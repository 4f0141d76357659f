"""The advice calibrates on a window only where its mean batch is the batch now: tokens/s is concave in the batch,
so a window that mixed a queue with quiet minutes reads the engine slow, and the advice then asks for more
replicas, which makes the next window's mixture worse."""

from __future__ import annotations

from dataclasses import replace

import pytest

from monitor.advice.capacity import calibrate, capacity_table
from monitor.advice.model import AdviceSettings, AdviceState
from monitor.advice.recommend import advise_tier
from monitor.drift import tier_drift
from monitor.observe.model import Measurement, TierObservation
from monitor.plan import Plan, Tier, load_plan
from monitor.sizing.tier import size_tier
from tests.builders import EXAMPLES, baseline_observation


def _window(
    plan: Plan,
    tier: Tier,
    minutes: list[tuple[int, float]],
    ready: int,
    running_now: float | None,
    rate_now: float | None = None,
) -> TierObservation:
    """What the observer reads over a window of (minutes, batch per replica) pieces, each generating what the
    model says a replica at that batch generates (an engine exactly as efficient as planned), on `ready` replicas
    all along: the request rate the window served is theirs, and `rate_now` the last 5 minutes' as a multiple of
    it (None: not read)."""
    model = capacity_table(plan, tier, 1.0).model
    total = sum(n for n, _ in minutes)
    batch = sum(n * b for n, b in minutes) / total
    tps = sum(n * model.output_tokens_per_second(b) for n, b in minutes) / total
    rate = ready * tps / model.workload.output_mean
    return replace(
        baseline_observation(plan),
        tier=tier.name,
        batch_per_replica=Measurement.of(batch),
        output_tokens_per_second_per_replica=Measurement.of(tps),
        replicas_ready=Measurement.of(float(ready)),
        request_rate=Measurement.of(rate, window="1h"),
        request_rate_now=Measurement.unknown("not read")
        if rate_now is None
        else Measurement.of(rate * rate_now, window="5m"),
        running=Measurement.unknown("not read") if running_now is None else Measurement.of(running_now),
    )


CASES = [
    pytest.param([(17, 55.0), (43, 5.0)], 15, 75.0, 1.0, "not the batch now",
                 id="a drained queue then quiet minutes: the sizing model, not a factor of 0.6"),
    pytest.param([(60, 16.0)], 6, 96.0, 1.0, "calibrated on production",
                 id="a steady window as efficient as planned calibrates to one"),
    pytest.param([(30, 14.0), (30, 18.0)], 6, 6 * 17.0, 1.0, "calibrated on production",
                 id="batches within 1.5x of each other calibrate, and read the engine as planned"),
    pytest.param([(17, 55.0), (43, 5.0)], 15, None, None, "calibrated on production",
                 id="without the running gauge the window is taken as it reads"),
    pytest.param([(60, 30.0)], 6, 180.0, 1.0, "a queue's, above the SLO batch",
                 id="a steady window at 1.7x the SLO batch is a queue's: the sizing model, not its factor"),
]  # fmt: skip


@pytest.mark.parametrize(("minutes", "ready", "running_now", "factor", "source"), CASES)
def test_a_window_calibrates_only_where_its_mean_batch_is_the_batch_now(
    minutes: list[tuple[int, float]], ready: int, running_now: float | None, factor: float | None, source: str
) -> None:
    plan = load_plan(EXAMPLES / "capstone-revised.yaml")
    tier = plan.tier("standard")
    got = calibrate(plan, tier, _window(plan, tier, minutes, ready, running_now), AdviceSettings())
    assert source in got.source
    if factor is not None:
        assert got.factor == factor
    else:  # the mixed window, taken as it reads: the bias the gate keeps out
        assert got.factor < 0.75


RATE_CASES = [
    pytest.param(2.36, "sizing model", "the last 5m",
                 id="quiet minutes then a load whose batch now matches the hour's mean by chance: the rate now tells"),
    pytest.param(1.1, "calibrated on production", "",
                 id="a rate now within 1.5x of the window's is taken as steady (this mixed one then shows its bias)"),
    pytest.param(None, "calibrated on production", "",
                 id="without the rate now only the batch is compared"),
]  # fmt: skip


@pytest.mark.parametrize(("rate_now", "source", "why"), RATE_CASES)
def test_a_window_whose_rate_now_is_not_its_mean_rate_does_not_calibrate(
    rate_now: float | None, source: str, why: str
) -> None:
    plan = load_plan(EXAMPLES / "capstone-revised.yaml")
    tier = plan.tier("standard")
    minutes = [(40, 0.5), (20, 36.0)]  # mean batch 12.3: the batch now below is that mean
    obs = _window(plan, tier, minutes, 6, 6 * 12.3, rate_now)
    got = calibrate(plan, tier, obs, AdviceSettings())
    assert source in got.source and why in got.source
    assert got.factor == 1.0 if why else got.factor < 0.75  # the mixed window's bias, where it is let through


def test_a_slower_engine_in_a_steady_window_still_calibrates_down() -> None:
    plan = load_plan(EXAMPLES / "capstone-revised.yaml")
    tier = plan.tier("standard")
    obs = _window(plan, tier, [(60, 16.0)], 6, 96.0)
    slow = replace(
        obs, output_tokens_per_second_per_replica=Measurement.of(0.8 * obs.output_tokens_per_second_per_replica.value)
    )  # type: ignore[operator]
    assert calibrate(plan, tier, slow, AdviceSettings()).factor == 0.8


@pytest.mark.parametrize(
    ("minutes", "running_now", "judged"),
    [
        pytest.param([(17, 55.0), (43, 5.0)], 75.0, False, id="a mixed window leaves the throughput check unknown"),
        pytest.param([(60, 16.0)], 96.0, True, id="a steady window is judged, at the model's own tokens/s"),
    ],
)
def test_drift_judges_tokens_per_second_only_on_a_window_whose_mean_batch_is_the_batch_now(
    minutes: list[tuple[int, float]], running_now: float, judged: bool
) -> None:
    plan = load_plan(EXAMPLES / "capstone-revised.yaml")
    tier = plan.tier("standard")
    ready = 15 if len(minutes) > 1 else 6
    rows = tier_drift(plan, size_tier(plan, tier), _window(plan, tier, minutes, ready, running_now))
    (row,) = [r for r in rows if r.assumption == "throughput_per_replica"]
    (kv,) = [r for r in rows if r.assumption == "kv_occupancy"]
    assert (row.observed.value is not None) is judged
    assert judged or "not the batch now" in row.reason
    assert judged or kv.plan > 0  # KV occupancy, linear in the batch, is still compared


def test_a_mixed_window_takes_the_factor_the_last_steady_window_gave_and_advice_carries_it() -> None:
    """A ramp is a mixed window: the engine's efficiency has not changed, so the factor measured before it holds."""
    plan = load_plan(EXAMPLES / "capstone-revised.yaml")
    tier = plan.tier("standard")
    steady = _window(plan, tier, [(60, 16.0)], 6, 96.0)
    slow = replace(
        steady,
        output_tokens_per_second_per_replica=Measurement.of(0.8 * steady.output_tokens_per_second_per_replica.value),
    )  # type: ignore[operator]
    first = advise_tier(plan, tier, slow, None, AdviceState(), 0.0)
    assert (first.calibration, first.state.calibration) == (0.8, 0.8)
    mixed = _window(plan, tier, [(17, 55.0), (43, 5.0)], 15, 75.0)
    later = advise_tier(plan, tier, mixed, None, first.state, 60.0)
    assert (later.calibration, later.state.calibration) == (0.8, 0.8)
    assert "calibrated on production earlier" in later.capacity_source
    quiet = _window(plan, tier, [(60, 1.0)], 6, 6.0)  # too small a batch to calibrate on: remembered, not used
    night = advise_tier(plan, tier, quiet, None, later.state, 120.0)
    assert (night.calibration, night.state.calibration) == (1.0, 0.8)


@pytest.mark.parametrize(
    ("batch", "source"),
    [
        pytest.param(2.4, "calibrated on production:", id="at long-context's SLO batch the window calibrates"),
        pytest.param(3.5, "calibrated on production:", id="within 1.5x the SLO batch it calibrates"),
        pytest.param(4.4, "calibrated on production earlier", id="at 4.4 it is a queue's: the earlier factor holds"),
    ],
)
def test_a_window_above_the_slo_batch_keeps_the_factor_the_last_steady_window_gave(batch: float, source: str) -> None:
    """An evening's hour that ended on one long-context replica past its knee read 91 tokens/s against 158 modelled
    at a batch of 4.4, a factor of 0.58, and the next morning's ramp was sized on it (the slow-cold-start replay)."""
    plan = load_plan(EXAMPLES / "capstone-revised.yaml")
    tier = plan.tier("long-context")
    obs = _window(plan, tier, [(60, batch)], 1, batch)
    slow = replace(
        obs, output_tokens_per_second_per_replica=Measurement.of(0.58 * obs.output_tokens_per_second_per_replica.value)
    )  # type: ignore[operator]
    got = calibrate(plan, tier, slow, AdviceSettings(), remembered=0.98)
    assert source in got.source
    assert (got.factor, got.steady) == ((0.58, 0.58) if source.endswith(":") else (0.98, 0.98))


@pytest.mark.parametrize(
    ("ready_now", "moved"),
    [
        pytest.param(6, False, id="the window's tokens spread over the replicas ready now: steady"),
        pytest.param(4, False, id="a replica count within 2x of the window's: steady"),
        pytest.param(2, True, id="an evening scaled from 6 replicas to 2 within the window: the count moved"),
    ],
)
def test_a_window_whose_replica_count_moved_does_not_calibrate(ready_now: int, moved: bool) -> None:
    """The slow-cold-start replay read an evening hour spread over about 6 long-context replicas, 2 ready at its end,
    at a factor of 0.87 with both its ends within 1.5x of its means, and sized the next morning's ramp on it."""
    plan = load_plan(EXAMPLES / "capstone-revised.yaml")
    tier = plan.tier("long-context")
    over_six = _window(plan, tier, [(60, 1.0)], 6, None)
    obs = replace(over_six, replicas_ready=Measurement.of(float(ready_now)), running=Measurement.of(ready_now * 1.0))
    got = calibrate(plan, tier, obs, AdviceSettings(), remembered=0.98)
    assert ("the replica count moved" in got.source) is moved
    assert got.factor == (0.98 if moved else 1.0)
    (row,) = [r for r in tier_drift(plan, size_tier(plan, tier), obs) if r.assumption == "throughput_per_replica"]
    assert (row.observed.value is None) is moved
