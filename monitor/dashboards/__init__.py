"""Grafana dashboards generated from the PromQL catalog and planwatch's own metrics: pure, no I/O.

`python -m monitor.dashboards` writes `dashboards/*.json`; `--check` fails when the committed files differ
from what the catalog generates now (CI runs it through the tests).
"""

from monitor.dashboards.generate import DASHBOARDS, HOME, check, main, render_all, write

__all__ = ["DASHBOARDS", "HOME", "check", "main", "render_all", "write"]
