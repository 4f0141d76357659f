"""A PromQL expression defined once and rendered three ways: for one tier, for all tiers, for Grafana.

Templates are PromQL with placeholders (Python format fields; a literal brace is never needed because
every selector goes through a placeholder):

    {sel}            `{<tier matchers>}`; `{sel:a="b"}` adds fixed matchers before them
    {vsel}           like `sel`, plus `model_name!=""`: vLLM engine series only. The production-stack router
                     re-exports `vllm:num_requests_*` (and old prefix-cache names) with a `server` label and
                     no `model_name`; without this filter they would be counted as an engine.
    {window}         the range, e.g. `5m` (Grafana: `$__rate_interval`)
    {step}           a subquery resolution or short rate window, e.g. `1m` (Grafana: `$__interval`)
    {by}             the grouping list: `{by:le,model_name}` renders `le, model_name` for one tier, and
                     `tier, le, model_name` when grouped by tier (recording rules, dashboards)

The three renderings differ only in what the placeholders become, so the advisor, the recording rules and
the dashboards cannot drift apart.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from monitor.queries.selector import Selector, validate_label_name
from monitor.units import validate_promql_duration

__all__ = ["Query", "Rendering", "validate_duration"]

_ENGINE_MATCHER = 'model_name!=""'


def validate_duration(value: str) -> str:
    """`value` if it is a PromQL duration (`5m`, `1h30m`); anything else could inject PromQL."""
    return validate_promql_duration(value)


@dataclass(frozen=True)
class Rendering:
    """What the placeholders become in one rendering."""

    matchers: tuple[str, ...]
    group: tuple[str, ...]
    window: str
    step: str


class _Formatter(string.Formatter):
    def __init__(self, rendering: Rendering) -> None:
        super().__init__()
        self.r = rendering

    def get_value(self, key: int | str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        if key not in ("sel", "vsel", "window", "step", "by"):
            raise KeyError(f"unknown placeholder {{{key}}}")
        return key

    def format_field(self, value: Any, format_spec: str) -> str:
        if value in ("sel", "vsel"):
            fixed = [format_spec] if format_spec else []
            if value == "vsel":
                fixed.append(_ENGINE_MATCHER)
            inside = ",".join([*fixed, *self.r.matchers])
            return "{" + inside + "}" if inside else ""
        if format_spec:
            if value != "by":
                raise ValueError(f"{{{value}}} takes no options")
            extra = [s.strip() for s in format_spec.split(",")]
            return ", ".join(dict.fromkeys([*self.r.group, *extra]))
        if value == "by":
            return ", ".join(self.r.group)
        return str(self.r.window if value == "window" else self.r.step)


@dataclass(frozen=True)
class Query:
    """One planwatch query: recording-rule name, template, result labels, unit and meaning.

    `name` follows the Prometheus convention `level:metric:operations`: `tier:<metric>:<op>_<window>`
    (`tier:vllm_time_to_first_token_seconds:p95_5m`), or `tier:<metric>:<op>` for an instant value.
    `group_by` lists the labels each result series carries besides the tier (e.g. `model_name` for
    quantiles, `le` for bucket vectors); a per-tier rendering returns one series per combination.
    """

    metric: str
    op: str
    template: str
    unit: str
    description: str
    window: str | None = "5m"
    step: str = "1m"
    group_by: tuple[str, ...] = ()
    record: bool = True

    def __post_init__(self) -> None:
        if self.window is not None:
            validate_duration(self.window)
        validate_duration(self.step)

    @property
    def name(self) -> str:
        suffix = f"{self.op}_{self.window}" if self.window and "{window}" in self.template else self.op
        return f"tier:{self.metric}:{suffix}"

    def with_window(self, window: str, step: str | None = None) -> Query:
        """The same query over another window (its name changes with it)."""
        return replace(self, window=validate_duration(window), step=validate_duration(step or self.step))

    def render(self, rendering: Rendering) -> str:
        return _Formatter(rendering).format(self.template)

    def for_tier(self, selector: Selector | Mapping[str, str], window: str | None = None,
                 step: str | None = None) -> str:  # fmt: skip
        """For the advisor: one tier's value(s), no tier label in the result."""
        sel = Selector.of(selector)
        return self.render(Rendering(tuple(m.render() for m in sel.matchers()), (), *self._times(window, step)))

    def for_all_tiers(self, tier_label: str = "tier", window: str | None = None, step: str | None = None) -> str:
        """For recording rules: every tier at once, grouped by `tier_label` (series without it are skipped)."""
        tier_label = validate_label_name(tier_label)
        matcher = f'{tier_label}!=""'
        return self.render(Rendering((matcher,), (tier_label,), *self._times(window, step)))

    def for_grafana(self, tier_label: str = "tier", variable: str = "tier") -> str:
        """For dashboards: the tiers chosen in `$variable`, grouped by tier, Grafana's own windows."""
        tier_label = validate_label_name(tier_label)
        validate_label_name(variable)
        matcher = f'{tier_label}=~"${variable}"'
        return self.render(Rendering((matcher,), (tier_label,), "$__rate_interval", "$__interval"))

    def recorded(self, selector: Selector | Mapping[str, str]) -> str:
        """The recorded series of this query for one tier: `tier:...{tier="standard"}`."""
        sel = Selector.of(selector)
        return self.name + "{" + sel.render() + "}"

    def _times(self, window: str | None, step: str | None) -> tuple[str, str]:
        w = validate_duration(window) if window else (self.window or "5m")
        return w, validate_duration(step) if step else self.step
