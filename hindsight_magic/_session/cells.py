"""Which document a cell that ran, or a ``%retain`` line in it, becomes (``CellDocuments``).

A cell is known by its identity in the project and notebook (``_capture/identity.py``), and
each identity has versions (``_memory/versions.py``): an unchanged re-run sends nothing, a
changed cell supersedes its earlier version. A ``%retain`` line's text is a decision of its
cell, kept at its position among the cell's texts whatever lines move around it. In a headless
run (papermill, nbconvert), which has no cell ids, a cell is found in its notebook file by its
source.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from .._capture.evidence import with_evidence
from .._capture.identity import (
    CellPlan,
    NotebookCells,
    identify,
    retained_document,
    retained_line,
    version_of,
)
from .._memory.provenance import PYTHON_API, RETAIN_MAGIC, portable_notebook
from .._text import local_timestamp

if TYPE_CHECKING:
    from pathlib import Path

    from .._capture.autoretain import Entry, Source
    from .._machine import HeadlessNotebook
    from .._memory.scope import BankScope
    from .._memory.versions import CellVersions

RETAINED = (RETAIN_MAGIC, PYTHON_API)  # retained on purpose: from a cell, once per text


class Placed(Protocol):
    """Where the session runs, as a cell's identity needs it (the session; each may change)."""

    @property
    def scope(self) -> BankScope: ...

    @property
    def session_id(self) -> str: ...

    @property
    def label(self) -> str: ...

    @property
    def notebook(self) -> str | None: ...

    @property
    def run_id(self) -> str | None: ...


class CellDocuments:
    """The documents of one session's cells and ``%retain`` lines, and what each run of a cell
    sends (``plan``, on the worker) or retains (``retained``, on the kernel thread)."""

    def __init__(
        self, *, place: Placed, headless: HeadlessNotebook | None, versions: CellVersions
    ) -> None:
        self._place = place
        self._headless = headless
        self._versions = versions
        self._notebook_cells = NotebookCells()  # a headless run's cells, by their source
        # a cell's %retain texts: which position holds which text (``_retain_line``), and
        # the positions the cell's running run has taken
        self._retain_texts: dict[str, dict[int, str]] = {}
        self._retain_run: dict[str, tuple[tuple[int, ...], set[int], int]] = {}
        self._retain_cells = NotebookCells()  # a headless run's %retain cells, by their source
        self._retain_cell: tuple[tuple[int, ...], str | None] = ((), None)

    def retained(
        self,
        content: str,
        *,
        source: Source,
        cells: Sequence[int],
        cell_id: str | None,
        cell_source: str | None,
        dated: str,
        when: str,
    ) -> str | None:
        """The document a text retained on purpose from a cell (``%retain``, ``hm.retain``)
        becomes; None for any other memory. A ``%retain`` line in a cell Jupyter (or, in a
        headless run, the notebook file: ``cell_source``) names is a decision of that cell,
        versioned: a changed text supersedes the one its position held (``when`` it ran);
        elsewhere the same text is the same memory when it runs again."""
        if not cells or source not in RETAINED:
            return None
        if source == RETAIN_MAGIC and not cell_id and cell_source:
            cell_id = self._headless_cell_id(cell_source, cells)
        if source != RETAIN_MAGIC or not cell_id:
            return retained_document(self._where(), content, dated)
        said = retained_line(self._where(), content, cell_id, 0, dated).version
        position = self._retain_line(cell_id, cells, said)
        line = retained_line(self._where(), content, cell_id, position, dated)
        label = f"a %retain line of {self._cell_name(cells[0])}"
        self._versions.retained(self._place.scope.bank_id, line, when, label)
        return line.document_id(1)

    def _retain_line(self, cell_id: str, cells: Sequence[int], version: str) -> int:
        """Which position (from 1) of cell ``cell_id`` the text ``version`` (its hash) of a
        ``%retain`` line takes in this run: a text the cell retained before keeps its own
        position wherever its line now stands (lines removed, moved or swapped change
        nothing); a changed text takes the position of its line (the n-th text of this run),
        superseding what stood there, unless a text kept in this run holds it (then the next
        free one: a decision of its own). A removed line's decision stays as it was."""
        texts = self._retain_texts.setdefault(cell_id, {})
        run, taken, count = self._retain_run.get(cell_id, ((), set(), 0))
        if run != tuple(cells):
            taken, count = set(), 0
        count += 1
        kept = [p for p, text in sorted(texts.items()) if text == version and p not in taken]
        if kept:
            position = kept[0]
        else:
            position = count
            while position in taken:
                position += 1
        taken.add(position)
        texts[position] = version
        self._retain_run[cell_id] = (tuple(cells), taken, count)
        return position

    def _headless_cell_id(self, source: str, cells: Sequence[int]) -> str | None:
        """In a headless run, the id the notebook file gives the running cell's ``source``
        (read in this magic, on the kernel thread; once per run of a cell); None elsewhere."""
        if self._place.run_id is None:
            return None
        run, found = self._retain_cell
        if run != tuple(cells):
            found = self._retain_cells.cell_id(self._notebook_file(), source)
            self._retain_cell = (tuple(cells), found)
        return found

    def _cell_name(self, number: int) -> str:
        """``cell 4 of churn.ipynb`` (``cell 4`` when the notebook is not known)."""
        notebook = self._place.notebook
        return f"cell {number} of {portable_notebook(notebook)}" if notebook else f"cell {number}"

    def plan(self, entry: Entry) -> CellPlan | None:
        """What a cell that ran becomes (``_memory/versions.py``): its identity — Jupyter's
        cell id, else (headless runs) the id its notebook file gives its source, else its
        position in the run, else its source — in this project and notebook; None when its
        version is already the cell's current one. Runs on the worker."""
        notebook = self._place.notebook
        where = self._where()
        headless = self._place.run_id is not None and entry.cell_id is None
        in_file = (
            self._notebook_cells.cell_id(self._notebook_file(), entry.cell.source)
            if headless
            else None
        )
        # a cell is known by what it showed: the texts the extension showed that are cut out
        # of what is sent depend on what was recalled before, not on the cell
        shown = entry.pieces_as_shown()
        identity = identify(
            shown if shown is not None else entry.pieces,
            source=entry.cell.source,
            number=entry.cell.number,
            where=where,
            cell_id=entry.cell_id,
            in_file=in_file,
            headless=headless and notebook is not None,
        )
        name = self._cell_name(entry.cell.number)
        as_sent = version_of(entry.pieces) if shown is not None else None
        read = entry.evidence[0]  # a re-run on changed data is a new version
        if read:
            identity = replace(identity, version=with_evidence(identity.version, read))
            as_sent = with_evidence(as_sent, read) if as_sent is not None else None
        ran_at = local_timestamp(entry.ran_at)
        return self._versions.plan(
            self._place.scope.bank_id, identity, len(entry.pieces), ran_at, name, as_sent=as_sent
        )

    def _where(self) -> str:
        """What a cell's identity is scoped to: the project and notebook, else the kernel."""
        place = self._place
        notebook = place.notebook
        return f"{place.label}\x1f{portable_notebook(notebook)}" if notebook else place.session_id

    def _notebook_file(self) -> Path | None:
        """The notebook file a headless run executes, when it can be found."""
        found = self._headless
        return found.path if found is not None and found.path and found.path.is_file() else None
