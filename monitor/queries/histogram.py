"""Share of observations above a threshold, from cumulative bucket rates: pure, no network.

A threshold (an SLO of 1.2 s) is rarely a bucket bound, so the count at the threshold is interpolated
linearly inside its bucket, the same assumption histogram_quantile makes: observations spread evenly within
a bucket, the first bucket starting at 0. Above the highest finite bound nothing can be interpolated.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "Bucket",
    "BucketShare",
    "bucket_order",
    "buckets_by_group",
    "count_at",
    "fraction_over",
    "fraction_over_groups",
]


@dataclass(frozen=True, order=True)
class Bucket:
    """A cumulative bucket: `count` observations (or a rate of them) were <= `le`."""

    le: float
    count: float


@dataclass(frozen=True)
class BucketShare:
    """Observations above the threshold and in total; `fraction` is None when nothing was observed or the
    threshold lies beyond the highest finite bucket bound."""

    over: float
    total: float
    reason: str = ""

    @property
    def fraction(self) -> float | None:
        if self.reason or self.total <= 0:
            return None
        return self.over / self.total


def bucket_order(bucket: Bucket) -> tuple[float, float]:
    """The dataclass order (le, then count) as a sort key: the same order, without the generated __lt__."""
    return bucket.le, bucket.count


def count_at(buckets: Iterable[Bucket], threshold: float) -> float | None:
    """Interpolated cumulative count at `threshold`; None if it lies in the +Inf bucket."""
    ordered = sorted(buckets, key=bucket_order)
    lower_le, lower_count = 0.0, 0.0
    for bucket in ordered:
        if threshold <= bucket.le:
            if math.isinf(bucket.le):
                return None
            if bucket.le == lower_le:
                return bucket.count
            share = (threshold - lower_le) / (bucket.le - lower_le)
            return lower_count + (bucket.count - lower_count) * max(0.0, share)
        lower_le, lower_count = bucket.le, bucket.count
    return None


def fraction_over(buckets: Iterable[Bucket], threshold: float) -> BucketShare:
    """Observations above `threshold` out of all (the +Inf bucket), for one histogram."""
    ordered = sorted(buckets, key=bucket_order)
    if not ordered or not math.isinf(ordered[-1].le):
        return BucketShare(0.0, 0.0, "no +Inf bucket: not a complete histogram")
    total = ordered[-1].count
    at = count_at(ordered, threshold)
    if at is None:
        return BucketShare(0.0, total, f"threshold {threshold} is above the highest finite bucket bound")
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
    """`fraction_over` across several histograms (e.g. models of one tier): counts add, each histogram
    interpolated within its own bounds."""
    shares = [fraction_over(b, threshold) for b in buckets_by_group(samples).values()]
    if not shares:
        return BucketShare(0.0, 0.0, "no bucket series")
    failed = [s.reason for s in shares if s.reason]
    if failed:
        return BucketShare(0.0, sum(s.total for s in shares), failed[0])
    return BucketShare(sum(s.over for s in shares), sum(s.total for s in shares))
