"""Which cell a memory is and which version of it: the names that keep re-runs from
multiplying memories (``_capture/identity.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from hindsight_magic._capture.identity import (
    CELL_DOCUMENT,
    NotebookCells,
    cell_document,
    identify,
    retained_line,
    version_of,
)

CHURN = "project\x1fchurn.ipynb"


def pieces(body: str, number: int = 4) -> list[str]:
    return [f"[cell {number}]\n{body}"]


def test_a_cells_version_ignores_its_execution_count_and_a_reprs_address() -> None:
    body = "model = Model()\nmodel\n[result]\n<Model object at 0x7f3a2b1c9d00>"
    again = body.replace("0x7f3a2b1c9d00", "0x7f99aa001122")
    assert version_of(pieces(body, 4)) == version_of(pieces(again, 17))
    assert version_of(pieces(body)) != version_of(pieces(body.replace("Model()", "Model(2)")))
    changed_result = "auc = score()\nauc\n[result]\n0.84"
    assert version_of(pieces(changed_result)) != version_of(
        pieces(changed_result.replace("0.84", "0.81"))
    )


def test_a_cell_is_named_by_jupyters_id_then_the_file_then_its_position_then_its_source() -> None:
    text = pieces("x = 1")
    by_id = identify(text, source="x = 1", number=4, where=CHURN, cell_id="a1b2")
    moved = identify(text, source="x = 1", number=9, where=CHURN, cell_id="a1b2")
    assert by_id == moved  # a Jupyter id survives moves and restarts
    assert by_id.cell == "a1b2"
    from_file = identify(text, source="x = 1", number=4, where=CHURN, cell_id=None, in_file="a1b2")
    assert from_file.key == by_id.key  # a headless run names a cell as JupyterLab does
    position = identify(text, source="x = 1", number=4, where=CHURN, cell_id=None, headless=True)
    assert position.cell == "n4"
    plain = identify(text, source="x = 1", number=4, where="kernel-9f0c", cell_id=None)
    assert plain.cell.startswith("s")
    other = identify(pieces("x = 2"), source="x = 2", number=4, where="kernel-9f0c", cell_id=None)
    assert other.key != plain.key  # elsewhere, changed code is another cell
    elsewhere = identify(
        text, source="x = 1", number=4, where="other\x1fchurn.ipynb", cell_id="a1b2"
    )
    assert elsewhere.key != by_id.key  # another project's churn.ipynb


def test_a_document_id_carries_the_cell_and_its_version() -> None:
    identity = identify(pieces("x = 1"), source="x = 1", number=4, where=CHURN, cell_id="a1b2")
    document_id = identity.document_id(2)
    assert document_id.startswith(identity.prefix)
    assert identity.prefix.startswith(identity.notebook_prefix)
    assert identity.notebook_prefix.startswith(CELL_DOCUMENT)
    parsed = cell_document(document_id)
    assert parsed is not None
    assert (parsed.key, parsed.version, parsed.piece) == (identity.key, identity.version, 2)
    for other in ("hm-0123456789abcdef0123456789abcdef-3", "notes-2024", "", None):
        assert cell_document(other) is None


def notebook_file(folder: Path, sources: list[str]) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    notebook.cells.insert(1, nbformat.v4.new_markdown_cell("# a heading"))
    path = folder / "nightly.ipynb"
    nbformat.write(notebook, path)
    return path


def test_a_retain_lines_changed_text_is_a_new_version_of_the_same_line() -> None:
    three, six = (retained_line(CHURN, f"The cut-off is {n} months", "c1", 1) for n in (3, 6))
    assert three.key == six.key  # the same line of the same cell …
    assert three.version != six.version  # … with another text: a new version of it
    beside = retained_line(CHURN, "The cut-off is 3 months", "c1", 2)
    assert beside.key != three.key  # a line added beside it is a memory of its own
    assert retained_line(CHURN, "The cut-off is 3 months", "c2", 1).key != three.key
    found = cell_document(six.document_id(1))
    assert found is not None
    assert (found.key, found.version) == (six.key, six.version)


def test_a_headless_run_finds_each_cells_id_in_its_notebook_file(tmp_path: Path) -> None:
    path = notebook_file(tmp_path, ["import pandas as pd", "x = 1", "x = 1", "y = 2  "])
    ids = [
        cell["id"] for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"
    ]
    cells = NotebookCells()
    assert cells.cell_id(path, "import pandas as pd") == ids[0]
    assert cells.cell_id(path, "x = 1") == ids[1]  # equal sources take their ids in order
    assert cells.cell_id(path, "x = 1") == ids[2]
    assert cells.cell_id(path, "y = 2") == ids[3]  # trailing blanks are not a change
    assert cells.cell_id(path, "seed = 4") is None  # papermill's injected parameters
    assert cells.cell_id(None, "x = 1") is None
    assert cells.cell_id(tmp_path / "gone.ipynb", "x = 1") is None


def test_a_notebook_file_without_ids_or_unreadable_names_no_cell(tmp_path: Path) -> None:
    old = tmp_path / "old.ipynb"
    old.write_text(json.dumps({"cells": [{"cell_type": "code", "source": ["x = 1"]}]}))
    assert NotebookCells().cell_id(old, "x = 1") is None  # nbformat before 4.5
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json")
    assert NotebookCells().cell_id(broken, "x = 1") is None
    listed = tmp_path / "listed.ipynb"
    listed.write_text(
        json.dumps({"cells": [{"cell_type": "code", "id": "c1", "source": ["x", " = 1"]}]})
    )
    assert NotebookCells().cell_id(listed, "x = 1") == "c1"  # a source stored as lines
