"""The panel's Timeline and Map tabs: the pictures of ``pictures.py``, drawn on the worker.

Reading a bank's timeline or entity graph asks the server (the timeline's counts, and up to
``overview.READ_WHOLE`` memories) and drawing takes matplotlib tens of milliseconds, so neither
may happen on the kernel thread. ``PanelFigures`` keeps what each tab shows as an immutable
``FigureView`` (PNG bytes, or the text table where matplotlib is missing, and a one-line
caption), swapped whole by a worker job, so the hub's snapshot reads it without a lock, as it
reads the memory browser's views.

- **Timeline**: nothing is read until a panel's Timeline tab is first shown (most users never
  open it: a panel must not read their bank for nothing). From then on, while a panel
  is open, ``poll`` (the hub's worker job) redraws it when memories arrive — the queue's
  accepted count or the Recent feed (sent → indexed) changed since the last drawing — at most
  every ``TIMELINE_EVERY_S``: a burst of retains costs one reading, not one per memory.
- **Map**: drawn when its tab is first shown and on its Refresh button only (the entity graph
  changes as the server extracts entities, long after a retain; redrawing it unasked would move
  the nodes under the reader's eyes).

matplotlib and networkx are imported by the drawing, on the worker, never by ``%load_ext`` or
by showing a panel.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..._errors import HindsightError
from ..._text import local_clock, one_line

if TYPE_CHECKING:
    from ..pictures import Picture
    from .live import LiveSession

log = logging.getLogger("hindsight_magic")

TIMELINE_EVERY_S = 5.0  # at most one timeline reading per this many seconds
MAP_TOP = 20  # entities drawn on the Map tab
TIMELINE, MAP = "Timeline", "Map"


@dataclass(frozen=True)
class FigureView:
    """What a figure tab shows: the picture as PNG (empty while none was drawn, or where
    matplotlib is missing), its text table (shown instead of a missing picture), a caption
    (what it counts and when it was drawn, or why it could not be), whether it is busy, and
    whether the last drawing ``failed`` (the caption says why)."""

    png: bytes = b""
    text: str = ""
    caption: str = ""
    hint: str = ""  # how to get the picture, when the libraries to draw it are missing
    busy: bool = False
    failed: bool = False


class PanelFigures:
    """The Timeline and Map tabs' pictures of one session's panels (shared by all of them)."""

    def __init__(self, session: LiveSession) -> None:
        self._session = session
        self._lock = threading.Lock()  # guards the wanted flags and the drawn key
        self.timeline_view = FigureView(caption="Open this tab to draw the timeline.")
        self.map_view = FigureView(caption="Open this tab to draw the map.")
        self._timeline_wanted = False
        self._timeline_key: object = None  # what memories the last timeline drawing saw
        self._timeline_at = float("-inf")  # monotonic time the last timeline reading began
        self._map_drawn = False

    # -- kernel thread -------------------------------------------------------------------

    def opened(self, tab: str) -> None:
        """A panel's tab was shown: draw its picture the first time (on the worker)."""
        if tab == TIMELINE:
            with self._lock:
                first, self._timeline_wanted = not self._timeline_wanted, True
            if first:
                self.timeline_view = FigureView(caption="Drawing the timeline…", busy=True)
                self._session.in_background(self._draw_timeline)
        elif tab == MAP and not self._map_drawn:
            self.refresh_map()

    def refresh_map(self) -> None:
        """The Map tab's Refresh button (or its first showing): read and draw on the worker."""
        self._map_drawn = True
        self.map_view = FigureView(
            self.map_view.png, self.map_view.text, "Drawing the map…", self.map_view.hint, True
        )
        self._session.in_background(self._draw_map)

    def closed(self) -> None:
        """The last panel closed: stop redrawing the timeline until a Timeline tab shows again."""
        with self._lock:
            self._timeline_wanted = False
            self._timeline_key = None
        self._map_drawn = False

    # -- worker thread -------------------------------------------------------------------

    def _memories_key(self) -> object:
        """What changes when memories arrive: the accepted count and the Recent feed."""
        status = self._session().status(check_server=False, wait_models=False)
        return (status.queue.accepted, status.recent)

    def poll(self) -> None:
        """The hub's worker job: redraw the timeline when memories arrived (throttled)."""
        with self._lock:
            if not self._timeline_wanted or self._timeline_key is None:
                return  # not wanted, or its first drawing has not begun yet
            if time.monotonic() - self._timeline_at < TIMELINE_EVERY_S:
                return
            if self._memories_key() == self._timeline_key:
                return
        self._draw_timeline()

    def _draw_timeline(self) -> None:
        from ..pictures import Timeline

        with self._lock:
            self._timeline_key = self._memories_key()  # before reading: a later change redraws
            self._timeline_at = time.monotonic()
        try:
            picture = Timeline(self._session().timeline(None, None))
            self.timeline_view = self._view(picture, picture.counts.describe())
        except Exception as error:  # one line in the tab, never a traceback
            self.timeline_view = self._failed(self.timeline_view, "timeline", error)

    def _draw_map(self) -> None:
        from ..pictures import MemoryMap

        try:
            picture = MemoryMap(self._session().entity_map(None, MAP_TOP))
            self.map_view = self._view(picture, picture.map.describe())
        except Exception as error:
            self.map_view = self._failed(self.map_view, "map", error)

    @staticmethod
    def _view(picture: Picture, describe: str) -> FigureView:
        """The picture as the tab shows it: PNG, or its text and the hint to get it drawn."""
        from ..pictures import HINT

        caption = f"{describe} · drawn at {local_clock()}"
        if not picture.drawable():
            return FigureView(text=picture.text(), caption=caption, hint=HINT + ".")
        return FigureView(png=picture.png(), caption=caption)

    def _failed(self, old: FigureView, what: str, error: Exception) -> FigureView:
        """The last picture stays; the caption says, in one line, why it is not newer."""
        if isinstance(error, HindsightError):
            why = self._session().explain(error)
        else:
            log.debug("Hindsight: drawing the panel's %s failed", what, exc_info=True)
            why = f"{type(error).__name__}: {error}"
        caption = one_line(f"Could not draw the {what} at {local_clock()}: {why}", 300)
        return FigureView(old.png, old.text, caption, old.hint, failed=True)
