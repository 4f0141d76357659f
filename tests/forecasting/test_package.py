"""The package's names load on first use (PEP 562), and each is the object its home module defines."""

from __future__ import annotations

import importlib

import pytest

import forecasting


@pytest.mark.parametrize("name", sorted(forecasting.__all__))
def test_every_exported_name_is_its_home_module_s_object(name: str) -> None:
    value = getattr(forecasting, name)
    homes = getattr(forecasting, "_HOME", {})
    where = homes.get(name, "forecasting.regularize")  # the one name loaded eagerly (see the package)
    assert getattr(importlib.import_module(where), name) is value


def test_a_function_named_like_its_submodule_stays_the_function() -> None:
    """`forecasting.regularize` is the function even after the submodule of that name was imported."""
    importlib.import_module("forecasting.regularize")
    assert callable(forecasting.regularize) and forecasting.regularize.__name__ == "regularize"


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = forecasting.nope
