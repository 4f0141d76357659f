"""Demand that collapses while the SLO counts is an incident, not a trend: no scale-down until it returns.

A collapse: demand over the last `NOW_WINDOW` below `COLLAPSE_SHARE` of the check window's (an hour by
default), while the SLO counts (business hours, or always). It lasts while demand stays below that share of
the level it fell from, and ends when demand returns or the SLO stops counting (outside business hours the
advice sizes for throughput, and a replica dropped there costs only its restart).

Why: traffic does not fall by nine tenths within minutes on its own in the middle of a business day; an
upstream outage, a client's failed deploy or a network partition does that, and when it is fixed the traffic
comes back at once, often with its retries. Scaled down for the incident, the fleet meets the returning
traffic a cold start short, and every minute of that cold start breaks the SLO: on the ServeGen trace (real
production demand) a Wednesday afternoon fell from ~1,800 to ~5 requests/s for two hours with half the
clients still sending, then came back in one window; the advice had scaled both GPU tiers to their minimum
and lost 12 minutes of both at the return, more than the 99.9% availability allows in two weeks (6 minutes
of 6,000 business minutes). Holding costs the GPUs of the replicas kept through the incident; the error
budget a cold start burns is far dearer at that availability. A growing need (a queue, the forecast's
ramp) still scales up during a collapse; only scale-down waits.

Not a collapse: a tier too quiet for the share to mean anything. Below `MIN_EXPECTED_REQUESTS` requests
expected in the short window at the level it fell from, a reading under a tenth of it is Poisson noise often
enough (3 expected: no request at all 5% of the time), so the test is not made.
"""

from __future__ import annotations

from dataclasses import dataclass

from forecasting.regularizing import OUTAGE_SHARE
from monitor.observe.model import Measurement, TierObservation
from monitor.units import parse_duration

__all__ = ["COLLAPSE_SHARE", "MIN_EXPECTED_REQUESTS", "Collapse", "collapse_now"]

# One definition of the event: the forecaster treats a finished one in the history as missing, not as demand.
COLLAPSE_SHARE = OUTAGE_SHARE
# At 30 expected, 3 or fewer arrive with probability 1e-9: a reading under a tenth is the demand, not chance.
MIN_EXPECTED_REQUESTS = 30.0


@dataclass(frozen=True)
class Collapse:
    """Demand fell below `COLLAPSE_SHARE` of `level_rps` (the check window's demand then) at `since`."""

    since: float
    level_rps: float

    def describe(self, demand_rps: float) -> str:
        return (
            f"demand collapsed to {demand_rps:.3g} req/s from {self.level_rps:.3g} while the SLO counts: an "
            f"incident, not a trend; no scale-down until demand is back above {COLLAPSE_SHARE:.0%} of "
            f"{self.level_rps:.3g} or the SLO stops counting"
        )


def collapse_now(
    previous: Collapse | None, obs: TierObservation, demand: Measurement, slo_counts: bool, now: float
) -> Collapse | None:
    """The collapse in force after this evaluation: `previous` while demand stays below its share, a new one
    where the short window's `demand` fell below the share of the check window's, None otherwise (and always
    where the SLO does not count or demand is unknown)."""
    if not slo_counts or demand.value is None:
        return None
    if previous is not None:
        return previous if demand.value < COLLAPSE_SHARE * previous.level_rps else None
    level = obs.demand_rate.value
    if level is None or not demand.window or demand.window == obs.window:
        return None  # the short window is the check window's own: nothing to compare
    if level * parse_duration(demand.window) < MIN_EXPECTED_REQUESTS:
        return None
    return Collapse(now, level) if demand.value < COLLAPSE_SHARE * level else None
