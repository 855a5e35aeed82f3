"""Where a memory came from: the metadata the extension writes, and the line recall shows.

Every memory the extension queues carries, in its ``metadata`` (string values, as the server
requires), the notebook when the front end tells it, the cell(s) it came from, the kernel
session and how it was written::

    notebook        surveys/fieldwork.ipynb  (inside its git repository, else its file name)
    retain_cell     14            (%retain, or hindsight_magic.retain in a cell: that cell)
    cells           12-14         (auto-retain: the cells of the transcript, first-last)
    kernel_session  9f0c…
    run             2026-12-02T06:00:12Z  (a headless run — papermill, nbconvert: when it began)
    replaces        2026-12-01T06:00:09+01:00  (a cell's new version: when the one it
                                               replaced ran; ``_memory/versions.py``)
    source          %retain | autoretain | python api | agent
    agent           claude-code   (an AI agent's memory: its MCP client's name …)
    agent_version   2.0.14        (… and version)
    project         churn         (… and the project it worked in)
    evidence        [["data/sales.csv",2048,1796…,"w…"]]  (the data files the cell
                    read: ``_capture/evidence.py``)
    evidence_root   3fa2…         (which project on which machine recorded them)
    before          …the end of the memory retained just before it in a row (a loop, one
                    cell's run, a script; ``BEFORE_CHARS`` at most): the context a turn of a
                    conversation or a note is read in; recall's keyword score reads it
                    beside the memory's own text (``_memory/reading.py``), nothing shows it

``provenance_of`` reads that back from a recalled memory (memories written by others show what
they have: their time and document id), and ``provenance_line`` makes the compact line shown
next to tags and relevance: ``fieldwork.ipynb · cell 14 · 3 days ago``, or for an agent's memory
``agent (claude-code) · 2 minutes ago``. Stdlib only: cheap to import.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from .._capture.autoretain import AUTORETAIN, Source
from .._capture.evidence import State, check, evidence_metadata, parse_evidence
from .._machine import git_main_root
from .._settings import MINE
from .._text import parse_iso, utc_minute_text
from .scope import project_of

if TYPE_CHECKING:
    from .._api.replies import Memory
    from .._capture.evidence import Evidence

NOTEBOOK = "notebook"
CELLS = "cells"
RETAIN_CELL = "retain_cell"
KERNEL_SESSION = "kernel_session"
SOURCE = "source"
AGENT_NAME = "agent"
AGENT_VERSION = "agent_version"
PROJECT = "project"
RUN = "run"
REPLACES = "replaces"
BEFORE = "before"
BEFORE_CHARS = 500  # of the memory retained before: a turn or a note whole, a cell's end
LEGACY_SESSION = "session_id"  # what earlier versions wrote for the kernel session

RETAIN_MAGIC, PYTHON_API, AGENT = Source.RETAIN_MAGIC, Source.PYTHON_API, Source.AGENT
SOURCES = tuple(Source)  # the values of ``source``

SEPARATOR = " · "
MAX_CELLS = 10_000  # a wider range (in someone else's metadata) is not taken for cells
_CELL_PART = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")


@dataclass(frozen=True)
class Provenance:
    """Where one memory came from; ``None``/empty where it is not known."""

    notebook: str | None = None
    cells: tuple[int, ...] = ()
    kernel_session: str | None = None
    retain_cell: int | None = None
    document_id: str | None = None
    source: str | None = None
    agent: str | None = None
    agent_version: str | None = None
    project: str | None = None  # an agent's ``project``, else the ``project:<label>`` tag's
    run: str | None = None  # when the headless run (papermill, nbconvert) that wrote it began
    replaces: str | None = None  # a cell's new version: when the version it replaced ran
    evidence: tuple[Evidence, ...] = ()  # the data files it rests on (``_capture/evidence``)
    evidence_root: str = ""  # which project on which machine recorded them

    @property
    def notebook_name(self) -> str | None:
        """The notebook's file name, without its folders."""
        if not self.notebook:
            return None
        return re.split(r"[\\/]", self.notebook.rstrip("/\\"))[-1] or self.notebook


def cell_range(cells: Iterable[int]) -> str:
    """``"14"`` or ``"12-14"`` (first-last) for metadata; ``""`` for no cells."""
    numbers = sorted(set(cells))
    if not numbers:
        return ""
    first, last = numbers[0], numbers[-1]
    return str(first) if first == last else f"{first}-{last}"


def parse_cells(text: str | None) -> tuple[int, ...]:
    """``"14"``, ``"12-14"`` or ``"3, 5, 7-9"`` as sorted cell numbers; ``()`` if not that."""
    numbers: set[int] = set()
    for part in (text or "").split(","):
        match = _CELL_PART.fullmatch(part)
        if match is None:
            return ()
        first = int(match.group(1))
        last = int(match.group(2) or first)
        if last < first:
            return ()
        if last - first >= MAX_CELLS:  # no notebook has that many: not cell numbers
            return ()
        numbers.update(range(first, last + 1))
    return tuple(sorted(numbers))


@dataclass(frozen=True)
class AgentOrigin:
    """The AI agent that wrote a memory: its name and version (an MCP client's ``clientInfo``)
    and the project it worked in, so a notebook's recall can say which agent it was."""

    name: str
    version: str = ""
    project: str = ""

    def metadata(self) -> dict[str, str]:
        """The metadata keys this origin adds (only those that are known)."""
        meta = {SOURCE: AGENT, AGENT_NAME: self.name}
        if self.version:
            meta[AGENT_VERSION] = self.version
        if self.project:
            meta[PROJECT] = self.project
        return meta


def provenance_metadata(
    source: Source,
    kernel_session: str,
    notebook: str | None,
    cells: Iterable[int] = (),
    run: str | None = None,
    agent: AgentOrigin | None = None,
    replaces: str | None = None,
    evidence: tuple[Sequence[Evidence], str] = ((), ""),
) -> dict[str, str]:
    """The ``metadata`` of a memory the extension writes (only the parts that are known).

    ``cells`` are a transcript's for auto-retain (``cells``: first-last), else the cell that
    ran ``%retain`` or ``hindsight_magic.retain`` (``retain_cell``); ``run`` is set in headless
    runs, where many runs of one notebook must be told apart. An ``agent``'s memory is
    ``source: agent`` with the agent's name, version and project; a cell's new version says
    when the version it ``replaces`` ran; ``evidence``: the data files the cell read, and
    the project's ``root_id``.
    """
    meta = {SOURCE: source, KERNEL_SESSION: kernel_session}
    if agent is not None:
        meta.update(agent.metadata())
    if notebook:
        meta[NOTEBOOK] = portable_notebook(notebook)
    if run:
        meta[RUN] = run
    if replaces:
        meta[REPLACES] = replaces
    meta.update(evidence_metadata(*evidence))
    span = cell_range(cells)
    if span:
        meta[CELLS if source == AUTORETAIN else RETAIN_CELL] = span
    return meta


@functools.lru_cache(maxsize=64)
def portable_notebook(path: str) -> str:
    """The notebook as a memory stores it: its path inside its git repository
    (``notebooks/report.ipynb``), else its file name; a relative path as Jupyter gives it
    (from the server's root) stays. Never an absolute path: a team bank or a course snapshot
    would carry everyone's home folders. Cached: a ``%retain`` stays cheap."""
    given = PurePath(path)
    if not given.is_absolute():
        hidden = path.startswith("~") or ".." in given.parts
        return given.name if hidden else given.as_posix()
    try:
        found = Path(path).resolve()
        root = git_main_root(found.parent)
        if root is not None:
            return found.relative_to(root).as_posix()
    except (OSError, ValueError):
        pass
    return given.name


def _text(metadata: Mapping[str, Any], key: str) -> str | None:
    value = metadata.get(key)
    if value is None:
        return None
    return str(value).strip() or None


def provenance_of(memory: Memory) -> Provenance:
    """What ``memory``'s metadata and document id say about where it came from; its project
    is an agent's, else the one its ``project:<label>`` tag names (per-project-tagged)."""
    meta: Mapping[str, Any] = memory.metadata or {}
    retain_cell = parse_cells(_text(meta, RETAIN_CELL))
    evidence, root = parse_evidence(meta)
    return Provenance(
        notebook=_text(meta, NOTEBOOK),
        cells=parse_cells(_text(meta, CELLS)),
        kernel_session=_text(meta, KERNEL_SESSION) or _text(meta, LEGACY_SESSION),
        retain_cell=retain_cell[0] if len(retain_cell) == 1 else None,
        document_id=memory.document_id or None,
        source=_text(meta, SOURCE),
        agent=_text(meta, AGENT_NAME),
        agent_version=_text(meta, AGENT_VERSION),
        project=_text(meta, PROJECT) or project_of(memory.tags),
        run=_text(meta, RUN),
        replaces=_text(meta, REPLACES),
        evidence=evidence,
        evidence_root=root,
    )


def cells_text(provenance: Provenance) -> str:
    """``cell 14``, ``cells 12–14`` or ``cells 3, 5, 7–9``; ``""`` when no cell is known."""
    if provenance.retain_cell is not None:
        return f"cell {provenance.retain_cell}"
    cells = provenance.cells
    if not cells:
        return ""
    if len(cells) == 1:
        return f"cell {cells[0]}"
    runs: list[list[int]] = []
    for number in cells:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    if len(runs) > 3:  # too many gaps to list: the span
        return f"cells {cells[0]}–{cells[-1]}"
    return "cells " + ", ".join(
        str(run[0]) if len(run) == 1 else f"{run[0]}–{run[-1]}" for run in runs
    )


def agent_text(provenance: Provenance) -> str:
    """``agent (claude-code)`` for an agent's memory (``agent`` when it gave no name); ``""``
    for any other."""
    if provenance.source != AGENT:
        return ""
    return f"agent ({provenance.agent})" if provenance.agent else "agent"


def age(stamp: str | None, now: datetime | None = None) -> str:
    """``just now``, ``5 minutes ago``, ``3 days ago`` … up to a month, then the UTC date
    (a time that is not ISO 8601 is shown as it is)."""
    moment = parse_iso(stamp)
    if moment is None:
        return stamp or ""
    now = now or datetime.now(timezone.utc)
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    seconds = (now - moment).total_seconds()
    if seconds < -60 or seconds >= 30 * 86_400:
        return moment.astimezone(timezone.utc).strftime("%Y-%m-%d")
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        count = int(seconds // size)
        if count >= 1:
            return f"{count} {unit}{'' if count == 1 else 's'} ago"
    return "just now"


def revision_text(memory: Memory) -> str:
    """``replaces the version of 2026-12-03 18:00 UTC`` for a cell's new version, ``superseded
    on …`` (or ``forgotten on …``) for a memory read as of a moment before that happened,
    ``and 4 earlier copies`` for a memory others were folded into (``versions.collapse``);
    those that apply, or ``""``."""
    replaces = provenance_of(memory).replaces
    parts = []
    if replaces:
        parts.append(f"replaces the version of {utc_minute_text(replaces, ' UTC')}")
    invalidated = getattr(memory, "invalidated_at", None)
    if invalidated:  # read as of a moment before it was superseded or forgotten
        reason = str(getattr(memory, "invalidation_reason", "") or "")
        done = "superseded" if reason.startswith("superseded") else "forgotten"
        parts.append(f"{done} on {utc_minute_text(invalidated, ' UTC')}")
    copies = int(getattr(memory, "copies", 0) or 0)
    if copies:
        parts.append(f"and {copies} earlier {'copy' if copies == 1 else 'copies'}")
    return SEPARATOR.join(parts)


def evidence_text(memory: Memory) -> str:
    """``data changed since: data/sales.csv (re-written 2026-12-05)``, ``data no longer here:
    data/old.csv`` or ``evidence not checkable here`` for a memory whose data files are not as
    the cell read them; ``""`` when they are (or it records none). Stats, and hashes only a
    changed file (``_capture/evidence.check``); no request to the server."""
    provenance = provenance_of(memory)
    if not provenance.evidence:
        return ""
    found = check(provenance.evidence, provenance.evidence_root)
    changed = [
        f"{c.evidence.path} (re-written {utc_date(c.mtime)})"
        for c in found
        if c.state == State.CHANGED
    ]
    gone = [c.evidence.path for c in found if c.state == State.GONE]
    parts = []
    if changed:
        parts.append("data changed since: " + ", ".join(changed))
    if gone:
        parts.append("data no longer here: " + ", ".join(gone))
    if any(c.state == State.ELSEWHERE for c in found):
        parts.append("evidence not checkable here")
    return SEPARATOR.join(parts)


def utc_date(seconds: float | None) -> str:
    """``2026-12-05``: the UTC date of a moment (``""`` for none)."""
    if seconds is None:
        return ""
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d")


def _where(memory: Memory) -> list[str]:
    """Where ``memory`` came from: its agent, notebook, headless run and cells, else its
    document id."""
    provenance = provenance_of(memory)
    run = f"run {provenance.run[:16]}" if provenance.run else ""
    parts = [agent_text(provenance), provenance.notebook_name or "", run, cells_text(provenance)]
    if not any(parts) and provenance.document_id:
        parts.append(f"document {provenance.document_id}")
    return parts


def provenance_line(memory: Memory, now: datetime | None = None) -> str:
    """``fieldwork.ipynb · cell 14 · 3 days ago`` (``report.ipynb · run 2026-12-02T06:00 · cell
    4 · …`` from a headless run): what is known of where and when, or ``""``; then, for a
    cell's new version, which version it replaces, and how many copies were folded into it;
    last, whether the data files it rests on changed (``evidence_text``).

    An agent's memory shows ``agent (claude-code)``; a memory with neither notebook nor cell
    nor agent (written by something else) shows its document id.
    """
    parts = [*_where(memory), age(memory.mentioned_at, now), revision_text(memory)]
    parts.append(evidence_text(memory))
    return SEPARATOR.join(part for part in parts if part)


def origin_line(memory: Memory) -> str:
    """``fieldwork.ipynb · cell 14 · 2026-12-03 18:00 UTC``: where and when, in words that do
    not age (a mental model's list of memories is kept until memory changes)."""
    parts = [*_where(memory), utc_minute_text(memory.mentioned_at, " UTC")]
    return SEPARATOR.join(part for part in parts if part)


def relevance_text(memory: Memory) -> str:
    """``0.81``: the memory's relevance to the recall's query, the score its recall is ordered
    by (``RecalledMemory.relevance``), as every output form shows it; ``""`` when no query
    ranked it. Never the server's ``scores.final``: the recall is not in the server's order."""
    relevance = getattr(memory, "relevance", None)
    return "" if relevance is None else f"{relevance:.2f}"


def memory_details(memory: Memory, now: datetime | None = None, layered: bool = False) -> str:
    """``fieldwork.ipynb · cell 14 · 3 days ago · tags: a, b · relevance 0.81`` (what is
    known); ``layered`` (the session reads layers): ``layer: course · …`` first."""
    parts = [f"layer: {getattr(memory, 'layer', MINE)}" if layered else ""]
    parts.append(provenance_line(memory, now))
    if memory.tags:
        parts.append(f"tags: {', '.join(memory.tags)}")
    relevance = relevance_text(memory)
    if relevance:
        parts.append(f"relevance {relevance}")
    return SEPARATOR.join(part for part in parts if part)


def memory_line(
    memory: Memory, now: datetime | None = None, shown: str | None = None, layered: bool = False
) -> str:
    """``The lab is cold [world] — fieldwork.ipynb · cell 14 · 3 days ago · relevance 0.81``
    (``shown``: what to show of its text, an excerpt, instead of all of it; ``layered``: the
    memory's layer first among the details)."""
    line = (memory.text if shown is None else shown) + (f" [{memory.type}]" if memory.type else "")
    details = memory_details(memory, now, layered)
    return f"{line} — {details}" if details else line
