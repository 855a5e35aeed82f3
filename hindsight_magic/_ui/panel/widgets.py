"""The panel's widgets (core ipywidgets only); imported when ``%hindsight panel`` shows one.

``HindsightPanel`` holds the header, queue, auto-retain, buttons and mental models (a preview and
a Refresh button each); ``BrowserWidgets`` its memory browser (search box and results, Recent,
the session document). This module holds only widgets: their HTML values come from ``html.py``,
which escapes every string from the session or the server.

``HindsightPanel.show(snapshot)`` is the only method that writes widget values after the panel
was built, and the session's worker thread is the only caller (through ``PanelHub.push``): each
call sets every changed value inside ``hold_sync`` of each widget, so one update message per
changed widget reaches the front end. Elements carry stable ``hm-*`` classes (``hm-panel``,
``hm-flush``, ``hm-queue-pending`` …) for styling and browser tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets  # type: ignore[import-untyped]
from IPython.display import display

from ..._memory.mental_models import MentalModel
from .html import (
    document_html,
    header_html,
    model_html,
    model_title,
    recent_html,
    results_html,
    rows_table,
    search_state_html,
    section_html,
    title,
)

if TYPE_CHECKING:
    from .hub import PanelHub
    from .state import Snapshot

_WIDGETS_7 = widgets.__version__.startswith("7.")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class HindsightPanel(widgets.VBox):  # type: ignore[misc]
    """The live panel: header, queue, auto-retain, buttons, memory browser, mental models."""

    _hindsight_result_ = True  # never retained by auto-retain (``_capture.transcript``)

    def __init__(self, hub: PanelHub, snapshot: Snapshot) -> None:
        self._hub = hub
        self._closed = False
        self._model_ids: tuple[str, ...] = ()
        self.w_header = widgets.HTML()
        self.w_queue = widgets.HTML(layout=widgets.Layout(flex="0 1 auto", max_width="60%"))
        self.w_auto = widgets.HTML(layout=widgets.Layout(flex="0 1 auto"))
        self.w_models_state = widgets.HTML()
        self.w_models = widgets.Accordion()
        self.w_notice = widgets.Label()
        self.w_details = widgets.HTML()
        self.browser = BrowserWidgets(hub.act)
        self.w_flush = self._button("Flush now", "hm-flush", "upload", "flush_now")
        self.w_retry = self._button("Retry failed", "hm-retry", "redo", "retry_failed")
        self.w_refresh = self._button(
            "Refresh mental models", "hm-refresh", "refresh", "refresh_models"
        )
        self.w_pause = self._button("Pause auto-retain", "hm-pause", "pause", "toggle_autoretain")
        for widget, name in [
            (self.w_header, "hm-header"),
            (self.w_queue, "hm-queue"),
            (self.w_auto, "hm-autoretain"),
            (self.w_models_state, "hm-models-state"),
            (self.w_models, "hm-models"),
            (self.w_notice, "hm-notice"),
            (self.w_details, "hm-details"),
        ]:
            widget.add_class(name)
        buttons = widgets.HBox([self.w_flush, self.w_retry, self.w_refresh, self.w_pause])
        super().__init__(
            [
                self.w_header,
                widgets.HBox([self.w_queue, self.w_auto]),
                buttons,
                self.w_notice,
                self.browser.box,
                self.w_models_state,
                self.w_models,
                self.w_details,
            ],
            layout=widgets.Layout(border="1px solid #ccc", padding="6px 10px", max_width="980px"),
        )
        self._boxes = [buttons, self.children[1]]
        self.add_class("hm-panel")
        self.snapshot = snapshot
        self.show(snapshot)

    def _button(self, label: str, css: str, icon: str, action: str) -> widgets.Button:
        """A button whose click runs ``PanelHub.<action>`` (quick: it never waits on I/O)."""
        return button(label, css, icon, lambda: self._hub.act(action))

    def _leaves(self) -> Iterator[widgets.Widget]:
        yield from (self.w_header, self.w_queue, self.w_auto, self.w_models_state)
        yield from (self.w_models, self.w_notice, self.w_details)
        yield from (self.w_flush, self.w_retry, self.w_refresh, self.w_pause)
        yield from self.browser.leaves()

    @property
    def is_open(self) -> bool:
        """False once ``close()`` was called."""
        return not self._closed and self.comm is not None

    def show(self, snapshot: Snapshot) -> None:
        """Display ``snapshot``: one ``hold_sync`` per widget, so one message per change."""
        sections = dict(snapshot.report.sections)
        auto_label = {"on": "Pause auto-retain", "paused": "Resume auto-retain"}
        with ExitStack() as stack:
            for widget in self._leaves():
                stack.enter_context(widget.hold_sync())
            self.w_header.value = header_html(snapshot.report.title, sections)
            self.w_queue.value = section_html("Queue", "queue", sections.get("Queue", []))
            self.w_auto.value = section_html(
                "Auto-retain", "autoretain", sections.get("Auto-retain", [])
            )
            self.w_models_state.value = section_html(
                "Mental models", "models", sections.get("Mental models", [])
            )
            self.w_details.value = rows_table("session", sections.get("Session", []))
            self.w_notice.value = snapshot.notice
            self.w_notice.layout.display = "" if snapshot.notice else "none"
            self.w_retry.disabled = snapshot.closed or not snapshot.failed
            self.w_pause.description = auto_label.get(snapshot.auto, "Auto-retain off")
            self.w_pause.tooltip = (
                "%hindsight autoretain on turns it on" if snapshot.auto == "off" else ""
            )
            self.w_pause.disabled = snapshot.closed or snapshot.auto == "off"
            self.w_flush.disabled = self.w_refresh.disabled = snapshot.closed
            self.browser.show(snapshot)
            self._show_models(snapshot.models, snapshot.closed)
        self.snapshot = snapshot

    def _model_box(self, model: MentalModel) -> widgets.VBox:
        """A model's preview and its Refresh button (the server's refresh, on the worker)."""
        model_id, act = model.id, self._hub.act
        refresh = button(
            "Refresh", "hm-model-refresh", "refresh", lambda: act("refresh_model", model_id)
        )
        preview = widgets.HTML(value=model_html(model), _dom_classes=("hm-model-preview",))
        return widgets.VBox(
            [preview, refresh],
            layout=widgets.Layout(align_items="flex-start"),
            _dom_classes=("hm-model",),
        )

    def _show_models(self, models: Sequence[MentalModel], closed: bool) -> None:
        ids = tuple(m.id for m in models)
        accordion = self.w_models
        if ids != self._model_ids:
            old = accordion.children
            accordion.children = tuple(self._model_box(m) for m in models)
            for child in old:
                for part in child.children:
                    part.close()
                child.close()
            self._model_ids = ids
        for child, model in zip(accordion.children, models, strict=True):
            preview, refresh = child.children
            with preview.hold_sync(), refresh.hold_sync():
                preview.value = model_html(model)
                refresh.disabled = closed
        titles = [model_title(m) for m in models]
        if hasattr(accordion, "titles"):  # ipywidgets 8
            accordion.titles = tuple(titles)
        else:  # pragma: no cover - ipywidgets 7
            for index, title in enumerate(titles):
                accordion.set_title(index, title)
        accordion.layout.display = "" if models else "none"

    def close(self) -> None:
        """Stop updates and close every widget of the panel."""
        self._closed = True
        self._hub.detach(self)  # waits for a push in progress
        models = [part for box in self.w_models.children for part in (*box.children, box)]
        for widget in (*self._leaves(), *models, *self.browser.containers(), *self._boxes):
            widget.close()
        super().close()

    def __repr__(self) -> str:
        return repr(self.snapshot.report)

    # The text form is the whole snapshot, not ipywidgets' 110 characters: ipywidgets 8 shows a
    # widget through _repr_mimebundle_, ipywidgets 7 through _ipython_display_.
    if _WIDGETS_7:

        def _ipython_display_(self, **kwargs: Any) -> None:
            view = {"version_major": 2, "version_minor": 0, "model_id": self._model_id}
            display({"text/plain": repr(self), WIDGET_VIEW: view}, raw=True)  # type: ignore[no-untyped-call]
            self._handle_displayed(**kwargs)

    else:

        def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
            bundle: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)
            if bundle is not None:
                bundle["text/plain"] = repr(self)
            return bundle


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
