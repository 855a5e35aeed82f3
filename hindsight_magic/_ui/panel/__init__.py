"""``%hindsight panel``: the live ipywidgets panel, or its text form where widgets cannot show.

``show_panel(session, shell)`` is the whole entry point (``%hindsight panel`` calls only it);
it reaches the session through the session's public methods only, as ``hm`` does. ipywidgets
is imported only when a panel is shown.

Every panel of a session shares one ``PanelHub`` (``hub.panel_hub``), kept weakly by session:
it goes with the session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .hub import panel_hub
from .state import text_snapshot

if TYPE_CHECKING:
    from ..._session import HindsightSession
    from ..display import Report
    from .widgets import HindsightPanel


def widget_frontend(shell: Any) -> bool:
    """Whether widgets can show here: a Jupyter kernel and an importable ipywidgets."""
    if getattr(shell, "kernel", None) is None:
        return False
    try:
        import ipywidgets  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        return False
    return True


def show_panel(session: HindsightSession, shell: Any) -> HindsightPanel | Report:
    """The live panel in a Jupyter kernel; elsewhere the text snapshot (a live server check)."""
    if not widget_frontend(shell):
        return text_snapshot(session)
    from .widgets import HindsightPanel

    hub = panel_hub(session)
    hub.know_server()  # the first snapshot says what is known, not "checking…"
    panel = HindsightPanel(hub, hub.snapshot(first=True))  # the models tab opens filled
    hub.attach(panel)
    return panel
