"""`python -m monitor.dashboards [--out DIR] [--check]`: write or check the dashboards.

Run from the repository root: the files go to `dashboards/` (provisioned into Grafana by
`dashboards/provisioning/dashboards/planwatch.yml`). `--check` writes nothing and exits 1 naming every file
that is missing or differs, so a catalog change that was not regenerated fails CI.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

from monitor.dashboards import forecast_and_scaling, gpus, plan_vs_production
from monitor.dashboards.grafana import Dashboard, to_json

__all__ = ["DASHBOARDS", "HOME", "check", "main", "render_all", "write"]

DASHBOARDS: Mapping[str, Callable[[], Dashboard]] = MappingProxyType({
    "plan-vs-production.json": plan_vs_production.dashboard,
    "forecast-and-scaling.json": forecast_and_scaling.dashboard,
    "gpus.json": gpus.dashboard,
})  # fmt: skip
HOME = "plan-vs-production.json"  # Grafana's home dashboard (GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH)


def render_all() -> dict[str, str]:
    """File name -> JSON text of every dashboard."""
    return {name: to_json(build()) for name, build in DASHBOARDS.items()}


def write(out: Path) -> list[Path]:
    """Write every dashboard into `out` (created if needed); returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in render_all().items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def check(out: Path) -> list[str]:
    """The files in `out` that are missing or differ from the generator's output (empty: up to date)."""
    stale = []
    for name, text in render_all().items():
        path = out / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(str(path))
    return stale


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m monitor.dashboards", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("dashboards"), help="directory of the JSON files")
    parser.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 if they differ")
    args = parser.parse_args(argv)
    if args.check:
        stale = check(args.out)
        for name in stale:
            print(f"{name} is not what the generator writes; run `python -m monitor.dashboards`", file=sys.stderr)
        return 1 if stale else 0
    for path in write(args.out):
        print(path)
    return 0
