"""A latency quantile read from a histogram says what it is: a bound at the top bucket, a guess in a wide one."""

from __future__ import annotations

import pytest

from monitor.drift import bucket_note
from monitor.rules.buckets import TTFT_BOUNDS, TTFT_BOUNDS_BEFORE_15202


@pytest.mark.parametrize(
    ("value", "says"),
    [
        pytest.param(612.0, "somewhere between 160 s and 640 s", id="10.2 minutes is a guess inside 160-640 s"),
        pytest.param(2560.0, "top bucket: at least 2560 s, a bound", id="the top finite bound is a bound"),
        pytest.param(10.0, "top bucket: at least 10 s", id="the older exporters' top bound is a bound too"),
        pytest.param(1.3, "", id="a value in a narrow bucket is a measurement"),
        pytest.param(None, "", id="an unknown value has no note"),
    ],
)
def test_a_histogram_quantile_says_what_it_is(value: float | None, says: str) -> None:
    note = bucket_note(value, TTFT_BOUNDS, TTFT_BOUNDS_BEFORE_15202)
    assert (says in note) if says else note == ""
