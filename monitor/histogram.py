"""Classic Prometheus histograms, read as Prometheus reads them (pure): the one home of histogram arithmetic.

Every reader of bucket counts goes through here: the observer (quantiles and SLO shares from bucket
vectors), the fleet view (quantiles over tiers whose bucket lists differ), the drift model (the plan's
distribution pushed through vLLM's buckets) and the rule generator (which bounds bracket a threshold).

- `quantile` is PromQL's `histogram_quantile` over one histogram, exactly (promql/quantile.go): buckets sorted
  by bound, counts made monotonic, equal bounds merged; NaN without a +Inf bucket, with fewer than two
  buckets or with no observations; a rank in the +Inf bucket returns the highest finite bound; otherwise
  linear inside the bucket holding the rank, the first bucket starting at 0.
- `count_at` / `fraction_over`: the count at (share above) a threshold, interpolated inside its bucket under
  the same assumption (observations spread evenly). A threshold above the highest finite bound cannot be
  read: unknown, never the +Inf bucket's share guessed as "above" nor 0.
- `merged_quantile`: several histograms whose bucket lists differ (tiers with different max_model_len). Each
  is read at the union of the bounds; past its own highest finite bound a histogram's count stays at that
  bound's (its +Inf observations count as above every bound beyond it, so the quantile is never
  understated; the fleet prompt rule in `monitor.rules.drift` reads tiers the same way). For histograms
  with the same bounds this is `histogram_quantile(q, sum by (le) (...))`.
- `quantile_bound` / `merged_quantile_bound`: where that answer is a bound, not a measurement. A rank in the
  +Inf bucket is somewhere above the highest finite bound (which is what histogram_quantile answers); a rank in
  the first bucket is at most its bound (the value interpolated up from 0 is a guess inside it).
- `FixedBounds`: the same `quantile` and `fraction_over` for many histograms over one bucket list at once
  (a replay reads its tiers' histograms over several windows every minute): the bounds are sorted and the
  threshold bracketed once, the counts are rows of cumulative vectors, and the arithmetic is the scalar
  functions' own, operation for operation, so the answers are the same to the bit.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # numpy is imported where FixedBounds runs: every command's --help reads this module
    import numpy as np

__all__ = [
    "Bracket",
    "Bucket",
    "BucketShare",
    "FixedBounds",
    "QuantileBound",
    "bracket",
    "buckets_by_group",
    "count_at",
    "fraction_over",
    "fraction_over_groups",
    "merged_quantile",
    "merged_quantile_bound",
    "quantile",
    "quantile_bound",
    "quantile_of_distribution",
]


@dataclass(frozen=True, order=True)
class Bucket:
    """A cumulative bucket: `count` observations (or a rate of them) were <= `le`."""

    le: float
    count: float


@dataclass(frozen=True)
class Bracket:
    """The finite bounds around `threshold`: between `lower` and `upper` (lower 0: the first bucket);
    `upper is None` means above the highest finite bound (nothing to interpolate)."""

    threshold: float
    lower: float
    upper: float | None

    @property
    def exact(self) -> bool:
        """The threshold is a bound: its bucket is read as is."""
        return self.upper == self.threshold

    @property
    def beyond(self) -> bool:
        return self.upper is None

    @property
    def fraction(self) -> float:
        """(threshold - lower) / (upper - lower): the share of the bracketing bucket counted as at or below."""
        if self.upper is None or self.upper == self.lower:
            return 1.0
        return (self.threshold - self.lower) / (self.upper - self.lower)


def bracket(threshold: float, bounds: Iterable[float]) -> Bracket:
    """The finite bounds around a positive `threshold` (0 below the first bound)."""
    if not threshold >= 0 or not math.isfinite(threshold):
        raise ValueError(f"threshold must be a non-negative finite number, got {threshold!r}")
    finite = sorted(b for b in bounds if math.isfinite(b))
    if not finite:
        raise ValueError("no finite bucket bounds")
    lower = 0.0
    for bound in finite:
        if threshold <= bound:
            return Bracket(threshold, lower, bound)
        lower = bound
    return Bracket(threshold, finite[-1], None)


def _normalized(buckets: Iterable[Bucket]) -> list[Bucket]:
    """Sorted, equal bounds merged (their counts added, as Prometheus coalesces them), counts monotonic."""
    merged: dict[float, float] = defaultdict(float)
    for b in buckets:
        merged[b.le] += b.count
    out, highest = [], -math.inf
    for le in sorted(merged):
        highest = max(highest, merged[le])
        out.append(Bucket(le, highest))
    return out


def quantile(q: float, buckets: Iterable[Bucket]) -> float:
    """PromQL's histogram_quantile(q, buckets) of one classic histogram (NaN where PromQL gives NaN)."""
    if math.isnan(q):
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    ordered = _normalized(buckets)
    if not ordered or not math.isinf(ordered[-1].le) or len(ordered) < 2:
        return math.nan
    observations = ordered[-1].count
    if observations == 0:
        return math.nan
    rank = q * observations
    b = _rank_bucket(rank, ordered)
    if b == len(ordered) - 1:
        return ordered[-2].le
    if b == 0 and ordered[0].le <= 0:
        return ordered[0].le
    start, count = 0.0, ordered[b].count
    if b > 0:
        start, count, rank = ordered[b - 1].le, count - ordered[b - 1].count, rank - ordered[b - 1].count
    return start + (ordered[b].le - start) * (rank / count)


def _rank_bucket(rank: float, ordered: Sequence[Bucket]) -> int:
    """The index of the bucket holding `rank` (the last, +Inf, when no finite bucket reaches it)."""
    return next((i for i, bucket in enumerate(ordered[:-1]) if bucket.count >= rank), len(ordered) - 1)


@dataclass(frozen=True)
class QuantileBound:
    """A quantile read from an edge bucket: `at most` the first bucket's bound, or `above` the top finite bound."""

    side: Literal["at most", "above"]
    bound: float


def quantile_bound(q: float, buckets: Iterable[Bucket]) -> QuantileBound | None:
    """Where `quantile(q, buckets)` is a bound (the rank in the first or the +Inf bucket), else None (a value
    interpolated inside a bucket with a bound on each side, or no answer at all)."""
    ordered = _normalized(buckets)
    if not 0 <= q <= 1 or len(ordered) < 2 or not math.isinf(ordered[-1].le) or ordered[-1].count <= 0:
        return None
    b = _rank_bucket(q * ordered[-1].count, ordered)
    if b == len(ordered) - 1:
        return QuantileBound("above", ordered[-2].le)
    return QuantileBound("at most", ordered[0].le) if b == 0 else None


def quantile_of_distribution(q: float, cdf: Callable[[float], float], bounds: Sequence[float]) -> float:
    """What histogram_quantile reads for a distribution (given by its CDF) observed through `bounds`."""
    return quantile(q, [*(Bucket(b, cdf(b)) for b in bounds if math.isfinite(b)), Bucket(math.inf, 1.0)])


def count_at(buckets: Iterable[Bucket], threshold: float) -> float | None:
    """Interpolated cumulative count at `threshold`; None above the highest finite bound."""
    ordered = _normalized(buckets)
    finite = [b for b in ordered if math.isfinite(b.le)]
    if not finite:
        return None
    br = bracket(max(threshold, 0.0), (b.le for b in finite))
    if br.upper is None:
        return None
    counts = {b.le: b.count for b in finite}
    lower = counts.get(br.lower, 0.0)
    return lower + (counts[br.upper] - lower) * br.fraction


def _count_at_or_last(buckets: list[Bucket], x: float) -> float:
    """The merge convention: past the highest finite bound, the count at it."""
    at = count_at(buckets, x)
    if at is not None:
        return at
    finite = [b for b in buckets if math.isfinite(b.le)]
    return finite[-1].count if finite else 0.0


@dataclass(frozen=True)
class BucketShare:
    """Observations above the threshold and in total; `fraction` is None when nothing was observed or the
    threshold cannot be read from the buckets (`reason`)."""

    over: float
    total: float
    reason: str = ""

    @property
    def fraction(self) -> float | None:
        if self.reason or self.total <= 0:
            return None
        return self.over / self.total


def fraction_over(buckets: Iterable[Bucket], threshold: float) -> BucketShare:
    """Observations above `threshold` out of all (the +Inf bucket), for one histogram."""
    ordered = _normalized(buckets)
    if not ordered or not math.isinf(ordered[-1].le):
        return BucketShare(0.0, 0.0, "no +Inf bucket: not a complete histogram")
    total = ordered[-1].count
    at = count_at(ordered, threshold)
    if at is None:
        return BucketShare(0.0, total, f"threshold {threshold:g} is above the highest finite bucket bound")
    return BucketShare(max(0.0, total - at), total)


def buckets_by_group(
    samples: Iterable[tuple[Mapping[str, str], float]], le_label: str = "le"
) -> dict[tuple[tuple[str, str], ...], list[Bucket]]:
    """Bucket series (labels, value) split into histograms: one per label set without `le` (e.g. per
    model, whose bucket bounds differ). NaN values are skipped."""
    groups: dict[tuple[tuple[str, str], ...], list[Bucket]] = defaultdict(list)
    for labels, value in samples:
        if le_label not in labels or math.isnan(value):
            continue
        key = tuple(sorted((k, v) for k, v in labels.items() if k != le_label))
        groups[key].append(Bucket(float(labels[le_label]), value))
    return dict(groups)


def fraction_over_groups(samples: Iterable[tuple[Mapping[str, str], float]], threshold: float) -> BucketShare:
    """`fraction_over` across several histograms (e.g. models of one tier): counts add, each histogram read in
    its own bounds. One whose bounds cannot read the threshold (a replica on an older, shorter bucket list)
    drops out, neither good nor bad, as the rules' guard drops it; unknown when none can read it."""
    shares = [fraction_over(b, threshold) for b in buckets_by_group(samples).values()]
    if not shares:
        return BucketShare(0.0, 0.0, "no bucket series")
    readable = [s for s in shares if not s.reason]
    if not readable:
        return BucketShare(0.0, sum(s.total for s in shares), shares[0].reason)
    return BucketShare(sum(s.over for s in readable), sum(s.total for s in readable))


def merged_quantile(q: float, groups: Sequence[Iterable[Bucket]]) -> float | None:
    """histogram_quantile over several histograms whose bucket bounds may differ (see the module's note);
    None when nothing was observed."""
    merged = _merged(groups)
    if merged is None:
        return None
    value = quantile(q, merged)
    return None if math.isnan(value) else value


def merged_quantile_bound(q: float, groups: Sequence[Iterable[Bucket]]) -> QuantileBound | None:
    """`quantile_bound` of the histogram `merged_quantile` reads (the groups at the union of their bounds)."""
    merged = _merged(groups)
    return None if merged is None else quantile_bound(q, merged)


def _merged(groups: Sequence[Iterable[Bucket]]) -> list[Bucket] | None:
    """The groups as one histogram at the union of their finite bounds, with its +Inf; None if nothing observed."""
    complete = [g for g in (_normalized(g) for g in groups) if g and math.isinf(g[-1].le)]
    total = sum(g[-1].count for g in complete)
    if total <= 0:
        return None
    bounds = sorted({b.le for g in complete for b in g if math.isfinite(b.le)})
    return [*(Bucket(x, sum(_count_at_or_last(g, x) for g in complete)) for x in bounds), Bucket(math.inf, total)]


class FixedBounds:
    """One histogram's bucket list (distinct finite bounds, ascending; +Inf implied), read for many count
    vectors: row r of `cumulative` holds the cumulative counts at each bound then +Inf, non-decreasing (as
    `_normalized` leaves them). Answers equal `fraction_over` / `quantile` over the same `Bucket`s."""

    def __init__(self, bounds: Sequence[float]) -> None:
        finite = [float(b) for b in bounds if math.isfinite(b)]
        if not finite or finite != sorted(set(finite)) or len(finite) != len(bounds):
            raise ValueError("FixedBounds takes distinct ascending finite bounds (+Inf is implied)")
        self.bounds = tuple(finite)
        self._le = [*finite, math.inf]
        self._brackets: dict[float, Bracket] = {}

    def _bracket(self, threshold: float) -> Bracket:
        br = self._brackets.get(threshold)
        if br is None:
            br = self._brackets[threshold] = bracket(max(threshold, 0.0), self.bounds)
        return br

    def fraction_over(self, cumulative: np.ndarray, threshold: float) -> np.ndarray:
        """Per row, the share of observations above `threshold` (`fraction_over(...).fraction`), NaN where
        that is None (no observations, or the threshold above the highest finite bound)."""
        import numpy as np

        total = cumulative[:, -1]
        br = self._bracket(threshold)
        if br.upper is None:
            return np.full(total.shape, np.nan)
        upper = cumulative[:, self.bounds.index(br.upper)]
        # `count_at`: the count at the lower bound (0 below the first), plus the bracket's share of its bucket
        lower = cumulative[:, self.bounds.index(br.lower)] if br.lower in self.bounds else 0.0
        at = lower + (upper - lower) * br.fraction
        over = np.maximum(0.0, total - at)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, over / np.where(total > 0, total, 1.0), np.nan)

    def quantile(self, q: float | Sequence[float], cumulative: np.ndarray) -> np.ndarray:
        """Per row, `quantile(q, ...)` (PromQL's histogram_quantile) for 0 < q <= 1; NaN with no observations.
        `q` is one quantile for every row or one per row (several quantiles of one histogram: repeat its row).
        Row by row in Python floats: the callers read a few rows at a time, where numpy's per-call cost is
        several times the arithmetic."""
        import numpy as np

        rows = cumulative.tolist()
        qs = [float(q)] * len(rows) if isinstance(q, int | float) else [float(x) for x in q]
        if len(qs) != len(rows) or not all(0 < x <= 1 for x in qs):
            raise ValueError(f"FixedBounds.quantile takes 0 < q <= 1, one or one per row, got {q!r}")
        return np.array([self._quantile(x, row) for x, row in zip(qs, rows, strict=True)], dtype=np.float64)

    def _quantile(self, q: float, row: list[float]) -> float:
        """`quantile`'s arithmetic on one cumulative row (finite bounds' counts, then +Inf's)."""
        le, n = self._le, len(self.bounds)
        observations = row[-1]
        if observations == 0:
            return math.nan
        rank = q * observations
        b = bisect.bisect_left(row, rank, 0, n)  # the first finite bucket with count >= rank
        if b == n:
            return le[n - 1]
        if b == 0 and le[0] <= 0:
            return le[0]
        start, count = 0.0, row[b]
        if b > 0:
            start, count, rank = le[b - 1], count - row[b - 1], rank - row[b - 1]
        return start + (le[b] - start) * (rank / count)
