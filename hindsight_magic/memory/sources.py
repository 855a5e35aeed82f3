"""The **Based on** section under a reflect's answer: memories with their provenance, mental
models by name, directives by name.

Plain text is an indented list; in notebooks it is a collapsed HTML ``<details>`` block inside
the answer's Markdown (one HTML block: no blank line inside, everything escaped). Stdlib only.
"""

from __future__ import annotations

import html
from datetime import datetime
from typing import TYPE_CHECKING

from ..text import plural
from .provenance import memory_details

if TYPE_CHECKING:
    from .recalled import Sources

SHOWN_PER_KIND = 10  # more are counted, and kept in ``.based_on``
TEXT_CHARS = 240
NOTHING = "Based on: no memories, mental models or directives."


def _short(text: str) -> str:
    """One line of at most ``TEXT_CHARS`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= TEXT_CHARS else line[: TEXT_CHARS - 1].rstrip() + "…"


def _groups(sources: Sources, now: datetime | None) -> list[tuple[str, list[tuple[str, str]]]]:
    """(heading, [(text, details)]) for each kind of source that is present."""
    memories = []
    for memory in sources.memories:
        kind = f" [{memory.type}]" if memory.type else ""
        memories.append((_short(memory.text) + kind, memory_details(memory, now)))
    models = [(_short(m.name), "" if m.name == m.id else m.id) for m in sources.mental_models]
    directives = [(_short(d.name or d.id), "") for d in sources.directives]
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


def sources_text(sources: Sources, now: datetime | None = None) -> str:
    """``Based on:`` and an indented list per kind of source."""
    groups = _groups(sources, now)
    if not groups:
        return NOTHING
    lines = [f"Based on ({summary(sources)}):"]
    for heading, items in groups:
        lines.append(f"  {heading}:")
        for text, details in items[:SHOWN_PER_KIND]:
            lines.append(f"    - {text} — {details}" if details else f"    - {text}")
        if len(items) > SHOWN_PER_KIND:
            lines.append(f"    {_more(len(items))}")
    return "\n".join(lines)


def sources_markdown(sources: Sources, now: datetime | None = None) -> str:
    """A collapsed ``<details>`` **Based on** block (escaped HTML, valid inside Markdown)."""
    esc = html.escape
    groups = _groups(sources, now)
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
