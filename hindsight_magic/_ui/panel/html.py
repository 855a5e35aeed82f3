"""The panel's sections as HTML (pure functions; the widgets set them as values).

Every HTML fragment of the panel is made here, with one set of table and title styles: the
status sections (label → value tables), the header, the search results, the Recent list, the
session document and the mental models. Every string from the server or the session is
escaped. Mental-model content (Markdown written by the server's LLM) is rendered by markdown-it-py
from ``_text.markdown_answer``'s form (as the notebook shows it), with raw HTML, images and links
off: any tag in the input shows as text, nothing is fetched when a panel opens, no link comes
from a memory. markdown-it is imported on the first render, never by ``%load_ext``.
Cells carry ``hm-*`` classes (``hm-queue-pending``, ``hm-result-text``,
``hm-result-provenance``, ``hm-recent-state`` …) for styling and browser tests."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

from ..._delivery.recent import FAILED, INDEXED, QUEUED, RETRYING, SENT, RecentItem
from ..._memory.mental_models import MentalModel
from ..._text import html_text, local_clock, markdown_answer, plain_text, utc_minute_text
from .browser import DocumentView, SearchView

if TYPE_CHECKING:
    from markdown_it import MarkdownIt


MODEL_PREVIEW_CHARS = 600
STATE_COLORS = {
    QUEUED: "#777",
    RETRYING: "#ef6c00",
    SENT: "#1565c0",
    INDEXED: "#2e7d32",
    FAILED: "#c62828",
}


# every table of the panel: label → value sections and the lists (which add width and scroll)
_TABLE = "border-collapse:collapse;font-size:12px;line-height:1.5"
_TH = (
    "text-align:left;color:#666;font-weight:normal;padding:1px 10px 1px 0;"
    "vertical-align:top;white-space:nowrap"
)
_TD = "text-align:left;padding:1px 10px 1px 0;vertical-align:top;overflow-wrap:anywhere"
_TITLE = "font-weight:600;font-size:12px"
_SCROLL = "max-height:{}px;overflow:auto"
_HEALTH_COLORS = {"ok": "#2e7d32", "checking…": "#888"}
Rows = Sequence[tuple[str, str]]


def title(text: str) -> str:
    """A section title (the browser's sections: a little space above it)."""
    return f"<div style='{_TITLE};margin-top:6px'>{html_text(text)}</div>"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def rows_table(section: str, rows: Rows) -> str:
    """A two-column table; each value cell has the class ``hm-<section>-<label>``."""
    esc, prefix = html_text, _slug(section)
    body = "".join(
        f"<tr><th style='{_TH}'>{esc(label)}</th>"
        f"<td class='hm-{prefix}-{_slug(label)}' style='{_TD}'>{esc(value)}</td></tr>"
        for label, value in rows
    )
    return f"<table class='hm-table' style='{_TABLE}'><tbody>{body}</tbody></table>"


def section_html(heading: str, section: str, rows: Rows) -> str:
    """A titled block around ``rows_table``."""
    return (
        f"<div style='margin:2px 16px 4px 0'><div style='{_TITLE}'>"
        f"{html_text(heading)}</div>{rows_table(section, rows)}</div>"
    )


def header_html(heading: str, sections: dict[str, list[tuple[str, str]]]) -> str:
    """Title with a health badge, then the Server and Scope rows side by side."""
    server = sections.get("Server", [])
    health = dict(server).get("state", "unknown")
    color = _HEALTH_COLORS.get(health.split(" ")[0], "#c62828")
    badge = (
        f"<span class='hm-health' style='color:{color};font-weight:600'>● "
        f"{html_text(health)}</span>"
    )
    blocks = section_html("Server", "server", server) + section_html(
        "Scope", "scope", sections.get("Scope", [])
    )
    return (
        f"<div style='font-size:14px;font-weight:700'>{html_text(heading)} {badge}</div>"
        f"<div style='display:flex;flex-wrap:wrap'>{blocks}</div>"
    )


def _table(css: str, head: Sequence[str], rows: Sequence[str], height: int) -> str:
    header = "".join(f"<th style='{_TH}'>{html_text(h)}</th>" for h in head)
    return (
        f"<div style='{_SCROLL.format(height)}'><table class='{css}' style='{_TABLE};width:100%'>"
        f"<thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _cell(css: str, text: str, style: str = "") -> str:
    return f"<td class='{css}' style='{_TD}{style}'>{html_text(text)}</td>"


def search_state_html(view: SearchView) -> str:
    """The line under the search box: searching, how many were found, or why it failed."""
    color = "#c62828" if view.message.startswith("Search failed") else "#555"
    busy = " hm-search-busy" if view.busy else ""
    return (
        f"<div class='hm-search-message{busy}' style='font-size:12px;color:{color}'>"
        f"{html_text(view.message)}</div>"
    )


def results_html(view: SearchView) -> str:
    """The results table: memory, type, provenance, tags, score ('' when there are none)."""
    if not view.rows:
        return ""
    rows = [
        "<tr class='hm-result'>"
        + _cell("hm-result-text", row.text)
        + _cell("hm-result-type", row.type, ";white-space:nowrap")
        + _cell("hm-result-provenance", row.provenance, ";color:#555")
        + _cell("hm-result-tags", row.tags, ";color:#555")
        + _cell("hm-result-score", row.score, ";white-space:nowrap")
        + "</tr>"
        for row in view.rows
    ]
    head = ("memory", "type", "from", "tags", "score")
    return _table("hm-results-table", head, rows, 320)


def recent_html(items: Sequence[RecentItem]) -> str:
    """This kernel's last memories: when queued, delivery state, text, and why it failed."""
    if not items:
        return (
            f"{title('Recent')}<div class='hm-recent-empty' style='font-size:12px;color:#777'>"
            "Nothing queued in this kernel yet.</div>"
        )
    rows = [
        "<tr class='hm-recent-item'>"
        + _cell("hm-recent-time", local_clock(item.queued_at), ";white-space:nowrap")
        + _cell(
            "hm-recent-state",
            item.state,
            f";white-space:nowrap;font-weight:600;color:{STATE_COLORS.get(item.state, '#777')}",
        )
        + _cell("hm-recent-text", item.text)
        + _cell("hm-recent-error", item.error, ";color:#c62828")
        + "</tr>"
        for item in items
    ]
    return title("Recent") + _table("hm-recent-table", ("queued", "state", "memory", ""), rows, 220)


def document_html(view: DocumentView) -> str:
    """The session document: its id and state, then its text (the beginning, or all)."""
    meta = " · ".join(part for part in (view.document_id, view.message) if part)
    body = (
        f"<pre class='hm-document-text' style='{_SCROLL.format(260)};white-space:pre-wrap;"
        f"font-size:11px;margin:2px 0;background:#f7f7f7;padding:4px'>"
        f"{html_text(view.shown)}</pre>"
        if view.text
        else ""
    )
    return (
        f"{title('Session document (as the server stored it)')}"
        f"<div class='hm-document-meta' style='font-size:11px;color:#666'>{html_text(meta)}</div>"
        f"{body}"
    )


def model_preview(content: str | None, limit: int = MODEL_PREVIEW_CHARS) -> str:
    """The beginning of a model's Markdown, cut at a line end near ``limit``, with ``…``."""
    text = (content or "").strip()
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip() + "\n\n…"


def model_title(model: MentalModel) -> str:
    """``name — refreshed YYYY-MM-DD HH:MM UTC`` (or ``never refreshed``)."""
    stamp = utc_minute_text(model.last_refreshed_at, " UTC")
    return plain_text(f"{model.name} — {'refreshed ' + stamp if stamp else 'never refreshed'}")


def model_html(model: MentalModel) -> str:
    """A model's id, tags and refresh time, then a preview of its content (from Markdown)."""
    meta = [model.id, ", ".join(model.tags) or "untagged", model_title(model).split(" — ")[1]]
    return (
        f"<div class='hm-model-meta' style='color:#666;font-size:11px'>"
        f"{html_text(' · '.join(meta))}</div>"
        f"<div class='hm-model-content'>{markdown_to_html(model_preview(model.content))}</div>"
    )


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).disable(["image", "link", "autolink"])


def markdown_to_html(text: str) -> str:
    """Render ``text`` (Markdown the server's LLM wrote) as HTML, the way the notebook forms
    show it (``_text.markdown_answer``): emphasis, lists and code, but no tag, link or image
    comes from the text."""
    return str(_parser().render(markdown_answer(text or "")))
