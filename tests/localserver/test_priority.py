"""The local server runs below the notebooks' CPU priority (``_localserver/priority.py``)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import RunningServer

from hindsight_magic._localserver.postgres import postmaster_pid
from hindsight_magic._localserver.priority import (
    SERVER_NICE,
    autogroup_nice,
    lower_priority,
    process_tree,
    thread_ids,
)
from hindsight_magic._machine import ServerInfo, running_server


def thread_nices(pid: int) -> set[int]:
    """The nice value of every thread of ``pid``."""
    return {os.getpriority(os.PRIO_PROCESS, tid) for tid in thread_ids(pid)}


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A process in its own session (as the launcher starts the server), killed at the end."""
    if os.getpriority(os.PRIO_PROCESS, 0) >= SERVER_NICE:
        pytest.skip(f"the tests themselves run at nice {SERVER_NICE} or more")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                            start_new_session=True)  # fmt: skip
    yield proc
    proc.kill()
    proc.wait()


def test_a_process_and_its_session_are_lowered(sleeper: subprocess.Popen[bytes]) -> None:
    assert thread_nices(sleeper.pid) == {os.getpriority(os.PRIO_PROCESS, 0)} != {SERVER_NICE}
    lower_priority([sleeper.pid])
    assert thread_nices(sleeper.pid) == {SERVER_NICE}
    assert autogroup_nice(sleeper.pid) in (SERVER_NICE, None)


def test_a_priority_is_never_raised_and_a_gone_process_is_skipped(
    sleeper: subprocess.Popen[bytes],
) -> None:
    lower_priority([sleeper.pid], nice=15)
    lower_priority([sleeper.pid, 2**22 + 1])  # pid_max is at most 2**22: never a process
    assert thread_nices(sleeper.pid) == {15}
    assert autogroup_nice(sleeper.pid) in (15, None)


def test_a_rate_limited_autogroup_change_is_retried(
    sleeper: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    if autogroup_nice(sleeper.pid) is None:
        pytest.skip("no autogroup scheduling here")
    written, write = [], Path.write_text

    def rate_limited(path: Path, data: str, *args: Any, **kwargs: Any) -> int:
        written.append(data)  # without CAP_SYS_ADMIN Linux takes one change per 100 ms
        if len(written) == 1:
            raise OSError(errno.EAGAIN, "Resource temporarily unavailable")
        return write(path, data, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", rate_limited)
    lower_priority([sleeper.pid])
    assert (autogroup_nice(sleeper.pid), written) == (SERVER_NICE, ["10", "10"])


def test_nothing_in_this_session_is_touched() -> None:
    before = thread_nices(os.getpid())
    lower_priority([os.getpid()])  # the user's kernel runs in the session of its front end
    assert thread_nices(os.getpid()) == before


@pytest.fixture
def launched(hindsight_server: RunningServer) -> ServerInfo:
    """The state record of the session's server, which the project's launcher started."""
    if hindsight_server.data_dir is None:
        pytest.skip("HINDSIGHT_TEST_SERVER_URL points at a server the launcher did not start")
    info = running_server(hindsight_server.data_dir)
    assert info is not None
    return info


@pytest.mark.integration
def test_the_launchers_server_and_its_postgresql_yield_to_notebooks(launched: ServerInfo) -> None:
    info = launched
    postmaster = postmaster_pid(Path(info.pg_data))
    assert postmaster is not None
    processes = [info.pid, *process_tree(postmaster)]
    assert len(processes) > 3  # the API, the postmaster and its background workers
    for pid in processes:  # connections opened later inherit the postmaster's nice value
        assert min(thread_nices(pid)) >= SERVER_NICE, pid
    for pid in (info.pid, postmaster):  # the API's threads share its session
        assert autogroup_nice(pid) in (None, *range(SERVER_NICE, 20)), pid


@pytest.mark.integration
def test_a_postgresql_connection_opened_after_the_start_runs_niced(launched: ServerInfo) -> None:
    psycopg2 = pytest.importorskip("psycopg2")  # the Hindsight server's own dependency
    dsn = f"postgresql://postgres:postgres@127.0.0.1:{launched.pg_port}/hindsight"
    with psycopg2.connect(dsn) as connection, connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]  # a process forked by the postmaster just now
        assert min(thread_nices(backend)) >= SERVER_NICE
    connection.close()
