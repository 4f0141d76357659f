"""The measurement record as plain data with stable keys (`planwatch measurements --format json`, the API)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from monitor.measurements.model import Item, Status

__all__ = ["item_from_dict", "item_to_dict", "record_to_dict"]


def _iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def item_to_dict(item: Item) -> dict[str, Any]:
    return {
        "id": item.id,
        "title": item.title,
        "tier": item.tier,
        "status": item.status.value,
        "evidence": list(item.evidence),
        "from": _iso(item.first_seen),
        "to": _iso(item.last_seen),
        "first_seen": item.first_seen,
        "last_seen": item.last_seen,
        "engine": item.engine or None,
        "hardware": item.hardware or None,
        "values": dict(item.values),
    }


def item_from_dict(data: dict[str, Any]) -> Item:
    return Item(
        data["id"], data["title"], data["tier"], Status(data["status"]), tuple(data["evidence"]),
        data["first_seen"], data["last_seen"], data.get("engine") or "", data.get("hardware") or "",
        dict(data.get("values") or {}),
    )  # fmt: skip


def record_to_dict(items: list[Item]) -> dict[str, Any]:
    counts = {s.value: sum(1 for i in items if i.status is s) for s in Status}
    return {"summary": counts, "items": [item_to_dict(i) for i in items]}
