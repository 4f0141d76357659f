"""The demo's webhook receiver: each alert of an Alertmanager notification becomes one line in the console."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from fleetsim.alert_receiver import AlertReceiver, describe_notification

FIRING_PAGE = {
    "version": "4",
    "status": "firing",
    "alerts": [
        {"status": "firing", "labels": {"alertname": "TTFTErrorBudgetBurn", "tier": "standard", "severity": "page"},
         "annotations": {"summary": "TTFT error budget of tier standard burning 20x"}},
        {"status": "resolved", "labels": {"alertname": "KvCachePressure", "tier": "long-context",
                                          "severity": "critical"}, "annotations": {}},
    ],
}  # fmt: skip


@pytest.mark.parametrize(
    ("path", "body", "lines"),
    [
        pytest.param(
            "/alerts/page",
            FIRING_PAGE,
            [
                "alert PAGE firing TTFTErrorBudgetBurn tier=standard severity=page: TTFT error budget of tier "
                "standard burning 20x",
                "alert PAGE resolved KvCachePressure tier=long-context severity=critical",
            ],
            id="one line per alert, with its route, status, tier and summary",
        ),
        pytest.param(
            "/alerts/ticket",
            {"status": "firing", "alerts": []},
            ["alert TICKET firing (no alerts in the notification)"],
            id="an empty notification says so",
        ),
    ],
)
def test_a_notification_reads_as_one_line_per_alert(path: str, body: dict[str, Any], lines: list[str]) -> None:
    assert describe_notification(path, body) == lines


def test_the_receiver_prints_what_alertmanager_posts() -> None:
    said: list[str] = []
    receiver = AlertReceiver(said.append).start()
    try:
        answer = httpx.post(f"{receiver.url}/alerts/page", json=FIRING_PAGE, timeout=5)
        refused = httpx.post(f"{receiver.url}/alerts/page", content=b"not json", timeout=5)
    finally:
        receiver.stop()
    assert answer.status_code == 200 and refused.status_code == 400
    assert said == describe_notification("/alerts/page", FIRING_PAGE) and receiver.received == [FIRING_PAGE]
