"""Provenance: the metadata the extension writes, and what recall and reflect show of it."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import render_markdown, visible_text

from hindsight_magic._api.replies import Memory, Scores
from hindsight_magic._memory.parsed_replies import (
    RecalledMemory,
    Sources,
    parse_recall,
    parse_reflect,
)
from hindsight_magic._memory.provenance import (
    Provenance,
    age,
    parse_cells,
    portable_notebook,
    provenance_line,
    provenance_metadata,
    provenance_of,
)
from hindsight_magic._memory.results import NOTHING, RecallResult, ReflectResult

NOW = datetime(2025, 1, 5, 12, 0, tzinfo=timezone.utc)
EVIL = "<script>alert('x')</script>"


def ago(**delta: float) -> str:
    return (NOW - timedelta(**delta)).isoformat()


def written(source: str, cells: tuple[int, ...], **fields: Any) -> Memory:
    """A memory as the extension writes it, read back."""
    meta = provenance_metadata(source, "kernel-1", "/home/ana/field/fieldwork.ipynb", cells)
    return Memory(metadata=meta, **fields)


# -- the line -------------------------------------------------------------------------------------


def test_a_retained_fact_shows_notebook_cell_and_age() -> None:
    memory = written("%retain", (14,), text="The lab is cold", mentioned_at=ago(days=3))
    assert provenance_line(memory, NOW) == "fieldwork.ipynb · cell 14 · 3 days ago"
    assert provenance_of(memory) == Provenance(
        notebook="fieldwork.ipynb",
        cells=(),
        kernel_session="kernel-1",
        retain_cell=14,
        document_id=None,
        source="%retain",
    )


def test_an_auto_retained_transcript_shows_its_cells() -> None:
    memory = written("autoretain", (12, 13, 14), text="x", mentioned_at=ago(minutes=5))
    assert memory.metadata is not None
    assert memory.metadata["cells"] == "12-14"
    assert provenance_line(memory, NOW) == "fieldwork.ipynb · cells 12–14 · 5 minutes ago"
    assert provenance_of(memory).cells == (12, 13, 14)
    assert provenance_of(memory).retain_cell is None


def test_memories_written_by_others_show_what_they_have() -> None:
    theirs = Memory(text="x", document_id="report-7", mentioned_at=ago(hours=2))
    assert provenance_line(theirs, NOW) == "document report-7 · 2 hours ago"
    assert provenance_line(Memory(text="x", mentioned_at=ago(seconds=20)), NOW) == "just now"
    assert provenance_line(Memory(text="x"), NOW) == ""
    assert provenance_of(Memory(text="x")) == Provenance()
    # our own transcript's document id (the kernel session) says nothing the cells do not
    ours = written("autoretain", (3,), text="x", document_id="kernel-1")
    assert provenance_line(ours, NOW) == "fieldwork.ipynb · cell 3"
    # what earlier versions wrote: the kernel session under "session_id"
    old = Memory(text="x", metadata={"session_id": "k0", "notebook": "C:\\work\\a.ipynb"})
    assert provenance_of(old).kernel_session == "k0"
    assert provenance_line(old, NOW) == "a.ipynb"


@pytest.mark.parametrize(
    ("delta", "expected"),
    [
        (timedelta(seconds=59), "just now"),
        (timedelta(seconds=-30), "just now"),  # a clock a little ahead
        (timedelta(minutes=1), "1 minute ago"),
        (timedelta(hours=23, minutes=59), "23 hours ago"),
        (timedelta(days=1), "1 day ago"),
        (timedelta(days=29), "29 days ago"),
        (timedelta(days=40), "2024-11-26"),
        (timedelta(hours=-2), "2025-01-05"),  # in the future: the date, not a negative age
    ],
)
def test_age(delta: timedelta, expected: str) -> None:
    assert age((NOW - delta).isoformat(), NOW) == expected


def test_age_of_a_time_that_is_not_iso_is_shown_as_it_is() -> None:
    assert age("last Tuesday", NOW) == "last Tuesday"
    assert age(None, NOW) == ""


@pytest.mark.parametrize(
    ("text", "cells", "shown"),
    [
        ("7", (7,), "cell 7"),
        ("3, 5, 7-9", (3, 5, 7, 8, 9), "cells 3, 5, 7–9"),
        ("1,3,5,7,9", (1, 3, 5, 7, 9), "cells 1–9"),  # too many gaps to list: the span
        ("1-999999999", (), ""),  # not cell numbers (and never expanded)
        ("9-3", (), ""),
        ("cell 4", (), ""),
        ("", (), ""),
    ],
)
def test_cells_from_other_writers_metadata(text: str, cells: tuple[int, ...], shown: str) -> None:
    assert parse_cells(text) == cells
    memory = Memory(text="x", metadata={"cells": text})
    assert provenance_line(memory, NOW) == shown


# -- recall ---------------------------------------------------------------------------------------


def lab_result() -> RecallResult:
    memory = written(
        "%retain",
        (14,),
        text="The lab is cold",
        type="world",
        tags=["a", "b"],
        scores=Scores(final=1.1),  # the server's, in its own order: never shown
        mentioned_at=ago(days=3),
    )
    ranked = RecalledMemory.model_validate({**memory.model_dump(), "relevance": 0.8134})
    return RecallResult("lab", [ranked, Memory(text="Plain fact")], "bank", NOW)


def test_recall_shows_provenance_tags_and_relevance_in_text_markdown_and_html() -> None:
    result = lab_result()
    line = (
        "The lab is cold [world] — fieldwork.ipynb · cell 14 · 3 days ago · tags: a, b · "
        "relevance 0.81"
    )
    assert repr(result).splitlines()[2] == f"#1 {line}"
    assert repr(result).splitlines()[4] == "#2 Plain fact"
    assert line in visible_text(render_markdown(result._repr_markdown_()))
    page = result._repr_html_()
    assert "<th style='text-align:left'>from</th>" in page
    assert "title='2025-01-02 12:00 UTC · fieldwork.ipynb'" in page
    assert ">fieldwork.ipynb · cell 14 · 3 days ago</td>" in page
    assert "<td>a, b</td>" in page
    assert "<td>0.81</td>" in page
    assert "1.1" not in page
    # the prompt block keeps its documented form
    assert "- The lab is cold [world] (2025-01-02T12:00:00+00:00)" in result.as_context()


def test_recall_items_expose_their_provenance_as_fields() -> None:
    result = lab_result()
    assert result[0].provenance.notebook == "fieldwork.ipynb"  # never the home folder
    assert result[0].provenance.notebook_name == "fieldwork.ipynb"
    assert result[0].provenance.retain_cell == 14
    assert result[0].provenance.source == "%retain"
    assert result[0].provenance_line(NOW) == "fieldwork.ipynb · cell 14 · 3 days ago"
    assert result[1].provenance == Provenance()


def test_provenance_is_escaped_in_html_and_markdown() -> None:
    memory = Memory(text="x", metadata={"notebook": "/tmp/<img src=x onerror=alert(1)>.ipynb"})
    result = RecallResult("q", [memory], "bank", NOW)
    for page in (result._repr_html_(), render_markdown(result._repr_markdown_())):
        assert "<img" not in page
        assert "<img src=x onerror=alert(1)>.ipynb" in visible_text(page)


def test_a_real_recall_reply_is_parsed_with_its_metadata() -> None:
    reply = {  # as Hindsight 1.x returns it (fields trimmed)
        "results": [
            {
                "id": "ef3f",
                "text": "The lab freezer is kept at minus 80 degrees.",
                "type": "world",
                "entities": ["Alice"],
                "mentioned_at": "2025-01-02T10:00:00.060000+00:00",
                "document_id": "doc-1",
                "metadata": {"retain_cell": "14", "source": "%retain", "notebook": "f.ipynb"},
                "chunk_id": "bank_doc-1_0",
                "tags": ["b", "a"],
                "scores": {"final": 0.92, "semantic": 0.55},
            }
        ],
        "entities": {"Alice": {"entity_id": "f2", "canonical_name": "Alice"}},
    }
    [memory] = parse_recall(reply)
    assert memory.chunk_id == "bank_doc-1_0"
    assert memory.provenance_line(NOW) == "f.ipynb · cell 14 · 3 days ago"
    assert parse_recall(None) == []


# -- reflect's sources ----------------------------------------------------------------------------

REFLECT_REPLY = {  # as Hindsight 1.x returns it with include.facts
    "text": "The freezer is at minus 80 degrees.",
    "based_on": {
        "memories": [
            {
                "id": "ef3f",
                "text": "The lab freezer is kept\n\nat minus 80 degrees.",
                "type": "world",
                "mentioned_at": "2025-01-02T12:00:00+00:00",
                "document_id": None,
                "metadata": {"notebook": "/w/fieldwork.ipynb", "retain_cell": "14"},
                "tags": ["a"],
            },
            {"id": "4b96", "text": "An observation.", "type": "observation", "metadata": {}},
        ],
        "mental_models": [
            {"id": "m1", "text": "Lab Facts: the lab is cold", "context": "concept (structural)"}
        ],
        "directives": [{"id": "d1", "name": "Be brief", "content": "Answer briefly."}],
    },
    "usage": {"total_tokens": 60},
}


def test_reflect_lists_what_the_answer_is_based_on_in_plain_text() -> None:
    text, sources = parse_reflect(REFLECT_REPLY)
    assert sources is not None
    answer = ReflectResult(text, "q", sources, NOW)
    assert str(answer) == "The freezer is at minus 80 degrees."  # the str is the answer alone
    assert repr(answer) == (
        "The freezer is at minus 80 degrees.\n\n"
        "Based on (2 memories, 1 mental model, 1 directive):\n"
        "  Memories:\n"
        "    - The lab freezer is kept at minus 80 degrees. [world] — "
        "fieldwork.ipynb · cell 14 · 3 days ago · tags: a\n"
        "    - An observation. [observation]\n"
        "  Mental models:\n"
        "    - Lab Facts — m1\n"
        "  Directives:\n"
        "    - Be brief"
    )


def test_reflect_sources_are_a_collapsed_escaped_block_in_markdown() -> None:
    _, sources = parse_reflect(REFLECT_REPLY)
    assert sources is not None
    sources.memories[1].text = EVIL
    markdown = ReflectResult("**Cold**", "q", sources, NOW)._repr_markdown_()
    answer, block = markdown.split("\n\n", 1)
    assert answer == "**Cold**"
    assert block.startswith("<details><summary><b>Based on</b> (2 memories, 1 mental model")
    assert block.endswith("</details>")
    assert "\n" not in block  # one HTML block: a blank line would end it
    assert (
        "<li>The lab freezer is kept at minus 80 degrees. [world] <small>— fieldwork.ipynb" in block
    )
    assert "<script>" not in block
    assert "&lt;script&gt;" in block


def test_mental_models_are_named_by_the_cache_else_by_their_text() -> None:
    _, sources = parse_reflect(REFLECT_REPLY)
    assert sources is not None
    assert sources.mental_models[0].name == "Lab Facts"
    named = sources.named({"m1": "Lab: Facts & Figures"})
    assert named.mental_models[0].name == "Lab: Facts & Figures"
    bare = parse_reflect({"text": "", "based_on": {"mental_models": [{"id": "m2", "text": "x"}]}})
    assert bare[1] is not None
    assert bare[1].mental_models[0].name == "m2"


def test_nothing_to_cite_and_no_sources_asked() -> None:
    assert repr(ReflectResult("answer", "q", Sources(), NOW)) == f"answer\n\n{NOTHING}"
    assert repr(ReflectResult("answer", "q", None, NOW)) == "answer"
    assert ReflectResult("answer")._repr_markdown_() == "answer"
    assert parse_reflect({"text": "a"}) == ("a", None)


def test_many_sources_are_counted_and_kept() -> None:
    memories = [{"text": f"fact {i}"} for i in range(13)]
    _, sources = parse_reflect({"text": "a", "based_on": {"memories": memories}})
    assert sources is not None
    answer = ReflectResult("a", "q", sources, NOW)
    assert "    … and 3 more (in .based_on)" in repr(answer)
    assert "fact 9" in repr(answer)
    assert "fact 10" not in repr(answer)
    assert len(answer.based_on or ()) == 13


def test_an_agents_memory_says_which_agent_wrote_it() -> None:
    from hindsight_magic._memory.provenance import AgentOrigin

    meta = provenance_metadata(
        "agent", "k1", None, agent=AgentOrigin("claude-code", "2.0.14", "churn")
    )
    assert meta == {
        "source": "agent",
        "kernel_session": "k1",
        "agent": "claude-code",
        "agent_version": "2.0.14",
        "project": "churn",
    }
    memory = Memory(id="m", text="t", metadata=meta, mentioned_at=ago(minutes=2))
    assert provenance_line(memory, NOW) == "agent (claude-code) · 2 minutes ago"
    found = provenance_of(memory)
    assert (found.source, found.agent, found.agent_version, found.project) == (
        "agent",
        "claude-code",
        "2.0.14",
        "churn",
    )
    unnamed = Memory(id="m", text="t", metadata={"source": "agent"}, mentioned_at=ago(hours=1))
    assert provenance_line(unnamed, NOW) == "agent · 1 hour ago"
    posing = Memory(id="m", text="t", metadata={"agent": "x"}, document_id="d")  # no source
    assert not provenance_line(posing, NOW).startswith("agent")


# -- where the notebook is, without the user's home ------------------------------------------------


def test_a_notebook_is_stored_relative_to_its_project_never_by_its_home_path(
    tmp_path: Path,
) -> None:
    """A team bank or a course snapshot must not carry everyone's home folders."""
    repo = tmp_path / "home" / "alice" / "churn"
    (repo / ".git").mkdir(parents=True)
    (repo / "notebooks").mkdir()
    inside = repo / "notebooks" / "report.ipynb"
    loose = tmp_path / "home" / "alice" / "Downloads" / "try.ipynb"
    assert portable_notebook(str(inside)) == "notebooks/report.ipynb"
    assert portable_notebook(str(loose)) == "try.ipynb"
    assert portable_notebook("work/analysis.ipynb") == "work/analysis.ipynb"  # Jupyter's own
    assert portable_notebook("../../alice/secret.ipynb") == "secret.ipynb"
    meta = provenance_metadata("%retain", "kernel-1", str(inside), (3,))
    assert meta["notebook"] == "notebooks/report.ipynb"
    assert "alice" not in json.dumps(meta)


def test_a_memory_s_source_is_a_member_and_is_stored_as_its_word() -> None:
    """The provenance ``source`` is a ``Source`` member in code and the same word in the
    metadata the server keeps, so memories written by earlier versions read the same."""
    from hindsight_magic._capture.autoretain import Source

    meta = provenance_metadata(Source.AGENT, "kernel-1", None)
    assert json.loads(json.dumps(meta))["source"] == "agent"
    assert [str(source) for source in Source] == ["%retain", "autoretain", "python api", "agent"]
    assert provenance_of(written("%retain", (3,))).source == Source.RETAIN_MAGIC


def test_a_memory_tagged_with_its_project_says_which_project() -> None:
    """Per-project-tagged memories carry ``project:<label>``: that is their project (an agent's
    own ``project`` field wins)."""
    meta = provenance_metadata("%retain", "k1", "churn.ipynb", (3,))
    tagged = Memory(id="m", text="t", metadata=meta, tags=["project:churn-model", "q3"])
    assert provenance_of(tagged).project == "churn-model"
    agent = {"source": "agent", "agent": "claude-code", "project": "from-agent"}
    both = Memory(id="m", text="t", metadata=agent, tags=["project:churn-model"])
    assert provenance_of(both).project == "from-agent"
    untagged = Memory(id="m", text="t", metadata=meta, tags=["q3", "project:"])
    assert provenance_of(untagged).project is None
