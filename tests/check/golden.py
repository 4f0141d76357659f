"""What the golden-exposition tests share: real dumps replayed to a real Prometheus, and `planwatch check` per
tier at one moment."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from fleetsim.promstack import ScrapeJob
from monitor.cli.main import build_app
from tests.harness.replay import ReplayExporter
from tests.harness.stack import Stack, api_query, wait_for

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "expositions"
PERIOD = 100.0  # cumulative values grow by their recorded value every PERIOD seconds


@contextmanager
def scraping(
    work: Path, dumps: Iterable[str], jobs: Callable[[dict[str, ReplayExporter]], list[ScrapeJob]]
) -> Iterator[str]:
    """One server per dump and one Prometheus scraping the jobs built on them each second, once it has twelve
    scrapes of every target; yields its URL."""
    stack = Stack(work)
    servers = {name: ReplayExporter((FIXTURES / name).read_text(), PERIOD) for name in dumps}
    try:
        prom = stack.prometheus(jobs(servers), scrape_interval="1s")
        wait_for(lambda: api_query(prom.url, "min(count_over_time(up[1m])) >= 12"), 40, "twelve scrapes")
        yield prom.url
    finally:
        stack.close()
        for server in servers.values():
            server.close()


def check_tiers(url: str, tiers: Iterable[str], work: Path) -> dict[str, dict[str, Any]]:
    """Each tier's observations from its own `planwatch check`, all at the same moment."""
    at = time.time()
    return {tier: check_observations(url, tier, work, at) for tier in tiers}


def check_observations(url: str, tier: str, work: Path, at: float) -> dict[str, Any]:
    """`planwatch check --format json` of the copilot plan renamed to serve `tier`: that tier's observations."""
    plan = work / f"{tier}.yaml"
    plan.write_text(
        (REPO / "examples" / "support-copilot.yaml").read_text().replace("- name: copilot", f"- name: {tier}")
    )
    argv = ["check", str(plan), "--prometheus", url, "--at", str(at), "--window", "10s",
            "--long-window", "1h", "--format", "json"]  # fmt: skip
    result = CliRunner().invoke(build_app(), argv)
    assert result.exit_code in (0, 1), result.output
    observations: dict[str, Any] = json.loads(result.stdout)["tiers"][0]["observations"]
    return observations
