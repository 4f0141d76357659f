"""The loopback stack the panel queries run against (tests/dashboards/world.py), started once for the package."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fleetsim.promstack import BinaryNotFound, find_binary
from tests.dashboards.world import World


@pytest.fixture(scope="package")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    try:
        find_binary("prometheus")
        find_binary("promtool")
    except BinaryNotFound as exc:
        pytest.fail(str(exc), pytrace=False)
    started = World.start(tmp_path_factory.mktemp("world"))
    try:
        started.wait_until_scraped()
        yield started
    finally:
        started.close()
