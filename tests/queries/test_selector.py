"""Selector rendering: label values always escaped, label names validated (pure, table-driven)."""

from __future__ import annotations

import pytest

from monitor.queries import Matcher, Selector, escape, quote, validate_label_name


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        pytest.param("standard", '"standard"', id="a plain value is quoted as is"),
        pytest.param('we"ird', '"we\\"ird"', id="a double quote is backslash-escaped"),
        pytest.param("back\\slash", '"back\\\\slash"', id="a backslash is doubled"),
        pytest.param("new\nline", '"new\\nline"', id="a newline becomes \\n"),
        pytest.param("cr\rtab\t", '"cr\\rtab\\t"', id="carriage return and tab use their short escapes"),
        pytest.param("bell\x07del\x7f", '"bell\\x07del\\x7f"', id="other control characters become \\xNN"),
        pytest.param(
            '"} or vector(1) or {x="',
            '"\\"} or vector(1) or {x=\\""',
            id="an injection attempt stays inside one string literal",
        ),
        pytest.param('\\"', '"\\\\\\""', id="backslash then quote escape independently"),
        pytest.param("ünïcødé $tier", '"ünïcødé $tier"', id="non-ASCII text and dollar signs pass unchanged"),
        pytest.param("it's", '"it\'s"', id="a single quote needs no escape in a double-quoted string"),
    ],
)
def test_values_are_escaped_for_promql_string_literals(value: str, literal: str) -> None:
    assert quote(value) == literal


def test_a_lone_surrogate_is_refused() -> None:
    with pytest.raises(ValueError, match="surrogate"):
        escape("bad\ud800")


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("", id="an empty name"),
        pytest.param("1tier", id="a name starting with a digit"),
        pytest.param("tier-name", id="a name with a dash"),
        pytest.param('tier="x",y', id="a name smuggling a matcher"),
        pytest.param("__name__", id="a reserved double-underscore name"),
        pytest.param("tier name", id="a name with a space"),
        pytest.param("vllm:tier", id="a name with a colon (metric names only)"),
    ],
)
def test_invalid_label_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError):
        validate_label_name(name)


@pytest.mark.parametrize(
    ("labels", "rendered"),
    [
        pytest.param({"tier": "standard"}, 'tier="standard"', id="one label"),
        pytest.param(
            {"namespace": "llm", "model_name": "meta-llama/Llama-3.3-70B-Instruct"},
            'model_name="meta-llama/Llama-3.3-70B-Instruct",namespace="llm"',
            id="several labels render sorted by name",
        ),
        pytest.param({"_private": "x"}, '_private="x"', id="a leading single underscore is a valid name"),
    ],
)
def test_selectors_render_equality_matchers(labels: dict[str, str], rendered: str) -> None:
    assert Selector(labels).render() == rendered


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        pytest.param({}, "at least one label", id="an empty selector would match every tier"),
        pytest.param({"tier": ""}, "empty value", id="an empty value matches series without the label"),
        pytest.param({"tier-x": "a"}, "label name", id="an invalid label name"),
        pytest.param({"tier": 3}, "not a string", id="a value that is not a string"),
    ],
)
def test_bad_selectors_are_refused(labels: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Selector(labels)  # type: ignore[arg-type]


def test_a_selector_is_a_read_only_mapping() -> None:
    sel = Selector({"tier": "a", "namespace": "llm"})
    assert dict(sel) == {"namespace": "llm", "tier": "a"}
    assert sel["tier"] == "a"
    assert len(sel) == 2
    assert Selector.of(sel) is sel
    assert Selector({"tier": "a", "namespace": "llm"}) == sel
    assert str(sel) == '{namespace="llm",tier="a"}'


def test_matcher_operators_are_checked() -> None:
    assert Matcher("tier", "=~", "a|b").render() == 'tier=~"a|b"'
    with pytest.raises(ValueError, match="operator"):
        Matcher("tier", "==", "a")
