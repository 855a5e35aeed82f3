"""What a recall or a reflect returns: rich results with a plain-text ``__repr__`` and escaped
HTML/Markdown for notebooks (``RecallResult``, ``ReflectResult``)."""

from __future__ import annotations

import html
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, overload

from ..text import plural
from ..times import utc_minute, utc_minute_text

if TYPE_CHECKING:
    from ..api.responses import Memory

RECALL_PREAMBLE = (
    "Relevant memories from past conversations (prioritize recent when conflicting). Only use "
    "memories that are directly useful to continue this conversation; ignore the rest:"
)
NO_MEMORIES = "No relevant memories found."
NO_REFLECTION = "No relevant information found to reflect on."


def _md_escape(text: str) -> str:
    """Text safe inside Markdown: no raw HTML, no accidental table breaks."""
    return html.escape(text, quote=False)


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
