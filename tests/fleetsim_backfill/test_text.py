"""The numpy text renderer writes OpenMetrics lines that read back to the values and times given."""

from __future__ import annotations

import io

import numpy as np
import pytest

from fleetsim.backfill_text import SeriesGroup, TextRenderer, stamp_text

STAMPS = np.array([1_715_169_600, 1_715_169_615, 1_715_169_630])


def lines_of(group: SeriesGroup) -> list[tuple[str, float, int]]:
    out = io.BytesIO()
    written = TextRenderer().write(out, group, stamp_text(STAMPS))
    rows = []
    for line in out.getvalue().decode().splitlines():
        name, value, stamp = line.rsplit(" ", 2)
        rows.append((name, float(value), int(stamp)))
    assert written == len(rows)
    return rows


@pytest.mark.parametrize(
    ("values", "decimals", "expected"),
    [
        pytest.param([[0, 7, 1234567890123]], 0, [0, 7, 1234567890123], id="counts of any width read back exactly"),
        pytest.param([[0.25, 1.5, 12.0004]], 3, [0.25, 1.5, 12.0], id="seconds keep milliseconds"),
        pytest.param([[0.41237, 1.0, 0.0]], 4, [0.4124, 1.0, 0.0], id="ratios keep four decimals"),
    ],
)
def test_values_and_times_read_back(values: list[list[float]], decimals: int, expected: list[float]) -> None:
    rows = lines_of(SeriesGroup([b'm{a="x"}'], np.array(values, dtype=float), decimals))
    assert [r[1] for r in rows] == pytest.approx(expected)
    assert [r[2] for r in rows] == STAMPS.tolist()


def test_series_of_different_lengths_share_a_line_width_and_stay_in_time_order() -> None:
    prefixes = [b'short{le="1"}', b'a_much_longer_name{le="+Inf",pod="x-0"}']
    rows = lines_of(SeriesGroup(prefixes, np.array([[1, 2, 3], [10, 20, 30]], dtype=float)))
    assert [(n, v) for n, v, _ in rows] == [
        (prefixes[0].decode(), 1),
        (prefixes[0].decode(), 2),
        (prefixes[0].decode(), 3),
        (prefixes[1].decode(), 10),
        (prefixes[1].decode(), 20),
        (prefixes[1].decode(), 30),
    ]


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(-1.0, id="a negative value is refused"),
        pytest.param(float("nan"), id="NaN is refused"),
        pytest.param(1e30, id="a value past int64 fixed point is refused"),
    ],
)
def test_values_that_cannot_be_written_are_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        lines_of(SeriesGroup([b"m"], np.array([[1.0, bad, 2.0]])))


def test_timestamps_must_be_unix_seconds() -> None:
    with pytest.raises(ValueError, match="Unix seconds"):
        stamp_text(np.array([1_715_169_600_000]))
