"""Catalog queries added for the dashboards, against a real Prometheus with a known history."""

from __future__ import annotations

import pytest

from monitor.queries import REQUEST_RATE_PER_REPLICA
from tests.conftest import BackfillFactory
from tests.harness.history import History
from tests.harness.stack import api_query

pytestmark = pytest.mark.integration

END = 1_790_000_000.0


def test_request_rate_per_replica_sums_engines_and_averages_replicas(backfilled_prometheus: BackfillFactory) -> None:
    """Replica a-0 finishes 3 + 1 req/s on two engines, a-1 2 req/s: 3 req/s per replica on average. The
    router's re-export (no model_name) and another tier do not count."""
    h = History(END - 900, END, step=15)
    engines = {("a-0", "0"): 3.0, ("a-0", "1"): 1.0, ("a-1", "0"): 2.0, ("b-0", "0"): 50.0}
    for (pod, engine), rate in engines.items():
        labels = {"job": "vllm", "instance": f"{pod}:8000", "pod": pod, "tier": pod[0], "model_name": "m",
                  "engine": engine, "finished_reason": "stop"}  # fmt: skip
        h.counter("vllm:request_success", labels, rate)
    h.counter("vllm:request_success", {"job": "router", "instance": "r:1", "tier": "a", "finished_reason": "stop"}, 99)
    prom = backfilled_prometheus(h.text())
    (sample,) = api_query(prom.url, REQUEST_RATE_PER_REPLICA.for_tier({"tier": "a"}), at=END)
    assert float(sample["value"][1]) == pytest.approx(3.0)
    assert not REQUEST_RATE_PER_REPLICA.record, "dashboard-only: not a recording rule"
