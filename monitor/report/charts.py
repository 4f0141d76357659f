"""Charts for the report as inline SVG (matplotlib, Agg): the file stays self-contained, no network."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates
import matplotlib.pyplot as plt

from monitor.advice import DemandOutlook, Recommendation
from monitor.observe.observer import DemandHistory

__all__ = ["demand_chart_svg"]


def _x(ts: tuple[float, ...]) -> list[float]:
    """Matplotlib's date numbers for Unix seconds."""
    return [float(mdates.date2num(datetime.fromtimestamp(t, UTC))) for t in ts]


def _demand(value: float | None) -> float:
    """A negative rate is an artifact (a counter that restarted where backfilled history meets live
    scraping), not demand: it is a gap, like a missing point, never a value below zero."""
    return float("nan") if value is None or value < 0 else value


def demand_chart_svg(
    tier: str,
    history: DemandHistory | None,
    outlook: DemandOutlook | None,
    rec: Recommendation | None,
    timezone: str = "UTC",
) -> str:
    """History, forecast mean and upper bound, current capacity, and each scheduled scale-up; times in
    `timezone` (the plan's business-hours zone, as the schedule beside the chart)."""
    fig, ax = plt.subplots(figsize=(9, 3.2), dpi=100)
    try:
        if history and history.timestamps:
            values = [_demand(v) for v in history.values]
            ax.plot(_x(history.timestamps), values, color="#444", lw=1, label="demand (observed)")
        if outlook and outlook.timestamps:
            ax.plot(_x(outlook.timestamps), outlook.mean, color="#1f77b4", lw=1.5, label="forecast mean")
            ax.fill_between(_x(outlook.timestamps), outlook.mean, outlook.upper, color="#1f77b4", alpha=0.2,
                            label="up to the upper bound")  # fmt: skip
        if rec and rec.capacity_rps_now:
            ax.axhline(rec.capacity_rps_now, color="#2ca02c", ls="--", lw=1, label="capacity of ready replicas")
        for step in rec.schedule if rec else ():
            (x,) = _x((step.by,))
            ax.axvline(x, color="#d62728", ls=":", lw=1)
            ax.annotate(f"scale to {step.replicas}", (x, ax.get_ylim()[1] * 0.9),
                        rotation=90, fontsize=7, color="#d62728", va="top")  # fmt: skip
        ax.set_title(f"{tier}: demand (model calls/s)", fontsize=10)
        ax.set_ylabel("req/s")
        ax.xaxis.set_major_formatter(mdates.DateFormatter("%a %H:%M", tz=ZoneInfo(timezone)))
        ax.set_xlabel(f"time ({timezone})", fontsize=8)
        ax.legend(fontsize=7, loc="upper left")
        ax.grid(alpha=0.3)
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(buf, format="svg")
        svg = buf.getvalue()
    finally:
        plt.close(fig)
    return svg[svg.index("<svg") :]
