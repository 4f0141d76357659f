"""The record outlives Prometheus's retention: an item once measured stays measured, with the dates it covers,
after the history that showed it is gone."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from monitor.measurements.model import ITEMS, Item

__all__ = ["merge_record", "ordered"]

_ORDER = {spec.id: i for i, spec in enumerate(ITEMS)}


def ordered(items: Iterable[Item]) -> list[Item]:
    """In the capstone's order, tier by tier."""
    return sorted(items, key=lambda i: (_ORDER.get(i.id, len(_ORDER)), i.tier))


def merge_record(previous: Mapping[tuple[str, str], Item], current: Iterable[Item]) -> list[Item]:
    """Per (item, tier): the newer judgement when it is at least as complete, else the older one kept; the date
    range spans both."""
    out = dict(previous)
    for item in current:
        before = out.get((item.id, item.tier))
        if before is None or item.status.rank >= before.status.rank:
            out[(item.id, item.tier)] = _spanning(item, before)
    return ordered(out.values())


def _spanning(item: Item, before: Item | None) -> Item:
    if before is None or before.first_seen is None or item.first_seen is None:
        return item
    return replace(item, first_seen=min(item.first_seen, before.first_seen))
