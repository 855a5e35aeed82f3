"""Which notebook cell a memory is, and which version of it: what keeps re-runs from
multiplying memories.

A notebook's memory is its current understanding plus its history, not a log of every
execution. So an auto-retained cell is known by a **cell key** (its notebook and its cell)
and a **version** (a hash of what it retains: its source and outputs, not its execution count
or the time it ran). Re-running an unchanged cell gives the same key and version, so nothing
new is sent; a changed cell gives the same key and a new version, which supersedes the old.

How a cell is named, best first:

1. **Jupyter's cell id.** JupyterLab, Notebook 7 and VS Code send it with every execution
   (nbformat 4.5), and IPython passes it to ``post_run_cell`` as ``info.cell_id``. It survives
   edits, moves and restarts.
2. **Headless runs** (papermill, nbclient, ``jupyter nbconvert --execute``) send no id, but
   the notebook file they run has them: the executed source is looked up in that file
   (``NotebookCells``), so a nightly papermill run and a JupyterLab session of the same
   notebook name a cell alike. A cell the file does not hold (papermill's injected parameters)
   is named by its position in the run (``n4``): a headless run goes top to bottom, so the
   execution count is the cell's index.
3. **Elsewhere** (a kernel with no id and no notebook file, plain IPython) a cell is named by
   its source (``s<hash>``): re-running the same code adds nothing, and changed code is a new
   cell, because nothing says which one it replaced.

A memory a cell retains on purpose (``%retain``, ``hm.retain`` in a cell) is named among the
notebook's documents by its text (``retained_document``): running the cell again retains the
same text under the same id, which the server already holds, so nothing is sent again. A
``%retain`` line is the cell's decision: in a cell Jupyter names (or, in a headless run, the
notebook file does), the n-th text its ``%retain`` lines retain is a cell of its own
(``retained_line``: its key the cell and n, its version the text), so a changed text supersedes
the one it replaces, as a changed cell does; a line added beside it is another n, a memory of
its own. A text the cell retained before keeps its n wherever its line moves (the session
matches unchanged texts first), so removing or swapping lines supersedes nothing. Elsewhere
(no cell id) a different text is a different memory, never a new version of the first.

The key is scoped to the project and notebook (or, with no notebook, the kernel session), so
two projects' ``analysis.ipynb`` never share a cell. A memory's document id carries both
parts (``hm-cell-<key>-<version>.<piece>``): re-sending one replaces it in place, and all
versions of a cell, or all cells of a notebook, are found by their common prefix.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CELL_DOCUMENT = "hm-cell-"  # the document ids of auto-retained cells start so
KEY_CHARS = 10  # hex characters of each part of a key (notebook, cell): 40 bits each
VERSION_CHARS = 12
RETAINED_PIECE = 0  # a cell's pieces count from 1; a text retained on purpose is piece 0
CELL_DOCUMENT_ID = re.compile(
    rf"{CELL_DOCUMENT}(?P<key>[0-9a-f]{{{KEY_CHARS}}}-[0-9a-f]{{{KEY_CHARS}}})"
    rf"-(?P<version>[0-9a-f]{{{VERSION_CHARS}}})\.(?P<piece>\d+)"
)
# what differs between two runs of the same cell without saying anything new: the address in
# a default repr (``<Model object at 0x7f3a…>``)
_ADDRESS = re.compile(r"\bat 0x[0-9a-fA-F]{6,}\b")


def _digest(*parts: str, chars: int = KEY_CHARS) -> str:
    joined = "\x1f".join(parts).encode("utf-8", "surrogatepass")
    return hashlib.sha256(joined).hexdigest()[:chars]


@dataclass(frozen=True)
class CellIdentity:
    """One version of one cell: ``key`` names the cell, ``version`` what it said."""

    key: str  # ``<notebook hash>-<cell hash>``
    version: str
    cell: str  # how the cell was named: a Jupyter id, ``n4`` or ``s<hash>`` (for people)

    @property
    def prefix(self) -> str:
        """The start of the document id of every version of this cell."""
        return f"{CELL_DOCUMENT}{self.key}-"

    @property
    def notebook_prefix(self) -> str:
        """The start of the document id of every cell of this cell's notebook."""
        return f"{CELL_DOCUMENT}{self.key.split('-')[0]}-"

    def document_id(self, piece: int = 1) -> str:
        """The document id of one piece of this version (a long cell is cut into pieces)."""
        return f"{self.prefix}{self.version}.{piece}"


@dataclass(frozen=True)
class CellPlan:
    """What to send for a changed cell: its identity, and when the version it replaces ran
    (None for a cell seen for the first time)."""

    identity: CellIdentity
    replaces: str | None = None


@dataclass(frozen=True)
class CellDocument:
    """What a document id of an auto-retained cell says."""

    key: str
    version: str
    piece: int


def cell_document(document_id: str | None) -> CellDocument | None:
    """The key, version and piece an auto-retained cell's document id carries; None for any
    other document (a text retained on purpose included: it has no versions)."""
    found = notebook_document(document_id)
    return found if found is not None and found.piece != RETAINED_PIECE else None


def notebook_document(document_id: str | None) -> CellDocument | None:
    """What a document id of a notebook's memory carries: an auto-retained cell's, or a text
    retained on purpose from a cell (piece ``RETAINED_PIECE``); None for any other."""
    match = CELL_DOCUMENT_ID.fullmatch(document_id or "")
    if match is None:
        return None
    return CellDocument(match["key"], match["version"], int(match["piece"]))


def retained_document(where: str, text: str, dated: str = "") -> str:
    """The document id of ``text`` retained on purpose from a cell of ``where`` (the project
    and notebook, or the kernel session): the same text has the same id in every run, among
    the notebook's documents (its prefix) but never taken for a cell's version. ``dated``:
    the date it was given, as written (``_said``)."""
    said = _said(text, dated)
    identity = CellIdentity(
        f"{_digest(where)}-{_digest('%retain', *said)}", _digest(*said, chars=VERSION_CHARS), ""
    )
    return identity.document_id(RETAINED_PIECE)


def retained_line(
    where: str, text: str, cell_id: str, position: int, dated: str = ""
) -> CellIdentity:
    """The identity of the ``position``-th text (from 1) the ``%retain`` lines of the cell
    Jupyter calls ``cell_id`` retained: the same line with another text (or date, ``dated``)
    is another version of it. Its one document is piece 1, as a cell's, so it is versioned as
    cells are."""
    cell = f"{cell_id}:%retain {position}"
    key = f"{_digest(where)}-{_digest('%retain', cell_id, str(position))}"
    return CellIdentity(key, _digest(*_said(text, dated), chars=VERSION_CHARS), cell)


def _said(text: str, dated: str) -> tuple[str, ...]:
    """What names a retained text: the text, and the date it was given as written (``--at
    3d``: the same cell run again is the same memory; a date added or changed, another one).
    An undated text is named by its text alone, as before dates could be given."""
    return (text, f"--at {dated}") if dated else (text,)


def version_of(pieces: Sequence[str]) -> str:
    """The version of a cell retained as ``pieces``: a hash of its cleaned source and
    outputs, without the ``[cell N]`` headers (the execution count changes at every run)."""
    body = "\n".join(piece.split("\n", 1)[-1] for piece in pieces)
    return _digest(_ADDRESS.sub("at 0x…", body), chars=VERSION_CHARS)


def identify(
    pieces: Sequence[str],
    *,
    source: str,
    number: int,
    where: str,
    cell_id: str | None,
    in_file: str | None = None,
    headless: bool = False,
) -> CellIdentity:
    """The identity of a cell retained as ``pieces``.

    ``where`` scopes the key: the project and notebook, or the kernel session when the notebook
    is not known; ``cell_id`` is Jupyter's, ``in_file`` the id the notebook file gives the
    executed source (headless runs), ``number`` the execution count."""
    if cell_id:
        cell = cell_id
    elif in_file:
        cell = in_file
    elif headless:
        cell = f"n{number}"
    else:
        cell = f"s{_digest(source)}"
    return CellIdentity(f"{_digest(where)}-{_digest(cell)}", version_of(pieces), cell)


class NotebookCells:
    """The cell ids of a notebook file, found by a cell's source: what names a cell in a
    headless run, where the kernel is sent the source but not the id.

    The file is read once (again only if it changed); equal sources take their ids in order,
    as a top-to-bottom run meets them. Reading happens on the worker, never in the cell hook.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._path: Path | None = None
        self._stamp: tuple[int, int] | None = None
        self._ids: dict[str, list[str]] = {}
        self._taken: dict[str, int] = defaultdict(int)

    def cell_id(self, path: Path | None, source: str) -> str | None:
        """The id of the cell of ``path`` whose source is ``source``; None when the file
        cannot be read, holds no such cell, or has no ids (nbformat before 4.5)."""
        if path is None:
            return None
        with self._lock:
            self._load(path)
            ids = self._ids.get(_normal(source))
            if not ids:
                return None
            taken = self._taken[_normal(source)]
            self._taken[_normal(source)] = taken + 1
            return ids[min(taken, len(ids) - 1)]

    def _load(self, path: Path) -> None:
        try:
            status = path.stat()
        except OSError:
            self._path, self._stamp, self._ids = path, None, {}
            return
        stamp = (status.st_mtime_ns, status.st_size)
        if path == self._path and stamp == self._stamp:
            return
        self._path, self._stamp, self._ids = path, stamp, {}
        self._taken.clear()
        try:
            cells = json.loads(path.read_text(encoding="utf-8")).get("cells") or []
        except (OSError, ValueError, AttributeError):
            return
        for cell in cells:
            if isinstance(cell, dict) and cell.get("cell_type") == "code" and cell.get("id"):
                self._ids.setdefault(_normal(_source(cell.get("source"))), []).append(
                    str(cell["id"])
                )


def _source(value: Any) -> str:
    """A cell's source as nbformat stores it: a string or a list of lines."""
    if isinstance(value, list):
        return "".join(str(line) for line in value)
    return str(value or "")


def _normal(source: str) -> str:
    return source.strip().replace("\r\n", "\n")
