"""`fleetsim`: run an emulated vLLM + dcgm-exporter fleet for a plan.

    fleetsim serve PLAN [--scenario NAME[,NAME[@START]]] [--listen 127.0.0.1:PORT] [--file-sd PATH]
                        [--seed N] [--vllm-generation v1|legacy|v0|overlap]
                        [--no-kube-state-metrics] [--multiprocess] [--speed X] [--resume STATE]
                        [--trace FILE | --rate-trace CSV [--rate-trace-as-is]] [--start UNIX|ISO]
                        [--dcgm-interval S]
    fleetsim scenarios                       list the scenarios and the metric each one moves
    fleetsim backfill PLAN ...               history into a Prometheus data directory (fleetsim.backfill)
    fleetsim batch PLAN --job NAME --out F   a batch job's engines as OpenMetrics history (fleetsim.batch_cli)

The default scenario is `irregular` (fleetsim.DEFAULT_SCENARIO): demand as irregular as production's;
`--scenario baseline` is the plan's own regular week. `--rate-trace` makes a real rate trace the demand
(fleetsim.rate_trace); the scenarios still apply to everything else.

Bad input (a missing plan, an unknown scenario, a malformed trace line, a port in use, an unreadable
state) prints one clear line on stderr and exits with status 2; never a traceback.
"""

from __future__ import annotations

import errno
import socket
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from fleetsim import DEFAULT_SCENARIO, backfill, batch_cli
from fleetsim.metrics import GENERATIONS
from fleetsim.rate_trace import RATE_TRACE_HELP, rate_trace_scenario
from fleetsim.scenarios import SCENARIOS, ScenarioError, parse_scenarios, parse_time
from fleetsim.state import StateError, load_state
from fleetsim.traces import TraceError, TraceReplay, load_trace
from monitor.plan.load import PlanError, load_plan

__all__ = ["app", "main"]

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Emulate a vLLM + dcgm-exporter fleet.")
backfill.register(app)  # `fleetsim backfill`: weeks of history into a Prometheus data directory
batch_cli.register(app)  # `fleetsim batch`: a plan's batch job as OpenMetrics history


class UsageProblem(Exception):
    """Bad input found before serving: reported as one line, exit status 2."""


def _fail(message: str) -> typer.Exit:
    typer.echo(f"fleetsim: error: {message}", err=True)
    return typer.Exit(2)


def parse_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageProblem(f"--listen {listen!r} is not HOST:PORT (example: 127.0.0.1:9400)")
    return host or "127.0.0.1", int(port)


def bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        reason = "port already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        raise UsageProblem(f"cannot listen on {host}:{port}: {reason}") from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


@app.command()
def serve(
    plan: Annotated[Path, typer.Argument(help="Plan YAML (see examples/).")],
    scenario: Annotated[
        str, typer.Option(help="Scenarios, comma-separated; NAME@START starts later; baseline: the plan's own week.")
    ] = DEFAULT_SCENARIO,
    listen: Annotated[str, typer.Option(help="HOST:PORT; port 0 picks a free one.")] = "127.0.0.1:9400",
    file_sd: Annotated[Path | None, typer.Option(help="Prometheus file_sd JSON to keep up to date.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of every random draw.")] = 0,
    vllm_generation: Annotated[
        str, typer.Option(help="v1, legacy, v0 or overlap (0.9.2-0.11: old and new names on one target).")
    ] = "v1",
    kube_state_metrics: Annotated[
        bool, typer.Option(help="Serve kube-state-metrics' pod series (--no-kube-state-metrics: a cluster without).")
    ] = True,
    multiprocess: Annotated[
        bool, typer.Option(help="vLLM with --api-server-count > 1: no _created, no process_* series.")
    ] = False,
    speed: Annotated[float, typer.Option(help="Simulated seconds per wall second.")] = 1.0,
    resume: Annotated[Path | None, typer.Option(help="Continue counters from a backfill's state file.")] = None,
    trace: Annotated[Path | None, typer.Option(help="Replay a trace (Azure CSV or JSONL) instead.")] = None,
    rate_trace: Annotated[Path | None, typer.Option(help=RATE_TRACE_HELP)] = None,
    rate_trace_as_is: Annotated[bool, typer.Option(help="Keep the rate trace's own level (no scaling).")] = False,
    start: Annotated[str | None, typer.Option(help="Simulated start time (Unix or ISO 8601); default now.")] = None,
    dcgm_interval: Annotated[float, typer.Option(help="dcgm-exporter sampling interval, seconds.")] = 30.0,
) -> None:
    """Serve every replica's /metrics, the GPUs', the gateway's and kube-state-metrics' on one listener."""
    import uvicorn

    from fleetsim.fleet import Fleet, FleetOptions
    from fleetsim.server import FileSD, SimClock, create_app

    try:
        if vllm_generation not in GENERATIONS:
            raise UsageProblem(f"--vllm-generation must be one of {', '.join(GENERATIONS)}, not {vllm_generation!r}")
        if not speed > 0 or not dcgm_interval > 0:
            raise UsageProblem("--speed and --dcgm-interval must be positive")
        host, port = parse_listen(listen)
        loaded = load_plan(plan)
        scenarios = parse_scenarios(scenario)
        if rate_trace is not None:
            if trace is not None:
                raise UsageProblem("--trace replays requests and --rate-trace gives a rate: choose one")
            scenarios = (*scenarios, rate_trace_scenario(loaded, rate_trace, scale_to_peak=not rate_trace_as_is))
        state = load_state(resume) if resume is not None else None
        if state is not None and state.generation != vllm_generation:
            raise UsageProblem(f"{resume} was written for --vllm-generation {state.generation}")
        if state is not None and (unknown := {p.tier for p in state.pods.values()} - {t.name for t in loaded.tiers}):
            raise UsageProblem(f"{resume} has pods of tiers the plan lacks: {', '.join(sorted(unknown))}")
        replay = load_trace(trace) if trace is not None else None
        begin = parse_time(start, f"--start {start}") if start else time.time()
        if file_sd is not None and not file_sd.parent.is_dir():
            raise UsageProblem(f"--file-sd directory {file_sd.parent} does not exist")
        sock = bind(host, port)
    except (UsageProblem, PlanError, ScenarioError, StateError, TraceError) as exc:
        raise _fail(str(exc)) from None
    options = FleetOptions(seed=seed, generation=vllm_generation, dcgm_interval=dcgm_interval,
                           kube_state_metrics=kube_state_metrics, multiprocess=multiprocess)  # fmt: skip
    fleet = Fleet(loaded, begin, scenarios, options, TraceReplay(replay, loaded, begin) if replay else None)
    fleet.resume(state) if state is not None else fleet.populate()
    address = f"{host}:{sock.getsockname()[1]}"
    application = create_app(fleet, SimClock(begin, speed), FileSD(file_sd) if file_sd else None, address)
    typer.echo(
        f"fleetsim: serving {len(fleet.pods)} pods of {loaded.name} on http://{address}"
        f"{f' (file_sd {file_sd})' if file_sd else ''}",
        err=True,
    )
    sys.stderr.flush()
    server = uvicorn.Server(uvicorn.Config(application, log_level="warning", access_log=False))
    server.run(sockets=[sock])


@app.command()
def scenarios() -> None:
    """List the scenarios and the metrics each one moves."""
    for s in SCENARIOS.values():
        typer.echo(f"{s.name:16} {s.moves}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
