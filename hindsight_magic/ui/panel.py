"""``%hindsight panel``: a live ipywidgets panel of the session, or a text snapshot without one.

The panel shows the server (URL, health, LLM mode), scope, the retain queue, auto-retain, a
memory browser (search with provenance, this kernel's Recent memories and their delivery state,
the session document) and the mental models (a preview and a Refresh button each), with buttons
to flush, retry, refresh models and pause auto-retain. What it shows is a ``Snapshot``
(``snapshot.py``); the session's ``PanelHub`` (``panel_hub.py``) keeps every open panel current
from the worker thread, where the browser's requests run (``browser.py``); the widgets
themselves are in ``widgets.py`` and ``browser_widgets.py``.

ipywidgets is imported only when a panel is shown. Without a kernel (terminal IPython) or
without ipywidgets the same command returns a text snapshot; a panel's text ``__repr__`` is
that snapshot too, so nbconvert and nbval see text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from .panel_hub import hub_for
from .snapshot import text_snapshot

if TYPE_CHECKING:
    from ..ipython.magics import HindsightMagics

__all__ = ["cmd_panel", "hub_for", "widget_frontend"]


def widget_frontend(shell: Any) -> bool:
    """Whether widgets can show here: a Jupyter kernel and an importable ipywidgets."""
    if getattr(shell, "kernel", None) is None:
        return False
    try:
        import ipywidgets  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        return False
    return True


def cmd_panel(magics: HindsightMagics, args: str) -> Any:
    """``%hindsight panel``: the live panel, or a text snapshot where widgets cannot show."""
    if args.strip():
        raise UsageError("Usage: %hindsight panel")
    session = magics.session
    if not widget_frontend(magics.shell):
        return text_snapshot(session)
    from .widgets import HindsightPanel

    session.mental_models.wait_first_load()  # at most 1.5 s, once (design §9)
    hub = hub_for(session)
    panel = HindsightPanel(hub, hub.snapshot())
    hub.attach(panel)
    return panel
