"""Charts for the report as inline SVG (matplotlib, Agg): the file stays self-contained, no network."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates
import matplotlib.pyplot as plt

from monitor.advice import DemandOutlook, Recommendation
from monitor.observe.collector import DemandHistory

__all__ = ["demand_chart_svg"]


def _x(ts: tuple[float, ...]) -> list[float]:
    """Matplotlib's date numbers for Unix seconds."""
    return [float(mdates.date2num(datetime.fromtimestamp(t, UTC))) for t in ts]


def demand_chart_svg(
    tier: str, history: DemandHistory | None, outlook: DemandOutlook | None, rec: Recommendation | None
) -> str:
    """History, forecast mean and upper bound, current capacity, and each scheduled scale-up."""
    fig, ax = plt.subplots(figsize=(9, 3.2), dpi=100)
    try:
        if history and history.timestamps:
            values = [float("nan") if v is None else v for v in history.values]
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
        ax.xaxis.set_major_formatter(mdates.DateFormatter("%a %H:%M", tz=UTC))
        ax.legend(fontsize=7, loc="upper left")
        ax.grid(alpha=0.3)
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(buf, format="svg")
        svg = buf.getvalue()
    finally:
        plt.close(fig)
    return svg[svg.index("<svg") :]
