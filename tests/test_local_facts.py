"""What status and doctor say when the local server half-vanished, from the machine's facts.

The words (``api.errors.local_diagnosis``) are checked on facts written by hand; the facts
(``local_facts.local_server``) on real processes standing in for ``hindsight-api``: started
with the command line, working dir and environment the launcher gives it, without the server.
The real server's cases are in ``tests/localserver/test_vanishing.py``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import free_port, wait_for

from hindsight_magic._api.client import HindsightClient, Timeouts
from hindsight_magic._diagnosis import (
    NOTEBOOK_COMMAND,
    diagnose,
    explain,
    local_diagnosis,
    server_problem,
)
from hindsight_magic._errors import HindsightError
from hindsight_magic._localserver import actions, launcher
from hindsight_magic._machine import (
    LOCAL_PORT,
    DeletedDataWatch,
    LocalServer,
    ServerInfo,
    local_server,
    server_home,
)
from hindsight_magic._settings import FALLBACK_API_URL
from hindsight_magic._ui import doctor

CONNECT = HindsightError("recall", "recall request failed: refused", kind="connect")
FAILED = HindsightError("listBanks", "listBanks failed: [Errno 111] Connection refused", 500)


def facts(**fields: object) -> LocalServer:
    base: dict[str, object] = {"port": 8899, "pid": 4242, "running": True, "data_dir": "/d"}
    return LocalServer(**{**base, **fields})  # type: ignore[arg-type]


def test_the_default_port_is_the_launchers() -> None:
    assert LOCAL_PORT == launcher.DEFAULT_PORT == actions.DEFAULT_PORT


def test_postgres_stopped_names_its_pid_and_the_restart() -> None:
    found = local_diagnosis(facts(port=4100, pg_pid=77, pg_running=False), NOTEBOOK_COMMAND)
    assert found is not None
    assert found.summary == (
        "the local server's PostgreSQL stopped (pid 77 gone); its API (pid 4242) runs without "
        "a database; run `%hindsight server stop` then `%hindsight server start --port 4100`; "
        "queued memories are kept and sent once it is back"
    )
    no_pid = local_diagnosis(facts(pg_port=5432, pg_running=False))
    assert no_pid is not None
    assert "(nothing on port 5432)" in no_pid.problem
    assert "`hindsight-magic server stop` then `hindsight-magic server start`;" in no_pid.hint
    assert local_diagnosis(facts(pg_running=True)) is None
    assert local_diagnosis(facts(pg_running=None)) is None  # unknown is not a fault


def test_a_stopped_server_counts_only_where_nothing_answers() -> None:
    stopped = facts(running=False, data_dir="/my data", default_data_dir=False)
    assert stopped.stop_command("hm server") == "hm server stop --data-dir '/my data'"
    assert local_diagnosis(stopped) is None  # another server may answer at that URL now
    found = local_diagnosis(stopped, unreachable=True)
    assert found is not None
    assert found.problem == "the local server (pid 4242) is not running"
    assert found.hint.startswith("run `hindsight-magic server start --data-dir '/my data'`;")
    # diagnose (the magics' one-line errors) uses the facts for a connect error …
    said = explain(CONNECT, "http://127.0.0.1:8899", local=stopped)
    assert "the local server (pid 4242) is not running; run `hindsight-magic" in said
    # … and without them says what it always said
    plain = diagnose(CONNECT, "http://127.0.0.1:8899")
    assert plain is not None
    assert plain.problem == "no Hindsight server at http://127.0.0.1:8899"
    assert plain.summary.startswith("unreachable (start one with")


def test_a_read_names_the_address_it_tried_and_the_stopped_local_server(
    notebook: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the user's local server was recorded on its port, then stopped: nothing answers there
    monkeypatch.setenv("HINDSIGHT_MAGIC_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("HINDSIGHT_API_URL", raising=False)
    home = server_home()
    home.mkdir(parents=True)
    port, pid = free_port(), dead_pid()
    record(home, pid, port, free_port(), tmp_path / "pgdata")
    start = f"run `%hindsight server start --port {port}`; queued memories are kept"

    notebook.load(api_url=f"http://127.0.0.1:{port}", bank_id="stopped", mental_models="false")
    said = str(notebook.run("%recall what did we decide?").error)
    tried = f"no Hindsight server at http://127.0.0.1:{port}"
    assert f"{tried}; the local server (pid {pid}) is not running; {start}" in said

    # nothing set: the kernel tried the fallback URL, and says which, and the server's port
    notebook.run("%unload_ext hindsight_magic")
    monkeypatch.delenv("HINDSIGHT_API_URL")
    if accepts(FALLBACK_API_URL):
        return  # something else answers at the fallback URL on this machine
    notebook.load(bank_id="stopped", mental_models="false")
    said = str(notebook.run("%recall what did we decide?").error)
    tried = f"no Hindsight server at {FALLBACK_API_URL}"
    assert f"{tried}; the local server (pid {pid}, port {port}) is not running; {start}" in said


def test_a_read_at_another_address_names_where_the_local_server_is(
    notebook: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    stand_ins: list[subprocess.Popen[bytes]],
) -> None:
    # HINDSIGHT_API_URL names a dead port; the local server is recorded on another one:
    # starting a server would not fix that URL, pointing at the local one would
    monkeypatch.setenv("HINDSIGHT_MAGIC_DATA_DIR", str(tmp_path / "data"))
    home = server_home()
    home.mkdir(parents=True)
    port, pid, dead = free_port(), dead_pid(), f"http://127.0.0.1:{free_port()}"
    there = f"http://127.0.0.1:{port}"
    record(home, pid, port, free_port(), tmp_path / "pgdata")
    monkeypatch.setenv("HINDSIGHT_API_URL", dead)
    point = f"set HINDSIGHT_API_URL to {there} (or run `%hindsight config api_url={there}`)"

    notebook.load(bank_id="elsewhere", mental_models="false")
    said = str(notebook.run("%recall what did we decide?").error)
    assert f"no Hindsight server at {dead}; the local server (pid {pid}, port {port}) is " in said
    assert f"not running: start it with `%hindsight server start --port {port}`, then {point}" in (
        said
    )
    assert "start one with" not in said
    status = server_problem(HindsightClient(dead, None, Timeouts(1, 1, 1, 1)), CONNECT)
    assert status is not None  # %hindsight status and doctor say the same (as in a terminal)
    assert status.summary == (
        f"unreachable (the local server (pid {pid}, port {port}) is not running: start it "
        f"with `hindsight-magic server start --port {port}`, then set HINDSIGHT_API_URL to "
        f"{there})"
    )

    proc = stand_in(stand_ins, home, port, free_port())  # now it runs, still elsewhere
    record(home, proc.pid, port, free_port(), tmp_path / "pgdata")
    said = str(notebook.run("%recall what did we decide?").error)
    assert f"no Hindsight server at {dead}; the local server runs at {there}: {point}" in said


def accepts(url: str) -> bool:
    """Whether something accepts connections at ``url``'s host and port."""
    parts = httpx.URL(url)
    try:
        socket.create_connection((parts.host, parts.port or 80), timeout=1).close()
    except OSError:
        return False
    return True


def test_a_deleted_data_dir_says_stop_and_whether_the_memories_survived() -> None:
    gone = local_diagnosis(facts(data_dir_gone=True, pg_running=False), NOTEBOOK_COMMAND)
    assert gone is not None
    assert gone.summary == (
        "the local server's data dir /d was deleted while it ran; run `%hindsight server stop` "
        "then `%hindsight server start` (a new, empty server: the memories it stored are gone; "
        "queued memories are sent to it)"
    )
    kept = local_diagnosis(
        facts(data_dir_gone=True, pg_running=True, pg_data="/var/pg", pg_data_exists=True)
    )
    assert kept is not None
    assert "its memories are still in PostgreSQL's data at /var/pg" in kept.hint
    # the data dir outranks a stopped PostgreSQL
    both = local_diagnosis(facts(data_dir_gone=True, pg_pid=7, pg_running=False))
    assert both is not None
    assert both.state == "data dir deleted"


def hindsight_without_database() -> httpx.MockTransport:
    """A remote server whose API runs without its database: 500s, and /health says why."""

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/version":
            return httpx.Response(200, json={"api_version": "1.1.0"})
        if request.url.path == "/health":
            error = "ConnectionRefusedError(111, 'Connection refused')"
            return httpx.Response(
                503, json={"status": "unhealthy", "database": "error", "error": error}
            )
        return httpx.Response(500, json={"detail": "[Errno 111] Connection refused"})

    return httpx.MockTransport(handle)


def test_a_remote_server_without_its_database_is_named_by_its_health(tmp_path: Path) -> None:
    url = "http://hs.test"
    client = HindsightClient(
        url, None, Timeouts(5, 5, 5, 5), transport=hindsight_without_database()
    )
    found = server_problem(client, FAILED)
    assert found is not None
    assert not found.local
    assert found.summary == (
        "database unreachable (its PostgreSQL may have stopped: restart the server; queued "
        "memories are kept)"
    )
    report = doctor.run_checks(
        url, None, "b", str(tmp_path / "j.db"), transport=hindsight_without_database()
    )
    assert report["server"].state == "ok"
    assert report["auth"].line() == (
        f"fix:  auth: the server at {url} answers but cannot reach its database (no API key): "
        "listBanks failed: [Errno 111] Connection refused → its PostgreSQL may have stopped: "
        "restart the server; queued memories are kept"
    )


# -- the facts, from real processes ------------------------------------------------------------


STAND_IN = "import time; time.sleep(120)"


@pytest.fixture
def stand_ins() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        proc.kill()
        proc.wait()


def stand_in(
    started: list[subprocess.Popen[bytes]], home: Path, port: int, pg_port: int
) -> subprocess.Popen[bytes]:
    """A process with the launcher's command line, working dir and environment."""
    env = {
        **os.environ,
        "HINDSIGHT_API_WORKER_ID": f"hindsight-magic-{port}",
        "HINDSIGHT_API_DATABASE_URL": f"postgresql://postgres:postgres@127.0.0.1:{pg_port}/x",
    }
    cmd = [sys.executable, "-c", STAND_IN, "hindsight-api", "--host", "127.0.0.1"]
    proc = subprocess.Popen([*cmd, "--port", str(port)], cwd=home, env=env)
    started.append(proc)
    return proc


def record(home: Path, pid: int, port: int, pg_port: int, pg_data: Path) -> None:
    info = ServerInfo(
        f"http://127.0.0.1:{port}", pid, port, pg_port, str(home.parent), "", "mock", "",
        pg_data=str(pg_data),
    )  # fmt: skip
    (home / "state.json").write_text(info.to_json())


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_facts_of_a_running_a_stopped_and_an_orphaned_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stand_ins: list[subprocess.Popen[bytes]]
) -> None:
    monkeypatch.setenv("HINDSIGHT_MAGIC_DATA_DIR", str(tmp_path / "data"))
    home = server_home()
    home.mkdir(parents=True)
    port, pg_port = free_port(), free_port()  # nothing listens on pg_port: PostgreSQL is down
    url = f"http://127.0.0.1:{port}"
    assert local_server("http://hs.test:8899") is None  # not this machine: not looked at
    assert local_server(url) is None  # nothing recorded, nothing running

    pg_data = tmp_path / "pgdata"
    pg_data.mkdir()
    killed = dead_pid()
    (pg_data / "postmaster.pid").write_text(f"{killed}\n{pg_data}\n")
    proc = stand_in(stand_ins, home, port, pg_port)
    record(home, proc.pid, port, pg_port, pg_data)
    running = wait_for(lambda: local_server(url), 10, "the recorded stand-in")
    assert (running.pid, running.running, running.default_data_dir) == (proc.pid, True, True)
    assert (running.pg_pid, running.pg_running) == (killed, False)
    said = server_problem(HindsightClient(url, None, Timeouts(1, 1, 1, 1)), None)
    assert said is not None
    assert said.problem.startswith(f"the local server's PostgreSQL stopped (pid {killed} gone)")
    assert f"`hindsight-magic server start --port {port}`" in said.hint

    proc.kill()
    proc.wait()
    stopped = local_server(url)
    assert stopped is not None
    assert not stopped.running
    # at the fallback URL (what a kernel uses once the server is gone) it is still reported
    fallback = local_server(FALLBACK_API_URL)
    assert fallback is not None
    assert (fallback.pid, fallback.port) == (proc.pid, port)
    assert local_server(f"http://127.0.0.1:{free_port()}") is None  # another port: not ours

    orphan_proc = stand_in(stand_ins, home, port, pg_port)
    (home / "state.json").unlink()  # as when the data dir is deleted under a running server
    orphan = wait_for(lambda: local_server(url), 10, "the orphan")
    assert (orphan.pid, orphan.data_dir_gone, orphan.pg_running) == (orphan_proc.pid, True, False)
    assert orphan.data_dir == str(tmp_path / "data")
    at_fallback = local_server(FALLBACK_API_URL)  # found by its working dir
    assert at_fallback is not None
    assert at_fallback.pid == orphan_proc.pid


def test_a_server_the_launcher_did_not_start_is_not_judged(
    tmp_path: Path, stand_ins: list[subprocess.Popen[bytes]]
) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", STAND_IN, "hindsight-api", "--port", str(port)], cwd=tmp_path
    )
    stand_ins.append(proc)
    time.sleep(0.3)
    assert local_server(f"http://127.0.0.1:{port}") is None  # no state file, no launcher marker


def test_the_watch_holds_memories_only_while_the_server_runs_without_its_data_dir(
    tmp_path: Path, stand_ins: list[subprocess.Popen[bytes]]
) -> None:
    data = tmp_path / "data"
    home = server_home(data)
    home.mkdir(parents=True)
    port, pg_port = free_port(), free_port()
    url = f"http://127.0.0.1:{port}"
    proc = stand_in(stand_ins, home, port, pg_port)
    record(home, proc.pid, port, pg_port, tmp_path / "pg")
    wait_for(lambda: local_server(url), 10, "the recorded stand-in")
    watch = DeletedDataWatch()
    assert watch.deleted_data_dir(url) is None  # its data dir is there
    assert watch.deleted_data_dir("http://hs.test:8899") is None  # not this machine
    assert watch.deleted_data_dir(f"http://127.0.0.1:{free_port()}") is None  # not ours

    moved = tmp_path / "moved"
    data.rename(moved)  # renamed, not deleted: the server still has its data
    assert watch.deleted_data_dir(url) is None
    shutil.rmtree(moved)
    assert watch.deleted_data_dir(url) == str(moved)  # deleted: hold the memories

    # a new server started from the same (new) folder does not make the old one safe
    new_home = server_home(moved)
    new_home.mkdir(parents=True)
    record(new_home, dead_pid(), free_port(), pg_port, tmp_path / "pg")
    assert watch.deleted_data_dir(url) == str(moved)

    proc.kill()
    proc.wait()
    assert watch.deleted_data_dir(url) is None  # gone: nothing to hold memories for
