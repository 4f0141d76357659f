"""Label selectors rendered into PromQL safely: names validated, values always escaped.

A tier is found through equality matchers (`{"tier": "standard"}` or `{"model_name": "...", "namespace":
"llm"}`) that come from the plan file, i.e. from a user. Every value goes through `quote()`, so a value
holding `"`, `\\`, a newline or `"} or vector(1)` stays one string literal and cannot change the query.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

__all__ = ["LABEL_NAME", "Matcher", "Selector", "escape", "quote", "validate_label_name"]

LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_OPS = ("=", "!=", "=~", "!~")


def escape(value: str) -> str:
    """The body of a PromQL double-quoted string: Go escapes for `\\ " \\n \\r \\t`, `\\xNN` for other
    control characters. Non-ASCII text stays as it is (PromQL strings are UTF-8)."""
    out = []
    for ch in value:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif 0xD800 <= ord(ch) <= 0xDFFF:
            raise ValueError(f"label value {value!r} holds a lone surrogate, not valid UTF-8")
        else:
            out.append(ch)
    return "".join(out)


def quote(value: str) -> str:
    """A PromQL string literal holding exactly `value`."""
    return f'"{escape(value)}"'


def validate_label_name(name: str) -> str:
    """`name` if it is a label name planwatch may match on; reserved `__` names are refused."""
    if not isinstance(name, str) or not LABEL_NAME.match(name):
        raise ValueError(f"{name!r} is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)")
    if name.startswith("__"):
        raise ValueError(f"{name!r} is reserved for Prometheus internals; match on a regular label")
    return name


@dataclass(frozen=True)
class Matcher:
    """One label matcher. `=~`/`!~` values are regexes and are escaped as strings, not as regexes."""

    name: str
    op: str
    value: str

    def __post_init__(self) -> None:
        validate_label_name(self.name)
        if self.op not in _OPS:
            raise ValueError(f"matcher operator {self.op!r} is not one of {_OPS}")

    def render(self) -> str:
        return f"{self.name}{self.op}{quote(self.value)}"


@dataclass(frozen=True)
class Selector(Mapping[str, str]):
    """Equality matchers that find one tier's series, validated on construction.

    Empty values are refused: `tier=""` matches every series *without* a tier label, which is never what
    a plan means.
    """

    labels: tuple[tuple[str, str], ...]

    def __init__(self, labels: Mapping[str, str]) -> None:
        items = []
        for name, value in sorted(labels.items()):
            validate_label_name(name)
            if not isinstance(value, str):
                raise ValueError(f"label {name}: value {value!r} is not a string")
            if value == "":
                raise ValueError(f"label {name}: an empty value would match series without the label")
            escape(value)
            items.append((name, value))
        if not items:
            raise ValueError("a tier selector needs at least one label")
        object.__setattr__(self, "labels", tuple(items))

    @classmethod
    def of(cls, selector: Selector | Mapping[str, str]) -> Selector:
        return selector if isinstance(selector, Selector) else cls(selector)

    def matchers(self) -> tuple[Matcher, ...]:
        return tuple(Matcher(name, "=", value) for name, value in self.labels)

    def render(self) -> str:
        """`a="x",b="y"`: the inside of a `{...}` selector."""
        return ",".join(m.render() for m in self.matchers())

    def __getitem__(self, key: str) -> str:
        for name, value in self.labels:
            if name == key:
                return value
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self.labels)

    def __len__(self) -> int:
        return len(self.labels)

    def __str__(self) -> str:
        return "{" + self.render() + "}"
