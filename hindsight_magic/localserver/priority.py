"""The local server yields the CPU to the notebooks it serves: it runs at nice ``SERVER_NICE``.

The server extracts what kernels send on the same cores the kernels run on. At the same
priority its threads take turns with a kernel's, and a ``%retain`` that is preempted waits
for a scheduler tick (4 ms here). Linux shares the CPU per *session* when autogroup scheduling
is on (the default of most distributions): the server, started in its own session, and each
PostgreSQL process (each calls ``setsid``) weigh as much as a whole notebook, whatever their
threads' nice values. So each process gets both: its threads' nice value (what counts when
autogroup is off, and on macOS) and its autogroup's (``/proc/<pid>/autogroup``).

Measured with the server digesting a backlog on this 2-core machine, one kernel timing 2 000
``%retain`` calls: p99 0.3–4.2 ms at nice 0 against 0.17–0.73 ms at nice 10. When nothing else
wants the CPU, a niced server runs as fast as before. Only the launcher's own server is
lowered; a shared server is someone else's. It is lowered once it answers: its threads and
PostgreSQL's processes then exist (threads started later inherit the value). A PostgreSQL
connection opened later runs in a new session at the default weight: the API, which does
most of the work (the embeddings), gave nearly all of the gain alone (p99 0.23–0.34 ms).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable
from pathlib import Path

SERVER_NICE = 10  # like `nice`'s default: below interactive work, far from starving


def _threads(pid: int) -> list[int]:
    """The thread ids of ``pid`` (Linux: nice is per thread); elsewhere the process."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            return [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    return [pid]


def _lower_autogroup(pid: int, nice: int) -> None:
    autogroup = Path(f"/proc/{pid}/autogroup")
    with contextlib.suppress(OSError, ValueError):  # no autogroup here, or the process is gone
        current = int(autogroup.read_text().rsplit("nice", 1)[1])
        if current < nice:
            autogroup.write_text(str(nice))


def lower_priority(pids: Iterable[int], nice: int = SERVER_NICE) -> None:
    """Run ``pids`` (and their threads and sessions) at ``nice`` at least; never raise a
    priority. A process that is gone or not ours keeps what it has."""
    for pid in pids:
        for tid in _threads(pid):
            with contextlib.suppress(OSError):
                if os.getpriority(os.PRIO_PROCESS, tid) < nice:
                    os.setpriority(os.PRIO_PROCESS, tid, nice)
        _lower_autogroup(pid, nice)


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process below it (for PostgreSQL: the postmaster's children)."""
    import psutil

    try:
        return [pid, *(child.pid for child in psutil.Process(pid).children(recursive=True))]
    except psutil.Error:
        return []


def lower_server(api_pid: int, pgdata: Path) -> None:
    """Lower the API process and PostgreSQL (the postmaster and the processes it runs now)."""
    from .postgres import postmaster_pid

    postmaster = postmaster_pid(pgdata)
    lower_priority([api_pid, *(process_tree(postmaster) if postmaster else [])])
