"""The panel's sections as HTML (pure functions; the widgets set them as values).

Every HTML fragment of the panel is made here, with one set of table and title styles: the
status sections (label → value tables), the header, the search results, the Recent list, the
session document, the Forgotten list, the delete confirmation and the mental models. Every
string from the server or the session is escaped. The rows of the results, Recent and Forgotten
lists are one small table each (fixed column widths, so the rows of a list line up): the panel
shows each in a widget row of its own, next to its curation buttons. Mental-model content
(Markdown written by the server's LLM) is rendered by markdown-it-py from
``_text.markdown_answer``'s form (as the notebook shows it), with raw HTML, images and links
off: any tag in the input shows as text, nothing is fetched when a panel opens, no link comes
from a memory. markdown-it is imported on the first render, never by ``%load_ext``.
Cells carry ``hm-*`` classes (``hm-queue-pending``, ``hm-result-text``,
``hm-result-provenance``, ``hm-recent-state`` …) for styling and browser tests."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

from ..._delivery.recent import (
    CANCELLED,
    DELETED,
    FAILED,
    FORGOTTEN,
    INDEXED,
    QUEUED,
    RETRYING,
    SENT,
    RecentItem,
)
from ..._memory.mental_models import MentalModel
from ..._text import (
    html_text,
    local_clock,
    markdown_answer,
    one_line,
    plain_text,
    utc_minute_text,
)
from .browser import (
    DELETING,
    FORGETTING,
    RESTORED,
    RESTORING,
    CurationView,
    DeleteView,
    DocumentView,
    ForgottenView,
    ResultRow,
    SearchView,
)
from .figures import FigureView

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

    from ..._session.status import SessionStatus


MODEL_PREVIEW_CHARS = 600
STATE_COLORS = {
    QUEUED: "#777",
    RETRYING: "#ef6c00",
    SENT: "#1565c0",
    INDEXED: "#2e7d32",
    FAILED: "#c62828",
    FORGETTING: "#888",
    RESTORING: "#888",
    DELETING: "#888",
    FORGOTTEN: "#6a1b9a",
    RESTORED: "#2e7d32",
    CANCELLED: "#777",
    DELETED: "#c62828",
}
GONE = (FORGOTTEN, CANCELLED, DELETED)  # rows shown faded: out of recall (or never sent)


# every table of the panel: label → value sections and the lists (which add width and scroll)
_TABLE = "border-collapse:collapse;font-size:12px;line-height:1.5"
_TH = (
    "text-align:left;color:#666;font-weight:normal;padding:1px 10px 1px 0;"
    "vertical-align:top;white-space:nowrap"
)
_TD = "text-align:left;padding:1px 10px 1px 0;vertical-align:top;overflow-wrap:anywhere"
_TITLE = "font-weight:600;font-size:12px"
_SCROLL = "max-height:{}px;overflow:auto"
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


def header_html(heading: str, status: SessionStatus) -> str:
    """The Status tab's title, then the Server and Scope rows side by side, and the layers
    (the banks read beside the own one) when there are any."""
    blocks = section_html("Server", "server", status.server_rows(panel=True))
    blocks += section_html("Scope", "scope", status.scope_rows())
    if status.layers:
        blocks += section_html("Layers (only 'mine' is written)", "layers", status.layer_rows())
    return (
        f"<div style='font-size:14px;font-weight:700'>{html_text(heading)}</div>"
        f"<div style='display:flex;flex-wrap:wrap'>{blocks}</div>"
    )


AUTO_WORDS = {"on": "auto-retain on", "paused": "auto-retain paused", "off": "auto-retain off"}


def health_html(
    health: str, ok: bool | None, bank: str, pending: int, failed: int, auto: str
) -> str:
    """The one line over the tabs: the server's health (``ok``: whether it answered, None
    before it was asked), the bank, the queue's pending and failed memories, auto-retain.
    One line whatever the health says (a long "unreachable …" is cut with an ellipsis;
    hovering shows it all), so the tabs never move down."""
    health, bank = one_line(health, 400), one_line(bank, 120)
    failed_color = "#c62828" if failed else "#555"
    color = "#888" if ok is None else "#2e7d32" if ok else "#c62828"
    parts = [
        f"<span class='hm-health' style='color:{color};font-weight:600'>"
        f"● {html_text(health)}</span>",
        f"bank <span class='hm-health-bank'>{html_text(bank)}</span>",
        f"<span class='hm-health-pending'>{pending} pending</span>",
        f"<span class='hm-health-failed' style='color:{failed_color}'>{failed} failed</span>",
        f"<span class='hm-health-auto'>{html_text(AUTO_WORDS.get(auto, auto))}</span>",
    ]
    whole = f"{health} · bank {bank} · {pending} pending · {failed} failed · " + AUTO_WORDS.get(
        auto, auto
    )
    return (
        f"<div class='hm-health-summary' title='{html_text(whole)}' style='font-size:12px;"
        "white-space:nowrap;overflow:hidden;text-overflow:ellipsis;color:#555'>"
        "<span style='font-weight:700;font-size:13px;color:#222'>Hindsight memory</span> "
        + " · ".join(parts)
        + "</div>"
    )


def figure_caption_html(view: FigureView) -> str:
    """The line over a picture: what it counts and when it was drawn, or why it is not."""
    color = "#c62828" if view.failed else "#555"
    busy = " hm-figure-busy" if view.busy else ""
    return (
        f"<div class='hm-figure-caption{busy}' style='font-size:12px;color:{color}'>"
        f"{html_text(view.caption)}</div>"
    )


def figure_text_html(view: FigureView) -> str:
    """A picture's text table where it cannot be drawn, and how to get it drawn ('' when
    the picture is there)."""
    if view.png or not view.text:
        return ""
    hint = (
        f"<div class='hm-figure-hint' style='font-size:12px;color:#555'>{html_text(view.hint)}"
        "</div>"
        if view.hint
        else ""
    )
    return (
        f"<pre class='hm-figure-text' style='font-size:11px;margin:2px 0;background:#f7f7f7;"
        f"padding:4px'>{html_text(view.text)}</pre>{hint}"
    )


def _cell(css: str, text: str, style: str = "") -> str:
    return f"<td class='{css}' style='{_TD}{style}'>{html_text(text)}</td>"


def search_state_html(view: SearchView) -> str:
    """The line under the search box: searching, how many were found, or why it failed."""
    color = "#c62828" if view.failed else "#555"
    busy = " hm-search-busy" if view.busy else ""
    return (
        f"<div class='hm-search-message{busy}' style='font-size:12px;color:{color}'>"
        f"{html_text(view.message)}</div>"
    )


# the results' columns (a share of the row's table each), the same in the header and every row
RESULT_COLUMNS = (
    ("memory", "hm-result-text", "39%", ""),
    ("type", "hm-result-type", "8%", ";white-space:nowrap;overflow:hidden"),
    ("from", "hm-result-provenance", "22%", ";color:#555"),
    ("tags", "hm-result-tags", "15%", ";color:#555"),
    ("relevance", "hm-result-relevance", "7%", ";white-space:nowrap"),
    ("", "hm-result-state", "9%", ";white-space:nowrap;font-weight:600"),
)
_ROW_TABLE = f"{_TABLE};width:100%;table-layout:fixed"


def _faded(mark: str) -> str:
    """The style of a row's text once it is out of recall (a deleted one is struck through)."""
    if mark == DELETED:
        return ";color:#999;text-decoration:line-through"
    return ";color:#999" if mark in GONE else ""


def results_head_html() -> str:
    """The header over the result rows (the same column widths as each row)."""
    cells = "".join(
        f"<th style='{_TH};width:{width}'>{html_text(head)}</th>"
        for head, _, width, _ in RESULT_COLUMNS
    )
    return f"<table style='{_ROW_TABLE}'><thead><tr>{cells}</tr></thead></table>"


def result_row_html(row: ResultRow, mark: str = "") -> str:
    """One search result: memory, type, provenance, tags, relevance and its mark (``forgotten``
    …)."""
    values = (row.text, row.type, row.provenance, row.tags, row.relevance, mark)
    extra = (_faded(mark), "", "", "", "", f";color:{STATE_COLORS.get(mark, '#777')}")
    cells = "".join(
        _cell(css, value, f";width:{width}{style}{more}")
        for (_, css, width, style), value, more in zip(RESULT_COLUMNS, values, extra, strict=True)
    )
    return f"<table style='{_ROW_TABLE}'><tbody><tr class='hm-result'>{cells}</tr></tbody></table>"


def results_html(view: SearchView, curation: CurationView | None = None) -> str:
    """The results as one block: the header, then a row per memory ('' when there are none);
    the panel shows the same rows one widget row each, with their buttons."""
    if not view.rows:
        return ""
    curation = curation or CurationView()
    rows = "".join(result_row_html(row, curation.result_mark(row)) for row in view.rows)
    return f"<div class='hm-results-table'>{results_head_html()}{rows}</div>"


def recent_title_html(items: Sequence[RecentItem]) -> str:
    """The Recent list's title, and a line saying so when nothing was queued yet."""
    if items:
        return title("Recent")
    return (
        f"{title('Recent')}<div class='hm-recent-empty' style='font-size:12px;color:#777'>"
        "Nothing queued in this kernel yet.</div>"
    )


def recent_row_html(item: RecentItem, state: str | None = None) -> str:
    """One Recent row: when queued, its state (delivery, or what a curation did), its text and
    why it failed."""
    state = state or item.state
    color = STATE_COLORS.get(state, "#777")
    error = (
        f"<div class='hm-recent-error' style='color:#c62828'>{html_text(item.error)}</div>"
        if item.error
        else ""
    )
    cells = (
        _cell("hm-recent-time", local_clock(item.queued_at), ";width:58px;white-space:nowrap")
        + _cell(
            "hm-recent-state",
            state,
            f";width:74px;white-space:nowrap;font-weight:600;color:{color}",
        )
        + f"<td style='{_TD}{_faded(state)}'><div class='hm-recent-text'>"
        f"{html_text(item.text)}</div>{error}</td>"
    )
    return (
        f"<table style='{_ROW_TABLE}'><tbody><tr class='hm-recent-item'>{cells}</tr>"
        "</tbody></table>"
    )


def recent_html(items: Sequence[RecentItem], curation: CurationView | None = None) -> str:
    """This kernel's last memories as one block (the panel shows each row with its button)."""
    curation = curation or CurationView()
    rows = "".join(recent_row_html(item, curation.recent_state(item)) for item in items)
    return recent_title_html(items) + rows


def forgotten_title(view: ForgottenView) -> str:
    """The Forgotten section's title: how many it lists, once the server said."""
    return f"Forgotten memories ({len(view.rows)})" if view.loaded else "Forgotten memories"


def forgotten_message_html(view: ForgottenView) -> str:
    """The line over the Forgotten list: how many, or why they could not be listed."""
    color = "#c62828" if view.failed else "#555"
    return (
        f"<div class='hm-forgotten-message' style='font-size:12px;color:{color}'>"
        f"{html_text(view.message)}</div>"
    )


def forgotten_row_html(line: str, mark: str = "") -> str:
    """One forgotten memory (its text, id, reason and when) and its mark (``restored`` …)."""
    color = STATE_COLORS.get(mark, "#777")
    return (
        f"<div class='hm-forgotten-item' style='font-size:12px;line-height:1.5'>"
        f"<span class='hm-forgotten-text'>{html_text(line)}</span> "
        f"<span class='hm-forgotten-state' style='font-weight:600;color:{color}'>"
        f"{html_text(mark)}</span></div>"
    )


def delete_preview_html(view: DeleteView) -> str:
    """What deleting a document would remove, over its Confirm delete and Cancel buttons."""
    rows = "".join(f"<li>{html_text(item)}</li>" for item in view.items)
    listed = f"<ul style='margin:2px 0 2px 18px;padding:0'>{rows}</ul>" if rows else ""
    hint = (
        "<div style='color:#555'>Nothing is deleted until you click Confirm delete.</div>"
        if view.ready
        else ""
    )
    return (
        "<div class='hm-delete-preview' style='font-size:12px;border-left:3px solid #c62828;"
        f"padding:2px 8px;margin:4px 0'><div class='hm-delete-message' style='font-weight:600'>"
        f"{html_text(view.message)}</div>{listed}{hint}</div>"
    )


def document_html(view: DocumentView) -> str:
    """The last retained cells: their ids and state, then their text (the beginning, or all)."""
    meta = " · ".join(part for part in (view.document_id, view.message) if part)
    body = (
        f"<pre class='hm-document-text' style='{_SCROLL.format(260)};white-space:pre-wrap;"
        f"font-size:11px;margin:2px 0;background:#f7f7f7;padding:4px'>"
        f"{html_text(view.shown)}</pre>"
        if view.text
        else ""
    )
    return (
        f"{title('Last retained cells (as the server stored them)')}"
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
    if model.listing:
        meta.append(model.kind)
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
