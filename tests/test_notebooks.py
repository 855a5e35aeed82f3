"""The notebooks in ``notebooks/`` are stored clean and wired into CI (``make test`` runs nbval).

Running them is ``pytest --nbval-lax notebooks/`` (``notebooks/conftest.py`` starts the server);
these checks are the cheap ones: what is stored, and that the Makefile really runs them.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
NAMES = ("data-science", "quickstart", "research-memory", "teaching-demo")
CHECK = "nbval-check-output"


def test_every_notebook_is_there() -> None:
    assert [path.stem for path in NOTEBOOKS] == list(NAMES)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_clean_except_the_outputs_nbval_compares(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code[0].source.strip() != ""
    for cell in code:
        checked = CHECK in cell.metadata.get("tags", []) or "NBVAL_CHECK_OUTPUT" in cell.source
        if not checked:  # nbval compares only cells stored with a count and outputs
            assert cell.execution_count is None, cell.source
            assert not cell.outputs, f"stored output in an unchecked cell: {cell.source[:60]}"
        assert all(output.output_type != "error" for output in cell.outputs)
    text = "\n".join(cell.source for cell in nb.cells)
    assert "127.0.0.1" not in text
    assert "localhost" not in text
    assert not re.search(r"sk-[A-Za-z0-9]{8}", text)
    assert "%load_ext hindsight_magic" in text


@pytest.mark.parametrize("name", [n for n in NAMES if n != "quickstart"])
def test_new_notebooks_compare_some_stable_outputs(name: str) -> None:
    nb = nbformat.read(REPO / "notebooks" / f"{name}.ipynb", as_version=4)
    checked = [c for c in nb.cells if CHECK in c.metadata.get("tags", [])]
    assert len(checked) >= 3
    for cell in checked:  # without a count nbval refuses the stored output
        assert cell.outputs, "a checked cell needs its expected output"
        assert isinstance(cell.execution_count, int)


def test_panel_cells_are_not_compared() -> None:
    for path in NOTEBOOKS:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code" and "%hindsight panel" in cell.source:
                assert "nbval-ignore-output" in cell.metadata.get("tags", []), path.name


def test_make_test_runs_lint_tests_and_the_notebooks() -> None:
    makefile = (REPO / "Makefile").read_text()
    target = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "lint" in target.splitlines()[0]
    assert "pytest" in target
    assert "--nbval-lax notebooks" in target
