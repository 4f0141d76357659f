"""docker-compose.yml, the Dockerfile, the Prometheus config and Grafana's provisioning fit together and point
at files that exist. No Docker engine runs here: the compose file is checked as YAML against the repository,
and by `docker stack config` (the compose schema, offline) where a docker client is installed."""

from __future__ import annotations

import re
import shutil
import subprocess
from fnmatch import fnmatch
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from monitor.dashboards import DASHBOARDS, HOME
from tests.dashboards.world import PROMETHEUS_CONFIG, REPO

COMPOSE_FILE = REPO / "docker-compose.yml"
COMPOSE: dict[str, Any] = yaml.safe_load(COMPOSE_FILE.read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]
PROMETHEUS: dict[str, Any] = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
DOCKERFILE = (REPO / "Dockerfile").read_text()
PROVISIONING = REPO / "dashboards" / "provisioning"
SETUP_SCRIPT = (REPO / "deploy" / "compose" / "setup.sh").read_text()


def mounts(service: str) -> dict[str, str]:
    """Container path -> source (a ./repository path or a named volume) of the service's volumes."""
    out = {}
    for volume in SERVICES[service].get("volumes", []):
        source, target, *_ = volume.split(":")
        out[target] = source
    return out


def mounted_at(service: str, container_path: str) -> Path:
    """The repository file or directory a container path of the service comes from (the longest mount)."""
    path = PurePosixPath(container_path)
    for target, source in sorted(mounts(service).items(), key=lambda m: -len(m[0])):
        if path == PurePosixPath(target) or PurePosixPath(target) in path.parents:
            assert source.startswith("./"), f"{container_path} is on volume {source}, not a repository file"
            return REPO / source / path.relative_to(target)
    raise AssertionError(f"{container_path} is not mounted into {service}")


def command(service: str) -> list[str]:
    cmd = SERVICES[service]["command"]
    return cmd if isinstance(cmd, list) else cmd.split()


def flag(service: str, name: str) -> str:
    cmd = command(service)
    return cmd[cmd.index(name) + 1]


def test_the_stack_has_its_services() -> None:
    assert set(SERVICES) == {"setup", "fleetsim", "prometheus", "alertmanager", "alert-receiver", "planwatch",
                             "grafana"}  # fmt: skip


def test_planwatch_and_fleetsim_run_the_one_project_image() -> None:
    for name in ("setup", "planwatch", "fleetsim", "alert-receiver"):
        service = SERVICES[name]
        assert (
            service["build"] == {"context": ".", "dockerfile": "Dockerfile"} and service["image"] == "planwatch:local"
        )
    assert SERVICES["fleetsim"]["entrypoint"] == ["fleetsim"] and "entrypoint" not in SERVICES["planwatch"]
    # Both hold the plan the set-up wrote (the served plan: shifted to a morning), from the shared volume.
    assert command("planwatch")[:2] == ["serve", "/state/plan.yaml"]
    assert command("fleetsim")[:2] == ["serve", "/state/plan.yaml"]
    assert mounts("setup")["/state"] == mounts("planwatch")["/state"] == mounts("fleetsim")["/state"]


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_every_bind_mount_is_a_repository_file_and_every_volume_is_declared(service: str) -> None:
    for source in mounts(service).values():
        if not source.startswith("./"):
            assert source in COMPOSE["volumes"], f"{service}: volume {source} is not declared"
            continue
        relative = source.removeprefix("./")
        assert (REPO / relative).exists(), f"{service} mounts {source}, which is not in the repository"


def test_plan_files_given_on_command_lines_exist_in_the_mounted_examples() -> None:
    for service in ("planwatch", "fleetsim"):
        for arg in command(service):
            if arg.startswith("examples/"):
                assert mounted_at(service, f"/app/{arg}").is_file(), f"{service}: {arg}"


def test_prometheus_loads_the_shared_config_and_the_served_plans_rules() -> None:
    assert mounted_at("prometheus", "/etc/prometheus/prometheus.yml") == PROMETHEUS_CONFIG
    assert "--config.file=/etc/prometheus/prometheus.yml" in command("prometheus")
    for pattern in PROMETHEUS["rule_files"]:
        assert not PurePosixPath(pattern).is_absolute(), "paths stay relative to the config file"
        assert PurePosixPath(pattern).parent == PurePosixPath("rules")
    # The rules are the set-up's, for the served plan only (not every example plan's in ./rules).
    assert mounts("prometheus")["/etc/prometheus/rules"] == mounts("setup")["/rules"] == "served-rules"
    assert mounts("prometheus")["/prometheus"] == mounts("setup")["/prometheus"], "the backfilled history"


def test_fleetsim_targets_reach_prometheus_through_the_shared_volume() -> None:
    file_sd = PurePosixPath(flag("fleetsim", "--file-sd"))
    volume = mounts("fleetsim")[str(file_sd.parent)]
    (job,) = [j for j in PROMETHEUS["scrape_configs"] if "file_sd_configs" in j]
    (pattern,) = job["file_sd_configs"][0]["files"]
    sd_dir = "/etc/prometheus/" + str(PurePosixPath(pattern).parent)
    assert mounts("prometheus")[sd_dir] == volume, "Prometheus must read the volume fleetsim writes"
    assert fnmatch(file_sd.name, PurePosixPath(pattern).name), f"{pattern} does not match {file_sd.name}"


def test_fleetsim_advertises_an_address_prometheus_can_dial() -> None:
    """fleetsim writes its --listen address into the targets; 0.0.0.0 or 127.0.0.1 would be Prometheus itself."""
    host, _, port = flag("fleetsim", "--listen").rpartition(":")
    assert host == "fleetsim" and port == "9400"
    # The file is written mode 0600: fleetsim runs as the uid of the Prometheus image (nobody) to share it.
    assert SERVICES["fleetsim"]["user"] == "65534:65534"
    assert "install -d -m 1777 /sd" in DOCKERFILE


def test_prometheus_scrapes_planwatch_and_alerts_alertmanager_by_service_name() -> None:
    listen = flag("planwatch", "--listen")
    static = [t for j in PROMETHEUS["scrape_configs"] for g in j.get("static_configs", []) for t in g["targets"]]
    assert static == [f"planwatch:{listen.rpartition(':')[2]}"]
    (manager,) = PROMETHEUS["alerting"]["alertmanagers"]
    assert manager["static_configs"][0]["targets"] == ["alertmanager:9093"]
    assert "127.0.0.1:9093:9093" in SERVICES["alertmanager"]["ports"]
    assert flag("planwatch", "--prometheus") == "http://prometheus:9090"


def test_alertmanager_reads_the_examples_configuration_sent_to_the_receiver() -> None:
    assert "--config.file=/state/alertmanager.yml" in command("alertmanager")
    assert mounts("alertmanager")["/state"] == mounts("setup")["/state"]
    listen = SERVICES["alert-receiver"]["command"]
    assert listen == ["--listen", "0.0.0.0:9095"] and "alert-receiver:9095" in SETUP_SCRIPT
    assert "http://127.0.0.1:9095" in (REPO / "examples" / "alertmanager.yml").read_text()


def test_every_port_binds_loopback_only() -> None:
    """Prometheus's lifecycle API and fleetsim's control API take writes: nothing listens beyond this host."""
    for name, service in SERVICES.items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} on every interface"


def test_start_up_waits_for_health_and_the_set_up() -> None:
    for name, service in SERVICES.items():
        for dependency, how in (service.get("depends_on") or {}).items():
            assert isinstance(how, dict), f"{name}: depends_on {dependency} without a condition"
            wanted = "service_completed_successfully" if dependency == "setup" else "service_healthy"
            assert how["condition"] == wanted, (name, dependency)
            assert dependency == "setup" or "healthcheck" in SERVICES[dependency], dependency


def test_grafana_has_no_default_admin_password() -> None:
    password = SERVICES["grafana"]["environment"]["GF_SECURITY_ADMIN_PASSWORD"]
    assert password.startswith("${GRAFANA_ADMIN_PASSWORD:?") and "admin}" not in password


def test_grafana_is_provisioned_and_opens_on_plan_vs_production() -> None:
    env = SERVICES["grafana"]["environment"]
    home = env["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert mounted_at("grafana", home) == REPO / "dashboards" / HOME
    (source,) = yaml.safe_load((PROVISIONING / "datasources" / "prometheus.yml").read_text())["datasources"]
    assert source["type"] == "prometheus" and source["url"] == "http://prometheus:9090" and source["isDefault"]
    (provider,) = yaml.safe_load((PROVISIONING / "dashboards" / "planwatch.yml").read_text())["providers"]
    folder = mounted_at("grafana", provider["options"]["path"])
    assert folder == REPO / "dashboards" and all((folder / name).is_file() for name in DASHBOARDS)
    for kind in ("datasources", "dashboards"):
        assert mounted_at("grafana", f"/etc/grafana/provisioning/{kind}") == PROVISIONING / kind


def test_the_dockerfile_installs_the_project_for_a_non_root_user() -> None:
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11-slim$", DOCKERFILE, re.M)
    assert re.findall(r"^FROM (\S+)", DOCKERFILE, re.M) == ["${PYTHON_IMAGE}", "${PYTHON_IMAGE}"]
    assert "[dev]" not in DOCKERFILE and "pip wheel --no-cache-dir --no-deps --wheel-dir /wheels ." in DOCKERFILE
    (user,) = re.findall(r"^USER (\S+)$", DOCKERFILE, re.M)
    assert user not in ("root", "0") and "useradd --system --uid 10001 --user-group" in DOCKERFILE
    assert re.search(r'^ENTRYPOINT \["planwatch"\]$', DOCKERFILE, re.M)
    pyproject = (REPO / "pyproject.toml").read_text()
    assert 'planwatch = "monitor.cli.main:main"' in pyproject and 'fleetsim = "fleetsim.cli:main"' in pyproject


def test_the_build_context_holds_what_the_dockerfile_copies_and_nothing_else() -> None:
    rules = [line for line in (REPO / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    assert rules[0] == "*"
    included = {r.removeprefix("!").rstrip("/") for r in rules if r.startswith("!")}
    copied = {src for line in re.findall(r"^COPY (?!--from)(.+)$", DOCKERFILE, re.M) for src in line.split()[:-1]}
    assert copied == included
    assert all((REPO / c).exists() for c in copied)


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="no docker-compose (v1) to check the file")
def test_docker_compose_accepts_the_file() -> None:
    """docker-compose v1 (Debian's) checks the schema, interpolation and depends_on conditions with no engine;
    what it cannot check: that images pull, healthchecks pass, or the volumes' ownership works at run time."""
    env = {"PATH": "/usr/bin:/bin", "GRAFANA_ADMIN_PASSWORD": "only-for-this-check"}
    result = subprocess.run(["docker-compose", "-f", str(COMPOSE_FILE), "config"], capture_output=True, text=True,
                            cwd=REPO, timeout=60, env=env)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert set(yaml.safe_load(result.stdout)["services"]) == set(SERVICES)
    unset = subprocess.run(["docker-compose", "-f", str(COMPOSE_FILE), "config", "-q"], capture_output=True,
                           text=True, cwd=REPO, timeout=60, env={"PATH": "/usr/bin:/bin"})  # fmt: skip
    assert unset.returncode != 0 and "GRAFANA_ADMIN_PASSWORD" in unset.stderr


def test_the_set_up_writes_the_served_plan_its_rules_only_and_history(tmp_path: Path) -> None:
    """deploy/compose/setup.sh as the set-up service runs it, on temporary folders."""
    import os
    import sys

    folders = {name: tmp_path / name for name in ("STATE", "RULES", "TSDB")}
    for folder in folders.values():
        folder.mkdir()
    env = {**os.environ, **{k: str(v) for k, v in folders.items()}, "PLAN": "examples/capstone-resized.yaml",
           "DAYS": "0.05", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}  # fmt: skip
    done = subprocess.run(["sh", str(REPO / "deploy" / "compose" / "setup.sh")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    plan = yaml.safe_load((folders["STATE"] / "plan.yaml").read_text())
    assert plan["name"] == "codebase-assistant-resized"
    assert plan["workload"]["business_hours"]["timezone"].startswith("Etc/GMT")
    assert sorted(p.name for p in folders["RULES"].iterdir()) == ["alerts-planwatch.yml", "plan-slo.yml",
                                                                  "recording.yml"]  # fmt: skip
    slo = (folders["RULES"] / "plan-slo.yml").read_text()
    assert "codebase-assistant-resized" in slo and "plan: codebase-assistant\n" not in slo
    assert "http://alert-receiver:9095/alerts/page" in (folders["STATE"] / "alertmanager.yml").read_text()
    assert any(folders["TSDB"].iterdir()) and (folders["STATE"] / "fleet-state.json").is_file()
    again = subprocess.run(["sh", str(REPO / "deploy" / "compose" / "setup.sh")], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert again.returncode == 0 and "not backfilled again" in again.stdout


def test_promtool_accepts_the_prometheus_config_as_compose_mounts_it(tmp_path: Path) -> None:
    """The file unchanged, in a directory laid out like the container's /etc/prometheus."""
    root = tmp_path / "etc-prometheus"
    shutil.copytree(REPO / "rules", root / "rules")
    (root / "sd").mkdir()
    shutil.copy(PROMETHEUS_CONFIG, root / "prometheus.yml")
    result = subprocess.run([shutil.which("promtool") or "promtool", "check", "config", str(root / "prometheus.yml")],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"SUCCESS: [1-9]\d* rule files found", result.stdout), result.stdout
