"""The qualification seed's surface decision (section 4), walked per path with the reason for each branch.

    A  Must data stay in the customer's VPC or cloud account?  yes -> BYOC / VPC, then C
    B  Offline work that tolerates hours of latency?            yes -> batch or async API
    C  Open model meets the eval bar with prompt changes only?  no  -> fine-tune (LoRA first), re-evaluate, D
    D  Volume above breakeven, strict percentile SLO, or custom weights?  yes -> dedicated, no -> serverless

A path is an online tier or an offline batch job. Two readings the flowchart leaves open, stated here: a
residency *region* the vendor offers is not question A (the managed surfaces run in that region, and each
box says so), one it does not offer is (only the customer's own account keeps the data there); and an
offline path inside BYOC still runs as batch, so after BYOC the walk asks B before C.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.plan.constraints import Constraints
from monitor.sizing.breakeven import Breakeven

__all__ = ["Branch", "PathFacts", "SurfaceDecision", "walk"]

_QUESTIONS = {
    "A": "Must data stay in the customer's VPC or cloud account?",
    "B": "Offline work that tolerates hours of latency?",
    "C": "Open model meets the eval bar with prompt changes only?",
    "D": "Volume above breakeven, strict percentile SLO, or custom weights?",
}


@dataclass(frozen=True)
class Branch:
    node: str
    question: str
    answer: str  # yes / no / unknown
    reason: str
    leads_to: str


@dataclass(frozen=True)
class PathFacts:
    """What the walk needs to know about one path."""

    name: str
    offline: bool
    why_offline_or_not: str
    breakeven: Breakeven | None = None
    declared: str = ""  # the surface the plan serves it on ("" when the plan does not say)


@dataclass(frozen=True)
class SurfaceDecision:
    path: str
    branches: tuple[Branch, ...]
    surface: str  # dedicated, serverless or batch
    byoc: bool
    fine_tune: bool
    region: str
    declared: str

    @property
    def label(self) -> str:
        where = f" in {self.region}" if self.region else ""
        parts = (["BYOC/VPC"] if self.byoc else []) + (["fine-tune (LoRA)"] if self.fine_tune else [])
        return " + ".join([*parts, self.surface]) + where

    @property
    def mismatch(self) -> str | None:
        """A sentence when the plan serves the path on another surface than the walk chooses."""
        if not self.declared or self.declared == self.surface:
            return None
        return f"{self.path}: the plan serves it {self.declared}, the decision walk chooses {self.surface}"


def walk(constraints: Constraints, path: PathFacts) -> SurfaceDecision:
    a, byoc, region = _residency(constraints)
    branches = [a]
    b = _offline(path, byoc)
    branches.append(b)
    if b.answer == "yes":
        return SurfaceDecision(path.name, tuple(branches), "batch", byoc, False, region, path.declared)
    c, fine_tune = _eval(constraints)
    d, dedicated = _volume_slo_weights(constraints, path, fine_tune)
    branches += [c, d]
    surface = "dedicated" if dedicated else "serverless"
    return SurfaceDecision(path.name, tuple(branches), surface, byoc, fine_tune, region, path.declared)


def _residency(c: Constraints) -> tuple[Branch, bool, str]:
    r = c.data_residency
    if r.scope == "vpc":
        why = "data must not leave the customer's cloud account or network"
        return Branch("A", _QUESTIONS["A"], "yes", why, "BYOC or VPC deployment"), True, ""
    if r.scope == "region" and not c.region_offered:
        offered = ", ".join(c.vendor_regions) or "none listed"
        why = (
            f"data must stay in {r.region} and the vendor offers no managed surface there (vendor regions: "
            f"{offered}); confirm with the security owner before any technical work"
        )
        return Branch("A", _QUESTIONS["A"], "yes", why, "BYOC or VPC deployment"), True, r.region
    if r.scope == "region":
        why = f"data must stay in {r.region}, which the vendor offers: every surface below runs in {r.region}"
        return Branch("A", _QUESTIONS["A"], "no", why, "B"), False, r.region
    return Branch("A", _QUESTIONS["A"], "no", "the plan states no residency constraint", "B"), False, ""


def _offline(path: PathFacts, byoc: bool) -> Branch:
    if path.offline:
        inside = " inside the customer's account" if byoc else ""
        return Branch("B", _QUESTIONS["B"], "yes", path.why_offline_or_not, f"batch or async API{inside}")
    return Branch("B", _QUESTIONS["B"], "no", path.why_offline_or_not, "C")


def _eval(c: Constraints) -> tuple[Branch, bool]:
    if c.open_model_passes_eval is True:
        why = "the open model passed the eval with prompt changes only"
        return Branch("C", _QUESTIONS["C"], "yes", why, "D"), False
    if c.open_model_passes_eval is False:
        why = "prompt changes plateau below the quality bar"
        return Branch("C", _QUESTIONS["C"], "no", why, "fine-tune, LoRA first, then re-evaluate; then D"), True
    why = "not evaluated yet: taken as yes until the eval says otherwise (run it before buying hardware)"
    return Branch("C", _QUESTIONS["C"], "unknown", why, "D"), False


def _volume_slo_weights(c: Constraints, path: PathFacts, fine_tune: bool) -> tuple[Branch, bool]:
    reasons, be = [], path.breakeven
    if be is None:
        volume_above = False
        reasons.append("volume against breakeven unknown (no serverless price in costs)")
    else:
        volume_above = be.above
        side = "above" if be.above else "below"
        reasons.append(
            f"volume {be.tokens_per_month / 1e9:,.1f} B tokens/month is {side} the breakeven "
            f"{be.breakeven_tokens_per_month / 1e9:,.1f} B"
        )
    reasons.append("a strict percentile SLO" if c.strict_percentile_slo else "no strict percentile SLO")
    custom = c.custom_weights or fine_tune
    reasons.append(
        ("fine-tuned weights are custom weights" if fine_tune else "custom weights") if custom else "stock weights"
    )
    yes = volume_above or c.strict_percentile_slo or custom
    box = "dedicated deployment" if yes else "serverless per-token API"
    return Branch("D", _QUESTIONS["D"], "yes" if yes else "no", "; ".join(reasons), box), yes
