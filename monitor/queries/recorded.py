"""Catalog queries read back from their recorded series (`rules/recording.yml`) over any window.

On a large fleet every raw query touches every replica's series: a 1-hour TTFT bucket vector over 1,000
replicas decodes millions of samples, and a check runs dozens of them. The recording rules already reduce
each query to one series per tier every rule interval, so reading those is cheap whatever the fleet size.
A recorded series is the query over its own window (5m) at each rule evaluation; over a longer window W:

    avg    `avg_over_time(rec[W])`: rates, means and counts. The mean of 5-minute rates is the rate over W,
           give or take the 5 minutes before W's start that the first evaluations also cover.
    max    `max_over_time(rec[W])`: maxima (KV occupancy, framebuffer, the peak of the 5-minute rate).
    last   the value recorded now: instant state (running and waiting requests, replicas up).
    ratio  `avg(numerator) / avg(denominator)`: a ratio is recorded as its two rates and divided after
           averaging, so a window's ratio is weighted by traffic, as the raw query's is; averaging 5-minute
           ratios would weigh a quiet minute like a busy one, and one NaN (no traffic) would poison W.

When W equals the query's own window, `avg` reads the recorded value itself. Bucket vectors are averaged per
`le` (and model), so quantiles and SLO shares derive from them exactly as from the raw bucket rates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from monitor.queries.engine import REPLICAS_UP
from monitor.queries.query import Query, validate_duration
from monitor.queries.selector import Selector

__all__ = ["PRESENCE", "Recorded", "earliest", "freshness"]

How = Literal["avg", "max", "last"]
# Recorded for every tier whose engines are scraped, even when all of them are down: the probe that tells
# whether the rules run for a tier, and since when.
PRESENCE = REPLICAS_UP


@dataclass(frozen=True)
class Recorded:
    """How one observation is read from recorded series: `query` (over `how`), divided by `per` if set; where
    that finds nothing, the unrecorded `fallback` query read raw (a signal only some engine generations have)."""

    query: Query
    how: How = "avg"
    per: Query | None = None
    fallback: Query | None = None

    def __post_init__(self) -> None:
        for q in (self.query, self.per):
            if q is not None and not q.record:
                raise ValueError(f"{q.name} is not recorded: no rule writes it")

    def expr(self, selector: Selector | Mapping[str, str], window: str) -> str:
        """The PromQL that reads this observation for one tier over `window`."""
        validate_duration(window)
        head = _over(self.query, selector, window, self.how)
        expr = head if self.per is None else f"{head} / {_over(self.per, selector, window, self.how)}"
        return expr if self.fallback is None else f"({expr}) or {self.fallback.for_tier(selector, window=window)}"


def _over(query: Query, selector: Selector | Mapping[str, str], window: str, how: How) -> str:
    series = query.recorded(selector)
    if how == "last" or (how == "avg" and window == query.window):
        return series
    return f"{how}_over_time({series}[{window}])"


def freshness(selector: Selector | Mapping[str, str]) -> str:
    """Seconds since the rules last wrote the tier's presence series (empty if they never did lately)."""
    return f"time() - timestamp({PRESENCE.recorded(selector)})"


def earliest(selector: Selector | Mapping[str, str], span: str) -> str:
    """When, within the last `span`, the rules first wrote the tier's presence series (to 5 minutes): how
    far back its recorded history reaches, hence which windows it can answer for."""
    return f"min_over_time(timestamp({PRESENCE.recorded(selector)})[{validate_duration(span)}:5m])"
