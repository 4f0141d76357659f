"""The demo's closed loop asks fleetsim only for changes, so its log reads as what happened."""

from __future__ import annotations

from typing import Any

import pytest

from fleetsim.demo import loop_changes


def _rec(recommended: int, current: float, stale: bool = False) -> dict[str, Any]:
    return {"tier": "standard", "recommended_replicas": recommended, "current_replicas": current, "stale": stale,
            "reason": "demand needs more replicas"}  # fmt: skip


@pytest.mark.parametrize(
    ("rec", "applied", "asks"),
    [
        pytest.param(_rec(8, 5.0), {}, [("standard", 8, "demand needs more replicas")], id="a first change is asked"),
        pytest.param(_rec(8, 5.0), {"standard": 8}, [], id="replicas still starting are not asked for again"),
        pytest.param(_rec(5, 5.0), {}, [], id="a recommendation equal to the ready replicas asks nothing"),
        pytest.param(
            _rec(9, 8.0),
            {"standard": 8},
            [("standard", 9, "demand needs more replicas")],
            id="a new recommendation is asked",
        ),
        pytest.param(_rec(8, 5.0, stale=True), {}, [], id="stale advice moves nothing"),
    ],
)
def test_the_loop_asks_only_for_changes(
    rec: dict[str, Any], applied: dict[str, int], asks: list[tuple[str, int, str]]
) -> None:
    assert loop_changes([rec], applied) == asks
