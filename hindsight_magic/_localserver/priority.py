"""The local server yields the CPU to the notebooks it serves: it runs at nice ``SERVER_NICE``.

The server extracts what kernels send on the same cores the kernels run on. At the same
priority its threads take turns with a kernel's, and a ``%retain`` that is preempted waits for
the next scheduler tick. Linux shares the CPU per *session* when autogroup scheduling is on
(the default of most distributions): the server, started in its own session, and each
PostgreSQL process (each calls ``setsid``) weigh as much as a whole notebook, whatever their
threads' nice values. So the server and PostgreSQL start under ``nice`` (every thread and
every PostgreSQL connection inherits it: what counts when autogroup is off, and on macOS), and
once the server answers, the sessions of the API and of PostgreSQL's processes are lowered too
(``/proc/<pid>/autogroup``). A PostgreSQL connection opened later runs in a new session at the
default weight; the API, which does most of the work (the embeddings), gave nearly all of the
gain alone.

Measured on the 2-core machine of ``BENCHMARKS.md``, the server digesting a backlog, one kernel
timing 2 000 ``%retain`` calls: p99 0.30–4.22 ms at nice 0, 0.17–0.73 ms at nice 10 (the API's
session alone: 0.23–0.34 ms). Only the launcher's own server is lowered; a shared server is
someone else's. Nothing here raises: a process that is gone or not ours keeps its priority.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import sys
import time
from collections.abc import Iterable
from pathlib import Path

SERVER_NICE = 10  # like `nice`'s default: below interactive work, far from starving
_AUTOGROUP_NICE = re.compile(r"\bnice\s+(-?\d+)")  # "/autogroup-123 nice 0"
_RATE_LIMITED_TRIES = 5  # without CAP_SYS_ADMIN, Linux takes one autogroup change per 100 ms


def nice_command(nice: int = SERVER_NICE) -> list[str]:
    """The prefix that starts a command at ``nice`` (``nice -n 10``); empty without ``nice``."""
    found = shutil.which("nice")
    return [found, "-n", str(nice)] if found else []


def thread_ids(pid: int) -> list[int]:
    """The thread ids of ``pid`` (on Linux nice is per thread); elsewhere the process."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            return [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    return [pid]


def autogroup_nice(pid: int) -> int | None:
    """The nice value of ``pid``'s autogroup; None without one (macOS, autogroup off)."""
    try:
        found = _AUTOGROUP_NICE.search(Path(f"/proc/{pid}/autogroup").read_text())
    except OSError:
        return None
    return int(found.group(1)) if found else None


def _lower_autogroup(pid: int, nice: int) -> None:
    """Set ``pid``'s autogroup to ``nice`` if it is below, retrying while Linux rate-limits."""
    current = autogroup_nice(pid)
    if current is None or current >= nice:
        return
    for _ in range(_RATE_LIMITED_TRIES):
        try:
            Path(f"/proc/{pid}/autogroup").write_text(str(nice))
            return
        except OSError as exc:
            if exc.errno != errno.EAGAIN:
                return
            time.sleep(0.11)


def lower_priority(pids: Iterable[int], nice: int = SERVER_NICE) -> None:
    """Run ``pids`` (every thread, and their sessions) at ``nice`` at least; never raise a
    priority, never touch a process of this process's own session (the user's kernel)."""
    own_session = os.getsid(0)
    for pid in pids:
        with contextlib.suppress(OSError):
            if os.getsid(pid) == own_session:
                continue
            for tid in thread_ids(pid):
                with contextlib.suppress(OSError):
                    if os.getpriority(os.PRIO_PROCESS, tid) < nice:
                        os.setpriority(os.PRIO_PROCESS, tid, nice)
            _lower_autogroup(pid, nice)


def process_tree(pid: int | None) -> list[int]:
    """``pid`` and every process below it (for PostgreSQL: the postmaster's children)."""
    import psutil

    if pid is None:
        return []
    try:
        return [pid, *(child.pid for child in psutil.Process(pid).children(recursive=True))]
    except psutil.Error:
        return []
