"""The journal's SQLite file: connecting, naming what went wrong, moving a damaged file aside.

A failure is sorted into a *kind*: ``corrupt`` (SQLite says the file is not a database or its
image is malformed — the only kind that moves the file aside), ``full`` (disk full),
``readonly`` (read-only file system or file), ``denied`` (permissions), ``locked`` (another
process holds it too long; transient) or ``error`` (anything else).
"""

from __future__ import annotations

import errno
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

BUSY_TIMEOUT_S = 2.0
CORRUPT_SUFFIX = ".corrupt-"
_SQLITE_KINDS = {
    sqlite3.SQLITE_CORRUPT: "corrupt",
    sqlite3.SQLITE_NOTADB: "corrupt",
    sqlite3.SQLITE_FULL: "full",
    sqlite3.SQLITE_READONLY: "readonly",
    sqlite3.SQLITE_PERM: "denied",
    sqlite3.SQLITE_CANTOPEN: "cantopen",
    sqlite3.SQLITE_BUSY: "locked",
}
_OS_KINDS = {
    errno.ENOSPC: "full",
    errno.EDQUOT: "full",
    errno.EROFS: "readonly",
    errno.EACCES: "denied",
    errno.EPERM: "denied",
}
REASONS = {
    "corrupt": "the file is damaged",
    "full": "disk full",
    "readonly": "read-only",
    "denied": "permission denied",
    "locked": "locked by another process",
    "closed": "not open",
    "replaced": "replaced by another kernel",
}


class JournalError(RuntimeError):
    """The journal file cannot be used right now; ``kind`` says why (see the module doc)."""

    def __init__(self, message: str, kind: str = "error", detail: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.detail = detail or message

    @property
    def reason(self) -> str:
        """A few words for the user: ``disk full``, ``read-only`` …"""
        return REASONS.get(self.kind, self.detail)


def kind_of(error: BaseException) -> str:
    """The kind of a ``sqlite3.Error`` or ``OSError``."""
    if isinstance(error, JournalError):
        return error.kind
    if isinstance(error, sqlite3.Error):
        code = getattr(error, "sqlite_errorcode", None)
        if code is not None:
            return _SQLITE_KINDS.get(code & 0xFF, "error")
        text = str(error).lower()  # errors raised before SQLite gave a code
        if "malformed" in text or "not a database" in text:
            return "corrupt"
        if "readonly" in text or "read-only" in text:
            return "readonly"
        if "disk is full" in text:
            return "full"
        return "error"
    if isinstance(error, OSError):
        return _OS_KINDS.get(error.errno or 0, "error")
    return "error"


def journal_error(path: Path, error: BaseException) -> JournalError:
    """``error`` as a ``JournalError`` naming the file."""
    if isinstance(error, JournalError):
        return error
    kind = kind_of(error)
    if kind == "cantopen":  # SQLite does not say why: ask the folder
        kind = _folder_kind(path.parent)
    return JournalError(f"cannot use the journal {path}: {error}", kind, str(error))


def _folder_kind(folder: Path) -> str:
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return "readonly"
    except (OSError, AttributeError):  # no folder (yet), or no statvfs (Windows)
        return "error"
    return "error" if os.access(folder, os.W_OK) else "denied"


def connect(path: Path) -> sqlite3.Connection:
    """A connection to ``path`` (nothing read yet); raises sqlite3.Error/OSError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return sqlite3.connect(
        str(path), isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S
    )


def prepare(db: sqlite3.Connection, path: Path, schema: str) -> None:
    """WAL mode and ``schema`` in place, the file private; raises sqlite3.Error/OSError."""
    db.execute("pragma journal_mode=wal")
    db.execute("pragma synchronous=normal")
    db.executescript(schema)
    os.chmod(path, 0o600)


def intact(db: sqlite3.Connection) -> bool:
    """Whether SQLite finds the file sound (``quick_check``: reads every page once)."""
    try:
        return bool(db.execute("pragma quick_check(1)").fetchone()[0] == "ok")
    except sqlite3.DatabaseError as error:
        if kind_of(error) == "corrupt":
            return False
        raise


def file_id(path: Path) -> tuple[int, int] | None:
    """(device, inode) of ``path``, or None if it is gone: tells a replaced file apart."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


@contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold ``path``'s sidecar lock (POSIX), so two kernels never move the same file aside."""
    try:
        import fcntl
    except ImportError:  # Windows: no flock; a rare double move only costs a fresh file
        yield
        return
    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def aside_name(path: Path) -> Path:
    """``<name>.corrupt-<UTC time>`` next to ``path`` (a free name)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = path.with_name(f"{path.name}{CORRUPT_SUFFIX}{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}{CORRUPT_SUFFIX}{stamp}-{n}")
    return target


def move_aside(path: Path, target: Path) -> None:
    """Rename a damaged journal and its -wal/-shm to ``target`` (+ the same suffixes)."""
    for suffix in ("-wal", "-shm"):
        side = Path(f"{path}{suffix}")
        if side.exists():
            os.replace(side, f"{target}{suffix}")
    os.replace(path, target)
