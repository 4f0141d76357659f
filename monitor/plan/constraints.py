"""What discovery says about where the work may run: the inputs of the qualification seed's surface flowchart.

Each field answers one question of the flowchart (section 4 of the seed); `monitor.sizing.surface` walks it.
An answer nobody has given yet is None, and the walk says so instead of guessing.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["Constraints", "Residency"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Residency(_Strict):
    """Where the data may go: anywhere, only within a region (EU), or not out of the customer's own cloud account
    or network (VPC)."""

    scope: Literal["none", "region", "vpc"] = "none"
    region: str = Field(default="", description="The region the data must stay in (scope region), e.g. eu.")

    @model_validator(mode="after")
    def _region_named(self) -> Self:
        if self.scope == "region" and not self.region:
            raise ValueError("scope region needs the region the data must stay in (region: eu)")
        return self


class Constraints(_Strict):
    data_residency: Residency = Residency()
    vendor_regions: tuple[str, ...] = Field(
        default=(),
        description="Regions the vendor's managed surfaces (dedicated, serverless, batch) are offered in; a "
        "residency region outside them leaves only the customer's own account (BYOC).",
    )
    open_model_passes_eval: bool | None = Field(
        default=None, description="The open model meets the eval bar with prompt changes only (None: not yet run)."
    )
    strict_percentile_slo: bool = Field(
        default=True, description="The plan's p95 SLOs are a commitment, not a best effort (needs isolation)."
    )
    custom_weights: bool = Field(default=False, description="Own or fine-tuned weights (a LoRA adapter counts).")

    @property
    def region_offered(self) -> bool:
        region = self.data_residency.region.lower()
        return any(r.lower() == region for r in self.vendor_regions)
