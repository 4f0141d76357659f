"""Reading plan YAML defensively: a hostile or broken file is a PlanProblem with a line, never a crash or a hang.

What a plan file can do to a naive loader, and the bound that stops each:
- not UTF-8 -> the byte offset and line of the first bad byte;
- nesting deeper than the parser's recursion -> caught where the parser stood;
- aliases that expand exponentially ("billion laughs": 611 bytes -> gigabytes once followed) -> the expanded
  node count is measured over the node graph (memoised, so linear in the file) before anything follows it;
- an alias that contains itself -> refused;
- numbers: `.inf`, `.nan` and magnitudes beyond any plan quantity (1e308 turns into a 300-digit GPU count).
Everything after this module sees a finite, bounded tree.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = [
    "MAX_DEPTH",
    "MAX_NODES",
    "MAX_NUMBER",
    "MAX_PLAN_BYTES",
    "ReadProblem",
    "compose",
    "construct",
    "decode",
    "value_problems",
]

MAX_PLAN_BYTES = 4 * 2**20  # a real plan is a few KB
MAX_NODES = 50_000  # YAML nodes with every alias followed; a 30-tier plan has under 2,000
MAX_DEPTH = 32  # a plan nests 5 levels
MAX_INDENT = 8 * MAX_DEPTH  # columns of block indentation
_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_NUMBER = 1e18  # above the largest plan quantity (GPU FLOP/s ~2e15, bytes/s ~5e12)


@dataclass(frozen=True)
class ReadProblem(Exception):
    """Why a file is not a readable plan, and where (1-based line, when known)."""

    message: str
    line: int | None = None


class _Loader(yaml.SafeLoader):
    """Safe loading, duplicate keys refused, and `1e3` read as a number (YAML 1.2), not as the string '1e3'."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
        except TypeError:  # a list or mapping as a key: yaml raises its own clear error below
            break
        if duplicate:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"), list("-+0123456789")
)


def decode(raw: bytes) -> str:
    """UTF-8 text, or where the first byte that is not."""
    if len(raw) > MAX_PLAN_BYTES:
        raise ReadProblem(f"the file is {len(raw):,} bytes; a plan is at most {MAX_PLAN_BYTES:,}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        bad = raw[exc.start : exc.start + 1].hex()
        raise ReadProblem(f"not UTF-8 text: byte 0x{bad} at offset {exc.start} ({exc.reason})", line) from None


def compose(text: str) -> tuple[yaml.Node | None, _Loader]:
    """The node graph of the one document in `text`, checked for size, depth and alias cycles."""
    if len(text) > MAX_PLAN_BYTES:
        raise ReadProblem(f"the text is {len(text):,} characters; a plan is at most {MAX_PLAN_BYTES:,}")
    _indent_depth(text)
    _flow_depth(text)
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
    except RecursionError:
        raise ReadProblem(f"nested too deeply (a plan nests at most {MAX_DEPTH} levels)", loader.line + 1) from None
    except yaml.YAMLError as exc:
        loader.dispose()
        raise _yaml_problem(exc) from None
    if root is not None:
        _Measure().node(root, 0)
    return root, loader


def _indent_depth(text: str) -> None:
    """Block nesting shows as indentation; past MAX_INDENT columns PyYAML's scanner slows quadratically too."""
    for number, line in enumerate(text.splitlines(), 1):
        indent = len(line) - len(line.lstrip(" "))
        if indent > MAX_INDENT and line.strip() and not line.lstrip().startswith("#"):
            raise ReadProblem(f"indented {indent} columns: nested deeper than a plan goes", number)


def _flow_depth(text: str) -> None:
    """Refuse `[[[[...` / `{{{{...` nested past MAX_DEPTH before PyYAML sees it: its scanner rechecks every
    open level at each token (quadratic: 5,000 levels take seconds) before the composer's recursion fails.
    Brackets inside quotes and comments do not count; the bound is loose, so a rare miscount is harmless."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return  # too few brackets to nest that deep: skip the character walk
    depth, line, quote, comment, previous = 0, 1, "", False, " "
    for ch in text:
        if ch == "\n":
            line, comment = line + 1, False
        elif comment:
            pass
        elif quote:
            if ch == quote and not (quote == '"' and previous == "\\"):
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and previous in " \t\n":
            comment = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise ReadProblem(f"nested more than {MAX_DEPTH} levels deep", line)
        elif ch in "]}":
            depth = max(0, depth - 1)
        previous = ch if previous != "\\" or ch != "\\" else " "


def construct(root: yaml.Node | None, loader: _Loader) -> Any:
    """Python values from a node graph `compose` accepted."""
    try:
        return loader.construct_document(root) if root is not None else None
    except yaml.YAMLError as exc:
        raise _yaml_problem(exc) from None
    finally:
        loader.dispose()


def _yaml_problem(exc: yaml.YAMLError) -> ReadProblem:
    mark = getattr(exc, "problem_mark", None)
    reason = getattr(exc, "problem", None) or str(exc)
    return ReadProblem(str(reason), mark.line + 1 if mark else None)


class _Measure:
    """Expanded size and height of every node, each node measured once (aliases share their node)."""

    def __init__(self) -> None:
        self.done: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded nodes, height)
        self.active: set[int] = set()

    def node(self, node: yaml.Node, depth: int) -> tuple[int, int]:
        key = id(node)
        if key in self.active:
            raise ReadProblem("an alias refers to a node that contains it (a cycle)", node.start_mark.line + 1)
        known = self.done.get(key)
        if known is None:
            self.active.add(key)
            known = self._children(node, depth)
            self.active.discard(key)
            self.done[key] = known
        size, height = known
        if depth + height > MAX_DEPTH:
            raise ReadProblem(f"nested more than {MAX_DEPTH} levels deep", node.start_mark.line + 1)
        if size > MAX_NODES:
            raise ReadProblem(
                f"aliases expand this node to over {MAX_NODES:,} nodes (an alias bomb?); write the values out",
                node.start_mark.line + 1,
            )
        return known

    def _children(self, node: yaml.Node, depth: int) -> tuple[int, int]:
        size, height = 1, 1
        for child in _children(node):
            if depth + 1 > MAX_DEPTH:
                raise ReadProblem(f"nested more than {MAX_DEPTH} levels deep", child.start_mark.line + 1)
            s, h = self.node(child, depth + 1)
            size, height = size + s, max(height, h + 1)
            if size > MAX_NODES:
                break
        return size, height


def _children(node: yaml.Node) -> Iterator[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield key
            yield value
    elif isinstance(node, yaml.SequenceNode):
        yield from node.value


def value_problems(data: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(YAML path, message) for every number that is not finite or is beyond any plan quantity, and every
    string that is not valid Unicode text."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from value_problems(value, f"{path}.{key}" if path else str(key))
    elif isinstance(data, list):
        for i, item in enumerate(data):
            yield from value_problems(item, f"{path}[{i}]")
    elif isinstance(data, float) and not math.isfinite(data):
        yield path or "(root)", f"{data} is not a finite number"
    elif isinstance(data, int | float) and not isinstance(data, bool) and abs(data) > MAX_NUMBER:
        shown = f"{data:.3g}" if isinstance(data, float) else f"a {len(str(abs(data)))}-digit number"
        yield path or "(root)", f"{shown} is beyond any plan quantity (at most {MAX_NUMBER:.0e} in magnitude)"
    elif isinstance(data, str) and _SURROGATE.search(data):
        yield path or "(root)", "holds a lone surrogate (\\ud800-\\udfff), which is not valid UTF-8 text"
