"""The capacity plan: schema (`model`), hardware catalog (`catalog`) and loading with clear errors (`load`)."""

from monitor.plan.catalog import BUILTIN_GPUS, DType, GPUSpec
from monitor.plan.load import PlanError, PlanProblem, load_plan, parse_plan
from monitor.plan.model import ASSUMPTIONS, KVDType, ModelSpec, Plan, Tier

__all__ = [
    "ASSUMPTIONS",
    "BUILTIN_GPUS",
    "DType",
    "GPUSpec",
    "KVDType",
    "ModelSpec",
    "Plan",
    "PlanError",
    "PlanProblem",
    "Tier",
    "load_plan",
    "parse_plan",
]
