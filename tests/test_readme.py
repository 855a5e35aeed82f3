"""The README says what the code does: its subcommand table is ``%hindsight help``'s, its
settings table names every setting, and its quick start runs as shown, cell by cell.

``%hindsight help`` is made from ``SUBCOMMANDS``; the README is written by hand, so these tests
keep the two in step (a newcomer once found ``server purge`` in neither and ``models reload``
only in the help).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import RunningServer
from kernels import Kernel

from hindsight_magic._ipython import magics
from hindsight_magic._ipython.subcommands import SUBCOMMANDS
from hindsight_magic._operations import AGENT_TOOLS, RECALL
from hindsight_magic._settings import HindsightSettings

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def table_after(heading: str) -> dict[str, str]:
    """The first Markdown table after ``heading``: first cell's first word → the whole row."""
    section = README.split(heading, 1)[1]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        if re.fullmatch(r"\|[-| :]*\|", line):  # the header's underline
            continue
        if line.startswith("|"):
            first = line.split("|")[1].strip().strip("`")
            rows[first.split(" ")[0]] = line
        elif rows:
            break
    return rows


def test_the_readme_lists_every_subcommand_and_no_other() -> None:
    rows = table_after("### `%hindsight` subcommands")
    rows.pop("subcommand", None)  # the header row
    assert sorted(name for name in rows if name) == sorted(SUBCOMMANDS)


def test_each_subcommands_syntax_in_the_readme_is_the_declared_one() -> None:
    # the first cell is the syntax %hindsight help makes from the subcommand's words
    rows = table_after("### `%hindsight` subcommands")
    for name, row in SUBCOMMANDS.items():
        syntax = row.syntax(name).replace("|", "\\|")
        cell = rows[name].split(" | ", 1)[0].removeprefix("| ")
        assert cell == f"`{syntax}`", f"the README's row of {name} should start `{syntax}`"


def test_the_readme_names_every_setting() -> None:
    rows = table_after("## Settings\n")
    named = {word for row in rows.values() for word in re.findall(r"`([a-z_]+)`", row)}
    named |= {f"{prefix}_timeout_ms" for prefix in ("retain", "recall")}  # written as `retain_…`
    missing = [name for name in HindsightSettings.setting_names() if name not in named]
    assert not missing


def test_the_readme_lists_each_magics_options_as_declared() -> None:
    # one line per magic, made from its operation's declaration (``_operations``)
    for magic, declared in (
        ("%retain", magics.RETAIN_OPTIONS),
        ("%recall", magics.RECALL_OPTIONS),
        ("%%reflect", magics.REFLECT_OPTIONS),
    ):
        line = declared.operation.options_line(magic)
        assert f"\n- `{line}`" in README, f"the README's options of {magic} should read: {line}"


def test_the_readme_calls_each_agent_tool_as_declared() -> None:
    rows = table_after("| tool | does |")
    calls = {}  # the calls the first cells show: `forget(id, reason?)`, `restore(id)`
    for row in rows.values():
        for call in re.findall(r"`([a-z_]+\([^`]*\))`", row.split(" | ", 1)[0]):
            calls[call.split("(")[0]] = (call, row)
    assert sorted(calls) == sorted(AGENT_TOOLS)
    for name, tool in AGENT_TOOLS.items():
        call, row = calls[name]
        assert call == tool.call, f"the README's {name} tool should read `{tool.call}`"
        for param in tool.params:
            if param.bounds:  # its range and default, as the tool's description says them
                assert f"`{param.name}` ({param.bounds})" in row, param.name


def test_the_readme_calls_recall_with_every_declared_option() -> None:
    # hm.recall takes the options %recall declares (tests/test_public_api.py), in its order
    keywords = ", ".join(f"{p.name}=None" for p in RECALL.params if p.kind != "variable")
    call = f"`recall(query, *, {keywords})`"
    assert f"\n| {call} |" in README, f"the README's API table should call {call}"


def quick_start_cells() -> list[str]:
    """The Python blocks of the README's quick start, each one cell as the README shows."""
    section = README.split("## Quick start\n", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```python\n(.*?)```", section, re.S)]


@pytest.mark.integration
def test_the_quick_start_runs_cell_by_cell_in_a_fresh_kernel(
    hindsight_server: RunningServer, bank_id: str, tmp_path: Path
) -> None:
    cells = quick_start_cells()
    assert cells[0] == "%load_ext hindsight_magic"  # alone: the cells after it read `?` as text
    recalls = [cell for cell in cells if cell.startswith("%recall")]
    assert recalls, "the quick start recalls"
    assert recalls[0].endswith("?"), "the quick start asks a question, as users do"
    env = {
        "HINDSIGHT_API_URL": hindsight_server.url,
        "HINDSIGHT_BANK_ID": bank_id,
        "HINDSIGHT_SCOPING": "global",
        "HINDSIGHT_JOURNAL_PATH": str(tmp_path / "journal.db"),
    }
    kernel = Kernel(env, tmp_path)
    try:
        shown = {cell: kernel.run(cell) for cell in cells}
    finally:
        kernel.close()
    for cell, output in shown.items():
        assert "not found" not in output, (cell, output)
        assert "Error" not in output, (cell, output)
    assert "dedupe on order_id before joins" in shown[recalls[0]]


def test_the_set_up_says_how_long_make_test_takes_and_the_faster_loop() -> None:
    """A newcomer's ``make test`` ran 41 minutes with no estimate anywhere: the set-up says
    what it takes, what dominates, and the loop to run instead."""
    set_up = README.split("## Set up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    said = " ".join(set_up.split())
    assert re.search(r"`make test` takes about \d+ minutes on an idle 2-core machine", said)
    assert "`make check`" in said
    assert "marked `integration`" in said
