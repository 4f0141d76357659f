"""Fixtures of the service tests: an advisor on a temporary state file, a driven clock and a fake observer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from fastapi import FastAPI

from monitor.service.app import Services, build_services
from monitor.service.settings import Settings, load_settings
from tests.builders import EXAMPLES
from tests.service.fakes import Clock, FakeObserver

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class ApiClient:
    """Requests through the ASGI app in process (no socket), one event loop per call: plain sync tests."""

    def __init__(self, app: FastAPI):
        self.app = app

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        async def send() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://planwatch") as client:
                return await client.request(method, url, **kwargs)

        return anyio.run(send)

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)


def make_settings(tmp_path: Path, plan: str = "support-copilot.yaml", **overrides: Any) -> Settings:
    values = {"plan": str(EXAMPLES / plan), "state_db": str(tmp_path / "state.db"), "api_token": TOKEN}
    return load_settings(overrides={**values, **overrides}, env={})


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def observer() -> FakeObserver:
    return FakeObserver()


@pytest.fixture
def start(tmp_path: Path, clock: Clock, observer: FakeObserver) -> Iterator[Callable[..., Services]]:
    """Build an advisor (schedule off: the test drives the jobs); every one built is closed at the end."""
    built: list[Services] = []

    def build(**overrides: Any) -> Services:
        services = build_services(make_settings(tmp_path, **overrides), observer, clock=clock, schedule=False)
        built.append(services)
        return services

    yield build
    for services in built:
        services.close()


@pytest.fixture
def services(start: Callable[..., Services]) -> Services:
    return start()


@pytest.fixture
def api(services: Services) -> ApiClient:
    return ApiClient(services.app)
