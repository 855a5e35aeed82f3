"""What a recall or a reflect returns: rich results with a plain-text ``__repr__`` and escaped
HTML/Markdown for notebooks (``RecallResult``, ``ReflectResult``).

Each memory is shown with where it came from (``provenance.provenance_line``), its tags and
its relevance (the score the recall is ordered by); a reflect's answer is followed by the
**Based on** section: the memories with their provenance, mental models and directives by
name — an indented list in plain text, a collapsed ``<details>`` block (one HTML block,
everything escaped) in notebooks. Stdlib only: pydantic
comes in with ``parsed_replies.py`` on the first read."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, overload

from .._capture.transcript import own_text
from .._text import (
    html_text,
    markdown_answer,
    markdown_text,
    one_line,
    plain_text,
    plural,
    prompt_text,
    utc_minute,
    utc_minute_text,
)
from .excerpt import excerpt
from .provenance import (
    SEPARATOR,
    evidence_text,
    memory_details,
    memory_line,
    provenance_line,
    provenance_of,
    relevance_text,
    revision_text,
)

if TYPE_CHECKING:
    from .._api.replies import Memory
    from .._timewindow import TimeWindow
    from .parsed_replies import RecalledMemory, Sources


RECALL_PREAMBLE = (
    "Relevant memories from past conversations (prioritize recent when conflicting). Only use "
    "memories that are directly useful to continue this conversation; ignore the rest:"
)


NO_MEMORIES = "No relevant memories found."
NO_REFLECTION = "No relevant information found to reflect on."


def indexing_note(cells: int, memories_waiting: bool = False) -> str:
    """``the last 3 cells are still being indexed`` ('' for none); with ``memories_waiting``
    (the memories the user retained were sent, but the server had not indexed them all within
    the read's wait), ``your newest memories are …`` too, so an empty answer never reads as
    "nothing there"."""
    if not cells:
        return "your newest memories are still being indexed" if memories_waiting else ""
    last = "the last cell" if cells == 1 else f"the last {cells} cells"
    if memories_waiting:
        return f"your newest memories and {last} are still being indexed"
    return f"{last} {'is' if cells == 1 else 'are'} still being indexed"


def _folded(text: str) -> str:
    """``text`` on one line (control characters shown first, so none turns into a space)."""
    return " ".join(plain_text(text).split())


def _html_line(text: str) -> str:
    """``text`` on one line, as HTML: a line break in the server's text cannot end the HTML
    block the **Based on** list is, inside the answer's Markdown."""
    return html_text(_folded(text))


def _recalled(memories: Sequence[Memory]) -> list[RecalledMemory]:
    from .parsed_replies import RecalledMemory

    return [
        m if isinstance(m, RecalledMemory) else RecalledMemory.model_validate(m.model_dump())
        for m in memories
    ]


class RecallResult(Sequence["RecalledMemory"]):
    """Ranked memories from ``%recall``; a sequence of memories with rich reprs.

    Each memory has ``.text``, ``.type``, ``.tags``, ``.relevance`` (0-1, what the memories
    are ordered by), ``.scores`` (the server's own), ``.mentioned_at``, its server ids ``.id``
    and ``.document_id``, and ``.provenance`` (``.notebook``, ``.cells``,
    ``.retain_cell``, ``.kernel_session``, ``.document_id``, ``.source``). Each is shown with its
    handle, ``#1`` for ``r[0]``: ``%hindsight forget #1`` (and ``restore``, ``correct``,
    ``history``, ``delete``) curates it, as does ``r[0].forget()``. The memories are the most
    relevant few a recall shows (``limit``); ``.matched`` is how many of the memories it
    ranked match the query (``reading.matching``: they share a word with it or are close to
    it in meaning), and the headline gives both: ``5 memories shown; 14 match the query``.
    ``.still_indexing`` is how many auto-retained cells the server could not search yet (the
    headline says so).
    ``.window`` is the time window the memories were recalled from (``--since``/``--until``),
    or None; the headline says it back ("… since yesterday"). ``.historical`` names the moment
    of an as-of recall (``as of 3 Nov``; ``.as_of`` is that moment), '' for memory as it is
    now. When the session reads layers,
    ``.layers`` names the ones asked and every memory shows its ``.layer`` (``mine`` for the
    session's own bank); ``.skipped`` says, a line each, which layers could not be read.
    """

    _hindsight_result_ = True  # never retained by auto-retain (``_capture.transcript``)

    def __init__(
        self,
        query: str,
        memories: Sequence[Memory],
        bank_id: str,
        as_of: datetime | None = None,
        *,
        still_indexing: int = 0,
        memories_waiting: bool = False,
        window: TimeWindow | None = None,
        matched: int | None = None,
        layers: tuple[str, ...] = (),
        skipped: tuple[str, ...] = (),
        historical: str = "",
    ) -> None:
        self.query = query
        self.historical = historical
        self.matched = matched  # None: no query ranked them (the newest memories)
        self.layers = layers
        self.skipped = skipped
        self.memories = _recalled(memories) if memories else []
        self.bank_id = bank_id
        self.as_of = as_of or datetime.now(timezone.utc)
        self.still_indexing = still_indexing
        self.memories_waiting = memories_waiting
        self.window = window

    @overload
    def __getitem__(self, index: int) -> RecalledMemory: ...
    @overload
    def __getitem__(self, index: slice) -> list[RecalledMemory]: ...
    def __getitem__(self, index: int | slice) -> RecalledMemory | list[RecalledMemory]:
        return self.memories[index]

    def __len__(self) -> int:
        return len(self.memories)

    def __iter__(self) -> Iterator[RecalledMemory]:
        return iter(self.memories)

    @property
    def texts(self) -> list[str]:
        """The memories' texts, best first."""
        return [m.text for m in self.memories]

    def counts(self) -> str:
        """``5 memories shown; 14 match the query``: how many are shown, and how many of the
        memories the recall ranked match it (``2 match``, ``none matches``); only the first
        part for memories no query ranked."""
        shown = plural(len(self.memories), "memory", "memories") + " shown"
        if self.matched is None:
            return shown
        if not self.matched:
            return f"{shown}; none matches the query"
        return f"{shown}; {self.matched} {'matches' if self.matched == 1 else 'match'} the query"

    def headline(self) -> str:
        """``5 memories shown; 14 match the query (as of …):`` (``counts``) or the empty
        message, saying the time window (``… between 3 Nov and today``) and how many
        auto-retained cells the server could not search yet."""
        indexing = indexing_note(self.still_indexing, self.memories_waiting)
        # the window's label is the extension's own words (dates it wrote), never the user's
        window = f" {self.window.label}" if self.window is not None else ""
        if not self.memories:
            if not indexing and not window:
                return NO_MEMORIES
            return f"{NO_MEMORIES[:-1]}{window}" + (f" ({indexing})." if indexing else ".")
        when = f"as of {utc_minute(self.as_of)} UTC" + (f"; {indexing}" if indexing else "")
        if self.historical:  # an as-of read: the extension's own words for the moment
            when = f"memory as it was {self.historical}, {utc_minute(self.as_of)} UTC" + (
                f"; {indexing}" if indexing else ""
            )
        return f"{self.counts()}{window} ({when}):"

    def notices(self) -> str:
        """The layers skipped, a line each ('' when none)."""
        return "\n".join(f"({plain_text(line)}.)" for line in self.skipped)

    def _heading(self) -> str:
        """The headline, and under it the notices."""
        notices = self.notices()
        return f"{self.headline()}\n{notices}" if notices else self.headline()

    def shown(self, memory: RecalledMemory) -> str:
        """What is shown of ``memory``: all of a one-line memory; of a longer one (a notebook
        cell), the lines that answer the query, on one line (``_memory/excerpt.py``)."""
        return excerpt(memory.text, self.query).one_line()

    def __repr__(self) -> str:
        if not self.memories:
            return self._heading()
        layered = bool(self.layers)
        lines = [
            f"#{n} {plain_text(memory_line(m, self.as_of, self.shown(m), layered))}"
            for n, m in enumerate(self.memories, 1)
        ]
        return own_text(f"{self._heading()}\n\n" + "\n\n".join(lines))

    __str__ = __repr__

    def as_context(self) -> str:
        """The ``<memories>`` block for an LLM prompt ('' when nothing was found)."""
        if not self.memories:
            return ""
        lines = []
        for memory in self.memories:
            line = f"- {prompt_text(memory.text)}"
            if memory.type:
                line += f" [{prompt_text(memory.type)}]"
            if self.layers:
                line += f" (layer: {prompt_text(memory.layer)})"
            if memory.mentioned_at:
                line += f" ({prompt_text(memory.mentioned_at)})"
            for note in (revision_text(memory), evidence_text(memory)):
                if note:
                    line += f" ({prompt_text(note)})"
            lines.append(line)
        bullets = "\n\n".join(lines)
        return (
            f"<memories>\n{RECALL_PREAMBLE}\nCurrent time: {utc_minute(self.as_of)} UTC\n\n"
            f"{bullets}\n</memories>"
        )

    def _repr_markdown_(self) -> str:
        notices = self.notices().splitlines()  # the headline: the extension's own words
        heading = "\n\n".join([self.headline(), *(markdown_text(line) for line in notices)])
        if not self.memories:
            return heading
        # one line per memory, as in the HTML table: a blank line would end the list item
        layered = bool(self.layers)
        shown = [_folded(memory_line(m, self.as_of, self.shown(m), layered)) for m in self]
        lines = [f"- **#{n}** {markdown_text(line)}" for n, line in enumerate(shown, 1)]
        return f"{heading}\n\n" + "\n".join(lines)

    def _repr_html_(self) -> str:
        esc = html_text
        heading = "".join(f"<p>{esc(line)}</p>" for line in self._heading().splitlines())
        if not self.memories:
            return heading
        layered = bool(self.layers)
        rows = []
        for n, memory in enumerate(self.memories, 1):
            where = provenance_of(memory)
            exact = [utc_minute_text(memory.mentioned_at, " UTC"), where.notebook or ""]
            title = SEPARATOR.join(part for part in exact if part)
            layer = f"<td>{esc(memory.layer)}</td>" if layered else ""
            rows.append(
                f"<tr><td title='{esc(memory.id or '')}'>#{n}</td>{layer}"
                f"<td style='text-align:left'>{_memory_html(memory.text, self.query)}</td>"
                f"<td>{esc(memory.type or '')}</td>"
                f"<td style='text-align:left' title='{esc(title)}'>"
                f"{esc(provenance_line(memory, self.as_of))}</td>"
                f"<td>{esc(', '.join(memory.tags or []))}</td>"
                f"<td>{relevance_text(memory)}</td>"
                "</tr>"
            )
        return (
            f"{heading}<table><thead><tr><th>#</th>"
            + ("<th>layer</th>" if layered else "")
            + "<th style='text-align:left'>memory</th><th>type</th>"
            "<th style='text-align:left'>from</th><th>tags</th><th>relevance</th></tr></thead>"
            "<tbody>" + "".join(rows) + "</tbody></table>"
        )


def _memory_html(text: str, query: str) -> str:
    """A memory's text as an HTML table cell: all of it, or its best lines with the whole
    memory one click away (a ``<details>``)."""
    shown = excerpt(text, query)
    if not shown.cut:
        return "<br>".join(html_text(line) for line in shown.lines)
    lines = "<br>".join(html_text(line) for line in shown.lines)
    return (
        f"<details><summary>{lines} …</summary>"
        f"<pre style='white-space:pre-wrap;margin:2px 0'>{html_text(text)}</pre></details>"
    )


class ReflectResult(str):
    """The server's synthesized answer from ``%%reflect``; a ``str`` rendered as Markdown.

    ``based_on`` keeps the sources the answer drew on (``.memories``, ``.mental_models``,
    ``.directives``), or None when they were not asked for; the plain-text and Markdown forms
    list them under the answer (a collapsible **Based on** in notebooks). ``still_indexing`` is
    how many auto-retained cells the server could not search yet; a note under the answer says
    so. ``layered``: the session reads layers, so each memory of **Based on** shows its layer;
    ``skipped`` says, a line each, which layers could not be read.

    When the server could not write an answer (it has no LLM, or its LLM failed), ``answered``
    is False and the ``str`` is the one line saying so and how to get one (``unanswered``);
    under it come the memories that bear on the question, best first, as a recall shows them
    (``recalled``, whose ``#N`` names them), and ``based_on.memories`` holds them. Text the
    server's mock LLM wrote is never an answer.
    """

    query: str
    based_on: Sources | None
    as_of: datetime
    still_indexing: int
    memories_waiting: bool
    layered: bool
    skipped: tuple[str, ...]
    unanswered: str
    recalled: RecallResult | None
    _hindsight_result_ = True  # never retained by auto-retain (``_capture.transcript``)

    def __new__(
        cls,
        text: str,
        query: str = "",
        based_on: Sources | None = None,
        as_of: datetime | None = None,
        *,
        still_indexing: int = 0,
        memories_waiting: bool = False,
        layered: bool = False,
        skipped: tuple[str, ...] = (),
        recalled: RecallResult | None = None,
    ) -> ReflectResult:
        """``recalled``: no answer was written, ``text`` says why; these memories bear on
        the question instead."""
        self = super().__new__(cls, text.strip() or NO_REFLECTION)
        self.query = query
        self.based_on = based_on
        self.as_of = as_of or datetime.now(timezone.utc)
        self.still_indexing = still_indexing
        self.memories_waiting = memories_waiting
        self.layered = layered
        self.skipped = skipped
        self.recalled = recalled
        self.unanswered = str(self) if recalled is not None else ""
        own_text(str(self))  # print(answer) shows the answer itself
        return self

    @property
    def answered(self) -> bool:
        """Whether the server wrote an answer (False: the memories are shown instead)."""
        return self.recalled is None

    def _note(self) -> str:
        indexing = indexing_note(self.still_indexing, self.memories_waiting)
        return f"({indexing[:1].upper()}{indexing[1:]}: the answer could not use them.)"

    def __repr__(self) -> str:
        if self.recalled is not None:  # the line is the extension's own words
            return own_text(f"{self.unanswered}\n\n{self.recalled!r}")
        parts = [plain_text(str(self))]
        if self.based_on is not None:
            parts.append(sources_text(self.based_on, self.as_of, self.layered))
        if self.still_indexing or self.memories_waiting:
            parts.append(self._note())
        parts += [f"({plain_text(line)}.)" for line in self.skipped]
        return own_text("\n\n".join(parts))

    def _repr_markdown_(self) -> str:
        if self.recalled is not None:
            return f"_{markdown_text(self.unanswered)}_\n\n{self.recalled._repr_markdown_()}"
        parts = [markdown_answer(str(self))]
        if self.based_on is not None:
            parts.append(sources_markdown(self.based_on, self.as_of, self.layered))
        if self.still_indexing or self.memories_waiting:
            parts.append(f"_{markdown_text(self._note())}_")
        parts += [f"_{markdown_text(f'({line}.)')}_" for line in self.skipped]
        return "\n\n".join(parts)


SHOWN_PER_KIND = 10  # more are counted, and kept in ``.based_on``
TEXT_CHARS = 240
NOTHING = "Based on: no memories, mental models or directives."


def _groups(
    sources: Sources, now: datetime | None, layered: bool = False
) -> list[tuple[str, list[tuple[str, str]]]]:
    """(heading, [(text, details)]) for each kind of source that is present (``layered``:
    each memory's layer first among its details)."""
    memories = []
    for memory in sources.memories:
        kind = f" [{memory.type}]" if memory.type else ""
        details = memory_details(memory, now, layered)
        memories.append((one_line(memory.text, TEXT_CHARS) + kind, details))
    models = [
        (one_line(m.name, TEXT_CHARS), "" if m.name == m.id else m.id)
        for m in sources.mental_models
    ]
    directives = [(one_line(d.name or d.id, TEXT_CHARS), "") for d in sources.directives]
    groups = [("Memories", memories), ("Mental models", models), ("Directives", directives)]
    return [(heading, items) for heading, items in groups if items]


def summary(sources: Sources) -> str:
    """``2 memories, 1 mental model`` (what kinds there are)."""
    counts = [
        plural(len(sources.memories), "memory", "memories") if sources.memories else "",
        plural(len(sources.mental_models), "mental model", "mental models")
        if sources.mental_models
        else "",
        plural(len(sources.directives), "directive", "directives") if sources.directives else "",
    ]
    return ", ".join(count for count in counts if count)


def _more(total: int) -> str:
    return f"… and {total - SHOWN_PER_KIND} more (in .based_on)"


def sources_text(sources: Sources, now: datetime | None = None, layered: bool = False) -> str:
    """``Based on:`` and an indented list per kind of source."""
    groups = _groups(sources, now, layered)
    if not groups:
        return NOTHING
    lines = [f"Based on ({summary(sources)}):"]
    for heading, items in groups:
        lines.append(f"  {heading}:")
        for text, details in items[:SHOWN_PER_KIND]:
            line = f"{text} — {details}" if details else text
            lines.append(f"    - {plain_text(line)}")
        if len(items) > SHOWN_PER_KIND:
            lines.append(f"    {_more(len(items))}")
    return "\n".join(lines)


def sources_markdown(sources: Sources, now: datetime | None = None, layered: bool = False) -> str:
    """A collapsed ``<details>`` **Based on** block (escaped HTML, valid inside Markdown)."""
    esc = _html_line
    groups = _groups(sources, now, layered)
    if not groups:
        return f"_{esc(NOTHING)}_"
    parts = [f"<details><summary><b>Based on</b> ({esc(summary(sources))})</summary>"]
    for heading, items in groups:
        rows = "".join(
            f"<li>{esc(text)}" + (f" <small>— {esc(details)}</small>" if details else "") + "</li>"
            for text, details in items[:SHOWN_PER_KIND]
        )
        if len(items) > SHOWN_PER_KIND:
            rows += f"<li><i>{esc(_more(len(items)))}</i></li>"
        parts.append(f"<div><i>{esc(heading)}</i><ul>{rows}</ul></div>")
    parts.append("</details>")
    return "".join(parts)
