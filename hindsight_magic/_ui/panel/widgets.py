"""The panel's widgets (core ipywidgets only); imported when ``%hindsight panel`` shows one.

``HindsightPanel`` is a one-line health summary and a notice over five tabs: Memory (its
``BrowserWidgets``: search box and results, Recent, the Forgotten list, the delete
confirmation), Timeline and Map (``FigureWidgets``: a picture drawn on the worker), Models (a
preview and a Refresh button each) and Status (header, queue, auto-retain, their buttons, the
session document). This module holds only widgets: their HTML values come from ``html.py``,
which escapes every string from the session or the server.

The results, Recent and Forgotten lists are ``RowList``s: a row per memory (its HTML and its
curation buttons), kept per memory and reused, so a list that changes sends only what changed,
and a list is looked at only when what it shows (the immutable views) changed.

``HindsightPanel.show(snapshot)`` is the only method that writes widget values after the panel
was built, and the session's worker thread is the only caller (through ``PanelHub.push``): each
call sets every changed value inside ``hold_sync`` of each widget, so one update message per
changed widget reaches the front end. Elements carry stable ``hm-*`` classes (``hm-panel``,
``hm-flush``, ``hm-queue-pending``, ``hm-tabs``, ``hm-tab-timeline`` …) for styling and browser
tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets  # type: ignore[import-untyped]
from IPython.display import display

from ..._delivery.recent import (
    CANCELLED,
    DELETED,
    FAILED,
    FORGOTTEN,
    QUEUED,
    RETRYING,
    RecentItem,
)
from ..._memory.mental_models import MentalModel
from ..._settings import MINE
from .browser import (
    DELETING,
    FORGETTING,
    RESTORING,
    CurationView,
    ResultRow,
    recent_curable,
)
from .html import (
    delete_preview_html,
    document_html,
    figure_caption_html,
    figure_text_html,
    forgotten_message_html,
    forgotten_row_html,
    forgotten_title,
    header_html,
    health_html,
    model_html,
    model_title,
    recent_row_html,
    recent_title_html,
    result_row_html,
    results_head_html,
    search_state_html,
    section_html,
    title,
)
from .state import TITLE, AutoState

if TYPE_CHECKING:
    from .figures import FigureView
    from .hub import PanelHub
    from .state import Snapshot

_WIDGETS_7 = widgets.__version__.startswith("7.")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


TABS = ("Memory", "Timeline", "Map", "Models", "Status")  # the Memory tab opens first
TAB_HEIGHT = "450px"  # each tab's content scrolls inside this: the panel stays about 600 px
PICTURE_HEIGHT = "400px"  # a picture and its caption fit a tab without scrolling
PANEL_LAYOUT = {"border": "1px solid #ccc", "padding": "6px 10px", "max_width": "980px"}


def tab_box(children: Sequence[widgets.Widget], name: str) -> widgets.VBox:
    """A tab's content: scrolls inside ``TAB_HEIGHT``, class ``hm-tab-<name>``.

    The children sit in an inner box that never shrinks: in a flex column of bounded height
    the browser would otherwise squeeze them (lists cut short, a button row gone) rather
    than scroll."""
    inner = widgets.VBox(list(children), layout=widgets.Layout(flex="0 0 auto"))
    box = widgets.VBox(
        [inner],
        layout=widgets.Layout(max_height=TAB_HEIGHT, overflow="auto", padding="0px 2px"),
    )
    box.add_class(f"hm-tab-{name.lower()}")
    return box


class FigureWidgets:
    """A picture tab's widgets: its caption (beside its buttons), the PNG (an ``Image``), and
    the text table shown instead where matplotlib is missing."""

    def __init__(self, name: str, buttons: Sequence[widgets.Widget] = ()) -> None:
        self.w_caption = widgets.HTML()
        self.w_image = widgets.Image(
            format="png",
            layout=widgets.Layout(
                max_width="100%", max_height=PICTURE_HEIGHT, width="auto", height="auto"
            ),
        )
        self.w_text = widgets.HTML()
        self.w_caption.add_class(f"hm-{name}-caption")
        self.w_image.add_class(f"hm-{name}-image")
        self.w_text.add_class(f"hm-{name}-text")
        self._top = widgets.HBox(
            [*buttons, self.w_caption], layout=widgets.Layout(align_items="center")
        )
        self.box = tab_box([self._top, self.w_image, self.w_text], name)
        self._shown: FigureView | None = None

    def leaves(self) -> Iterator[widgets.Widget]:
        """The widgets ``show`` writes."""
        yield from (self.w_caption, self.w_image, self.w_text)

    def containers(self) -> Iterator[widgets.Widget]:
        """The rest, for ``close``."""
        yield from (self._top, *self.box.children, self.box)

    def show(self, view: FigureView) -> None:
        """Display ``view`` (the caller holds the sync of ``leaves``); the PNG is sent only
        when it changed (a picture is tens of kilobytes)."""
        if view == self._shown:
            return
        self.w_caption.value = figure_caption_html(view)
        if self.w_image.value != view.png:
            self.w_image.value = view.png
        self.w_image.layout.display = "" if view.png else "none"
        self.w_text.value = figure_text_html(view)
        self.w_text.layout.display = "" if self.w_text.value else "none"
        self._shown = view


class HindsightPanel(widgets.VBox):  # type: ignore[misc]
    """The live panel: a one-line health summary and the notice over five tabs — Memory
    (search, Recent, Forgotten), Timeline, Map, Models and Status (the queue, auto-retain,
    their buttons and the session document).

    Tabs, because stacked the sections made a column 1 500 px tall that pushed the notebook's
    own cells off the screen; the one line over them keeps what must never be out of sight
    (is the server there, is anything failing) visible whichever tab is open."""

    _hindsight_result_ = True  # never retained by auto-retain (``_capture.transcript``)

    def __init__(self, hub: PanelHub, snapshot: Snapshot) -> None:
        self._hub = hub
        self._closed = False
        self._model_ids: tuple[str, ...] = ()
        # classes given at construction: an ``add_class`` afterwards is one more message each
        self.w_health = widgets.HTML(_dom_classes=("hm-health-line",))
        self.w_header = widgets.HTML(_dom_classes=("hm-header",))
        self.w_queue = widgets.HTML(
            layout=widgets.Layout(flex="0 1 auto", max_width="60%"), _dom_classes=("hm-queue",)
        )
        self.w_auto = widgets.HTML(
            layout=widgets.Layout(flex="0 1 auto"), _dom_classes=("hm-autoretain",)
        )
        self.w_models_state = widgets.HTML(_dom_classes=("hm-models-state",))
        self.w_models = widgets.Accordion(_dom_classes=("hm-models",))
        self.w_notice = widgets.Label(_dom_classes=("hm-notice",))
        self.w_details = widgets.HTML(_dom_classes=("hm-details",))
        self.browser = BrowserWidgets(hub.act)
        self.w_flush = self._button("Flush now", "hm-flush", "upload", "flush_now")
        self.w_retry = self._button("Retry failed", "hm-retry", "redo", "retry_failed")
        self.w_refresh = self._button(
            "Refresh mental models", "hm-refresh", "refresh", "refresh_models"
        )
        self.w_pause = self._button("Pause auto-retain", "hm-pause", "pause", "toggle_autoretain")
        self.w_map_refresh = self._button("Refresh", "hm-map-refresh", "refresh", "refresh_map")
        self.timeline = FigureWidgets("timeline")
        self.memory_map = FigureWidgets("map", [self.w_map_refresh])
        buttons = widgets.HBox([self.w_flush, self.w_retry, self.w_pause])
        counters = widgets.HBox([self.w_queue, self.w_auto])
        models_buttons = widgets.HBox([self.w_refresh])
        contents = [
            tab_box([self.browser.box], "memory"),
            self.timeline.box,
            self.memory_map.box,
            tab_box([self.w_models_state, models_buttons, self.w_models], "models"),
            tab_box(
                [self.w_header, counters, buttons, self.browser.document_box, self.w_details],
                "status",
            ),
        ]
        self.w_tabs = widgets.Tab(contents)
        self.w_tabs.add_class("hm-tabs")
        set_titles(self.w_tabs, TABS)
        self.w_tabs.selected_index = 0
        self.w_tabs.observe(self._tab_selected, names="selected_index")
        super().__init__(
            [self.w_health, self.w_notice, self.w_tabs], layout=widgets.Layout(**PANEL_LAYOUT)
        )
        inner = [box.children[0] for box in contents[:1] + contents[3:]]
        self._boxes = [buttons, counters, models_buttons, *contents, *inner]
        self.add_class("hm-panel")
        self.snapshot = snapshot
        self.show(snapshot)

    def _button(self, label: str, css: str, icon: str, action: str) -> widgets.Button:
        """A button whose click runs ``PanelHub.<action>`` (quick: it never waits on I/O)."""
        return button(label, css, icon, lambda: self._hub.act(action))

    def _tab_selected(self, change: dict[str, Any]) -> None:
        """A tab was shown (kernel thread): the hub draws its picture the first time."""
        index = change["new"]
        if isinstance(index, int) and 0 <= index < len(TABS):
            self._hub.act("tab_opened", TABS[index])

    @property
    def tab_titles(self) -> tuple[str, ...]:
        """The tabs' titles as the front end shows them, in order."""
        tabs = self.w_tabs
        if hasattr(tabs, "titles"):  # ipywidgets 8
            return tuple(tabs.titles)
        return tuple(tabs.get_title(i) for i in range(len(tabs.children)))  # pragma: no cover

    def _leaves(self) -> Iterator[widgets.Widget]:
        yield from (self.w_health, self.w_header, self.w_queue, self.w_auto)
        yield from (self.w_models_state, self.w_models, self.w_notice, self.w_details)
        yield from (self.w_flush, self.w_retry, self.w_refresh, self.w_pause, self.w_map_refresh)
        yield from self.timeline.leaves()
        yield from self.memory_map.leaves()
        yield from self.browser.leaves()

    @property
    def is_open(self) -> bool:
        """False once ``close()`` was called."""
        return not self._closed and self.comm is not None

    def show(self, snapshot: Snapshot) -> None:
        """Display ``snapshot``: one ``hold_sync`` per widget, so one message per change."""
        status = snapshot.status
        auto_label = {"on": "Pause auto-retain", "paused": "Resume auto-retain"}
        with ExitStack() as stack:
            for widget in self._leaves():
                stack.enter_context(widget.hold_sync())
            self.w_health.value = health_html(
                snapshot.health,
                snapshot.server_ok,
                snapshot.bank,
                snapshot.pending,
                snapshot.failed,
                snapshot.auto,
            )
            self.w_header.value = header_html(TITLE, status)
            self.w_queue.value = section_html("Queue", "queue", status.queue_rows())
            self.w_auto.value = section_html("Auto-retain", "autoretain", status.autoretain_rows())
            self.w_models_state.value = section_html("Mental models", "models", status.model_rows)
            self.w_details.value = section_html("Session", "session", status.session_rows())
            self.w_notice.value = snapshot.notice
            self.w_notice.layout.display = "" if snapshot.notice else "none"
            self.w_retry.disabled = snapshot.closed or not snapshot.failed
            self.w_pause.description = auto_label.get(snapshot.auto, "Auto-retain off")
            self.w_pause.tooltip = (
                "%hindsight autoretain on turns it on" if snapshot.auto == AutoState.OFF else ""
            )
            self.w_pause.disabled = snapshot.closed or snapshot.auto == AutoState.OFF
            self.w_flush.disabled = self.w_refresh.disabled = snapshot.closed
            self.w_map_refresh.disabled = snapshot.closed or snapshot.memory_map.busy
            self.timeline.show(snapshot.timeline)
            self.memory_map.show(snapshot.memory_map)
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

    @property
    def model_ids(self) -> tuple[str, ...]:
        """The ids of the mental models the Models tab shows, in its order."""
        return self._model_ids

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
        set_titles(accordion, [model_title(m) for m in models])
        accordion.layout.display = "" if models else "none"

    def close(self) -> None:
        """Stop updates and close every widget of the panel."""
        self._closed = True
        self._hub.detach(self)  # waits for a push in progress
        models = [part for box in self.w_models.children for part in (*box.children, box)]
        for widget in (
            *self._leaves(),
            *models,
            *self.browser.containers(),
            *self.timeline.containers(),
            *self.memory_map.containers(),
            *self._boxes,
            self.w_tabs,
        ):
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


def set_titles(accordion: widgets.Accordion | widgets.Tab, titles: Sequence[str]) -> None:
    """An accordion's or a tab's titles, on ipywidgets 8 (``titles``) and 7 (``set_title``);
    only changed ones are sent."""
    if hasattr(accordion, "titles"):  # ipywidgets 8
        if tuple(accordion.titles) != tuple(titles):
            accordion.titles = tuple(titles)
    else:  # pragma: no cover - ipywidgets 7
        for index, text in enumerate(titles):
            if accordion.get_title(index) != text:
                accordion.set_title(index, text)


# -- rows with curation buttons ---------------------------------------------------------------


@dataclass(frozen=True)
class Click:
    """A row button as shown: its label and what a click asks the hub (``act(action, target)``).

    No label: hidden (its space kept, so the rows' columns stay aligned); no action: disabled
    (a curation under way, or nothing to do)."""

    label: str = ""
    action: str = ""
    target: str = ""
    tooltip: str = ""


@dataclass(frozen=True)
class RowSpec:
    """One row of a ``RowList``: which memory it is (``key``), its HTML and its buttons."""

    key: str
    html: str
    clicks: tuple[Click, ...]


def cell_layout() -> widgets.Layout:
    """A row's HTML cell takes the width its buttons leave, from zero (not from its content's
    width), so a list's rows and its header give their tables the same width: columns align."""
    return widgets.Layout(flex="1 1 0px", min_width="0px", width="auto")


class ListRow:
    """An HTML cell and its buttons in an HBox; the buttons act on what the row shows now."""

    def __init__(self, button_css: Sequence[tuple[str, str]], act: Act) -> None:
        self._act = act
        self.cell = widgets.HTML(layout=cell_layout())
        self.buttons = [
            widgets.Button(layout=widgets.Layout(width=width, flex="0 0 auto"))
            for _, width in button_css
        ]
        self.clicks: tuple[Click, ...] = ()
        self.shown: tuple[RowSpec, bool] | None = None
        for index, (made, (css, _)) in enumerate(zip(self.buttons, button_css, strict=True)):
            made.add_class(css)
            made.on_click(lambda _button, index=index: self._clicked(index))
        self.box = widgets.HBox(
            [self.cell, *self.buttons],
            layout=widgets.Layout(align_items="center", flex="0 0 auto"),
        )

    def _clicked(self, index: int) -> None:
        """A click (kernel thread): what the row shows decides the action, never a stale one."""
        click = self.clicks[index] if index < len(self.clicks) else Click()
        if click.action:
            self._act(click.action, click.target)

    def show(self, spec: RowSpec, closed: bool) -> None:
        """Display ``spec`` (one message per changed widget; nothing when it is unchanged)."""
        if (spec, closed) == self.shown:
            return
        with ExitStack() as stack:
            for widget in (self.cell, *self.buttons):
                stack.enter_context(widget.hold_sync())
            self.cell.value = spec.html
            for made, click in zip(self.buttons, spec.clicks, strict=True):
                made.description = click.label
                made.tooltip = click.tooltip
                made.disabled = closed or not click.action
                made.layout.visibility = "visible" if click.label else "hidden"
        self.clicks = () if closed else spec.clicks
        self.shown = (spec, closed)

    def widgets(self) -> Iterator[widgets.Widget]:
        """Every widget of the row, for ``close``."""
        yield from (self.cell, *self.buttons, self.box)


class RowList:
    """A scrolling list of ``ListRow``s kept per key: a row that stays (a Recent item moving
    down, a search result changing mark) keeps its widgets and sends only what changed, a new
    key reuses a free row, and the box's children are set only when the order changed."""

    def __init__(
        self, css: str, button_css: Sequence[tuple[str, str]], act: Act, height: int
    ) -> None:
        self._button_css = button_css
        self._act = act
        self._rows: list[ListRow] = []  # every row made (shown or free), at most the longest list
        self._by_key: dict[str, ListRow] = {}
        self.box = widgets.VBox(
            layout=widgets.Layout(max_height=f"{height}px", overflow="auto", flex="0 0 auto")
        )
        self.box.add_class(css)

    @property
    def shown(self) -> list[ListRow]:
        """The rows displayed, in order."""
        rows = {id(row.box): row for row in self._rows}
        return [rows[id(box)] for box in self.box.children]

    def html(self) -> str:
        """The displayed rows' HTML, in order (what a reader sees of the list, minus buttons)."""
        return "".join(row.cell.value for row in self.shown)

    def show(self, specs: Sequence[RowSpec], closed: bool) -> None:
        """Display ``specs`` in order (the caller compared the views: something changed)."""
        kept = {key: self._by_key[key] for key in {s.key for s in specs} if key in self._by_key}
        taken = {id(row) for row in kept.values()}
        free = [row for row in self._rows if id(row) not in taken]
        by_key: dict[str, ListRow] = {}
        boxes = []
        for spec in specs:
            row = kept.pop(spec.key, None) or (free.pop(0) if free else self._new_row())
            row.show(spec, closed)
            by_key.setdefault(spec.key, row)
            boxes.append(row.box)
        self._by_key = by_key
        if tuple(boxes) != tuple(self.box.children):
            self.box.children = tuple(boxes)
        self.box.layout.display = "" if specs else "none"

    def _new_row(self) -> ListRow:
        row = ListRow(self._button_css, self._act)
        self._rows.append(row)
        return row

    def widgets(self) -> Iterator[widgets.Widget]:
        """Every widget of the list, for ``close``."""
        for row in self._rows:
            yield from row.widgets()
        yield self.box


FORGET_W, DELETE_W = "100px", "76px"  # room for "Forgetting…" and "Delete…"
RECENT_W = "88px"  # the Recent list shares its width with the session document
NOT_CURABLE = "An observation: the server derives it from facts; forget those (%hindsight history)."


def memory_click(key: str, mark: str) -> Click:
    """The Forget/Restore button of a memory (a result, or a Recent row's retain id) by its
    mark: busy while a curation runs, Restore once forgotten, gone once deleted or cancelled."""
    if mark == FORGETTING:
        return Click("Forgetting…")
    if mark == RESTORING:
        return Click("Restoring…")
    if mark == FORGOTTEN:
        return Click("Restore", "restore", key, "Bring it back into recall")
    if mark in (DELETING, DELETED, CANCELLED):
        return Click()
    return Click("Forget", "forget", key, "Leave it out of recall and reflect (reversible)")


def result_spec(index: int, row: ResultRow, curation: CurationView) -> RowSpec:
    """A search result's row: its HTML, Forget/Restore and Delete… (the document, confirmed)."""
    mark = curation.result_mark(row)
    if row.layer != MINE:  # a layer is only read here
        forget = Click("Forget", tooltip=f"From the layer {row.layer!r}: read only here")
    elif row.curable:
        forget = memory_click(row.memory_id, mark)
    else:
        forget = Click("Forget", tooltip=NOT_CURABLE)
    delete = Click()
    if row.document_id and row.layer == MINE and mark not in (DELETING, DELETED):
        pending = curation.delete.document_id == row.document_id
        delete = Click(
            "Delete…",
            "" if pending or curation.delete.deleting else "ask_delete",
            row.document_id,
            "Delete its whole source document and every memory made from it (asks first)",
        )
    key = row.memory_id or f"#{index}"
    return RowSpec(key, result_row_html(row, mark), (forget, delete))


def recent_spec(item: RecentItem, curation: CurationView) -> RowSpec:
    """A Recent row: its HTML and Forget/Restore (a queued one is cancelled, never sent)."""
    state = curation.recent_state(item)
    click = Click()
    if item.document_id and recent_curable(item):
        click = memory_click(item.document_id, state)
        if click.action == "forget" and item.state in (QUEUED, RETRYING, FAILED):
            click = Click("Forget", "forget", item.document_id, "Not sent yet: cancel it")
    key = f"{item.queued_at!r} {item.document_id} {item.text}"
    return RowSpec(key, recent_row_html(item, state), (click,))


def forgotten_spec(memory_id: str, line: str, curation: CurationView) -> RowSpec:
    """A Forgotten row: its line and Restore (the server listed it as forgotten, so only a
    restore under way changes the button)."""
    if curation.mark(memory_id) == RESTORING:
        return RowSpec(memory_id, forgotten_row_html(line, RESTORING), (Click("Restoring…"),))
    click = Click("Restore", "restore", memory_id, "Bring it back into recall")
    return RowSpec(memory_id, forgotten_row_html(line), (click,))


class BrowserWidgets:
    """Search row, delete confirmation, results, Recent list, session document and Forgotten
    list of one panel: ``box`` is the Memory tab's content, ``document_box`` (the session
    document, which is about this session rather than a way to find memories) goes in the
    Status tab."""

    def __init__(self, act: Act) -> None:
        self.w_search_box = widgets.Text(
            placeholder="Search this bank's memories…",
            layout=widgets.Layout(width="420px"),
        )
        self.w_as_of_box = widgets.Text(
            placeholder="as of (e.g. yesterday)",
            tooltip="memory as it was then: an ISO date or time, 3d, yesterday; empty for now",
            layout=widgets.Layout(width="160px"),
        )
        self.w_search = button(
            "Search",
            "hm-search",
            "search",
            lambda: act(
                "search", {"query": self.w_search_box.value, "as_of": self.w_as_of_box.value}
            ),
        )
        self.w_search_state = widgets.HTML()
        self.w_delete = widgets.HTML()
        self._delete_target = ""  # the document the shown preview names: Confirm deletes it
        self.w_delete_confirm = button(
            "Confirm delete",
            "hm-delete-confirm",
            "trash",
            lambda: act("confirm_delete", self._delete_target),
        )
        self.w_delete_confirm.button_style = "danger"
        self.w_delete_cancel = button(
            "Cancel", "hm-delete-cancel", "times", lambda: act("cancel_delete")
        )
        self._delete_buttons = widgets.HBox([self.w_delete_confirm, self.w_delete_cancel])
        self.w_delete_box = widgets.VBox([self.w_delete, self._delete_buttons])
        self.result_rows = RowList(
            "hm-result-rows",
            (("hm-result-forget", FORGET_W), ("hm-result-delete", DELETE_W)),
            act,
            210,
        )
        self._spacers = [  # the header's columns line up with the rows' (same buttons, unseen)
            widgets.Button(disabled=True, layout=widgets.Layout(width=w, visibility="hidden"))
            for w in (FORGET_W, DELETE_W)
        ]
        self.w_results_head = widgets.HTML(value=results_head_html(), layout=cell_layout())
        self._results_head = widgets.HBox([self.w_results_head, *self._spacers])
        self.w_results = widgets.VBox([self._results_head, self.result_rows.box])
        self.w_recent_title = widgets.HTML()
        self.recent_rows = RowList("hm-recent-rows", (("hm-recent-forget", RECENT_W),), act, 200)
        self.w_recent = widgets.VBox([self.w_recent_title, self.recent_rows.box])
        self.w_document = widgets.HTML()
        self.w_doc_toggle = button(
            "Show all", "hm-document-toggle", "expand", lambda: act("toggle_document")
        )
        self.w_doc_reload = button(
            "Reload", "hm-document-reload", "refresh", lambda: act("reload_document")
        )
        self.w_forgotten_message = widgets.HTML()
        self.forgotten_rows = RowList(
            "hm-forgotten-rows", (("hm-forgotten-restore", FORGET_W),), act, 260
        )
        self._forgotten_box = widgets.VBox([self.w_forgotten_message, self.forgotten_rows.box])
        self.w_forgotten = widgets.Accordion([self._forgotten_box], selected_index=None)
        self.w_forgotten.observe(
            lambda change: act("load_forgotten") if change["new"] is not None else None,
            names="selected_index",
        )  # opened: list them again (the panel's opening listed them once)
        for widget, name in [
            (self.w_search_box, "hm-search-box"),
            (self.w_as_of_box, "hm-as-of-box"),
            (self.w_search_state, "hm-search-state"),
            (self.w_delete_box, "hm-delete"),
            (self.w_results, "hm-results"),
            (self.w_recent, "hm-recent"),
            (self.w_document, "hm-document"),
            (self.w_forgotten, "hm-forgotten"),
        ]:
            widget.add_class(name)
        self._search_row = widgets.HBox([self.w_search_box, self.w_as_of_box, self.w_search])
        self._doc_buttons = widgets.HBox([self.w_doc_toggle, self.w_doc_reload])
        self.document_box = widgets.VBox([self.w_document, self._doc_buttons])  # Status tab
        self.w_search_title = widgets.HTML(value=title("Search memory"))
        self.box = widgets.VBox(  # the Memory tab: the search box first
            [
                self.w_search_title,
                self._search_row,
                self.w_search_state,
                self.w_delete_box,
                self.w_results,
                self.w_recent,
                self.w_forgotten,
            ]
        )
        self.box.add_class("hm-browser")
        self._shown: dict[str, object] = {}  # each list's views as last shown

    def leaves(self) -> Iterator[widgets.Widget]:
        """Every widget whose value ``show`` may change (the lists' rows hold their own sync)."""
        yield from (self.w_search, self.w_search_state, self.w_recent_title)
        yield from (self.w_document, self.w_doc_toggle, self.w_doc_reload)
        yield from (self.w_delete, self.w_delete_confirm, self.w_delete_cancel)
        yield from (self.w_forgotten, self.w_forgotten_message)

    def containers(self) -> Iterator[widgets.Widget]:
        """The rest, for ``close``."""
        yield from (self.w_search_box, self.w_as_of_box, self.w_search_title, self._search_row)
        yield from (self._doc_buttons, self.document_box, self.box)
        yield from (self._delete_buttons, self.w_delete_box, self.w_results, self.w_recent)
        yield from (self.w_results_head, *self._spacers, self._results_head, self._forgotten_box)
        for rows in (self.result_rows, self.recent_rows, self.forgotten_rows):
            yield from rows.widgets()

    def _changed(self, part: str, views: object) -> bool:
        """Whether ``part`` must be shown again: the immutable views it shows differ from the
        last shown (rebuilding a list's rows on every push would cost messages and CPU)."""
        if self._shown.get(part) == views:
            return False
        self._shown[part] = views
        return True

    def show(self, snapshot: Snapshot) -> None:
        """Display the snapshot's search, curation, Recent, document and Forgotten views (the
        caller holds the sync of ``leaves``)."""
        search, document, curation = snapshot.search, snapshot.document, snapshot.curation
        closed = snapshot.closed
        self.w_search.disabled = closed
        if self._changed("results", (search.rows, curation.marks, curation.delete, closed)):
            specs = [result_spec(n, row, curation) for n, row in enumerate(search.rows)]
            self.result_rows.show(specs, closed)
            self.w_results.layout.display = "" if specs else "none"
        # after the rows: the line saying "3 memories shown" never sits above the previous results
        self.w_search_state.value = search_state_html(search)
        self.w_search_state.layout.display = "" if search.message else "none"
        if self._changed("delete", (curation.delete, closed)):
            self._show_delete(curation, closed)
        recent = snapshot.recent
        if self._changed("recent", (recent, curation.marks, closed)):
            self.w_recent_title.value = recent_title_html(recent)
            specs = [recent_spec(item, curation) for item in recent]
            self.recent_rows.show(specs, closed)
        if self._changed("forgotten", (curation.forgotten, curation.marks, closed)):
            forgotten = curation.forgotten
            self.w_forgotten_message.value = forgotten_message_html(forgotten)
            specs = [forgotten_spec(key, line, curation) for key, line in forgotten.rows]
            self.forgotten_rows.show(specs, closed)
            set_titles(self.w_forgotten, [forgotten_title(forgotten)])
        self.w_document.value = document_html(document)
        self.w_doc_toggle.description = "Show less" if document.full else "Show all"
        self.w_doc_toggle.layout.display = "" if document.truncated else "none"
        self.w_doc_reload.disabled = closed

    def _show_delete(self, curation: CurationView, closed: bool) -> None:
        """The delete preview, under the search box while a delete is pending."""
        delete = curation.delete
        self._delete_target = delete.document_id if delete.ready else ""
        self.w_delete.value = delete_preview_html(delete) if delete.document_id else ""
        self.w_delete_confirm.disabled = closed or not delete.ready
        self.w_delete_cancel.disabled = closed or delete.deleting
        self.w_delete_box.layout.display = "" if delete.document_id else "none"
