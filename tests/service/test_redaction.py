"""Credentials in the Prometheus URL never reach the open routes, the log or an error message."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest

from fleetsim.promstack import PrometheusProcess, free_port
from monitor.service.app import Services, build_services
from monitor.source import PrometheusUnreachable
from monitor.source.redact import redact_url
from tests.service.conftest import AUTH, ApiClient, make_settings

SECRET = "hunter2-s3cret"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        pytest.param("http://ops:hunter2@prom:9090/api", "http://ops:***@prom:9090/api", id="a password is masked"),
        pytest.param("https://glc_tok3n@prom/", "https://***@prom/", id="a user name alone may be a token"),
        pytest.param("http://prom/?token=abc&org=1", "http://prom/?token=***&org=***", id="query values are masked"),
        pytest.param("http://u:p@[::1]:9090", "http://u:***@[::1]:9090", id="an IPv6 host keeps its brackets"),
        pytest.param("http://127.0.0.1:9090", "http://127.0.0.1:9090", id="a URL without secrets is unchanged"),
    ],
)
def test_a_url_is_shown_without_its_secrets(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert redact_url(url) in str(PrometheusUnreachable(url, "refused"))


async def _start_evaluate_stop(services: Services) -> None:
    """The app's lifespan (which logs the start-up line) around one evaluation."""
    async with services.app.router.lifespan_context(services.app):
        services.evaluate_now()


def _urls(prometheus: PrometheusProcess) -> list[str]:
    closed = f"http://ops:{SECRET}@127.0.0.1:{free_port()}/?token={SECRET}"
    reachable = prometheus.url.replace("http://", f"http://ops:{SECRET}@")
    return [closed, reachable]


def test_no_route_log_or_metric_shows_the_credentials(
    tmp_path: Path, prometheus: PrometheusProcess, caplog: pytest.LogCaptureFixture
) -> None:
    for i, url in enumerate(_urls(prometheus)):
        settings = make_settings(tmp_path / str(i), prometheus={"url": url, "timeout": 2, "retries": 0})
        (tmp_path / str(i)).mkdir()
        services = build_services(settings, schedule=False)
        api = ApiClient(services.app)
        with caplog.at_level(logging.DEBUG):
            anyio.run(_start_evaluate_stop, services)
        shown = [api.get(p, headers=AUTH).text for p in ("/readyz", "/v1/evaluation", "/metrics", "/v1/triggers")]
        assert "ops:***@127.0.0.1" in shown[0] + shown[1]
        assert all(SECRET not in body for body in shown)
        assert SECRET not in caplog.text and "ops:***@" in caplog.text
        caplog.clear()
