"""Read-after-write: wait until the server has indexed the batches just accepted.

A retain is accepted asynchronously and becomes searchable a moment later (the server's worker
picks operations up about every 500 ms). Waiting for our own operations before a recall is
what lets ``%retain X`` followed by ``%recall X`` find X.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..api.errors import HindsightError

if TYPE_CHECKING:
    from ..api.client import HindsightClient
    from .batches import Route

INDEXING_WAIT_S = 10.0  # a cold or busy server can need seconds for its first items
INDEXING_POLL_S = 0.1


def wait_until_indexed(
    client: HindsightClient,
    operations: Iterable[tuple[Route, str]],
    timeout_s: float = INDEXING_WAIT_S,
    poll_s: float = INDEXING_POLL_S,
) -> bool:
    """Poll each (route, operation id) until none is pending, at most ``timeout_s``.

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
            if reply and reply.get("status") == "pending":
                still.append((route, operation_id))
        waiting = still
        if waiting:
            time.sleep(poll_s)
    return not waiting
