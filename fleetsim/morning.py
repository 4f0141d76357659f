"""A plan whose business day is this morning, wherever the machine is: what the demo and compose serve.

The emulated traffic follows the plan's business hours, so a demo started at 03:00 UTC would show a quiet night.
Shifting the plan's timezone to a fixed-offset zone where it is now 9:00-11:00 on a working day shows the morning
ramp, the scale schedule and the business-hours SLO at once. `python -m fleetsim.morning IN OUT` writes it.
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import yaml

__all__ = ["main", "morning_hours", "morning_plan"]


def morning_hours(hours: dict[str, object], now: float) -> dict[str, object]:
    """Business hours in a fixed-offset zone where `now` is between 9:00 and 11:00, today a working day."""
    utc = datetime.fromtimestamp(now, UTC)
    offset = next(h for h in range(-12, 15) if 9 <= (utc + timedelta(hours=h)).hour < 11)
    local = utc + timedelta(hours=offset)
    days = list(dict.fromkeys([*cast(list[str], hours.get("weekdays", ["mon", "tue", "wed", "thu", "fri"])),
                                local.strftime("%a").lower()]))  # fmt: skip
    zone = f"Etc/GMT{'-' if offset >= 0 else '+'}{abs(offset)}"  # POSIX signs: Etc/GMT-2 is UTC+2
    return {**hours, "timezone": zone, "weekdays": days, "start": "08:00", "end": str(hours.get("end", "18:00"))}


def morning_plan(data: dict[str, Any], now: float) -> dict[str, Any]:
    workload = dict(data["workload"])
    workload["business_hours"] = morning_hours(workload.get("business_hours", {}), now)
    return {**data, "workload": workload}


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        raise SystemExit("usage: python -m fleetsim.morning PLAN.yaml OUT.yaml")
    data = morning_plan(yaml.safe_load(Path(args[0]).read_text()), time.time())
    Path(args[1]).write_text(yaml.safe_dump(data, sort_keys=False))
    print(f"wrote {args[1]}: timezone {data['workload']['business_hours']['timezone']}, a business morning now")


if __name__ == "__main__":
    main()
