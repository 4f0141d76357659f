"""The report's measurement-plan section: every item with its status, evidence (escaped), dates, engine, GPU."""

from __future__ import annotations

from dataclasses import replace

from monitor.measurements.model import Item, Status
from monitor.report.html import render_report
from monitor.report.measurements import measurements_section
from tests.report.test_html_report import _inputs

ITEM = Item("prefix-hit-rate", "Prefix-cache hit rate on real traffic", "copilot", Status.MEASURED,
            ("hit rate 58.1% <on real traffic>",), 1_800_000_000.0, 1_800_086_400.0,
            "vllm:cache_config_info cache_dtype=fp8", "12 x NVIDIA H100 80GB HBM3")  # fmt: skip


def test_the_report_carries_the_measurement_plan() -> None:
    unseen = replace(ITEM, id="cold-start", title="Cold-start time", status=Status.NOT_YET, first_seen=None,
                     last_seen=None)  # fmt: skip
    page = render_report(replace(_inputs(), measurements=(ITEM, unseen)))
    section = page[page.index("<h2>Measurement plan</h2>") :]
    assert '<span class="ok">measured</span>' in section and '<span class="unknown">not yet</span>' in section
    assert "hit rate 58.1% &lt;on real traffic&gt;" in section
    assert "2027-01-15T08:00 to 2027-01-16T08:00" in section and "NVIDIA H100 80GB HBM3" in section


def test_no_record_no_section() -> None:
    assert measurements_section(()) == ""
    assert "Measurement plan" not in render_report(_inputs())
