"""What the magics return: plain text ``__repr__`` plus escaped HTML/Markdown.

``Message`` (a line or a few), ``RetainResult`` (what ``%retain`` queued), ``Report`` (sections
of rows: status, config, help), and the mental-model views ``%hindsight models …`` and
``%hindsight context`` return (``ModelList``, ``ModelDetail``, ``ModelHistory``,
``PromptContext``). Mental models are written by the server's LLM, so every field is escaped in
HTML and Markdown."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from .._capture.transcript import own_text
from .._memory.mental_models import MentalModel, inventory_line
from .._text import html_text, markdown_answer, markdown_text, plain_text, plural, utc_minute_text

if TYPE_CHECKING:
    from .._delivery.items import NotAnswering


class Message:
    """A short text outcome (one or a few lines)."""

    _hindsight_result_ = True  # never retained by auto-retain (``_capture.transcript``)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return own_text(plain_text(self.text))

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return str(other) == self.text if isinstance(other, str | Message) else NotImplemented

    __hash__ = None  # type: ignore[assignment]


class RetainResult(Message):
    """Outcome of ``%retain``: how many memories were queued, and their retain ids (``.ids``):
    ``%hindsight forget ID`` (or ``delete``) cancels one still queued, so it never reaches the
    server, and works on it once it is there."""

    def __init__(
        self, count: int, ids: tuple[str, ...] = (), not_answering: NotAnswering | None = None
    ) -> None:
        self.count = count
        self.ids = ids
        # with ``retain(wait=…)``: whether the server had indexed them when it returned
        self.searchable: bool | None = None
        text = f"{plural(count, 'memory', 'memories')} queued."
        if not_answering is not None:
            text += " " + waiting_line(count, not_answering)
        super().__init__(text)


def waiting_line(count: int, silent: NotAnswering) -> str:
    """What a ``%retain`` line adds while the server is not answering: in full the first time
    (where the memories wait, that they go once it is back, where to look), then short with
    how many wait: repeating the whole sentence under every ``%retain`` is noise, and a plain
    "queued." after it would read as if the server were back."""
    where = "in the journal"
    if not silent.journal:
        why = "no journal" if silent.journal_off else "the journal cannot be written now"
        where = f"in this kernel's memory ({why})"
    if not silent.first:
        waiting = plural(silent.waiting, "memory waits", "memories wait")
        return f"The server is still not answering: {waiting} {where}."
    they, are = ("it waits", "is") if count == 1 else ("they wait", "are")
    return (
        f"The Hindsight server at {silent.url} is not answering: {they} {where} and {are} sent "
        "when the server is back (%hindsight status)."
    )


@dataclass(frozen=True)
class FlushResult:
    """What a flush achieved: accepted now, not sent because the server held it already,
    and what still waits (and why)."""

    _hindsight_result_: ClassVar[bool] = True  # never retained by auto-retain

    accepted: int
    pending: int
    retrying: int
    failed: int
    last_error: str | None
    already_stored: int = 0  # not sent: the server held them (a re-run's %retain lines)

    def __repr__(self) -> str:
        sent, stored = plural(self.accepted, "memory", "memories"), self.already_stored
        left = self.pending or self.retrying or self.failed  # then something new was not sent
        if stored and not self.accepted and not left:
            first = f"Flushed: nothing new to send; {stored} already stored."
        elif stored:
            first = f"Flushed: {sent} accepted by the server; {stored} already stored (not sent)."
        else:
            first = f"Flushed: {sent} accepted by the server."
        parts = [first]
        if self.retrying:
            parts.append(
                f"{plural(self.retrying, 'memory is', 'memories are')} waiting to retry "
                f"({self.last_error}); they stay queued."
            )
        if self.pending and self.retrying:
            parts.append(f"{plural(self.pending, 'more waits', 'more wait')} behind them.")
        elif self.pending:
            parts.append(f"{plural(self.pending, 'memory is', 'memories are')} still being sent.")
        if self.failed:
            parts.append(f"{plural(self.failed, 'memory', 'memories')} failed: %hindsight retry.")
        return own_text(" ".join(parts))

    __str__ = __repr__


@dataclass
class Report:
    """Sections of (label, value) rows, e.g. ``%hindsight status`` or ``config``."""

    _hindsight_result_ = True  # never retained by auto-retain (``_capture.transcript``)

    title: str
    sections: list[tuple[str, list[tuple[str, str]]]] = field(default_factory=list)
    footer: str = ""

    def add(self, heading: str, rows: list[tuple[str, str]]) -> None:
        """Append a section."""
        self.sections.append((heading, rows))

    def __repr__(self) -> str:
        lines = [self.title]
        for heading, rows in self.sections:
            if heading:
                lines.append(f"{heading}:")
            width = max((len(label) for label, _ in rows), default=0)
            lines.extend(f"  {label.ljust(width)}  {value}" for label, value in rows)
        if self.footer:
            lines.append(self.footer)
        return own_text(plain_text("\n".join(lines)))

    __str__ = __repr__

    def _repr_html_(self) -> str:
        esc = html_text
        parts = [f"<p><b>{esc(self.title)}</b></p>"]
        for heading, rows in self.sections:
            body = "".join(
                f"<tr><td style='text-align:left'>{esc(label)}</td>"
                f"<td style='text-align:left'>{esc(value)}</td></tr>"
                for label, value in rows
            )
            caption = (
                f"<caption style='text-align:left'>{esc(heading)}</caption>" if heading else ""
            )
            parts.append(f"<table>{caption}<tbody>{body}</tbody></table>")
        if self.footer:
            parts.append(f"<p>{esc(self.footer)}</p>")
        return "".join(parts)


EMPTY_CONTENT = "_(empty — background reflect may still be running)_"
EMPTY_LISTING = "_(no memory answers its question yet)_"
NO_CONTEXT = "(empty: no mental models with content and no %recall result yet)"
DIFF_MAX_INPUT_LINES = 1000
DIFF_MAX_OUTPUT_LINES = 200


def refreshed(model: MentalModel) -> str:
    """``YYYY-MM-DD HH:MM UTC`` of the model's last refresh, or ``never``."""
    return utc_minute_text(model.last_refreshed_at, " UTC") or "never"


@dataclass
class ModelList:
    """``%hindsight models list``: one line per model, or a table in HTML."""

    _hindsight_result_ = True  # never retained by auto-retain (``_capture.transcript``)

    bank_id: str
    models: list[MentalModel]

    def __repr__(self) -> str:
        lines = [f"Mental Models — {self.bank_id}", *map(inventory_line, self.models)]
        return own_text(plain_text("\n".join(lines)))

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td style='text-align:left'>{html_text(m.id)}</td>"
            f"<td style='text-align:left'>{html_text(m.name)}</td>"
            f"<td>{html_text(', '.join(m.tags))}</td>"
            f"<td>{html_text(refreshed(m))}</td>"
            f"<td>{'yes' if m.auto_refresh else 'no'}</td>"
            f"<td>{'memories listed' if m.listing else 'summary'}</td>"
            f"<td>{len((m.content or '').strip())}</td></tr>"
            for m in self.models
        )
        return (
            f"<p><b>{html_text(f'Mental Models — {self.bank_id}')}</b></p><table><thead><tr>"
            "<th style='text-align:left'>id</th><th style='text-align:left'>name</th>"
            "<th>tags</th><th>refreshed</th><th>auto-refresh</th><th>content</th><th>chars</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>"
        )


@dataclass
class ModelDetail:
    """``%hindsight models show ID``: the model's fields and its content (Markdown)."""

    _hindsight_result_ = True  # never retained by auto-retain (``_capture.transcript``)

    model: MentalModel

    def _fields(self) -> list[tuple[str, str]]:
        m = self.model
        return [
            ("id", m.id),
            ("tags", ", ".join(m.tags) or "(none)"),
            ("refreshed", refreshed(m)),
            ("auto-refresh", "yes" if m.auto_refresh else "no"),
            ("source query", m.source_query or ""),
            ("content", m.kind),
        ]

    def _empty(self) -> str:
        return EMPTY_LISTING if self.model.listing else EMPTY_CONTENT

    def __repr__(self) -> str:
        lines = [self.model.name]
        lines += [f"  {label}: {value}" for label, value in self._fields()]
        content = (self.model.content or "").strip() or self._empty()
        return own_text(plain_text("\n".join([*lines, "", content])))

    def _repr_markdown_(self) -> str:
        lines = [f"### {markdown_text(self.model.name)}", ""]
        lines += [f"- **{label}**: {markdown_text(value)}" for label, value in self._fields()]
        content = (self.model.content or "").strip()
        return "\n".join([*lines, "", markdown_answer(content) if content else self._empty()])


def line_diff(old: str, new: str) -> list[str]:
    """``- ``/``+ ``/``  `` lines from ``old`` to ``new`` (inputs and output capped)."""
    a = old.splitlines()[:DIFF_MAX_INPUT_LINES]
    b = new.splitlines()[:DIFF_MAX_INPUT_LINES]
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            out += [f"  {line}" for line in a[i1:i2]]
        else:
            out += [f"- {line}" for line in a[i1:i2]] + [f"+ {line}" for line in b[j1:j2]]
    if len(out) > DIFF_MAX_OUTPUT_LINES:
        out = [*out[:DIFF_MAX_OUTPUT_LINES], f"… ({len(out) - DIFF_MAX_OUTPUT_LINES} more lines)"]
    return out


@dataclass
class ModelHistory:
    """``%hindsight models history ID``: each change, newest first, as a line diff."""

    _hindsight_result_ = True  # never retained by auto-retain (``_capture.transcript``)

    model_id: str
    entries: list[tuple[str, list[str]]] = field(default_factory=list)  # (when, diff lines)

    def __repr__(self) -> str:
        lines = [f"History of {self.model_id} ({len(self.entries)} changes, newest first)"]
        for when, diff in self.entries:
            lines += ["", f"changed {when}:", *(diff or ["  (no text change)"])]
        return own_text(plain_text("\n".join(lines)))

    def _repr_html_(self) -> str:
        return f"<pre>{html_text(repr(self))}</pre>"


class PromptContext(str):
    """``%hindsight context``: the ``<mental_models>`` and ``<memories>`` blocks as one string."""

    _hindsight_result_ = True  # never retained by auto-retain (``_capture.transcript``)

    def __new__(cls, text: str = "") -> PromptContext:
        return super().__new__(cls, own_text(text))

    def __repr__(self) -> str:
        return str(self) or NO_CONTEXT
