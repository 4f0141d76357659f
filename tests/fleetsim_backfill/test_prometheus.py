"""A fresh Prometheus started on a backfilled data directory answers PromQL with the history's shape:
daily ramps, quieter weekends, and a scenario that moves its metric only after it starts.

One backfill (module fixture) of eight days of a one-replica 8B tier in UTC business hours, ending
Wednesday 2024-05-15 00:00 UTC at a 60 s step, with long-prompts starting two days before the end.
Expectations come from the workload's own profile (fleetsim.workload.rate_at), not from constants.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from fleetsim.backfill import command_app
from fleetsim.promstack import PrometheusConfig, PrometheusProcess
from fleetsim.workload import rate_at
from tests.harness.stack import require_binaries

from .helpers import diurnal_plan, diurnal_plan_data, write_plan

pytestmark = [pytest.mark.integration, pytest.mark.slow]

END = datetime(2024, 5, 15, tzinfo=UTC)
SCENARIO_START = datetime(2024, 5, 13, tzinfo=UTC)
PEAK, AVERAGE = 4.0, 1.5


def at(day: int, hour: int, minute: int = 0) -> float:
    return datetime(2024, 5, day, hour, minute, tzinfo=UTC).timestamp()


class History:
    def __init__(self, client: httpx.Client) -> None:
        self.client = client

    def scalar(self, expr: str, when: float) -> float:
        body = self.client.get("/api/v1/query", params={"query": expr, "time": when}).json()
        assert body["status"] == "success", body
        result = body["data"]["result"]
        assert len(result) == 1, (expr, result)
        return float(result[0]["value"][1])


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[History]:
    require_binaries("prometheus")  # backfill writes blocks itself: no promtool
    work = tmp_path_factory.mktemp("backfill-history")
    plan = write_plan(work / "plan.yaml", diurnal_plan_data(peak=PEAK, average=AVERAGE))
    data = work / "data"
    result = CliRunner().invoke(
        command_app(),
        [
            "backfill",
            str(plan),
            "--prometheus-data",
            str(data),
            "--days",
            "8",
            "--step",
            "60s",
            "--end",
            END.isoformat(),
            "--scenario",
            "long-prompts",
            "--scenario-start",
            "-2d",
            "--seed",
            "11",
            "--block",
            "54h",
        ],
    )
    assert result.exit_code == 0, result.output
    with (
        PrometheusProcess.start(PrometheusConfig(data_dir=data), workdir=work / "prometheus") as prometheus,
        httpx.Client(base_url=prometheus.url, timeout=60) as client,
    ):
        yield History(client)


PLAN = diurnal_plan(peak=PEAK, average=AVERAGE)


def profile(t: float) -> float:
    return rate_at(PLAN, t)


def profile_mean(start: float, end: float) -> float:
    return float(np.mean([profile(t) for t in np.arange(start, end, 60.0)]))


RATE = "sum(rate(vllm:request_success_total[30m]))"


@pytest.mark.parametrize(
    ("busy", "quiet"),
    [
        pytest.param(at(8, 12, 30), at(8, 3, 30), id="a weekday's peak hour runs about ten times its night"),
        pytest.param(at(9, 12, 30), at(9, 7, 30), id="the morning ramp starts from the night's level"),
    ],
)
def test_the_daily_ramp_follows_the_profile(history: History, busy: float, quiet: float) -> None:
    observed = history.scalar(RATE, busy) / history.scalar(RATE, quiet)
    expected = profile_mean(busy - 1800, busy) / profile_mean(quiet - 1800, quiet)
    assert observed == pytest.approx(expected, rel=0.2)


def test_weekends_are_quieter_than_weekdays_as_planned(history: History) -> None:
    saturday = history.scalar("sum(increase(vllm:request_success_total[1d]))", at(12, 0))
    wednesday = history.scalar("sum(increase(vllm:request_success_total[1d]))", at(9, 0))
    expected = profile_mean(at(11, 0), at(12, 0)) / profile_mean(at(8, 0), at(9, 0))
    assert saturday / wednesday == pytest.approx(expected, rel=0.15)
    assert saturday < 0.5 * wednesday


def test_gateway_and_engines_count_the_same_requests(history: History) -> None:
    users = history.scalar("sum(increase(gateway_user_requests_total[1d]))", at(9, 0))
    served = history.scalar("sum(increase(vllm:request_success_total[1d]))", at(9, 0))
    assert served == pytest.approx(users, rel=0.01)


PROMPT_P95 = "histogram_quantile(0.95, sum by (le) (rate(vllm:request_prompt_tokens_bucket[12h])))"
OUTPUT_P95 = "histogram_quantile(0.95, sum by (le) (rate(vllm:request_generation_tokens_bucket[12h])))"


@pytest.mark.parametrize(
    ("expr", "low_before", "high_before", "low_after", "high_after"),
    [
        pytest.param(
            PROMPT_P95, 4_000, 10_000, 25_000, 60_000, id="long-prompts moves prompt p95 to ~40K only after it starts"
        ),
        pytest.param(OUTPUT_P95, 250, 500, 250, 500, id="long-prompts leaves the output lengths alone"),
    ],
)
def test_a_scenario_moves_its_metric_only_after_its_start(
    history: History, expr: str, low_before: float, high_before: float, low_after: float, high_after: float
) -> None:
    start = SCENARIO_START.timestamp()
    before = history.scalar(expr, start)
    after = history.scalar(expr, start + 36 * 3600)
    assert low_before <= before <= high_before
    assert low_after <= after <= high_after


def test_every_stamp_of_the_history_is_there(history: History) -> None:
    """8 days at 60 s: one sample per minute per series, from the first stamp to the last."""
    count = history.scalar('count_over_time(up{job="vllm"}[8d])', END.timestamp())
    assert count == 8 * 24 * 60 + 1
    assert history.scalar('up{job="vllm"}', END.timestamp()) == 1.0


def test_counters_never_reset_across_the_history(history: History) -> None:
    for metric in (
        "vllm:prompt_tokens_total",
        "vllm:generation_tokens_total",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "vllm:time_to_first_token_seconds_count",
    ):
        assert history.scalar(f"sum(resets({metric}[8d]))", END.timestamp()) == 0.0, metric
