"""Pure rules about what a measurement means: history coverage and speculative decoding."""

from __future__ import annotations

import pytest

from monitor.observe.caveats import speculative_decoding
from monitor.observe.fleet import covered, history_gate
from monitor.observe.model import Measurement

WEEK = 2016  # 5-minute steps in 7 days


@pytest.mark.parametrize(
    ("series", "share"),
    [
        pytest.param([1.0] * WEEK, 1.0, id="a full week of rates covers the week"),
        pytest.param([None] * (WEEK - 1) + [3.0], 1 / WEEK, id="one step of a week covers a 2016th of it"),
        pytest.param([0.0, None, 0.0, None], 0.5, id="zero traffic is history, a missing step is not"),
        pytest.param([], 0.0, id="no series covers nothing"),
    ],
)
def test_covered_is_the_share_of_steps_with_a_value(series: list[float | None], share: float) -> None:
    assert covered(series) == pytest.approx(share)


@pytest.mark.parametrize(
    ("share", "known", "reason"),
    [
        pytest.param(0.95, True, "", id="95% of the window is judged"),
        pytest.param(0.9, True, "", id="exactly the stated share is judged"),
        pytest.param(0.5, False, "history covers 50.0% of 7d (3.5 days)", id="half a week is not a week"),
        pytest.param(150 / 604_800, False, "(2 min)", id="2.5 minutes of a fresh Prometheus say nothing of a week"),
    ],
)
def test_a_long_window_statistic_needs_the_stated_share_of_history(share: float, known: bool, reason: str) -> None:
    m = history_gate(Measurement.of(4.35, "q", "7d"), share, "7d")
    assert m.known is known
    assert reason in m.reason


def test_the_history_reason_replaces_a_plainer_unknown() -> None:
    m = history_gate(Measurement.unknown("no data: the query matched no series"), 0.0, "7d")
    assert m.reason.startswith("history covers 0.0% of 7d")


@pytest.mark.parametrize(
    ("tokens_per_step", "field", "before", "after"),
    [
        pytest.param(Measurement.of(2.5), "itl_p95", Measurement.of(0.1), "once per streamed output of 2.50 tokens",
                     id="under speculative decoding the ITL says it is per step"),
        pytest.param(Measurement.of(2.5), "tpot_p95", Measurement.unknown("no observations in the window"),
                     "ITL counts steps of 2.50 tokens", id="a missing TPOT says why ITL cannot stand in"),
        pytest.param(Measurement.of(2.5), "tpot_p95", Measurement.unknown("too few requests: 3"), "too few requests",
                     id="another reason for an unknown TPOT is kept"),
        pytest.param(Measurement.unknown("no data"), "itl_p95", Measurement.of(0.1), "",
                     id="without speculative decoding nothing changes"),
    ],
)  # fmt: skip
def test_speculative_decoding_explains_itl_and_tpot(
    tokens_per_step: Measurement, field: str, before: Measurement, after: str
) -> None:
    out = speculative_decoding({field: before}, tokens_per_step)
    assert out[field].value == before.value
    assert after in out[field].reason
