"""The pages a person opens: `/` answers "what do I do now?", /docs and /redoc load nothing from the web."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from monitor.observe.model import Measurement
from monitor.service.app import Services
from tests.service.conftest import AUTH, ApiClient
from tests.service.fakes import FakeObserver, copilot_observation


def test_the_front_page_waits_for_the_first_evaluation(api: ApiClient) -> None:
    page = api.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "No evaluation yet" in page.text and 'http-equiv="refresh"' in page.text


@pytest.mark.parametrize(
    ("demand_rps", "replicas", "verdict", "action"),
    [
        pytest.param(70.0, 3.0, "Act: 1 tier(s) to scale", "scale-up", id="demand above capacity reads as an action"),
        pytest.param(20.0, 4.0, "Nothing to do now", "hold", id="a fleet that fits reads as nothing to do"),
    ],
)
def test_the_front_page_leads_with_the_answer(
    services: Services, api: ApiClient, observer: FakeObserver, demand_rps: float, replicas: float, verdict: str,
    action: str,
) -> None:  # fmt: skip
    observer.observations = {"copilot": copilot_observation(demand_rps=demand_rps, replicas=replicas)}
    services.evaluate_now()
    page = api.get("/").text
    assert verdict in page
    row = re.search(
        r"<tr><td>copilot</td><td>(\d+)</td><td><span class=act>(\d+)</span></td><td><span class=([\w-]+)>", page
    )
    assert row is not None, page
    assert (int(row.group(1)), row.group(3)) == (int(replicas), action)
    assert "Revisit-the-design triggers" in page and "Schedule" in page


def test_a_trigger_shows_on_the_front_page_with_what_to_do(
    services: Services, api: ApiClient, observer: FakeObserver
) -> None:
    observer.observations = {"copilot": copilot_observation(prompt_p95=Measurement.of(40_000))}
    services.evaluate_now()
    page = api.get("/").text
    assert "prompt" in page.lower() and "pending" in page


def test_the_front_page_needs_the_token_when_reads_do(start: Callable[..., Services]) -> None:
    services = start(protect_reads=True)
    api = ApiClient(services.app)
    assert api.get("/").status_code == 401
    assert api.get("/", headers=AUTH).status_code == 200


@pytest.mark.parametrize(
    ("page", "assets"),
    [
        pytest.param("/docs", ("/assets/swagger-ui-bundle.js", "/assets/swagger-ui.css"), id="Swagger UI is local"),
        pytest.param("/redoc", ("/assets/redoc.standalone.js",), id="ReDoc is local"),
    ],
)
def test_the_api_docs_load_only_local_assets(api: ApiClient, page: str, assets: tuple[str, ...]) -> None:
    text = api.get(page).text
    referenced = re.findall(r"""(?:src|href)=["']([^"']+)["']""", text)
    assert all(not url.startswith(("http:", "https:", "//")) for url in referenced), referenced
    for asset in assets:
        assert asset in text
        served = api.get(asset)
        assert served.status_code == 200 and len(served.content) > 10_000, asset
