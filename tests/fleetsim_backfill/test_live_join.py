"""Backfill up to now, then `fleetsim serve --resume` scraped by a Prometheus on the same data directory:
the live samples extend the backfilled series (same labels, `instance` included), and no counter resets
or jumps at the handoff. The handoff leaves a gap of the import and start-up time (a few scrapes), which
`rate()` windows of a minute or more span.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from fleetsim import DEFAULT_SCENARIO
from fleetsim.backfill import command_app
from fleetsim.promstack import PrometheusConfig, PrometheusProcess, ScrapeJob, free_port
from fleetsim.scenarios import parse_scenarios
from fleetsim.state import load_state
from fleetsim.workload import rates_at
from monitor.plan.load import parse_plan
from monitor.plan.model import Plan
from tests.harness.stack import require_binaries, wait_for

from .helpers import diurnal_plan_data, write_plan

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
RPS = 5.0
COUNTERS = (
    "vllm:prompt_tokens_total",
    'vllm:request_success_total{finished_reason="stop"}',
    "vllm:time_to_first_token_seconds_count",
    "gateway_user_requests_total",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
)


@dataclass
class Joined:
    client: httpx.Client
    end: float  # the last backfilled stamp
    plan: Plan

    def series(self, expr: str) -> list[dict[str, Any]]:
        body = self.client.get("/api/v1/query", params={"query": expr}).json()
        assert body["status"] == "success", body
        return list(body["data"]["result"])


@pytest.fixture(scope="module")
def joined(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Joined]:
    require_binaries("prometheus")  # backfill writes blocks itself: no promtool
    work = tmp_path_factory.mktemp("backfill-live")
    plan = write_plan(work / "plan.yaml", diurnal_plan_data(peak=RPS, average=RPS, replicas=2))
    port = free_port()
    data, state, file_sd = work / "data", work / "state.json", work / "targets.json"
    result = CliRunner().invoke(
        command_app(),
        [
            "backfill",
            str(plan),
            "--prometheus-data",
            str(data),
            "--days",
            "0.05",
            "--step",
            "15s",
            "--end",
            "now",
            "--instance",
            f"127.0.0.1:{port}",
            "--state-out",
            str(state),
            "--seed",
            "3",
        ],
    )
    assert result.exit_code == 0, result.output
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with (work / "serve.log").open("wb") as log:
        serve = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "fleetsim.cli",
                "serve",
                str(plan),
                "--listen",
                f"127.0.0.1:{port}",
                "--file-sd",
                str(file_sd),
                "--resume",
                str(state),
                "--seed",
                "3",
                "--dcgm-interval",
                "5",
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=env,
        )
        try:
            wait_for(file_sd.exists, 60, "fleetsim's file_sd")
            config = PrometheusConfig(
                jobs=(ScrapeJob("fleetsim", file_sd=(file_sd,)),), data_dir=data, scrape_interval="1s"
            )
            with (
                PrometheusProcess.start(config, workdir=work / "prometheus") as prometheus,
                httpx.Client(base_url=prometheus.url, timeout=30) as client,
            ):
                live = Joined(client, load_state(state).end_unix, parse_plan(plan.read_text(), source=str(plan)))
                wait_for(lambda: _scrapes(live) >= 8, 90, "8 live scrapes of both vLLM targets")
                yield live
        finally:
            serve.terminate()
            try:
                serve.wait(10)
            except subprocess.TimeoutExpired:
                serve.kill()
                serve.wait(5)


def _scrapes(live: Joined) -> float:
    got = live.series(f'count_over_time(up{{job="vllm"}}[{int(time.time() - live.end) + 5}s])')
    return min((float(r["value"][1]) for r in got), default=0.0) if len(got) == 2 else 0.0


@pytest.mark.parametrize("counter", [pytest.param(c, id=f"{c} continues without a reset") for c in COUNTERS])
def test_counters_continue_across_the_handoff(joined: Joined, counter: str) -> None:
    name = counter.split("{")[0]
    matcher = counter[len(name) :]
    window = f"{int(time.time() - joined.end) + 3600}s"
    resets = joined.series(f"resets({name}{matcher}[{window}])")
    assert resets and all(float(r["value"][1]) == 0.0 for r in resets)
    samples = joined.series(f"{name}{matcher}[{window}]")
    for series in samples:
        points = [(float(t), float(v)) for t, v in series["values"]]
        before = [p for p in points if p[0] <= joined.end]
        after = [p for p in points if p[0] > joined.end]
        assert before and after, "one series holds both backfilled and live samples"
        (t0, v0), (t1, v1) = before[-1], after[0]
        slope = (before[-1][1] - before[-41][1]) / (before[-1][0] - before[-41][0])  # 10 minutes of history
        assert v1 >= v0
        assert v1 - v0 <= 3 * slope * (t1 - t0) + 10 * max(slope, 1.0), (counter, v0, v1, t1 - t0)


def test_live_and_backfilled_samples_are_one_series_per_target(joined: Joined) -> None:
    window = f"{int(time.time() - joined.end) + 3600}s"
    assert len(joined.series(f"count_over_time(vllm:prompt_tokens_total[{window}])")) == 2
    assert len(joined.series(f"count_over_time(DCGM_FI_DEV_GPU_UTIL[{window}])")) == 2
    assert len(joined.series(f'count_over_time(up{{job="vllm"}}[{window}])')) == 2


def test_the_handoff_gap_is_shorter_than_the_lookback(joined: Joined) -> None:
    window = f"{int(time.time() - joined.end) + 60}s"
    stamps = [float(t) for r in joined.series(f'up{{job="vllm"}}[{window}]') for t, _ in r["values"]]
    assert joined.end in stamps, "the last backfilled scrape is there"
    first_live = min(t for t in stamps if t > joined.end)
    assert 0 < first_live - joined.end < 300


def test_the_backfilled_request_rate_is_the_workloads_rate(joined: Joined) -> None:
    # The default scenario is `irregular`: each day has its own level (Monday's can be 1.2x Sunday's), so the
    # expected rate is the workload's over the same 10 minutes, not the plan's flat RPS.
    backfilled = joined.series(f"sum(rate(vllm:request_success_total[10m] @ {joined.end}))")
    expected = float(
        np.mean(rates_at(joined.plan, joined.end - np.arange(0, 600, 15.0), parse_scenarios(DEFAULT_SCENARIO)))
    )
    assert float(backfilled[0]["value"][1]) == pytest.approx(expected, rel=0.1)
    assert json.dumps(backfilled)  # a plain JSON answer from the API
