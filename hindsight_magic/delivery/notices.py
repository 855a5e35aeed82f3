"""Background outcomes the user has not seen yet, each shown once on the next magic they run.

The worker never prints into whatever cell is running (DESIGN §2); it leaves a notice here,
and the magics print pending notices (one line each) before their own output.
"""

from __future__ import annotations

from collections import deque

from ..text import plural
from .batches import Batch

MAX_NOTICES = 50


class Notices:
    """A bounded queue of one-line notices (thread-safe: ``deque`` appends and pops are)."""

    def __init__(self) -> None:
        self._notices: deque[str] = deque(maxlen=MAX_NOTICES)

    def add(self, text: str) -> None:
        """Leave one line for the user."""
        self._notices.append(text)

    def retention_failed(self, batch: Batch, message: str) -> None:
        """The queue's ``on_failure``: the server refused a batch for good."""
        count = plural(batch.count, "memory", "memories")
        self.add(
            f"Memory retention failed for {count}: {message} "
            "(kept: %hindsight retry re-sends, %hindsight retry --drop discards)"
        )

    def pending(self) -> tuple[str, ...]:
        """The notices not yet shown, without taking them."""
        return tuple(self._notices)

    def take(self) -> list[str]:
        """The notices not yet shown, oldest first (each is returned once)."""
        taken = []
        while self._notices:
            taken.append(self._notices.popleft())
        return taken
