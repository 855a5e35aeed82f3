"""What this machine shows about the local Hindsight server behind a URL (a shared helper).

``local_server`` reads, never writes and makes no HTTP call: the launcher's ``state.json``
(``discovery``), the processes (psutil, imported when a local URL is looked at) and whether
PostgreSQL accepts a TCP connection. A server whose data dir was deleted has no ``state.json``
any more; ``api_process`` finds it by what the launcher gave it: ``hindsight-api … --port P``,
run in ``<data dir>/server`` with ``HINDSIGHT_API_WORKER_ID=hindsight-magic-P``. URLs on other
machines are not looked at. The words for these facts are ``api.errors.local_diagnosis``.
"""

from __future__ import annotations

import logging
import shlex
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from .discovery import ServerInfo, is_hindsight_process, read_state, server_home
from .paths import pid_exists
from .settings import FALLBACK_API_URL

log = logging.getLogger("hindsight_magic")
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
LOCAL_PORT = 8899  # the local server's default port (localserver.actions.DEFAULT_PORT)
PG_CONNECT_TIMEOUT_S = 0.5


@dataclass(frozen=True)
class LocalServer:
    """What this machine shows about the local server (started by ``hindsight-magic server
    start``) behind a URL, without HTTP: its ``hindsight-api`` process, its data dir and its
    PostgreSQL. ``default_data_dir``: started without ``--data-dir``. ``pg_running`` is None
    when unknown; ``pg_data`` is "" when unknown. ``api.errors.local_diagnosis`` words them."""

    port: int
    pid: int
    running: bool
    data_dir: str
    default_data_dir: bool = True
    data_dir_gone: bool = False
    pg_port: int | None = None
    pg_pid: int | None = None
    pg_running: bool | None = None
    pg_data: str = ""
    pg_data_exists: bool = False

    def start_command(self, command: str) -> str:
        """``{command} start`` with the options that start this server again (same port and
        data dir); ``command`` is ``hindsight-magic server`` or ``%hindsight server``."""
        options = "" if self.port == LOCAL_PORT else f" --port {self.port}"
        if not self.default_data_dir:
            options += f" --data-dir {shlex.quote(self.data_dir)}"
        return f"{command} start{options}"

    def stop_command(self, command: str) -> str:
        """``{command} stop``, with this server's data dir when it is not the default one."""
        options = "" if self.default_data_dir else f" --data-dir {shlex.quote(self.data_dir)}"
        return f"{command} stop{options}"


def _accepts(port: int | None) -> bool | None:
    """Whether something accepts TCP connections on 127.0.0.1:port: False only when refused
    (None: no port known, or no answer in time — a busy machine is not a stopped server)."""
    if not port:
        return None
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=PG_CONNECT_TIMEOUT_S):
            return True
    except ConnectionRefusedError:
        return False
    except OSError:
        return None


def _postmaster_pid(pg_data: str) -> int | None:
    """The pid ``postmaster.pid`` names (the file outlives a killed PostgreSQL)."""
    try:
        return int((Path(pg_data) / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _option(cmd: list[str], flag: str) -> str | None:
    """The value after ``flag`` in a command line, if any."""
    at = cmd.index(flag) if flag in cmd else len(cmd)
    return cmd[at + 1] if at + 1 < len(cmd) else None


def api_process(port: int | None = None, home: Path | None = None) -> tuple[int, int, Path] | None:
    """(pid, port, working dir) of a ``hindsight-api`` the launcher started, serving ``port`` or
    started from ``home`` (its working dir, which outlives its deletion), if one runs.

    Also finds a server whose ``state.json`` is gone (``server stop`` cannot, today)."""
    import psutil

    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        served = _option(cmd, "--port")
        if served is None or not any("hindsight" in part for part in cmd):
            continue
        if port is not None and served != str(port):
            continue
        try:
            if proc.environ().get("HINDSIGHT_API_WORKER_ID") != f"hindsight-magic-{served}":
                continue  # a Hindsight server the launcher did not start
            cwd = Path(proc.cwd())
        except psutil.Error:
            continue
        if home is None or _same(cwd, home):
            return proc.pid, int(served), cwd
    return None


def _postmaster_on(pg_port: int) -> tuple[int, str] | None:
    """(pid, data dir) of the PostgreSQL listening on ``pg_port`` (its command line)."""
    import psutil

    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if _option(cmd, "-p") == str(pg_port) and _option(cmd, "-D"):
            return proc.pid, _option(cmd, "-D") or ""
    return None


def _pg_port_of(pid: int) -> int | None:
    """The PostgreSQL port in the environment the launcher gave ``hindsight-api``."""
    import psutil

    try:
        url = psutil.Process(pid).environ().get("HINDSIGHT_API_DATABASE_URL", "")
        return urlsplit(url).port
    except (psutil.Error, ValueError):
        return None


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _recorded(info: ServerInfo, home: Path, pid: int, default: bool) -> LocalServer:
    """The facts of a server whose ``state.json`` still names it (process alive)."""
    pg_pid = _postmaster_pid(info.pg_data)
    pg_running = _accepts(info.pg_port)
    if pg_running is False and pg_pid is not None and pid_exists(pg_pid):
        pg_running = None  # refused, but alive: starting or stopping, not gone
    return LocalServer(
        port=info.port,
        pid=pid,
        running=True,
        data_dir=str(home.parent),
        default_data_dir=default,
        pg_port=info.pg_port,
        pg_pid=pg_pid,
        pg_running=pg_running,
        pg_data=info.pg_data,
        pg_data_exists=bool(info.pg_data) and Path(info.pg_data).is_dir(),
    )


def _orphan(port: int, pid: int, home: Path, default: bool) -> LocalServer:
    """The facts of a running server whose data dir (its ``state.json``) was deleted."""
    pg_port = _pg_port_of(pid)
    pg_running = _accepts(pg_port)
    postmaster = _postmaster_on(pg_port) if pg_port and pg_running else None
    pg_pid, pg_data = postmaster if postmaster else (None, "")
    return LocalServer(
        port=port,
        pid=pid,
        running=True,
        data_dir=str(home.parent),
        default_data_dir=default,
        data_dir_gone=True,
        pg_port=pg_port,
        pg_pid=pg_pid,
        pg_running=pg_running,
        pg_data=pg_data,
        pg_data_exists=bool(pg_data) and Path(pg_data).is_dir(),
    )


def _gather(url: str) -> LocalServer | None:
    parts = urlsplit(url)
    if parts.hostname not in LOCAL_HOSTS:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    # at the fallback URL (no setting, no running local server) a stopped one is the news
    fallback = url.rstrip("/") == FALLBACK_API_URL
    default_home = server_home()
    info = read_state(default_home)
    if info is not None and (info.port == port or fallback):
        if is_hindsight_process(info.pid):
            return _recorded(info, default_home, info.pid, default=True)
        if api_process(port=info.port) is None:
            return LocalServer(info.port, info.pid, False, str(default_home.parent))
    found = api_process(port=port)
    if found is None and fallback:  # the data dir's server, if its state file was deleted
        found = api_process(home=default_home)
    if found is None:
        return None
    pid, port, home = found
    default = _same(home, default_home)
    state = read_state(home)
    if state is not None and state.pid == pid:
        return _recorded(state, home, pid, default)
    return _orphan(port, pid, home, default)


def local_server(url: str) -> LocalServer | None:
    """What this machine shows about the local server behind ``url``; None when ``url`` is not
    on this machine or no server the launcher started is recorded or found for it.

    At the fallback URL (nothing set, no local server running) the recorded server of the data
    dir is reported whatever its port: that it stopped is what the user needs to hear. Never
    raises (a check must not fail because a process vanished while it was looked at).
    """
    try:
        return _gather(url)
    except Exception:
        log.debug("Hindsight: could not look at the local server", exc_info=True)
        return None
