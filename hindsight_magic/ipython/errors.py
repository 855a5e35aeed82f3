"""The one exception the magics raise for expected server trouble: shown as one line."""

from __future__ import annotations


class HindsightMagicError(Exception):
    """An expected failure shown as one line (IPython calls ``_render_traceback_``).

    ``UsageError`` is for bad usage; this is for everything else a user can fix (a dead
    server, a refused key). ``%hindsight config debug=true`` shows the full traceback instead.
    """

    def _render_traceback_(self) -> list[str]:
        return [f"HindsightError: {self}"]
