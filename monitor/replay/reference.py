"""What no causal policy saves: the price of not knowing each minute's draw at the plan's availability.

The oracle sizes every judged minute for the requests that minute actually brought. A policy that knew each
minute's expected rate exactly (the 10-minute mean of the arrivals, which holds the trace's own changes) but
not the Poisson draw around it has to size every minute at r + z sqrt(r / 60), z the plan's availability
quantile (the advice's own minute rate, `CapacityTable.minute_rates`); no causal policy does better than that
one at the share of minutes it leaves short. So the gap between the oracle's need and that sizing, in the
minutes the SLO counts, is out of any forecast's reach, planwatch's too: a replay whose planwatch sits at 1.2x
the oracle with 1.13x of it here is mostly paying for its availability target, not for its forecast. It is
also what a lower availability target would buy (z falls with it).

Pure: the replay's demand, curves and the oracle's per-minute need in, figures out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from monitor.advice.capacity import capacity_table, minute_quantile
from monitor.memo import IdentityMemo
from monitor.replay.run import Replay
from monitor.replay.slo import required_replicas

__all__ = ["AvailabilityPrice", "availability_price"]

_RATE_MINUTES = 10  # the expected rate: the centred 10-minute mean (a rate-level trace's window)


@dataclass(frozen=True)
class AvailabilityPrice:
    """GPU-hours in the judged minutes: the oracle's need (each minute's count known) and the need sized on
    each minute's expected rate at the availability's z; per tier, the judged minutes that sizing leaves
    short of the oracle's need."""

    availability: float
    z: float
    oracle_need_gpu_hours: float
    expected_rate_gpu_hours: float
    short_minutes_share: dict[str, float]

    @property
    def ratio(self) -> float | None:
        return self.expected_rate_gpu_hours / self.oracle_need_gpu_hours if self.oracle_need_gpu_hours else None

    def to_json(self) -> dict[str, Any]:
        return {
            "availability": self.availability,
            "z": self.z,
            "oracle_need_gpu_hours": self.oracle_need_gpu_hours,
            "expected_rate_gpu_hours": self.expected_rate_gpu_hours,
            "ratio": self.ratio,
            "short_minutes_share": dict(self.short_minutes_share),
        }

    def sentence(self) -> str:
        ratio = "n/a" if self.ratio is None else f"{self.ratio:.3f}x"
        return (
            f"In the minutes the SLO counts, the oracle needs {self.oracle_need_gpu_hours:,.0f} GPU-h knowing each "
            f"minute's requests; knowing only each minute's expected rate, sizing at the plan's "
            f"{self.availability:.4g} availability (z = {self.z:.2f}) needs {self.expected_rate_gpu_hours:,.0f} "
            f"({ratio}): that part of the gap to the oracle is the price of the availability target, which no "
            "forecast closes."
        )


_PRICES: IdentityMemo[AvailabilityPrice] = IdentityMemo(1)  # a replay holds its records: keep few


def availability_price(replay: Replay) -> AvailabilityPrice:
    """Remembered per replay: the report asks for it in the table, the JSON and the HTML of one run."""
    return _PRICES.get((replay,), (), lambda: _price(replay))


def _price(replay: Replay) -> AvailabilityPrice:
    plan, judged = replay.plan, replay.judged
    oracle = expected = 0.0
    short: dict[str, float] = {}
    window = np.ones(_RATE_MINUTES) / _RATE_MINUTES
    for i, tier in enumerate(plan.tiers):
        curve = replay.curves[tier.name]
        if curve is None or not judged.any():
            continue
        rate = np.convolve(replay.demand.arrivals[i] / 60.0, window, mode="same")
        minute_rates = capacity_table(plan, tier, 1.0).minute_rates(rate)
        need = required_replicas(plan, tier, curve, minute_rates, judged)[judged]
        actual = replay.required[tier.name][judged]
        oracle += float(actual.sum()) * tier.tensor_parallel / 60.0
        expected += float(need.sum()) * tier.tensor_parallel / 60.0
        short[tier.name] = float((actual > need).mean())
    availability = plan.slo.availability
    return AvailabilityPrice(availability, minute_quantile(availability), oracle, expected, short)
