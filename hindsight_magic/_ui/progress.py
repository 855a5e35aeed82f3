"""Progress of a long transfer (snapshot, restore, clone) or a long read of a bank's memories
(dedupe, the map, verify): a widget bar in a notebook, a text bar in a terminal, a line per
step in a log.

Both follow ``_memory.archive.Progress``: ``stage`` starts a step (with its size when known, in
bytes or in a ``unit`` it names; otherwise the bar shows the seconds spent), ``advance`` moves
it, ``close`` leaves the outcome's line. They only draw while the user's own command runs, in
its own cell: one widget updated in place, or one line redrawn (a terminal) or written once per
step (a log, a notebook without widgets). ``ReadProgress`` shows one only when a read is long.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO, Any

REDRAW_S = 0.2  # at most five redraws a second: a fast download does not flood the front end
WIDTH = 30
LONG_READ = 5000  # memories: a read of more (half a second or more on a large bank) shows a bar


def _bytes(count: int) -> str:
    return f"{count / 1e6:.1f} MB" if count >= 1e6 else f"{count / 1e3:.0f} kB"


def _amount(done: int, total: int, unit: str | None) -> str:
    """``2.0 MB of 4.0 MB``, or ``2000 of 50000 memories`` for a count of ``unit``."""
    if unit:
        return f"{done} of {total} {unit}"
    return f"{_bytes(done)} of {_bytes(total)}"


class TextProgress:
    """``[#######.........] 12.0 MB of 40.0 MB — downloading to x.zip`` on one line (a
    terminal), or one line per step where the stream is not a terminal (logs, papermill)."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self._stream = stream or sys.stderr
        self._live = bool(getattr(self._stream, "isatty", lambda: False)())
        self._label = ""
        self._total: int | None = None
        self._unit: str | None = None
        self._started = self._drawn = 0.0

    def stage(self, label: str, total: int | None = None, unit: str | None = None) -> None:
        if self._live and self._label:
            self._stream.write("\n")
        self._label, self._total, self._unit = label, total, unit
        self._started, self._drawn = time.monotonic(), 0.0
        if not self._live:
            self._stream.write(f"{label} …\n")
            self._stream.flush()
        else:
            self.advance(0)

    def advance(self, done: int) -> None:
        now = time.monotonic()
        if not self._live or (now - self._drawn < REDRAW_S and done != self._total):
            return
        self._drawn = now
        if self._total:
            filled = int(WIDTH * min(done, self._total) / self._total)
            bar = "#" * filled + "." * (WIDTH - filled)
            where = _amount(done, self._total, self._unit)
        else:
            bar, where = "~" * WIDTH, f"{now - self._started:.0f} s"
        self._stream.write(f"\r[{bar}] {where} — {self._label}\x1b[K")
        self._stream.flush()

    def close(self, outcome: str) -> None:
        if self._live and self._label:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
        self._label = ""


class WidgetProgress:
    """An ipywidgets bar and a label, shown in the running cell on the first step."""

    def __init__(self) -> None:
        import ipywidgets as widgets  # type: ignore[import-untyped]

        self._bar = widgets.FloatProgress(value=0.0, min=0.0, max=1.0)
        self._label = widgets.HTML()
        self.widget: Any = widgets.HBox([self._bar, self._label])  # the bar, then its label
        self._shown = False
        self._text = ""
        self._total: int | None = None
        self._unit: str | None = None
        self._started = self._drawn = 0.0

    def stage(self, label: str, total: int | None = None, unit: str | None = None) -> None:
        from .._text import html_text

        if not self._shown:
            from IPython.display import display

            display(self.widget)  # type: ignore[no-untyped-call]
            self._shown = True
        self._text, self._total, self._unit = html_text(label), total, unit
        self._started, self._drawn = time.monotonic(), 0.0
        self._bar.bar_style = "" if total else "info"
        self._bar.value = 0.0
        self.advance(0)

    def advance(self, done: int) -> None:
        now = time.monotonic()
        if now - self._drawn < REDRAW_S and done != self._total:
            return
        self._drawn = now
        if self._total:
            self._bar.value = min(1.0, done / self._total)
            where = _amount(done, self._total, self._unit)
        else:  # the server does not say how far it is: show that time passes
            self._bar.value = ((now - self._started) / 10.0) % 1.0
            where = f"{now - self._started:.0f} s"
        self._label.value = f"{self._text} — {where}"

    def close(self, outcome: str) -> None:
        from .._text import html_text

        self._bar.value = 1.0
        self._bar.bar_style = "success"
        self._label.value = html_text(outcome)


class ReadProgress:
    """A bar for a read of a bank's memories, shown only once the read is known to hold more
    than ``LONG_READ``: a short read shows nothing. Called with (read so far, to read)."""

    def __init__(self, shell: Any, label: str) -> None:
        self._make: Callable[[], TextProgress | WidgetProgress] = lambda: progress_for(shell)
        self._label = label
        self._bar: TextProgress | WidgetProgress | None = None
        self.done = 0

    def __call__(self, done: int, total: int) -> None:
        self.done = done
        if self._bar is None:
            if total <= LONG_READ:
                return
            self._bar = self._make()
            self._bar.stage(self._label, total, "memories")
        self._bar.advance(done)

    def close(self, outcome: str) -> None:
        """The read ended: its bar (if one showed) ends with ``outcome``."""
        if self._bar is not None:
            self._bar.close(outcome)


def progress_for(shell: Any) -> TextProgress | WidgetProgress:
    """A widget bar where widgets can show (a Jupyter kernel), else a text bar on stderr."""
    from .panel import widget_frontend

    return WidgetProgress() if widget_frontend(shell) else TextProgress()
