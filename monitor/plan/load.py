"""Reading a plan file: YAML -> validated Plan, or every problem at once with its YAML path and line.

Two passes: pydantic checks each field (types, ranges, unknown keys); then cross-checks that need the
whole plan (references, prices, routing coverage, whether the weights fit) run on the typed plan.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from monitor.plan import reader
from monitor.plan.batch_checks import batch_job_problems
from monitor.plan.catalog import BUILTIN_GPUS
from monitor.plan.memory import kv_budget_bytes, kv_bytes_per_token, weights_bytes
from monitor.plan.model import FLEET, Plan, Tier
from monitor.units import format_bytes

__all__ = ["PlanError", "PlanProblem", "load_plan", "parse_plan", "plan_problems"]


@dataclass(frozen=True)
class PlanProblem:
    path: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path} (line {self.line})" if self.line else self.path
        return f"{where}: {self.message}"


class PlanError(Exception):
    """A plan that cannot be used, with every problem found."""

    def __init__(self, source: str, problems: list[PlanProblem]):
        self.source = source
        self.problems = problems
        listing = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{source}: {len(problems)} problem(s) in the plan\n{listing}")


def load_plan(path: str | Path) -> Plan:
    """Read and validate a plan file; raise PlanError listing every problem."""
    p = Path(path)
    try:
        raw = p.read_bytes()
        text = reader.decode(raw)
    except OSError as exc:
        raise PlanError(str(p), [PlanProblem("(file)", f"cannot read: {exc.strerror or exc}")]) from None
    except reader.ReadProblem as exc:
        raise PlanError(str(p), [PlanProblem("(file)", exc.message, exc.line)]) from None
    return parse_plan(text, source=str(p))


def parse_plan(text: str, source: str = "<plan>") -> Plan:
    try:
        root, loader = reader.compose(text)
        data = reader.construct(root, loader)
    except reader.ReadProblem as exc:
        raise PlanError(source, [PlanProblem("(yaml)", exc.message, exc.line)]) from None
    if not isinstance(data, dict):
        raise PlanError(source, [PlanProblem("(root)", "the plan must be a YAML mapping")])
    lines = _line_index(root)
    numbers = [PlanProblem(path, message, _line_for(path, lines)) for path, message in reader.value_problems(data)]
    if numbers:
        raise PlanError(source, numbers)
    try:
        # JSON mode, strict: `true` is not 1 and "0.8" is not a number, while enums and lists read as written.
        plan = Plan.model_validate_json(json.dumps(data, default=str), strict=True)
    except ValidationError as exc:
        raise PlanError(source, _from_validation(exc, lines)) from None
    problems = [PlanProblem(p.path, p.message, _line_for(p.path, lines)) for p in plan_problems(plan)]
    if problems:
        raise PlanError(source, problems)
    return plan


def plan_problems(plan: Plan) -> list[PlanProblem]:
    """Cross-checks over a structurally valid plan."""
    return [
        *_tier_references(plan),
        *_unique_tier_names(plan),
        *_memory_fit(plan),
        *_routing_coverage(plan),
        *(PlanProblem(path, message) for path, message in batch_job_problems(plan)),
    ]


def _tier_references(plan: Plan) -> Iterable[PlanProblem]:
    for i, tier in enumerate(plan.tiers):
        if tier.model not in plan.models:
            yield PlanProblem(f"tiers[{i}].model", f"unknown model {tier.model!r}; models: {', '.join(plan.models)}")
        if tier.gpu not in plan.gpus and tier.gpu not in BUILTIN_GPUS:
            known = sorted({*plan.gpus, *BUILTIN_GPUS})
            yield PlanProblem(f"tiers[{i}].gpu", f"unknown GPU {tier.gpu!r}; known: {', '.join(known)}")
        elif tier.gpu not in plan.costs.gpu_hour_usd:
            yield PlanProblem("costs.gpu_hour_usd", f"no price for {tier.gpu!r}, used by tiers[{i}] ({tier.name})")
        if tier.max_model_len is not None and tier.model in plan.models:
            limit = plan.models[tier.model].max_context
            if tier.max_model_len > limit:
                yield PlanProblem(
                    f"tiers[{i}].max_model_len",
                    f"{tier.max_model_len} exceeds the model's max_context {limit}",
                )


def _unique_tier_names(plan: Plan) -> Iterable[PlanProblem]:
    seen: set[str] = set()
    for i, tier in enumerate(plan.tiers):
        if tier.name == FLEET:
            yield PlanProblem(f"tiers[{i}].name", f"{FLEET!r} is reserved for the fleet-wide view; rename the tier")
        if tier.name in seen:
            yield PlanProblem(f"tiers[{i}].name", f"tier name {tier.name!r} is used twice")
        seen.add(tier.name)


def _memory_fit(plan: Plan) -> Iterable[PlanProblem]:
    """Weights plus runtime overhead must leave room for at least one full-length sequence's KV cache."""
    for i, tier in enumerate(plan.tiers):
        if tier.model not in plan.models or (tier.gpu not in plan.gpus and tier.gpu not in BUILTIN_GPUS):
            continue
        model, gpu = plan.models[tier.model], plan.gpu(tier.gpu)
        budget = kv_budget_bytes(tier, model, gpu)
        one_sequence = kv_bytes_per_token(model, tier.kv_cache_dtype) * (tier.max_model_len or model.max_context)
        if budget <= 0:
            yield PlanProblem(f"tiers[{i}]", _no_room(tier, model.parameters, weights_bytes(model, tier.weight_dtype)))
        elif budget < one_sequence / 8:
            yield PlanProblem(
                f"tiers[{i}]",
                f"KV budget {format_bytes(budget)} on {tier.tensor_parallel} x {tier.gpu} holds under 1/8 of one "
                f"{tier.max_model_len or model.max_context}-token sequence ({format_bytes(one_sequence)}); "
                "lower max_model_len, quantize the cache or add GPUs",
            )


def _no_room(tier: Tier, params: float, weights: float) -> str:
    return (
        f"{params / 1e9:.0f}B weights in {tier.weight_dtype.value} ({format_bytes(weights)}) leave no room for KV "
        f"cache on {tier.tensor_parallel} x {tier.gpu} (gpu_memory_utilization {tier.gpu_memory_utilization}, "
        f"runtime overhead {format_bytes(tier.runtime_overhead_per_gpu_bytes)} per GPU)"
    )


def _routing_coverage(plan: Plan) -> Iterable[PlanProblem]:
    """Every prompt length must be routed: the shares of the tiers covering it sum to 1."""
    active = [t for t in plan.tiers if t.routing.share > 0]
    if not active:
        yield PlanProblem("tiers", "no tier takes traffic (every routing.share is 0)")
        return
    edges = sorted(
        {
            0.0,
            *(float(t.routing.prompt_tokens.min) for t in active),
            *(float(t.routing.prompt_tokens.max) for t in active if t.routing.prompt_tokens.max),
        }
    )
    bounds = [*edges, float("inf")]
    for low, high in pairwise(bounds):
        covering = [t for t in active if _covers(t, low)]
        total = sum(t.routing.share for t in covering)
        if abs(total - 1.0) > 1e-6:
            names = ", ".join(t.name for t in covering) or "none"
            span = f"{low:.0f}-{'inf' if high == float('inf') else f'{high:.0f}'}"
            yield PlanProblem(
                "tiers[].routing",
                f"prompts of {span} tokens are routed with shares summing to {total:g}, not 1 (tiers: {names})",
            )


def _covers(tier: Tier, prompt_tokens: float) -> bool:
    r = tier.routing.prompt_tokens
    return r.min <= prompt_tokens and (r.max is None or prompt_tokens < r.max)


def _from_validation(exc: ValidationError, lines: dict[str, int]) -> list[PlanProblem]:
    problems = []
    for err in exc.errors():
        path = _path(tuple(err["loc"]))
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown key (check the spelling; unknown keys are not ignored)"
        line = _line_for(path, lines)
        if err["type"] == "missing":
            message = "required, but missing"
            line = line or 1  # a key missing from the top-level mapping, which starts the file
        problems.append(PlanProblem(path or "(root)", message, line))
    return problems


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not str(part).startswith(("function-", "tagged-union")):
            out += f".{part}" if out else str(part)
    return out


def _line_for(path: str, lines: dict[str, int]) -> int | None:
    while path:
        if path in lines:
            return lines[path]
        cut = max(path.rfind("."), path.rfind("["))
        path = path[:cut] if cut > 0 else ""
    return None


def _line_index(node: yaml.Node | None, prefix: str = "") -> dict[str, int]:
    """YAML path ('tiers[1].gpu') -> 1-based line, to point at the line a problem is on."""
    index: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            path = f"{prefix}.{key.value}" if prefix else str(key.value)
            index[path] = key.start_mark.line + 1
            index.update(_line_index(value, path))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            path = f"{prefix}[{i}]"
            index[path] = item.start_mark.line + 1
            index.update(_line_index(item, path))
    return index
