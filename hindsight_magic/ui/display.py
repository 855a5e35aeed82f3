"""Result objects returned by the magics: plain text ``__repr__`` plus escaped HTML/Markdown."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..text import plural

if TYPE_CHECKING:
    pass


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
