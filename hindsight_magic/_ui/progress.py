"""Progress of a long transfer (snapshot, restore, clone): a widget bar in a notebook, a text bar
in a terminal, a line per step in a log.

Both follow ``_memory.archive.Progress``: ``stage`` starts a step (with its size in bytes when
known; otherwise the bar shows the seconds spent), ``advance`` moves it, ``close`` leaves the
outcome's line. They only draw while the user's own command runs, in its own cell.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any

REDRAW_S = 0.2  # at most five redraws a second: a fast download does not flood the front end
WIDTH = 30


def _bytes(count: int) -> str:
    return f"{count / 1e6:.1f} MB" if count >= 1e6 else f"{count / 1e3:.0f} kB"


class TextProgress:
    """``[#######.........] 12.0 MB of 40.0 MB — downloading to x.zip`` on one line (a
    terminal), or one line per step where the stream is not a terminal (logs, papermill)."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self._stream = stream or sys.stderr
        self._live = bool(getattr(self._stream, "isatty", lambda: False)())
        self._label = ""
        self._total: int | None = None
        self._started = self._drawn = 0.0

    def stage(self, label: str, total: int | None = None) -> None:
        if self._live and self._label:
            self._stream.write("\n")
        self._label, self._total = label, total
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
            where = f"{_bytes(done)} of {_bytes(self._total)}"
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
        self._started = self._drawn = 0.0

    def stage(self, label: str, total: int | None = None) -> None:
        from .._text import html_text

        if not self._shown:
            from IPython.display import display

            display(self.widget)  # type: ignore[no-untyped-call]
            self._shown = True
        self._text, self._total = html_text(label), total
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
            where = f"{_bytes(done)} of {_bytes(self._total)}"
        else:  # the server does not say how far it is: show that time passes
            self._bar.value = ((now - self._started) / 10.0) % 1.0
            where = f"{now - self._started:.0f} s"
        self._label.value = f"{self._text} — {where}"

    def close(self, outcome: str) -> None:
        from .._text import html_text

        self._bar.value = 1.0
        self._bar.bar_style = "success"
        self._label.value = html_text(outcome)


def progress_for(shell: Any) -> TextProgress | WidgetProgress:
    """A widget bar where widgets can show (a Jupyter kernel), else a text bar on stderr."""
    from .panel import widget_frontend

    return WidgetProgress() if widget_frontend(shell) else TextProgress()
