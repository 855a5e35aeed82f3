"""What this machine shows, without HTTP: the data dir, processes, and a local Hindsight server.

- The per-user data dir (``data_dir``, platformdirs) and small process checks (``pid_exists``).
- Which server a session talks to when ``api_url`` is not set (``resolve_api_url``): a running
  local one, read from the launcher's ``state.json`` in ``server_home()`` and checked to be a
  live Hindsight process. ``%load_ext`` calls this at every load, so it is cheap and imports
  neither the ``_localserver`` package nor psutil unless a state file names a process.
- What the machine shows about the local server behind a URL (``local_server``): its
  ``hindsight-api`` process, its data dir and its PostgreSQL. A server whose data dir was
  deleted has no ``state.json`` any more; ``api_process`` finds it by what the launcher gave it:
  ``hindsight-api … --port P``, run in ``<data dir>/server`` with
  ``HINDSIGHT_API_WORKER_ID=hindsight-magic-P``. URLs on other machines are not looked at. The
  words for these facts are ``_diagnosis.local_diagnosis``."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import re
import shlex
import socket
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from ._settings import FALLBACK_API_URL

APP_NAME = "hindsight-magic"


PROJECT_DATA_DIR = ".hindsight-magic"  # a project's own data dir, in its top folder


def data_dir(project: str | os.PathLike[str] | None = None) -> Path:
    """The data directory: the journal, the local server's data, the MCP token (created on
    first use).

    ``HINDSIGHT_MAGIC_DATA_DIR`` wins; then a project's own (``project_data_dir``: the folder
    ``.hindsight-magic`` at the top of the project holding ``project``, default the working
    folder), so that a clone with one keeps its server and journal apart from the others';
    otherwise the per-user place, from platformdirs: ``$XDG_DATA_HOME/hindsight-magic``
    (default ``~/.local/share/hindsight-magic``) on Linux, ``~/Library/Application
    Support/hindsight-magic`` on macOS and ``%LOCALAPPDATA%\\hindsight-magic`` on Windows.
    """
    explicit = os.environ.get("HINDSIGHT_MAGIC_DATA_DIR", "").strip()
    if explicit:
        path = Path(explicit).expanduser().absolute()
    elif (own := project_data_dir(project)) is not None:
        return own
    else:
        path = user_data_dir()
    path.mkdir(parents=True, exist_ok=True)
    return path


def user_data_dir() -> Path:
    """The per-user data dir, from platformdirs: where every project without a data dir of its
    own keeps its journal and its server (not created here)."""
    import platformdirs  # imported here: not needed when HINDSIGHT_MAGIC_DATA_DIR is set

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def git_main_root(start: Path) -> Path | None:
    """The main checkout root of the git repository containing ``start`` (worktrees included)."""
    for folder in (start, *start.parents):
        marker = folder / ".git"
        if marker.is_dir():
            return folder
        if marker.is_file():
            # A linked worktree: ".git" holds "gitdir: <main>/.git/worktrees/<name>".
            try:
                line = marker.read_text(encoding="utf-8").strip()
            except OSError:
                return folder
            if not line.startswith("gitdir:"):
                return folder
            gitdir = Path(line.removeprefix("gitdir:").strip())
            if not gitdir.is_absolute():
                gitdir = (folder / gitdir).resolve()
            commondir = gitdir / "commondir"
            if commondir.is_file():
                common = (gitdir / commondir.read_text(encoding="utf-8").strip()).resolve()
                return common.parent if common.name == ".git" else common
            return folder
    return None


def project_folder(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The project holding ``start`` (default: the working folder): the main checkout of its
    git repository, else ``start`` itself, as the project label reads it; None when it cannot
    be read (a working folder deleted)."""
    try:
        folder = Path(start if start is not None else os.getcwd()).resolve()
    except OSError:
        return None
    return git_main_root(folder) or folder


def project_data_dir(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The data dir of the project holding ``start``, when it has one of its own: the folder
    ``PROJECT_DATA_DIR`` at its top (``hindsight-magic server start --project`` makes it)."""
    folder = project_folder(start)
    own = folder / PROJECT_DATA_DIR if folder is not None else None
    return own if own is not None and own.is_dir() else None


def tail(path: Path, lines: int) -> str:
    """The last ``lines`` lines of a text file ("" when it cannot be read)."""
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, fh.seek(0, os.SEEK_END) - 200 * lines - 4096))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def pid_exists(pid: int) -> bool:
    """Whether a process with this id exists (it may belong to another user).

    On POSIX, signal 0 answers this at no cost; elsewhere psutil does. (psutil's import costs
    ~15 ms, and the journal asks this at every ``%load_ext`` where other kernels left rows.)
    """
    if os.name == "posix":
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # it exists, as another user's
            return True
        return True
    import psutil

    return bool(psutil.pid_exists(pid))


# the LLM providers of a Hindsight server that writes no text: ``mock`` (the local server's
# default) repeats a placeholder, ``none`` refuses
NO_LLM_PROVIDERS = frozenset({"mock", "none"})


@dataclass(frozen=True)
class Provider:
    """One LLM provider of the local server: the variables its key may be in (before
    ``HINDSIGHT_API_LLM_API_KEY``, which wins), and the default URL of a server that runs on
    this machine."""

    name: str
    keys: tuple[str, ...] = ()
    local_url: str = ""

    @property
    def needs_key(self) -> bool:
        return bool(self.keys)


OPENAI, OLLAMA = "openai", "ollama"  # the first one a user is told of; the one found locally
OLLAMA_URL = "http://127.0.0.1:11434"  # Ollama's default
# the LLM providers ``server start --llm`` offers (Hindsight's names), declared once: the local
# server's options and every notice that names them are made from this
LLM_PROVIDERS: dict[str, Provider] = {
    provider.name: provider
    for provider in (
        Provider(OPENAI, ("OPENAI_API_KEY",)),
        Provider("anthropic", ("ANTHROPIC_API_KEY",)),
        Provider("gemini", ("GEMINI_API_KEY", "GOOGLE_API_KEY")),
        Provider("groq", ("GROQ_API_KEY",)),
        Provider(OLLAMA, local_url=OLLAMA_URL),
        Provider("lmstudio", local_url="http://127.0.0.1:1234"),
    )
}


@dataclass
class ServerInfo:
    """What ``state.json`` records about a running local server (never the API key)."""

    url: str
    pid: int
    port: int
    pg_port: int
    data_dir: str
    log_path: str
    llm_provider: str
    started_at: str
    auth: bool = False
    pg_data: str = ""
    llm_model: str = ""  # as asked for ("" for the provider's default); never the key
    llm_base_url: str = ""  # as asked for, without any user or password in it

    def to_json(self) -> str:
        """Serialize to JSON text."""
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> ServerInfo:
        """Parse JSON text written by ``to_json`` (unknown keys are ignored)."""
        raw = json.loads(text)
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in names})


class _HasApiUrl(Protocol):
    @property
    def api_url(self) -> str | None: ...


MCP_TOKEN_FILE = "mcp-http-token"  # ``mcp --transport http``'s bearer token, in the data dir


def mcp_token_path(folder: Path | None = None) -> Path:
    """``<data dir>/mcp-http-token``: the token an agent must send to ``mcp --transport http``
    (``server purge`` deletes it with the server's data)."""
    return (Path(folder).expanduser().absolute() if folder is not None else data_dir()) / (
        MCP_TOKEN_FILE
    )


def server_home(folder: Path | None = None) -> Path:
    """``<data dir>/server``: holds ``state.json``, ``hindsight.log`` and usually ``pgdata/``."""
    # absolute: PostgreSQL and the server run in other working folders (``--data-dir .x``)
    return (Path(folder).expanduser().absolute() if folder is not None else data_dir()) / "server"


def read_state(home: Path) -> ServerInfo | None:
    """The server recorded in ``home/state.json`` (alive or not); None if there is none."""
    try:
        return ServerInfo.from_json((home / "state.json").read_text())
    except (OSError, ValueError, TypeError):
        return None


def is_live_process(pid: int) -> bool:
    """Whether ``pid`` runs: not gone, and not a zombie that exited and waits to be reaped
    (which in a container whose first process does not reap may be forever)."""
    import psutil

    try:
        return _runs(psutil.Process(pid))
    except psutil.NoSuchProcess:
        return False


def _runs(proc: Any) -> bool:
    """Whether a ``psutil.Process`` still runs: the same process (``is_running`` compares its
    start time, so a reused pid is not it) and not a zombie; another user's counts as running."""
    import psutil

    try:
        return bool(proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.AccessDenied:
        return True
    except psutil.Error:
        return False


def is_hindsight_process(pid: int) -> bool:
    """Whether ``pid`` is a live (not zombie) process whose command line mentions hindsight.

    A recycled pid, or a server that exited but was not yet reaped, is not our server. When the
    system hides another user's command line, a live process is taken to be the server.
    """
    import psutil  # only when a state file names a process (most loads have none)

    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        cmdline = proc.cmdline()
    except psutil.NoSuchProcess:  # includes ZombieProcess
        return False
    except psutil.AccessDenied:
        return True
    return "hindsight" in " ".join(cmdline).lower()


def running_server(data_dir: Path | None = None) -> ServerInfo | None:
    """The recorded server of this data dir if its process is alive, else None (no HTTP).

    Never raises: a broken state file or data dir must not stop the extension.
    """
    try:
        info = read_state(server_home(data_dir))
        return info if info is not None and is_hindsight_process(info.pid) else None
    except Exception:
        return None


def resolve_api_url(settings: _HasApiUrl, project: str | None = None) -> str:
    """Explicit setting, else the running local server of the data dir (the project's own,
    for the project at folder ``project``, when it has one), else Hindsight's default URL."""
    if settings.api_url:
        return settings.api_url
    info = running_server(data_dir(project))
    return info.url if info else FALLBACK_API_URL


log = logging.getLogger("hindsight_magic")
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
LOCAL_PORT = 8899  # the local server's default port: 8888 is Jupyter Server's own
# The longest memory the local server's embedding model reads whole: all-MiniLM-L6-v2 reads
# 256 word pieces and ignores the rest, and code runs 2.4-3.4 characters to a word piece (prose
# about 3.6), with the server's date and entities appended to what it embeds. Auto-retain cuts
# cells into pieces this long; without an LLM the local server stores chunks this long.
EMBEDDED_CHARS = 600
PG_CONNECT_TIMEOUT_S = 0.5


@dataclass(frozen=True)
class LocalServer:
    """What this machine shows about the local server (started by ``hindsight-magic server
    start``) behind a URL, without HTTP: its ``hindsight-api`` process, its data dir and its
    PostgreSQL. ``default_data_dir``: started without ``--data-dir``. ``pg_running`` is None
    when unknown; ``pg_data`` is "" when unknown; ``pg_data_exists``: it still holds a database.
    ``_diagnosis.local_diagnosis`` words them."""

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
    llm_provider: str = ""  # as its state file records it ("" when unknown)

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

    known = _API_PIDS.get(port) if port is not None else None
    if known is not None:  # the one found last time: looking at it spares a scan of them all
        with contextlib.suppress(psutil.Error):
            found = _launched_api(psutil.Process(known), known_cmd=None, port=port, home=home)
            if found is not None:
                return found
    for proc in psutil.process_iter(["cmdline"]):
        found = _launched_api(proc, proc.info["cmdline"] or [], port, home)
        if found is not None:
            _API_PIDS[found[1]] = found[0]
            return found
    return None


_API_PIDS: dict[int, int] = {}  # port → pid of the launcher's server found there last


def _launched_api(
    proc: Any, known_cmd: list[str] | None, port: int | None, home: Path | None
) -> tuple[int, int, Path] | None:
    """(pid, port, working dir) when ``proc`` is a ``hindsight-api`` the launcher started,
    serving ``port`` (if given) from ``home`` (if given); else None."""
    import psutil

    try:
        cmd = known_cmd if known_cmd is not None else proc.cmdline()
        served = _option(cmd, "--port")
        if served is None or not any("hindsight" in part for part in cmd):
            return None
        if port is not None and served != str(port):
            return None
        if proc.environ().get("HINDSIGHT_API_WORKER_ID") != f"hindsight-magic-{served}":
            return None  # a Hindsight server the launcher did not start
        cwd = Path(proc.cwd())
    except psutil.Error:
        return None
    if home is None or _same(cwd, home):
        return proc.pid, int(served), cwd
    return None


def postmaster_process(
    pg_port: int | None = None, pg_data: Path | None = None
) -> tuple[int, str] | None:
    """(pid, data dir) of the PostgreSQL listening on ``pg_port`` or serving ``pg_data``, found
    by its command line (``postgres -D DATA … -p PORT``), so also when ``postmaster.pid`` was
    deleted with its data: ``pg_ctl`` cannot see such a one."""
    import psutil

    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        data = _option(cmd, "-D")
        if not data or (pg_port is not None and _option(cmd, "-p") != str(pg_port)):
            continue
        if pg_data is None or _same(Path(data), pg_data):
            return proc.pid, data
    return None


def _pg_port_of(pid: int) -> int | None:
    """The PostgreSQL port in the environment the launcher gave ``hindsight-api``."""
    import psutil

    try:
        url = psutil.Process(pid).environ().get("HINDSIGHT_API_DATABASE_URL", "")
        return urlsplit(url).port
    except (psutil.Error, ValueError):
        return None


def _holds_database(pg_data: str) -> bool:
    """Whether PostgreSQL's data folder still holds a database: after a deletion the folder may
    be back without one (files a running PostgreSQL wrote meanwhile)."""
    return bool(pg_data) and (Path(pg_data) / "PG_VERSION").is_file()


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
        pg_data_exists=_holds_database(info.pg_data),
        llm_provider=info.llm_provider,
    )


def _orphan(port: int, pid: int, home: Path, default: bool) -> LocalServer:
    """The facts of a running server whose data dir (its ``state.json``) was deleted."""
    pg_port = _pg_port_of(pid)
    pg_running = _accepts(pg_port)
    postmaster = postmaster_process(pg_port=pg_port) if pg_port and pg_running else None
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
        pg_data_exists=_holds_database(pg_data),
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


def recorded_elsewhere(url: str) -> LocalServer | None:
    """The local server the data dir records, running or stopped, when ``url`` is not its
    address: where nothing answers at ``url``, starting a server would not help, pointing at
    that one would. None when none is recorded or ``url`` is its own. Never raises."""
    try:
        parts = urlsplit(url)
        home = server_home()
        info = read_state(home)
        if info is None:
            return None
        if parts.hostname in LOCAL_HOSTS and (parts.port or 80) == info.port:
            return None
        running = is_hindsight_process(info.pid) or api_process(port=info.port) is not None
        return LocalServer(info.port, info.pid, running, str(home.parent))
    except Exception:
        log.debug("Hindsight: could not read the local server's record", exc_info=True)
        return None


class DeletedDataWatch:
    """Whether the local server behind a URL runs on after its data dir was deleted.

    Such a server still accepts memories, but its PostgreSQL writes them into deleted files
    (it notices only at its once-a-minute check), so they are lost when it stops; the sender
    asks this before every batch and keeps the memories meanwhile. The server's process is
    looked up (``local_server``: a process scan) once, and again at most every
    ``LOOK_EVERY_S`` while none is found or it stopped. Each batch then reads, from that
    process, whether it runs and its working dir (``<data dir>/server``, which follows a
    renamed folder and keeps its path when deleted), and the ``state.json`` there: the data
    dir counts as deleted when that file is gone or names another server. Safe to call from
    any thread; never raises (a check must not fail a send).
    """

    LOOK_EVERY_S = 30.0

    def __init__(self) -> None:
        self._servers: dict[str, Any] = {}  # url → its psutil.Process, or None
        self._looked: dict[str, float] = {}
        self._lock = threading.Lock()

    def deleted_data_dir(self, url: str) -> str | None:
        """The data dir of the local server at ``url`` when it was deleted under it; else None."""
        try:
            with self._lock:
                return self._deleted(url)
        except Exception:
            log.debug("Hindsight: could not look at the local server's data dir", exc_info=True)
            return None

    def _deleted(self, url: str) -> str | None:
        proc = self._servers.get(url)
        now = time.monotonic()
        if (proc is None or not _runs(proc)) and (
            now - self._looked.get(url, -self.LOOK_EVERY_S) >= self.LOOK_EVERY_S
        ):
            self._looked[url] = now
            proc = self._server_process(url)
            self._servers[url] = proc
        if proc is None or not _runs(proc):
            return None
        home = Path(proc.cwd())
        state = read_state(home)
        return None if state is not None and state.pid == proc.pid else str(home.parent)

    @staticmethod
    def _server_process(url: str) -> Any:
        """The launcher-started ``hindsight-api`` serving ``url``'s own port, or None."""
        import psutil

        local = local_server(url)
        port = urlsplit(url).port
        if local is None or not local.running or (port is not None and local.port != port):
            return None  # (at the fallback URL it may report a server on another port)
        try:
            return psutil.Process(local.pid)
        except psutil.Error:
            return None


# -- where this process runs ---------------------------------------------------------------------


def notebook_from_env() -> str | None:
    """The notebook's path as Jupyter Server tells the kernel (``JPY_SESSION_NAME``), or None."""
    return os.environ.get("JPY_SESSION_NAME") or None


@dataclass(frozen=True)
class HeadlessNotebook:
    """The notebook a headless run executes: as its command line names it (what provenance
    shows, as the user wrote it) and where it is (its absolute path, for reading the file;
    None for a URL papermill reads, or when the runner's working directory cannot be read)."""

    name: str
    path: Path | None


# the commands that run a notebook in a kernel they start, as the kernel's parent runs them:
# ``papermill``, ``jupyter nbconvert --execute`` (``jupyter`` execs ``jupyter-nbconvert``),
# ``python -m nbconvert``, ``jupyter execute`` (``jupyter-execute``)
_RUNNERS = {
    "papermill": "papermill",
    "jupyter-nbconvert": "nbconvert",
    "nbconvert": "nbconvert",
    "jupyter-execute": "execute",
}
# options whose values may end in ``.ipynb`` without being the notebook run (how many values):
# papermill's parameters (``-p source old.ipynb``), nbconvert's and ``jupyter execute``'s output
_VALUES = {"-p": 2, "--parameters": 2, "-r": 2, "--parameters_raw": 2}
_VALUES |= {"--output": 1, "--output-dir": 1}


def headless_notebook() -> HeadlessNotebook | None:
    """The notebook a headless runner executes in this kernel, read from the command line of
    the process that started it (``papermill report.ipynb out.ipynb``, ``jupyter nbconvert
    --execute report.ipynb``, ``jupyter execute report.ipynb`` …); None elsewhere. These
    runners tell their kernel nothing else, and ``pm.execute_notebook`` called from a script
    leaves no trace: then the ``notebook`` setting (``HINDSIGHT_NOTEBOOK``) names it.

    nbconvert and ``jupyter execute`` may be given several notebooks: each runs in a kernel of
    its own, started in the notebook's folder, which tells them apart when their folders
    differ (None when they do not)."""
    try:
        import psutil

        parent = psutil.Process().parent()
        args = parent.cmdline() if parent is not None else []
    except Exception:  # no permission, a process gone, no psutil: nothing to read
        return None
    at = next((n for n, arg in enumerate(args[:3]) if _runner(arg)), None)
    if parent is None or at is None:
        return None
    given = _notebooks(args[at + 1 :])
    if _runner(args[at]) == "papermill":
        given = given[:1]  # the second is the notebook it writes
    try:
        folder: Path | None = Path(parent.cwd())
    except Exception:  # another user's process, or gone
        folder = None
    found = [HeadlessNotebook(name, _absolute(name, folder)) for name in given]
    if len(found) > 1:  # several run one after another: this kernel runs in its one's folder
        here = Path.cwd()
        found = [one for one in found if one.path and _same(one.path.parent, here)]
    return found[0] if len(found) == 1 else None


def _runner(arg: str) -> str | None:
    """Which runner ``arg`` (a command line's program or module) names, if one."""
    name = os.path.basename(arg).lower().removesuffix(".exe").removesuffix("-script.py")
    return _RUNNERS.get(name.removesuffix(".py"))


def _notebooks(args: list[str]) -> list[str]:
    """The ``.ipynb`` arguments of a runner's command line that are not an option's value."""
    found, skip = [], 0
    for arg in args:
        if skip:
            skip -= 1
        elif arg in _VALUES:
            skip = _VALUES[arg]
        elif arg.endswith(".ipynb") and not arg.startswith("-"):
            found.append(arg)
    return found


def _absolute(name: str, folder: Path | None) -> Path | None:
    """``name`` as an absolute path, against ``folder`` (the runner's working directory)."""
    if "://" in name:  # papermill also reads s3://, gs://, http:// …
        return None
    path = Path(name).expanduser()
    if not path.is_absolute():
        if folder is None:
            return None
        path = folder / path
    return Path(os.path.normpath(path))


def headless_notebook_path() -> Path | None:
    """The absolute path of the notebook a headless runner executes (see ``headless_notebook``)."""
    found = headless_notebook()
    return found.path if found is not None else None


def in_kernel() -> bool:
    """Whether this process is a Jupyter kernel (whoever started it)."""
    if "ipykernel" not in sys.modules:
        return False
    try:
        from ipykernel.connect import get_connection_file

        return bool(get_connection_file())
    except Exception:
        return False


def kernel_id() -> str | None:
    """The Jupyter kernel id from the connection file, when running in a kernel."""
    if "ipykernel" not in sys.modules:
        return None
    try:
        from ipykernel.connect import get_connection_file

        name = os.path.basename(get_connection_file())
    except Exception:
        return None
    match = re.fullmatch(r"kernel-(.+)\.json", name)
    return match.group(1) if match else None


# -- the package's logger ------------------------------------------------------------------------

log.addHandler(logging.NullHandler())  # never print from the worker into a cell


class _CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time (kernels and test runners replace it;
    a stream captured at import may be closed by then)."""

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass


_DEBUG_HANDLER = _CurrentStderr()


_DEBUG_HANDLER.setFormatter(logging.Formatter("hindsight_magic %(levelname)s: %(message)s"))


def configure_logging(debug: bool) -> None:
    """With ``debug`` on, show the ``hindsight_magic`` logger's debug records on stderr."""
    if debug:
        log.setLevel(logging.DEBUG)
        if _DEBUG_HANDLER not in log.handlers:
            log.addHandler(_DEBUG_HANDLER)
    else:
        log.setLevel(logging.NOTSET)
        log.removeHandler(_DEBUG_HANDLER)
