"""`fleetsim backfill`: weeks of history for a plan, written as TSDB blocks a fresh Prometheus serves.

    fleetsim backfill PLAN --prometheus-data DIR [--days 28] [--step 15s] [--end now|ISO|UNIX|-2h]
                      [--scenario NAME[,NAME[@START]]] [--scenario-start -3d|ISO|UNIX] [--seed N]
                      [--vllm-generation v1|legacy|overlap] [--instance 127.0.0.1:9400] [--state-out STATE.json]
                      [--block 6h] [--parallel 2] [--families GLOB[,GLOB]] [--rate-trace CSV [--rate-trace-as-is]]

Then `prometheus --storage.tsdb.path=DIR --storage.tsdb.retention.time=60d` (retention longer than the
history: Prometheus counts it back from the newest block) serves the history, and
`fleetsim serve PLAN --resume STATE.json --listen <the --instance address> --seed <the same seed> --file-sd ...`
continues it live: same series (the live file_sd labels, `instance` included; dcgm's UUID and the pods'
uid labels derive from the seed), counters continuing from the state. The handoff leaves a gap of the time
between --end and the first live scrape (import and start-up), shorter than PromQL's 5-minute lookback.

The series are the live emulator's (fleetsim.backfill_layout); the numbers come from the aggregate replica
model (fleetsim.aggregate*), drawn from the live workload's definitions (fleetsim.workload, scenarios).
`--families` keeps only series whose names match the globs: a documented way to trade completeness for
speed on long windows (every series is written by default; see benchmarks/bench_backfill.py).

Blocks are written directly by fleetsim.tsdb_block (XOR chunks encoded with numpy on `--parallel`
threads), about 20 times faster than importing OpenMetrics text with `promtool tsdb create-blocks-from
openmetrics` (promtool 2.42 parses ~0.25 M samples per CPU-second); the tests hold the direct writer to the
samples promtool stores for the same text.

Bad input (plan, scenario, times, data directory, state path) prints
one line on stderr and exits with status 2, never a traceback.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from fleetsim import DEFAULT_SCENARIO
from fleetsim.backfill_layout import DEFAULT_INSTANCE
from fleetsim.backfill_run import BackfillSpec, RunReport, run_backfill
from fleetsim.metrics import Generation
from fleetsim.rate_trace import RATE_TRACE_HELP, rate_trace_scenario
from fleetsim.scenarios import Scenario, ScenarioError, parse_scenarios, parse_time
from fleetsim.state import save_state
from fleetsim.traces import TraceError
from monitor.plan.load import PlanError, load_plan
from monitor.plan.model import Plan
from monitor.units import parse_duration

__all__ = ["BACKFILL_GENERATIONS", "BackfillProblem", "command_app", "main", "parse_moment", "register", "resolve_spec"]

# The aggregate model writes current bucket sets only, and V0's lifetime hit-rate gauge is not aggregated.
BACKFILL_GENERATIONS: tuple[Generation, ...] = ("v1", "legacy", "overlap")

_DAY = 86_400.0
# Prometheus compacts blocks into 2 h x 3^k ranges (2 h, 6 h, 18 h, 54 h); a block window must be one of them.
BLOCK_WINDOW_SECONDS = (7200, 21600, 64800, 194400)


class BackfillProblem(Exception):
    """Bad input found before any work: reported as one line, exit status 2."""


def parse_moment(text: str, reference: float, what: str) -> float:
    """'now', Unix seconds, ISO 8601 (UTC unless it says otherwise) or '-3d' / '-90m' before `reference`."""
    value = text.strip()
    if value == "now":
        return reference
    if value.startswith("-") and not _is_number(value):
        try:
            return reference - parse_duration(value[1:])
        except ValueError:
            raise BackfillProblem(f"{what} {text!r}: not a duration after '-' (examples: -3d, -90m, -1h30m)") from None
    try:
        return parse_time(value, f"{what} {text}")
    except ScenarioError:
        raise BackfillProblem(f"{what} {text!r} is not 'now', Unix seconds, ISO 8601 or -DURATION") from None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Request:
    """The command line, as given."""

    plan: Path
    data_dir: Path
    days: float = 28.0
    step: str = "15s"
    end: str = "now"
    scenario: str = DEFAULT_SCENARIO
    scenario_start: str | None = None
    seed: int = 0
    generation: str = "v1"
    instance: str = DEFAULT_INSTANCE
    state_out: Path | None = None
    block: str = "6h"
    parallel: int = 2
    families: str | None = None
    rate_trace: Path | None = None
    rate_trace_as_is: bool = False


def resolve_spec(req: Request, now: float | None = None) -> BackfillSpec:
    """Validate everything before any work; BackfillProblem (or PlanError / ScenarioError / TraceError) says
    what is wrong."""
    plan = load_plan(req.plan)
    if req.generation not in BACKFILL_GENERATIONS:
        why = " (v0 is served live only: its older bucket sets and hit-rate gauge are not aggregated)"
        raise BackfillProblem(
            f"--vllm-generation must be one of {', '.join(BACKFILL_GENERATIONS)}, not {req.generation!r}"
            + (why if req.generation == "v0" else "")
        )
    step = _step(req.step)
    if not (math.isfinite(req.days) and req.days > 0):
        raise BackfillProblem(f"--days must be a positive number of days, not {req.days!r}")
    end = math.floor(parse_moment(req.end, time.time() if now is None else now, "--end") / step) * step
    start = end - math.floor(req.days * _DAY / step) * step
    scenarios = _scenarios(req, plan, end, start)
    block = _block(req.block)
    _check_data_dir(req.data_dir)
    _check_state_out(req.state_out)
    generation = req.generation
    return BackfillSpec(
        plan,
        scenarios,
        float(start),
        float(end),
        step,
        req.seed,
        generation,
        req.data_dir,
        _instance(req.instance),
        block,
        max(1, req.parallel),
        families=_families(req.families),
    )


def _step(text: str) -> int:
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise BackfillProblem(f"--step: {exc}") from None
    if seconds < 1 or seconds != int(seconds):
        raise BackfillProblem(f"--step {text!r}: must be a whole number of seconds, at least 1s (example: 15s)")
    return int(seconds)


def _scenarios(req: Request, plan: Plan, end: float, start: float) -> tuple[Scenario, ...]:
    """--scenario names; --scenario-start applies to those without their own @START; every start must
    fall inside the history (a start before it means the scenario covers all of it: say so instead)."""
    scenarios = tuple(s for s in parse_scenarios(req.scenario) if s.name != "baseline")
    if req.rate_trace is not None:
        scenarios = (*scenarios, rate_trace_scenario(plan, req.rate_trace, scale_to_peak=not req.rate_trace_as_is))
    if req.scenario_start is not None:
        at = parse_moment(req.scenario_start, end, "--scenario-start")
        scenarios = tuple(s if s.start_unix is not None else s.starting_at(at) for s in scenarios)
    for s in scenarios:
        if s.start_unix is not None and not start <= s.start_unix <= end:
            raise BackfillProblem(
                f"scenario {s.name} starts at {_iso(s.start_unix)}, outside the history "
                f"{_iso(start)} .. {_iso(end)}; drop the start to apply it throughout"
            )
    return scenarios


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _block(text: str) -> int:
    try:
        seconds = int(parse_duration(text))
    except ValueError as exc:
        raise BackfillProblem(f"--block: {exc}") from None
    if seconds not in BLOCK_WINDOW_SECONDS:
        allowed = ", ".join(f"{s // 3600}h" for s in BLOCK_WINDOW_SECONDS)
        raise BackfillProblem(f"--block {text!r}: block lengths are {allowed}")
    return seconds


def _instance(text: str) -> str:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise BackfillProblem(f"--instance {text!r} is not HOST:PORT (the address `fleetsim serve --listen` uses)")
    return text


def _families(text: str | None) -> tuple[str, ...]:
    """--families: comma-separated globs over series names (vllm:time_to_first_token_seconds*, gateway_*)."""
    if text is None:
        return ()
    globs = tuple(g.strip() for g in text.split(",") if g.strip())
    if not globs:
        raise BackfillProblem("--families is empty; give series-name globs such as 'vllm:request_success*,up'")
    return globs


def _check_data_dir(path: Path) -> None:
    """Empty or absent, and writable: backfilled blocks must not mix with another history."""
    if path.exists():
        if not path.is_dir():
            raise BackfillProblem(f"--prometheus-data {path} exists and is not a directory")
        if any(path.iterdir()):
            raise BackfillProblem(f"--prometheus-data {path} is not empty; backfill writes into a new directory only")
        if not os.access(path, os.W_OK | os.X_OK):
            raise BackfillProblem(f"--prometheus-data {path} is not writable")
        return
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not os.access(parent, os.W_OK | os.X_OK):
        raise BackfillProblem(f"--prometheus-data {path} cannot be created: {parent} is not writable")


def _check_state_out(path: Path | None) -> None:
    if path is None:
        return
    if not path.parent.is_dir():
        raise BackfillProblem(f"--state-out directory {path.parent} does not exist")
    if not os.access(path.parent, os.W_OK):
        raise BackfillProblem(f"--state-out directory {path.parent} is not writable")


def execute(spec: BackfillSpec, state_out: Path | None, progress: Callable[[float], None] | None = None) -> RunReport:
    """Run the backfill and write the state file. On any failure or interruption (SIGTERM included) the
    data directory is emptied again, so a half-written history is never served and a retry can start."""
    created = not spec.data_dir.exists()
    spec.data_dir.mkdir(parents=True, exist_ok=True)
    previous = signal.signal(signal.SIGTERM, _terminated) if _main_thread() else None
    try:
        report = run_backfill(spec, progress)
    except BaseException:
        _clear(spec.data_dir, remove=created)
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    if state_out is not None and report.state is not None:
        save_state(report.state, state_out)
    return report


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM as SystemExit, so the encoders are stopped and the directory cleared."""
    raise SystemExit(128 + signum)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _clear(path: Path, remove: bool) -> None:
    if remove:
        shutil.rmtree(path, ignore_errors=True)
        return
    for child in path.iterdir():
        if child.is_dir():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def summary(spec: BackfillSpec, report: RunReport) -> str:
    rate = report.samples / report.wall_seconds if report.wall_seconds else 0.0
    return (
        f"fleetsim backfill: {report.samples:,} samples of {report.series:,} series, "
        f"{_iso(spec.start)} .. {_iso(spec.end)} every {spec.step}s, {report.windows} blocks in {spec.data_dir} "
        f"({report.wall_seconds:.1f}s, {rate / 1e6:.2f} M samples/s; model {report.model_seconds:.1f}s, "
        f"queueing {report.render_seconds:.1f}s, waiting for the encoders {report.wait_seconds:.1f}s)"
    )


def _fail(message: str) -> typer.Exit:
    typer.echo(f"fleetsim backfill: error: {message}", err=True)
    return typer.Exit(2)


def register(app: typer.Typer) -> None:
    """Add the `backfill` command to fleetsim's Typer app."""

    @app.command()
    def backfill(
        plan: Annotated[Path, typer.Argument(help="Plan YAML (see examples/).")],
        prometheus_data: Annotated[Path, typer.Option(help="New (empty) Prometheus data directory to fill.")],
        days: Annotated[float, typer.Option(help="Days of history before --end.")] = 28.0,
        step: Annotated[str, typer.Option(help="Scrape interval of the history (whole seconds).")] = "15s",
        end: Annotated[str, typer.Option(help="Last scrape: now, Unix seconds, ISO 8601 or -DURATION.")] = "now",
        scenario: Annotated[
            str,
            typer.Option(help="Scenarios, comma-separated; NAME@START starts later; baseline: the plan's own week."),
        ] = DEFAULT_SCENARIO,
        scenario_start: Annotated[
            str | None, typer.Option(help="Start of scenarios without @START: -3d, ISO, Unix.")
        ] = None,
        seed: Annotated[
            int, typer.Option(help="Seed of every draw; give `serve --resume` the same (GPU and pod UIDs use it).")
        ] = 0,
        vllm_generation: Annotated[
            str, typer.Option(help="v1, legacy or overlap (0.9.2-0.11: old and new names) metric names.")
        ] = "v1",
        instance: Annotated[
            str, typer.Option(help="HOST:PORT `fleetsim serve --listen` will use (the instance label).")
        ] = DEFAULT_INSTANCE,
        state_out: Annotated[
            Path | None, typer.Option(help="Write the end state for `fleetsim serve --resume`.")
        ] = None,
        block: Annotated[str, typer.Option(help="TSDB block length: 2h, 6h, 18h or 54h.")] = "6h",
        parallel: Annotated[int, typer.Option(help="Block-encoding threads.")] = 2,
        families: Annotated[str | None, typer.Option(help="Only series whose names match these globs (a,b*).")] = None,
        rate_trace: Annotated[Path | None, typer.Option(help=RATE_TRACE_HELP)] = None,
        rate_trace_as_is: Annotated[bool, typer.Option(help="Keep the rate trace's own level (no scaling).")] = False,
    ) -> None:
        """Generate history ending at --end and write it as TSDB blocks into --prometheus-data."""
        req = Request(
            plan,
            prometheus_data,
            days,
            step,
            end,
            scenario,
            scenario_start,
            seed,
            vllm_generation,
            instance,
            state_out,
            block,
            parallel,
            families,
            rate_trace,
            rate_trace_as_is,
        )
        try:
            spec = resolve_spec(req)
            with _progress_bar(spec) as progress:
                report = execute(spec, state_out, progress)
        except (BackfillProblem, PlanError, ScenarioError, TraceError) as exc:
            raise _fail(str(exc)) from None
        except OSError as exc:
            raise _fail(f"{exc.filename or ''}: {exc.strerror or exc}") from None
        typer.echo(summary(spec, report), err=True)


@contextmanager
def _progress_bar(spec: BackfillSpec) -> Iterator[Callable[[float], None]]:
    """A bar on the terminal (nothing when stderr is not one): a long backfill shows it is moving."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

    days = (spec.end - spec.start) / 86_400.0
    columns = (TextColumn(f"backfilling {days:g} days"), BarColumn(), TaskProgressColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("backfill", total=1.0)
        yield lambda done: bar.update(task, completed=done)


def command_app() -> typer.Typer:
    """A Typer app with only `backfill` (what `python -m fleetsim.backfill` runs; fleetsim.cli adds the
    same command to the main `fleetsim` app)."""
    app = typer.Typer(add_completion=False, help="Backfill fleetsim history into a Prometheus data directory.")
    register(app)

    @app.callback()
    def _root() -> None:
        """fleetsim backfill."""

    return app


def main() -> None:
    command_app()()


if __name__ == "__main__":
    main()
