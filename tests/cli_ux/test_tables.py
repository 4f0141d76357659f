"""`print_table`: no word is cut at any width; a table too narrow for its longest words becomes keyed lines."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table

from monitor.cli.tables import column_widths, print_table

MODEL = "neuralmagic/Meta-Llama-3.3-70B-Instruct-FP8-dynamic"  # 51 characters, no space to wrap at
PROSE = "the served model's name, as vLLM reports it in model_name, and what planwatch reads from it"


def _table(*, ratios: bool) -> Table:
    table = Table(title="models", expand=ratios)
    table.add_column("tier", no_wrap=True)
    table.add_column("model", ratio=1 if ratios else None)
    table.add_column("note", ratio=3 if ratios else None)
    table.add_row("copilot-enterprise-support-replies", MODEL, PROSE)
    table.add_row("", "meta-llama/Llama-3.1-8B-Instruct", "a second model served by the same tier")
    return table


def _printed(table: Table, width: int) -> list[str]:
    out = io.StringIO()
    print_table(Console(file=out, width=width, color_system=None), table)
    return out.getvalue().splitlines()


@pytest.mark.parametrize("ratios", [False, True], ids=["natural columns", "ratio columns that expand"])
@pytest.mark.parametrize("width", [200, 130, 110])
def test_a_table_that_can_hold_its_longest_words_keeps_them_whole(ratios: bool, width: int) -> None:
    widths = column_widths(Console(width=width), _table(ratios=ratios))
    assert widths is not None and widths[0] >= len("copilot-enterprise-support-replies") and widths[1] >= len(MODEL)
    lines = _printed(_table(ratios=ratios), width)
    assert max(len(line) for line in lines) <= width
    assert any(MODEL in line for line in lines) and any("copilot-enterprise-support-replies" in x for x in lines)


@pytest.mark.parametrize("width", [100, 80])
def test_a_table_too_narrow_for_its_longest_words_becomes_keyed_lines(width: int) -> None:
    assert column_widths(Console(width=width), _table(ratios=True)) is None  # 34 + 51 + words + borders > 100
    lines = _printed(_table(ratios=True), width)
    assert max(len(line) for line in lines) <= width
    assert lines[0].strip() == "models" and lines[1].strip() == "copilot-enterprise-support-replies"
    assert lines[2].strip() == f"model: {MODEL}"  # whole, on the line of its header
    assert any(line.strip() == "model: meta-llama/Llama-3.1-8B-Instruct" for line in lines)  # a continued row
    assert " ".join(x.strip() for x in lines).count("note: ") == 2 and "│" not in "".join(lines)
