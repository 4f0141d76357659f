"""The demo's first minutes as a person lives them, compressed: `planwatch demo` on the plan sizing says holds,
the tour's links and commands work for the plan it serves, the front page answers, /docs renders offline, the
report leads with the answer, and the baseline pages nobody. Pages are looked at in headless Chromium."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness.stack import require_binaries, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run")  # fmt: skip


@dataclass
class Demo:
    urls: dict[str, str]
    tour: str
    proc: subprocess.Popen[str]
    workdir: Path
    console: list[str] = field(default_factory=list)  # what the demo printed after the tour (notifications)


def _until(what: str, probe: Callable[[], Any], timeout: float) -> Any:
    return wait_for(probe, timeout, what, interval=1, ignoring=(httpx.HTTPError, ValueError, KeyError))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    require_binaries()  # fails, not skips, with the install instruction
    workdir = tmp_path_factory.mktemp("story") / "demo"
    # Pinned to baseline: "the baseline pages nobody" needs the plan's own traffic; the demo's default
    # (irregular) demand may run a day above the plan's peak, and whether it does depends on today's date.
    argv = [sys.executable, "-m", "monitor", "demo", "--scenario", "baseline", "--days", "0.3", "--hold-scale",
            "0.002", "--workdir", str(workdir)]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "COLUMNS": "100"})  # fmt: skip
    assert proc.stdout is not None
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line)
        if "Ctrl-C stops everything" in line:
            break
    tour = "".join(lines)
    urls = {m.group(1): m.group(2) for m in re.finditer(r"^\s+(\w+)\s+(http://\S+)", tour, re.M)}
    state = Demo(urls, tour, proc, workdir)
    drain = threading.Thread(target=lambda: state.console.extend(proc.stdout or ()), daemon=True)
    drain.start()
    try:
        assert {"planwatch", "Prometheus", "Alertmanager", "fleetsim", "notifications"} <= set(urls), tour
        yield state
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
        drain.join(timeout=5)
        proc.stdout.close()


def _chromium(tmp_path: Path, url: str, name: str) -> tuple[Path, str]:
    """A screenshot and the rendered DOM (after scripts ran) of `url`, with a fresh profile each time."""
    chromium = shutil.which("chromium") or pytest.fail("needs chromium: run `make tools`", pytrace=False)
    common = [chromium, *CHROMIUM_FLAGS, "--window-size=1280,1400", "--virtual-time-budget=10000"]
    shot = tmp_path / f"{name}.png"
    for i, extra in enumerate((f"--screenshot={shot}", "--dump-dom")):
        done = subprocess.run([*common, f"--user-data-dir={tmp_path / f'profile-{name}-{i}'}", extra, url],
                              capture_output=True, text=True, timeout=90)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        dom = done.stdout
    keep = os.environ.get("PLANWATCH_SCREENSHOTS")  # a folder to keep the screenshots in, to look at them
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
    return shot, dom


def _not_blank(png: Path) -> None:
    """A rendered page, not a white sheet: enough ink and more than a handful of colours."""
    from PIL import Image

    with Image.open(png) as image:
        histogram = image.convert("L").histogram()
    ink = sum(histogram[:200]) / sum(histogram)
    assert ink > 0.01 and sum(1 for n in histogram if n) > 20, (png, ink)


def test_the_tour_tells_the_story_of_the_plan_it_serves(demo: Demo) -> None:
    served = demo.workdir / "plan.yaml"
    assert "plan examples/capstone-resized.yaml" in demo.tour and "sizing says holds" in demo.tour
    assert f"planwatch check {served}" in demo.tour and f"planwatch report {served}" in demo.tour
    assert "examples/capstone.yaml --prometheus" not in demo.tour
    alerts = re.search(r"alerts: (http://\S+?)\)", demo.tour)
    assert alerts is not None and httpx.get(alerts.group(1), timeout=10).status_code == 200
    assert f"amtool --alertmanager.url={demo.urls['Alertmanager']} alert query" in demo.tour


def test_the_front_page_answers_and_renders(demo: Demo, tmp_path: Path) -> None:
    planwatch = demo.urls["planwatch"]
    _until("an evaluation on the front page", lambda: "The answer" in httpx.get(planwatch, timeout=10).text, 120)
    shot, dom = _chromium(tmp_path, planwatch, "front")
    _not_blank(shot)
    assert "Replicas: now → recommended" in dom and "Revisit-the-design triggers" in dom
    for tier in ("fast", "standard", "long-context", "fallback"):
        assert f"<td>{tier}</td>" in dom


def test_the_api_docs_render_offline(demo: Demo, tmp_path: Path) -> None:
    shot, dom = _chromium(tmp_path, demo.urls["planwatch"] + "/docs", "docs")
    _not_blank(shot)
    assert "opblock" in dom and "/v1/recommendations" in dom, "Swagger UI did not render from local assets"


def test_the_report_leads_with_the_answer(demo: Demo, tmp_path: Path) -> None:
    _until("an evaluation", lambda: httpx.get(demo.urls["planwatch"] + "/v1/recommendations").status_code == 200,
           120)  # fmt: skip
    out = tmp_path / "report.html"
    done = subprocess.run([sys.executable, "-m", "monitor", "report", str(demo.workdir / "plan.yaml"),
                           "--prometheus", demo.urls["Prometheus"], "--history", "6h", "--out", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    shot, dom = _chromium(tmp_path, out.as_uri(), "report")
    _not_blank(shot)
    assert dom.index("The answer") < dom.index("Plan vs production") < dom.index("Sizing: the hypothesis")
    assert "Etc/GMT" in dom  # times in the plan's (the demo's morning) timezone


def test_the_baseline_pages_nobody_and_notifications_print(demo: Demo) -> None:
    """A plan that holds raises nothing of its own in baseline, so the receiver is shown working with an alert
    posted to Alertmanager the way Prometheus posts one: it must come back through the route as a console line."""
    alertmanager = demo.urls["Alertmanager"]
    check = {"labels": {"alertname": "DemoReceiverCheck", "severity": "ticket", "tier": "standard"},
             "annotations": {"summary": "posted by the test"}}  # fmt: skip
    httpx.post(f"{alertmanager}/api/v2/alerts", json=[check], timeout=10).raise_for_status()

    def ticket_seen() -> bool:
        return any(line.startswith("alert ") and "DemoReceiverCheck" in line for line in demo.console)

    _until("the posted alert in the demo's console", ticket_seen, 60)
    alerts = httpx.get(f"{alertmanager}/api/v2/alerts", timeout=10).json()
    pages = [a["labels"] for a in alerts if a["labels"].get("severity") in ("page", "critical")]  # baseline's own
    assert pages == [], pages
    assert not any(line.startswith(("alert PAGE firing",)) for line in demo.console), demo.console
