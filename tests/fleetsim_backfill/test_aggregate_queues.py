"""The aggregate model's queues as the engine's scheduler runs them: the batch limit as slots (a call waits
only while the batch is full), a waiting prompt filling the last step of the one ahead, and each call's
decode span through the prefills its replica runs meanwhile."""

from __future__ import annotations

import numpy as np
import pytest

from fleetsim.aggregate import PrefillPlan, ScanResult, prefill_scan
from fleetsim.aggregate_calls import Window
from fleetsim.aggregate_decode import decode_through
from fleetsim.aggregate_latency import TierLatency, _gate
from fleetsim.fleet import engine_config
from fleetsim.scenarios import Effects

from .helpers import diurnal_plan

ROOM = 1000.0
GEMM = 0.001  # seconds per prompt token: a full step of 1000 tokens is 1 s, above the 0.2 s weights read
WEIGHTS = 0.2


class _Arrivals:
    """What the gate reads of the calls: their arrivals, in order."""

    def __init__(self, arrival: np.ndarray) -> None:
        self.arrival = arrival

    def __len__(self) -> int:
        return int(self.arrival.size)


def gate(arrival: list[float], gap: float, slots: int, carried: TierLatency | None = None) -> np.ndarray:
    config = engine_config(diurnal_plan(), diurnal_plan().tiers[0], Effects())
    state = carried or TierLatency.start(config, 1)
    n = len(arrival)
    calls = _Arrivals(np.asarray(arrival, dtype=float))
    ready, admitted = _gate(state, calls, np.zeros(n, dtype=np.int64), np.full(n, gap), np.full(n, float(slots)), 1e9)  # type: ignore[arg-type]
    assert admitted.all()
    return ready


def test_a_batch_far_from_full_admits_every_call_at_once() -> None:
    arrival = [0.0, 0.1, 0.2, 0.3, 0.4]
    assert gate(arrival, gap=0.5, slots=10) == pytest.approx(arrival)


def test_an_overloaded_replica_still_admits_one_call_per_gap() -> None:
    ready = gate([0.0] * 100, gap=0.5, slots=10)
    assert ready[:10] == pytest.approx(np.zeros(10))  # ten free slots
    assert ready[10] == pytest.approx(5.0)  # the first slot frees after 10 x 0.5 s
    assert (ready[-1] - ready[0]) / 99 == pytest.approx(0.5, rel=0.1)


def test_the_next_window_takes_the_slot_freed_earliest() -> None:
    config = engine_config(diurnal_plan(), diurnal_plan().tiers[0], Effects())
    state = TierLatency.start(config, 1)
    gate([0.0, 0.0, 0.0], gap=1.0, slots=2, carried=state)  # holds 2 s each: slots free at 2 and 4
    assert gate([1.0], gap=1.0, slots=2, carried=state) == pytest.approx([2.0])


def scan(tokens: list[float], ready: list[float]) -> ScanResult:
    n = len(tokens)
    t = np.asarray(tokens)
    zeros = np.zeros(n)
    plan = PrefillPlan(
        segment=np.zeros(n, dtype=np.int64),
        ready=np.asarray(ready),
        tokens=t,
        work=t * GEMM,
        memory=np.full(n, WEIGHTS),
        overhead=zeros,
        decode_step=np.full(n, 0.01),
        busy=zeros,
        room=np.full(n, ROOM),
        residual=np.ones(n),
        carried_end=np.full(1, -np.inf),
        arrival=np.asarray(ready),
        patience=1e9,
    )
    return prefill_scan(plan)


@pytest.mark.parametrize(
    ("tokens", "ready", "first_tokens"),
    [
        pytest.param(
            [1500, 300], [0.0, 0.1], [1.8, 1.8], id="a short prompt waiting fits in the last step of the one ahead"
        ),
        pytest.param(
            [1500, 800], [0.0, 0.1], [2.0, 2.3], id="a long prompt waiting fills that step and keeps the rest"
        ),
        pytest.param([1500, 300], [0.0, 0.9], [1.8, 1.8], id="a prompt arriving before the last step begins joins it"),
        pytest.param(
            [1500, 300], [0.0, 1.2], [1.5, 1.8], id="a prompt arriving once the last step has begun waits for it"
        ),
        pytest.param([1500, 300], [0.0, 5.0], [1.5, 5.3], id="an idle engine starts the prompt alone"),
    ],
)
def test_a_waiting_prompt_fills_the_last_step_of_the_one_ahead(
    tokens: list[float], ready: list[float], first_tokens: list[float]
) -> None:
    # 1500 tokens: a full step (0 to 1 s) and a last one of 500 (1 to 1.5 s), which leaves 500 tokens of room
    assert scan(tokens, ready).first_token == pytest.approx(first_tokens)


def decode(scan: ScanResult, first: float, gaps: int, replica: int) -> tuple[int, float]:
    window = Window(0.0, 4, 15.0)  # two replicas decoding at 20 ms a step throughout
    one = np.array
    k, span = decode_through(scan, one([replica]), one([first]), one([gaps]), np.full((2, 4), 0.02), window)
    return int(k[0]), float(span[0])


PREFILL = ScanResult(  # one replica prefills from 10 to 13 s in 3 steps
    scheduled=np.array([10.0]),
    first_token=np.array([13.0]),
    served=np.array([True]),
    steps=np.array([3.0]),
    segment=np.array([0]),
    work=np.zeros(1),
    memory=np.zeros(1),
)


@pytest.mark.parametrize(
    ("first", "gaps", "replica", "want"),
    [
        pytest.param(0.0, 100, 0, (0, 2.0), id="a call that ends before the prefill decodes at t_d"),
        pytest.param(
            9.0, 100, 0, (3, 3.0 + 97 * 0.02), id="a call decoding through the prefill gets three slow tokens"
        ),
        pytest.param(11.0, 100, 0, (2, 2.0 + 98 * 0.02), id="a call starting inside it gets the rest of it"),
        pytest.param(9.0, 100, 1, (0, 2.0), id="another replica's prefill does not slow it"),
        pytest.param(9.0, 0, 0, (0, 0.0), id="a call of one token does not decode"),
    ],
)
def test_a_call_decodes_through_its_replicas_prefills(
    first: float, gaps: int, replica: int, want: tuple[int, float]
) -> None:
    k, span = decode(PREFILL, first, gaps, replica)
    assert k == want[0]
    assert span == pytest.approx(want[1], abs=1e-9)


def test_a_prefill_starting_a_rounding_error_before_the_last_one_ends_still_slows_a_decode() -> None:
    back_to_back = ScanResult(  # 10 to 13 s in 3 steps, then 13 s less a rounding error to 15 s in 2
        scheduled=np.array([10.0, 13.0 - 2e-7]),
        first_token=np.array([13.0, 15.0]),
        served=np.array([True, True]),
        steps=np.array([3.0, 2.0]),
        segment=np.array([0, 0]),
        work=np.zeros(2),
        memory=np.zeros(2),
    )
    k, span = decode(back_to_back, 9.0, 100, 0)
    assert k == 5
    assert span == pytest.approx(1.0 + 5.0 + 45 * 0.02, abs=1e-5)
