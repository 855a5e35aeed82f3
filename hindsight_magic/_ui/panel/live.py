"""The panel's hold on its session: weak, through the session's own public methods.

A panel left open after ``%unload_ext`` keeps its hub, and the hub keeps this: not the unloaded
session with its queue and journal. Once the session is gone, ``closed`` is True, scheduling
does nothing and calling raises ``Error``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..._errors import Error

if TYPE_CHECKING:
    from ..._session import HindsightSession


class LiveSession:
    """``live()``: the session, while it exists (the same object ``hm.*`` functions use)."""

    def __init__(self, session: HindsightSession) -> None:
        self._session = weakref.ref(session)

    def __call__(self) -> HindsightSession:
        session = self._session()
        if session is None:
            raise Error("the Hindsight session is gone")
        return session

    @property
    def closed(self) -> bool:
        """Whether the session was closed (unloaded, kernel exit) or is gone."""
        session = self._session()
        return session is None or session.closed

    def in_background(self, job: Callable[[], object], delay_s: float = 0.0) -> bool:
        """``HindsightSession.in_background``; False once the session is gone."""
        session = self._session()
        return session is not None and session.in_background(job, delay_s)
