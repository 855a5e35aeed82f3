"""Read-after-write: before a read, send what is queued and wait until the server can find it.

``prepare_read`` runs before every ``%recall``/``%%reflect``. It flushes the queue while the
sender knows a read waits on the bank, so the sender sends that bank's new batches
synchronously where that is idempotent (see ``sender.py``): the server answers once they are
indexed. What still went async — batches that append to the session transcript, big ones, or
ones a server refused to take synchronously — is accepted at once and indexed by the server's
worker a moment later (it picks operations up every 500 ms by default), so the read then polls
those operations until none is pending. Everything together is bounded by ``READ_WAIT_S``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .._api.errors import HindsightError

if TYPE_CHECKING:
    from .._api.client import HindsightClient
    from .batches import Route
    from .sender import BatchSender

READ_WAIT_S = 15.0  # a cold or busy server can need seconds for its first items
INDEXING_POLL_S = 0.05


def prepare_read(
    bank_id: str,
    sender: BatchSender,
    flush: Callable[[float], Any],
    take_recent: Callable[[str], list[tuple[Route, str]]],
    on_indexed: Callable[[list[str]], object] | None = None,
    wait_s: float = READ_WAIT_S,
) -> bool:
    """Send what is queued (``flush``), then wait for ``bank_id``'s async operations.

    True when everything sent for the bank was seen indexed within ``wait_s``; then
    ``on_indexed`` gets their operation ids (the panel's Recent list marks them indexed).
    """
    deadline = time.monotonic() + wait_s
    with sender.reading(bank_id):
        flush(wait_s)
    left = max(0.0, deadline - time.monotonic())
    operations = take_recent(bank_id)
    done = wait_until_indexed(sender.client, operations, left)
    if done and on_indexed is not None:
        on_indexed([operation_id for _, operation_id in operations])
    return done


def wait_until_indexed(
    client: HindsightClient,
    operations: Iterable[tuple[Route, str]],
    timeout_s: float = READ_WAIT_S,
    poll_s: float = INDEXING_POLL_S,
) -> bool:
    """Poll each (route, operation id) until none is pending or processing, at most ``timeout_s``.

    True when all were seen done (an operation the server cannot report counts as done).
    """
    waiting = list(operations)
    deadline = time.monotonic() + timeout_s
    while waiting and time.monotonic() < deadline:
        still = []
        for route, operation_id in waiting:
            try:
                reply = client.operation(route.bank_id, operation_id)
            except HindsightError:
                continue
            if reply and reply.get("status") in ("pending", "processing"):
                still.append((route, operation_id))
        waiting = still
        if waiting:
            time.sleep(poll_s)
    return not waiting
