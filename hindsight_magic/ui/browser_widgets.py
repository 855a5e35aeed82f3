"""The memory browser's widgets inside the panel: search box and results, Recent, the document.

Built once with the panel; ``show(snapshot)`` (called by ``HindsightPanel.show`` on the worker,
inside the panel's ``hold_sync``) is the only writer of their values. Clicks go to the hub,
which submits the work to the worker: the Search button passes the box's current text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import ipywidgets as widgets  # type: ignore[import-untyped]

from .browser_html import (
    document_html,
    recent_html,
    results_html,
    search_state_html,
    title,
)

if TYPE_CHECKING:
    from .snapshot import Snapshot

Act = Callable[..., None]  # PanelHub.act(action, *args)


def button(label: str, css: str, icon: str, on_click: Callable[[], None]) -> widgets.Button:
    """A button that calls ``on_click`` (quick: the hub never waits on I/O)."""
    made = widgets.Button(description=label, icon=icon, layout=widgets.Layout(width="auto"))
    made.add_class(css)
    made.on_click(lambda _button: on_click())
    return made


class BrowserWidgets:
    """Search row, results table, Recent list and session document of one panel."""

    def __init__(self, act: Act) -> None:
        self.w_search_box = widgets.Text(
            placeholder="Search this bank's memories…",
            layout=widgets.Layout(width="420px"),
        )
        self.w_search = button(
            "Search", "hm-search", "search", lambda: act("search", self.w_search_box.value)
        )
        self.w_search_state = widgets.HTML()
        self.w_results = widgets.HTML()
        self.w_recent = widgets.HTML(layout=widgets.Layout(flex="1 1 50%", min_width="300px"))
        self.w_document = widgets.HTML()
        self.w_doc_toggle = button(
            "Show all", "hm-document-toggle", "expand", lambda: act("toggle_document")
        )
        self.w_doc_reload = button(
            "Reload", "hm-document-reload", "refresh", lambda: act("reload_document")
        )
        for widget, name in [
            (self.w_search_box, "hm-search-box"),
            (self.w_search_state, "hm-search-state"),
            (self.w_results, "hm-results"),
            (self.w_recent, "hm-recent"),
            (self.w_document, "hm-document"),
        ]:
            widget.add_class(name)
        self._search_row = widgets.HBox([self.w_search_box, self.w_search])
        self._doc_buttons = widgets.HBox([self.w_doc_toggle, self.w_doc_reload])
        self._doc_box = widgets.VBox(
            [self.w_document, self._doc_buttons],
            layout=widgets.Layout(flex="1 1 50%", min_width="300px"),
        )
        self._columns = widgets.HBox(
            [self.w_recent, self._doc_box], layout=widgets.Layout(flex_flow="row wrap")
        )
        self.w_search_title = widgets.HTML(value=title("Search memory"))
        self.box = widgets.VBox(
            [
                self.w_search_title,
                self._search_row,
                self.w_search_state,
                self.w_results,
                self._columns,
            ]
        )
        self.box.add_class("hm-browser")

    def leaves(self) -> Iterator[widgets.Widget]:
        """Every widget whose value ``show`` may change."""
        yield from (self.w_search, self.w_search_state, self.w_results, self.w_recent)
        yield from (self.w_document, self.w_doc_toggle, self.w_doc_reload)

    def containers(self) -> Iterator[widgets.Widget]:
        """The rest, for ``close``."""
        yield from (self.w_search_box, self.w_search_title, self._search_row)
        yield from (self._doc_buttons, self._doc_box, self._columns, self.box)

    def show(self, snapshot: Snapshot) -> None:
        """Display the snapshot's search, Recent and document views (caller holds the sync)."""
        search, document = snapshot.search, snapshot.document
        self.w_search_state.value = search_state_html(search)
        self.w_search_state.layout.display = "" if search.message else "none"
        self.w_results.value = results_html(search)
        self.w_search.disabled = snapshot.closed
        self.w_recent.value = recent_html(snapshot.recent)
        self.w_document.value = document_html(document)
        self.w_doc_toggle.description = "Show less" if document.full else "Show all"
        self.w_doc_toggle.layout.display = "" if document.truncated else "none"
        self.w_doc_reload.disabled = snapshot.closed
