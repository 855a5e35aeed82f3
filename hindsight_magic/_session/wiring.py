"""What only the extension's own front ends call on a session: functions of the package that
take the session, not its methods, so ``hm.Session``'s public face holds what a user calls.

The magics show the notices (``take_notices``); the public functions and the agents queue a
memory with where it came from (``queue_memory``: the cells, the agent, the date as written,
the data files the cell read: ``cell_evidence``) and wait for it (``deliver``); the extension
wires the shell's hook (``cell_hook``) and leaves a line for the user (``notice``). Each
reaches the part that does the job through ``PARTS``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._capture.evidence import recorded
from .._errors import HindsightError
from . import PARTS

if TYPE_CHECKING:
    from .._capture.autoretain import AutoRetainer
    from .._capture.evidence import Evidence
    from . import HindsightSession
    from .parts import QueueMemory

log = logging.getLogger("hindsight_magic")


def queue_memory(session: HindsightSession) -> QueueMemory:
    """``session.retain`` with the keywords only the extension knows: ``source``, ``cells``,
    ``agent``, ``update_mode``, ``ran_at``, ``cell_id``, ``dated``, ``evidence`` … (the
    session's ``_queue`` documents each)."""
    return PARTS[id(session)].queue_memory


def cell_evidence(session: HindsightSession, source: str) -> tuple[Sequence[Evidence], str]:
    """The data files the running cell's ``source`` reads, for a ``%retain`` in it (or
    ``hm.retain``), and the project's id (``_capture/evidence.py``). On the kernel thread, so
    each file is fingerprinted by its size and ends only (at most 128 KiB read, well under a
    millisecond), never hashed whole; nothing when the ``evidence`` setting is off."""
    if not session.settings.evidence:
        return (), ""
    try:
        secrets = PARTS[id(session)].secrets()
        return recorded(source, ran_at=time.time(), whole_limit=0, secrets=secrets)
    except Exception:  # evidence is an extra: the memory is retained without it
        log.debug("Hindsight: could not record a cell's data files", exc_info=True)
        return (), ""


def deliver(
    session: HindsightSession, document_ids: Sequence[str], wait_s: float | None = None
) -> bool:
    """Send what ``session`` queued for its bank now and wait (at most ``wait_s``, by default
    as long as a read waits) until the server can find it, as a read does first
    (``retain(wait=True)``); whether it was found indexed in that time (False: sent, and the
    server is still indexing it).
    ``HindsightError`` when a memory of ``document_ids`` is still held: the server's own error
    when it cannot be reached or refuses the key, else the queue's last error; the memory
    stays queued."""
    parts = PARTS[id(session)]
    ready = parts.ready(session.scope.bank_id, wait_s)
    wanted = set(document_ids)
    if not any(item.document_id in wanted for _, item in parts.queue.held()):
        return ready.indexed
    client = parts.connection.client
    client.identity()  # raises what is wrong with the server, in its own words
    client.list_banks()  # (open where /version is: is the key accepted?)
    reason = parts.queue.stats().last_error or "not sent yet"
    raise HindsightError("retain", f"retain failed: {reason}")


def take_notices(session: HindsightSession) -> list[str]:
    """Background outcomes not yet shown to the user (each is shown once), for the magics."""
    return PARTS[id(session)].notices.take()


def notice(session: HindsightSession, text: str) -> None:
    """Leave one line for the user, shown before the next magic's output."""
    PARTS[id(session)].notices.add(text)


def cell_hook(session: HindsightSession) -> AutoRetainer:
    """The auto-retainer behind ``session``, for the one caller that wires it to a shell:
    ``_ipython.extension.CellHook`` registers its ``post_run_cell`` (O(1), no call of ours in
    between) and sets its ``outputs_of``."""
    return PARTS[id(session)].autoretain
