"""Result objects returned by the magics: plain text ``__repr__`` plus escaped HTML/Markdown."""

from __future__ import annotations

import html
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, overload

from ..times import utc_minute, utc_minute_text

if TYPE_CHECKING:
    from ..api.responses import Memory


RECALL_PREAMBLE = (
    "Relevant memories from past conversations (prioritize recent when conflicting). Only use "
    "memories that are directly useful to continue this conversation; ignore the rest:"
)
NO_MEMORIES = "No relevant memories found."
NO_REFLECTION = "No relevant information found to reflect on."


def plural(count: int, one: str, many: str) -> str:
    """``1 memory`` / ``3 memories``."""
    return f"{count} {one if count == 1 else many}"


def _md_escape(text: str) -> str:
    """Text safe inside Markdown: no raw HTML, no accidental table breaks."""
    return html.escape(text, quote=False)


class Message:
    """A short text outcome (one or a few lines)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return str(other) == self.text if isinstance(other, str | Message) else NotImplemented

    __hash__ = None  # type: ignore[assignment]


class RetainResult(Message):
    """Outcome of ``%retain``: how many memories were queued."""

    def __init__(self, count: int) -> None:
        self.count = count
        super().__init__(f"{plural(count, 'memory', 'memories')} queued.")


class RecallResult(Sequence["Memory"]):
    """Ranked memories from ``%recall``; a sequence of ``Memory`` with rich reprs."""

    def __init__(
        self, query: str, memories: Sequence[Memory], bank_id: str, as_of: datetime | None = None
    ) -> None:
        self.query = query
        self.memories = list(memories)
        self.bank_id = bank_id
        self.as_of = as_of or datetime.now(timezone.utc)

    @overload
    def __getitem__(self, index: int) -> Memory: ...
    @overload
    def __getitem__(self, index: slice) -> list[Memory]: ...
    def __getitem__(self, index: int | slice) -> Memory | list[Memory]:
        return self.memories[index]

    def __len__(self) -> int:
        return len(self.memories)

    def __iter__(self) -> Iterator[Memory]:
        return iter(self.memories)

    @property
    def texts(self) -> list[str]:
        """The memories' texts, best first."""
        return [m.text for m in self.memories]

    def _bullets(self) -> str:
        lines = []
        for memory in self.memories:
            line = f"- {memory.text}"
            if memory.type:
                line += f" [{memory.type}]"
            if memory.mentioned_at:
                line += f" ({memory.mentioned_at})"
            lines.append(line)
        return "\n\n".join(lines)

    def headline(self) -> str:
        """``Found N relevant memories (as of …):`` or the empty message."""
        if not self.memories:
            return NO_MEMORIES
        count = plural(len(self.memories), "relevant memory", "relevant memories")
        return f"Found {count} (as of {utc_minute(self.as_of)} UTC):"

    def __repr__(self) -> str:
        if not self.memories:
            return NO_MEMORIES
        return f"{self.headline()}\n\n{self._bullets()}"

    __str__ = __repr__

    def as_context(self) -> str:
        """The ``<memories>`` block for an LLM prompt ('' when nothing was found)."""
        if not self.memories:
            return ""
        return (
            f"<memories>\n{RECALL_PREAMBLE}\nCurrent time: {utc_minute(self.as_of)} UTC\n\n"
            f"{self._bullets()}\n</memories>"
        )

    def _repr_html_(self) -> str:
        esc = html.escape
        if not self.memories:
            return f"<p>{esc(NO_MEMORIES)}</p>"
        rows = []
        for memory in self.memories:
            score = memory.scores.final if memory.scores else None
            rows.append(
                "<tr>"
                f"<td style='text-align:left'>{esc(memory.text)}</td>"
                f"<td>{esc(memory.type or '')}</td>"
                f"<td>{esc(utc_minute_text(memory.mentioned_at))}</td>"
                f"<td>{esc(', '.join(memory.tags or []))}</td>"
                f"<td>{'' if score is None else f'{score:.3f}'}</td>"
                "</tr>"
            )
        return (
            f"<p>{esc(self.headline())}</p><table><thead><tr>"
            "<th style='text-align:left'>memory</th><th>type</th><th>when (UTC)</th>"
            "<th>tags</th><th>score</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
        )


class ReflectResult(str):
    """The server's synthesized answer from ``%%reflect``; a ``str`` rendered as Markdown."""

    query: str
    based_on: Any

    def __new__(cls, text: str, query: str = "", based_on: Any = None) -> ReflectResult:
        self = super().__new__(cls, text.strip() or NO_REFLECTION)
        self.query = query
        self.based_on = based_on
        return self

    def __repr__(self) -> str:
        return str(self)

    def _repr_markdown_(self) -> str:
        return _md_escape(str(self))


@dataclass
class Report:
    """Sections of (label, value) rows, e.g. ``%hindsight status`` or ``config``."""

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
        return "\n".join(lines)

    __str__ = __repr__

    def _repr_html_(self) -> str:
        esc = html.escape
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
