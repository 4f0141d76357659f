"""The design-review report: self-contained HTML with every section, escaped values, and charts that render."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from monitor.advice import DemandOutlook
from monitor.evaluation import EvaluationInputs, evaluate
from monitor.observe.model import Measurement
from monitor.observe.observer import DemandHistory
from monitor.report.html import ReportInputs, render_report
from tests.builders import baseline_observation, copilot_plan

NOW = 1_800_000_000.0


def _diurnal(t: float) -> float:
    hour = (t / 3600) % 24
    return 5 + 40 * max(0.0, math.sin((hour - 6) / 12 * math.pi))


def _inputs(query: str = "histogram_quantile(0.95, ...)") -> ReportInputs:
    plan = copilot_plan()
    past = tuple(NOW - 2 * 86_400 + 300 * i for i in range(576))
    future = tuple(NOW + 300 * i for i in range(288))
    mean = tuple(_diurnal(t) for t in future)
    outlook = DemandOutlook(future, mean, tuple(m * 1.15 for m in mean), "test")
    obs = replace(baseline_observation(), demand_rate=Measurement.of(_diurnal(NOW)),
                  request_rate=Measurement.of(_diurnal(NOW)), replicas_ready=Measurement.of(1),
                  prompt_p95=Measurement.of(40_000, query=query))  # fmt: skip
    ev = evaluate(EvaluationInputs(plan, {"copilot": obs}, NOW, outlooks={"copilot": outlook}))
    history = DemandHistory("copilot", 300, past, tuple(_diurnal(t) for t in past), "demand")
    return ReportInputs(ev, {"copilot": history}, {"copilot": outlook})


def test_every_section_is_present() -> None:
    page = render_report(_inputs())
    for heading in ("Sizing: the hypothesis", "Plan vs production", "Revisit-the-design triggers",
                    "Demand forecast, ramp and scale schedule", "Cost"):  # fmt: skip
        assert heading in page
    assert page.count("<svg") == 1
    assert "Route long prompts to a separate long-context pool" in page


def test_values_are_escaped() -> None:
    page = render_report(_inputs(query='rate(x{tier="<script>alert(1)</script>"}[5m])'))
    assert "<script>" not in page
    assert "&lt;script&gt;" in page


def test_nothing_is_fetched_from_the_network() -> None:
    page = render_report(_inputs())
    # XML namespaces in the SVG are names, not fetches; no src or href may point off the page.
    assert re.findall(r"""(?:src|href)=["']?(?:https?:)?//""", page) == []


def test_chromium_renders_the_report_with_its_chart(tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.fail("chromium is not installed: `make test` installs it (apt-get install chromium)")
    page = tmp_path / "report.html"
    page.write_text(render_report(_inputs()), encoding="utf-8")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]  # fmt: skip
    dom = subprocess.run([chromium, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120, check=True).stdout  # fmt: skip
    assert "planwatch: support-copilot" in dom and "<svg" in dom and "forecast mean" in dom
    shot = tmp_path / "report.png"
    subprocess.run([chromium, *flags, "--window-size=1300,2600", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120, check=True)  # fmt: skip
    assert shot.stat().st_size > 50_000  # a blank page is a few KB; tables and a chart are far more
