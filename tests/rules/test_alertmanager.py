"""examples/alertmanager.yml: valid for Alertmanager 0.25, routes by severity, groups by alert name and tier."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from fleetsim.promstack import INSTALL_HINT, find_binary
from tests.harness.stack import require_binaries

CONFIG = Path(__file__).resolve().parents[2] / "examples" / "alertmanager.yml"


def _amtool(*args: str) -> subprocess.CompletedProcess[str]:
    """amtool ships with Alertmanager (Debian: prometheus-alertmanager)."""
    require_binaries()
    amtool = shutil.which("amtool") or str(Path(find_binary("alertmanager")).with_name("amtool"))
    if not Path(amtool).exists():
        pytest.fail(f"amtool not found: {INSTALL_HINT}", pytrace=False)
    return subprocess.run([amtool, *args], capture_output=True, text=True, check=False)


def test_amtool_accepts_the_example() -> None:
    done = _amtool("check-config", str(CONFIG))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@pytest.mark.parametrize(
    ("labels", "receiver"),
    [
        pytest.param(("severity=page", "alertname=TTFTErrorBudgetBurn"), "pager", id="a fast burn pages"),
        pytest.param(("severity=critical", "alertname=TrafficAbovePeak"), "pager", id="critical drift pages"),
        pytest.param(("severity=ticket", "alertname=TPOTErrorBudgetBurn"), "tickets", id="a slow burn opens a ticket"),
        pytest.param(("severity=warning", "alertname=PromptP95AbovePlan"), "tickets", id="warning drift: ticket"),
        pytest.param(("severity=info", "alertname=X"), "tickets", id="anything else is not dropped"),
    ],
)
def test_alerts_are_routed_by_severity(labels: tuple[str, ...], receiver: str) -> None:
    done = _amtool("config", "routes", "test", f"--config.file={CONFIG}", *labels, "tier=fast")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == receiver


def test_alerts_are_grouped_by_name_and_tier_and_delivered_to_webhooks() -> None:
    config = yaml.safe_load(CONFIG.read_text())
    assert config["route"]["group_by"] == ["alertname", "tier"]
    assert all(r["webhook_configs"][0]["url"].startswith("http") for r in config["receivers"])
