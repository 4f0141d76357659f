"""The replay's outputs at the edge: the side-by-side table rows, the PNG chart and the HTML page.

The chart has one panel per tier with traffic (its demand, and the capacity each policy had ready: the
highest stable request rate of its ready replicas) and one for the GPUs each policy ran; minutes in which a
policy missed the SLO are marked under the panels, one row per policy. Values in the page are escaped, and the
chart is embedded (base64), so the file is self-contained.
"""

from __future__ import annotations

import base64
import html
import io
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import numpy as np

from monitor.replay.reference import availability_price
from monitor.replay.run import Replay
from monitor.replay.summary import CAUSES, PolicySummary

__all__ = ["chart_png", "render_html", "table_rows"]

_COLOURS = {"static": "#7f7f7f", "reactive": "#d62728", "predictive": "#ff7f0e", "planwatch": "#1f77b4",
            "oracle": "#2ca02c"}  # fmt: skip
HEADERS = ("policy", "GPU-h", "cost $", "x oracle", "SLO minutes", "requests over SLO", "worst p95 TTFT",
           "queue peak", "scale events", "mornings ready")  # fmt: skip


def _pct(v: float | None, digits: int = 2) -> str:
    return "n/a" if v is None else f"{100 * v:.{digits}f}%"


def table_rows(summaries: list[PolicySummary]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for s in summaries:
        worst = s.worst_minute
        worst_text = "n/a" if worst is None else f"{worst['ttft_p95_s']:.2f}s ({worst['tier']}, {worst['at'][:16]})"
        rows.append((
            s.name, f"{s.gpu_hours:,.1f}", f"{s.cost_usd:,.0f}",
            "n/a" if s.oracle_ratio is None else f"{s.oracle_ratio:.3f}",
            _pct(s.slo_compliant_minutes_share), _pct(s.requests_over_slo_share, 3), worst_text,
            f"{s.queue_peak:,.0f}", str(s.scale_events), f"{s.mornings_ready}/{len(s.mornings)}",
        ))  # fmt: skip
    return rows


def _x(replay: Replay) -> np.ndarray:
    start = mdates.date2num(datetime.fromtimestamp(replay.demand.start, UTC))
    return start + np.arange(replay.demand.minutes) / 1440.0


def chart_png(replay: Replay, summaries: list[PolicySummary]) -> bytes:
    x = _x(replay)
    busy = [i for i, t in enumerate(replay.plan.tiers) if replay.curves.get(t.name) is not None]
    ratios = [2] * len(busy) + [2, 1]
    fig, axes = plt.subplots(len(ratios), 1, figsize=(12, 2.2 * len(busy) + 5), dpi=100, sharex=True,
                             gridspec_kw={"height_ratios": ratios})  # fmt: skip
    try:
        for ax, i in zip(axes, busy, strict=False):
            _tier_panel(ax, replay, i, x)
        gpus_ax, marks = axes[-2], axes[-1]
        for k, run in enumerate(replay.runs):
            gpus = sum(f.record.billed * f.tier.tensor_parallel for f in run.fleets.values())
            gpus_ax.step(x, gpus, where="post", color=_COLOURS.get(run.name, f"C{k}"), lw=0.9, label=run.name)
        for k, s in enumerate(summaries):
            bad = np.flatnonzero(s.violating)
            marks.scatter(x[bad], np.full(bad.size, k), marker="|", s=40,
                          color=_COLOURS.get(s.name, f"C{k}"))  # fmt: skip
        marks.set_yticks(range(len(summaries)), [s.name for s in summaries], fontsize=7)
        marks.set_ylim(-0.5, len(summaries) - 0.5)
        marks.set_title("minutes over the SLO (business hours)", fontsize=8)
        gpus_ax.set_ylabel("GPUs (running or starting)", fontsize=8)
        gpus_ax.legend(fontsize=7, loc="upper left", ncol=5)
        for ax in axes:
            ax.grid(alpha=0.3)
        zone = ZoneInfo(replay.plan.workload.business_hours.timezone)
        marks.xaxis.set_major_formatter(mdates.DateFormatter("%a %d %H:%M", tz=zone))
        marks.set_xlabel(f"local time ({zone.key})", fontsize=8)
        fig.suptitle(f"{replay.plan.name}: demand, ready capacity and GPUs per policy", fontsize=10)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
    finally:
        plt.close(fig)
    return buf.getvalue()


def _tier_panel(ax: plt.Axes, replay: Replay, index: int, x: np.ndarray) -> None:
    """One tier: its demand and what each policy's ready replicas serve at the curve's highest stable rate."""
    name = replay.plan.tiers[index].name
    ax.plot(x, replay.demand.arrivals[index] / 60.0, color="#222", lw=0.6, label="demand")
    for k, run in enumerate(replay.runs):
        f = run.fleets[name]
        capacity = f.record.ready * (f.curve.stable_rps if f.curve else 0.0)
        ax.step(x, capacity, where="post", color=_COLOURS.get(run.name, f"C{k}"), lw=0.8, label=run.name)
    ax.set_ylabel(f"{name}\nreq/s", fontsize=8)
    ax.legend(fontsize=6, loc="upper left", ncol=6)


def _causes(by_cause: dict[str, int]) -> str:
    return " / ".join(str(by_cause[c]) for c in CAUSES)


def render_html(replay: Replay, summaries: list[PolicySummary], png: bytes) -> str:
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in HEADERS)
    body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in table_rows(summaries))
    tiers = "".join(
        f"<tr><td>{e(s.name)}</td><td>{e(t.name)}</td><td>{t.gpu_hours:,.1f}</td>"
        f"<td>{e(_pct(t.slo_compliant_minutes_share))}</td><td>{e(_pct(t.requests_over_slo_share, 3))}</td>"
        f"<td>{t.replicas_min}..{t.replicas_max}</td><td>{t.scale_events}</td>"
        f"<td>{e(_causes(t.violating_minutes_by_cause))}</td></tr>"
        for s in summaries
        for t in s.tiers
    )
    d = replay.demand
    start = datetime.fromtimestamp(d.start, UTC).isoformat()
    image = base64.b64encode(png).decode("ascii")
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>planwatch replay</title>"
        "<style>body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1200px}"
        "table{border-collapse:collapse;font-size:.85rem}th,td{border:1px solid #ddd;padding:.3rem .5rem}"
        "th{background:#f5f5f5}</style></head><body>"
        f"<h1>Replay of {e(replay.plan.name)}</h1>"
        f"<p>trace {e(d.source)} from {e(start)}, {d.minutes / 1440:.2f} days, scale x{d.scale:.4g}; "
        f"decisions every {replay.config.decision_interval_s:.0f} s</p>"
        f"<table><tr>{head}</tr>{body}</table><p>{e(availability_price(replay).sentence())}</p>"
        f"<img alt='demand, capacity and replicas per policy' src='data:image/png;base64,{image}' width='100%'>"
        "<h2>Per tier</h2><table><tr><th>policy</th><th>tier</th><th>GPU-h</th><th>SLO minutes</th>"
        "<th>requests over SLO</th><th>replicas</th><th>scale events</th>"
        f"<th>violating minutes: too few asked / still starting / enough ready</th></tr>{tiers}</table>"
        "</body></html>"
    )
