"""A memory whose data changed is marked the same way in every form it is shown in."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import pytest
from helpers import render_markdown, visible_text

from hindsight_magic._capture.evidence import evidence_metadata, recorded
from hindsight_magic._memory.parsed_replies import RecalledMemory, Sources
from hindsight_magic._memory.results import RecallResult, ReflectResult
from hindsight_magic._ui.panel.browser import result_rows

NOW = datetime(2026, 12, 7, 12, tzinfo=timezone.utc)
REWRITTEN = datetime(2026, 12, 5, 9, tzinfo=timezone.utc).timestamp()
FLAG = "data changed since: data/sales.csv (re-written 2026-12-05)"


@pytest.fixture
def memories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[RecalledMemory]:
    """Two memories of a project's cells: one read data/sales.csv, since re-written; one
    read data/staff.json, untouched."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)
    made = []
    for name, text in (("sales.csv", "Q3 revenue fell 4 %"), ("staff.json", "17 people")):
        (tmp_path / "data" / name).write_text(f"{name} as the cell read it\n")
        files, root = recorded(f"open('data/{name}')", ran_at=4e9, whole_limit=1 << 20)
        meta = {"notebook": "sales.ipynb", "retain_cell": "3", **evidence_metadata(files, root)}
        made.append(RecalledMemory(id=name, text=text, metadata=meta))
    sales = tmp_path / "data" / "sales.csv"
    sales.write_text("sales.csv with late invoices\n")
    os.utime(sales, (REWRITTEN, REWRITTEN))
    return made


def test_text_html_markdown_and_the_prompt_block_mark_it(memories: list[RecalledMemory]) -> None:
    result = RecallResult("revenue", memories, "bank", NOW)
    sales, staff = repr(result).split("\n\n")[1:3]
    assert sales.endswith(f"· {FLAG}")
    assert "data changed" not in staff
    assert FLAG in visible_text(render_markdown(result._repr_markdown_()))
    assert FLAG in visible_text(result._repr_html_())
    assert f"- Q3 revenue fell 4 % ({FLAG})" in result.as_context()
    assert "17 people (" not in result.as_context()


def test_reflect_s_sources_the_panel_and_the_agents_mark_it(
    memories: list[RecalledMemory],
) -> None:
    answer = ReflectResult("It fell.", "q", Sources(memories=memories), NOW)
    assert FLAG in repr(answer)
    assert FLAG in visible_text(render_markdown(answer._repr_markdown_()))
    rows = result_rows(RecallResult("revenue", memories, "bank", NOW))
    assert FLAG in rows[0].provenance
    assert "data changed" not in rows[1].provenance
    assert memories[0].provenance_line(NOW).endswith(FLAG)  # what the agents' tools show


def test_a_file_gone_and_a_file_of_another_machine(
    memories: list[RecalledMemory], tmp_path: Path
) -> None:
    (tmp_path / "data" / "sales.csv").unlink()
    assert memories[0].provenance_line(NOW).endswith("data no longer here: data/sales.csv")
    elsewhere = RecalledMemory(
        id="x", text="t", metadata={**(memories[0].metadata or {}), "evidence_root": "other"}
    )
    assert elsewhere.provenance_line(NOW).endswith("evidence not checkable here")
