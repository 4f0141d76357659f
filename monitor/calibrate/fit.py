"""Fit a tier's efficiencies (HBM bandwidth, GEMM compute) and its per-step overhead to measured
benchmark runs, so the sizing model and drift judge production against what the engine really does.

Each run is predicted as `monitor.sizing.measured.predict_run` predicts a published row: the tier with the
run's fixed prompt and output lengths, no prefix hits (benchmark prompts are random), at the run's
concurrency (or saturated). The fit minimises the sum of squared log errors of mean ITL, mean TTFT and
output throughput over all runs (each metric weighs the same whatever its unit), within physical bounds,
plus a weak pull (PRIOR) toward the plan's values, so directions the runs cannot tell apart (bandwidth
against compute, from runs of one shape) stay where the plan put them instead of running to a bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from monitor.calibrate.results import BenchmarkRun
from monitor.plan.model import Efficiency, Plan, Span, Tier
from monitor.sizing.measured import Prediction, predict_run

__all__ = ["BOUNDS", "Fit", "Residual", "calibrated_efficiency", "fit_runs", "predict_with"]

BOUNDS = ((0.2, 1.0), (0.1, 1.0), (0.0, 0.02))  # bandwidth eff., GEMM eff., step overhead (s)
PRIOR = 0.1  # weight of the plan's values against one squared log error of a measurement
METRICS = ("ITL", "TTFT", "throughput")


@dataclass(frozen=True)
class Residual:
    run: BenchmarkRun
    metric: str
    measured: float
    before: float  # the plan's expected efficiencies
    after: float  # the fitted ones

    @property
    def error_before(self) -> float:
        return self.before / self.measured - 1.0

    @property
    def error_after(self) -> float:
        return self.after / self.measured - 1.0


@dataclass(frozen=True)
class Fit:
    tier: str
    bandwidth: float
    compute: float
    step_overhead_seconds: float
    residuals: tuple[Residual, ...]

    def median_abs_error(self, after: bool = True) -> float:
        errs = [abs(r.error_after if after else r.error_before) for r in self.residuals]
        return float(np.median(errs)) if errs else math.nan


def predict_with(plan: Plan, tier: Tier, run: BenchmarkRun, params: Sequence[float]) -> Prediction:
    """The run as the sizing model sees it with (bandwidth, compute, step overhead) = params."""
    bw, ce, overhead = params
    flat = {"bandwidth": Span(low=bw, expected=bw, high=bw), "compute": Span(low=ce, expected=ce, high=ce)}
    eff = tier.efficiency.model_copy(update={**flat, "step_overhead_seconds": overhead})
    w = plan.workload
    fixed = {
        "prompt_tokens": w.prompt_tokens.model_copy(update={"p50": run.prompt_tokens, "p95": run.prompt_tokens}),
        "output_tokens": w.output_tokens.model_copy(update={"p50": run.output_tokens, "p95": run.output_tokens}),
        "prefix_cache_hit_rate": 0.0,
    }
    workload = w.model_copy(update=fixed)
    bench_tier = tier.model_copy(update={"efficiency": eff, "routing": type(tier.routing)()})
    bench_plan = plan.model_copy(update={"workload": workload, "tiers": [bench_tier]})
    return predict_run(bench_plan, bench_tier, run.concurrency)


def _measured(run: BenchmarkRun) -> tuple[float, float, float]:
    return (run.itl_seconds, run.ttft_seconds, run.output_tokens_per_second)


def _predicted(p: Prediction) -> tuple[float, float, float]:
    return (p.itl_seconds, p.ttft_seconds, p.output_tokens_per_second)


def fit_runs(plan: Plan, tier: Tier, runs: Sequence[BenchmarkRun]) -> Fit:
    """Least squares in log space over every run's ITL, TTFT and throughput."""
    if not runs:
        raise ValueError("no benchmark runs to calibrate against")

    eff = tier.efficiency
    start = np.array([eff.bandwidth.expected, eff.compute.expected, eff.step_overhead_seconds])

    def loss(x: np.ndarray) -> float:
        params = [float(min(max(v, lo), hi)) for v, (lo, hi) in zip(x, BOUNDS, strict=True)]
        # the plan's values as a weak prior: runs of one shape cannot tell bandwidth from compute apart
        total = PRIOR * sum(math.log(max(p, 1e-6) / max(s, 1e-6)) ** 2 for p, s in zip(params, start, strict=True))
        for run in runs:
            for pred, meas in zip(_predicted(predict_with(plan, tier, run, params)), _measured(run), strict=True):
                if meas > 0 and pred > 0 and math.isfinite(pred):
                    total += math.log(pred / meas) ** 2
                else:
                    total += 25.0  # an unreachable prediction (e.g. nothing fits): far from any fit
        return total

    best = minimize(loss, start, method="Nelder-Mead", options={"xatol": 1e-4, "fatol": 1e-6, "maxiter": 400})
    params = tuple(float(min(max(v, lo), hi)) for v, (lo, hi) in zip(best.x, BOUNDS, strict=True))
    residuals = []
    for run in runs:
        before = _predicted(predict_with(plan, tier, run, tuple(start)))
        after = _predicted(predict_with(plan, tier, run, params))
        for metric, m, b, a in zip(METRICS, _measured(run), before, after, strict=True):
            residuals.append(Residual(run, metric, m, b, a))
    return Fit(tier.name, params[0], params[1], params[2], tuple(residuals))


def calibrated_efficiency(tier: Tier, fit: Fit) -> Efficiency:
    """The fitted expected values, with the plan's low/high spread around them kept (capped at 1)."""

    def span(old: Span, expected: float) -> Span:
        low = min(expected, expected * old.low / old.expected)
        high = min(1.0, max(expected, expected * old.high / old.expected))
        return Span(low=round(low, 4), expected=round(expected, 4), high=round(high, 4))

    eff = tier.efficiency
    return eff.model_copy(
        update={
            "bandwidth": span(eff.bandwidth, fit.bandwidth),
            "compute": span(eff.compute, fit.compute),
            "step_overhead_seconds": round(fit.step_overhead_seconds, 6),
        }
    )
