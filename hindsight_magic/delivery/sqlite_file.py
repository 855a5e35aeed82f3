"""The journal's SQLite file: connecting, naming what went wrong, moving a damaged file aside.

A failure is sorted into a *kind*: ``corrupt`` (SQLite says the file is not a database or its
image is malformed — the only kind that moves the file aside), ``full`` (disk full),
``readonly`` (read-only file system or file), ``denied`` (permissions), ``locked`` (another
process holds it too long; transient) or ``error`` (anything else).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

BUSY_TIMEOUT_S = 2.0
HEARTBEAT_S = 20.0
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


class JournalFile:
    """The open journal file of one owner: (re)opening, failures as ``JournalError``,
    transactions, and the owner's heartbeat. ``Journal`` adds the rows."""

    schema = ""

    def __init__(self, path: Path, *, open_now: bool = True) -> None:
        self.path = path
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.problem: JournalError | None = JournalError(
            f"the journal {path} is not open", "closed"
        )
        self.moved_to: Path | None = None  # where a damaged file went (the last open)
        self.damage = ""  # what SQLite said about it
        self._lock = threading.RLock()
        self._last_beat = 0.0
        self._closed = False
        self._db: sqlite3.Connection | None = None
        self._file: tuple[int, int] | None = None
        if open_now:
            self.open()

    def _not_open(self) -> JournalError:
        return JournalError(f"the journal {self.path} is not open", "closed")

    # -- opening ----------------------------------------------------------------------------

    def open(self, check: bool = False) -> None:
        """(Re)connect; a damaged file is moved aside and a fresh one used (``moved_to``).

        ``check`` reads every page first (after a run-time corruption error). Raises
        ``JournalError`` (``problem`` keeps it) when the file cannot be used.
        """
        with self._lock:
            self._disconnect()
            self.moved_to = None
            self._file = file_id(self.path)
            try:
                try:
                    self._connect(check)
                except (sqlite3.Error, OSError) as error:
                    if kind_of(error) != "corrupt":
                        raise
                    self._replace_damaged(str(error))
            except (sqlite3.Error, OSError) as error:
                self._disconnect()
                self.problem = journal_error(self.path, error)
                raise self.problem from None
            self.problem = None

    def _connect(self, check: bool) -> None:
        self._db = connect(self.path)  # kept on failure: closing may delete the -wal
        prepare(self._db, self.path, self.schema)
        if check and not intact(self._db):
            raise sqlite3.DatabaseError("database disk image is malformed")
        self._file = file_id(self.path)
        self._beat(time.time())

    def _replace_damaged(self, damage: str) -> None:
        with exclusive(self.path):
            if file_id(self.path) != self._file:  # another kernel replaced it meanwhile
                self._disconnect()
                self._connect(check=True)
                return
            target = aside_name(self.path)
            wal = Path(f"{self.path}-wal")
            if wal.exists():  # SQLite deletes it when the failed connection closes
                shutil.copyfile(wal, f"{target}-wal")
            self._disconnect()
            move_aside(self.path, target)
            self.moved_to, self.damage = target, damage
            self._connect(check=False)

    def _disconnect(self) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None

    @property
    def available(self) -> bool:
        """Whether the file is open."""
        return self._db is not None

    def replaced(self) -> bool:
        """Whether the file at ``path`` is no longer the one open (moved aside by another)."""
        return self._db is not None and file_id(self.path) != self._file

    # -- plumbing ---------------------------------------------------------------------------

    @contextmanager
    def _using(self) -> Iterator[sqlite3.Connection]:
        """The connection, with every failure turned into a ``JournalError``."""
        with self._lock:
            if self._db is None:
                problem = self.problem or JournalError(
                    f"the journal {self.path} is not open", "closed"
                )
                raise JournalError(str(problem), problem.kind, problem.detail)
            try:
                yield self._db
            except (sqlite3.Error, OSError) as error:
                raise journal_error(self.path, error) from None

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._using() as db:
            db.execute("begin immediate")
            try:
                yield db
            except BaseException:
                if db.in_transaction:
                    db.execute("rollback")
                raise
            db.execute("commit")

    def heartbeat(self, force: bool = False) -> None:
        """Tell other kernels this owner is alive (at most every ``HEARTBEAT_S``)."""
        if self._closed:  # unloading: the next kernel adopts what is left
            return
        now = time.time()
        if not force and now - self._last_beat < HEARTBEAT_S:
            return
        with self._using():
            self._beat(now)

    def _beat(self, now: float) -> None:
        assert self._db is not None
        self._db.execute(
            "insert or replace into owners(owner, host, pid, heartbeat) values (?, ?, ?, ?)",
            (self.owner, socket.gethostname(), os.getpid(), now),
        )
        self._last_beat = now
