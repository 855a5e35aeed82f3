"""What a failed (or passed) server check means, in words: ``server_problem``, the one path
from a check of ``%hindsight status`` or ``doctor`` to its line — the local server's facts
(``local_facts``) first, then ``GET /health`` when the server answers but fails, then the error
itself (``api.errors.diagnose``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..api.errors import (
    TERMINAL_COMMAND,
    Diagnosis,
    HindsightError,
    diagnose,
    local_diagnosis,
    probe_database,
)
from ..local_facts import local_server

if TYPE_CHECKING:
    from ..api.client import HindsightClient


def server_problem(
    client: HindsightClient, error: HindsightError | None, command: str = TERMINAL_COMMAND
) -> Diagnosis | None:
    """What is wrong with ``client``'s server, in words, after a check failed with ``error``
    (or passed: None) — the local server's facts first, then ``GET /health`` when the server
    answers but fails, then the error itself (``api.errors.diagnose``).

    None when nothing is wrong (``error`` None) or the error's own message says it all.
    """
    url = client.base_url
    local = local_server(url)
    running_fault = local_diagnosis(local, command) if local is not None else None
    if error is None or running_fault is not None:
        return running_fault
    if error.kind == "timeout" or (error.kind == "http" and (error.status_code or 0) >= 500):
        error = probe_database(client) or error  # answers, but fails: is its database down?
    known = False if error.kind == "not_hindsight" else None
    return diagnose(error, url, known, local, command)
