"""The journal's SQLite file: one owner's rows, its spools' progress, its heartbeat.

SQLite in WAL mode (survives the process being killed), shared by a user's kernels. Rows are
``pending`` (its kernel holds it in memory too), ``spilled`` (on disk only: its kernel's memory
was full; loaded when there is room, oldest first), ``batched`` (part of a batch with a client
``operation_id``, so a re-send after a crash or a lost reply is the same operation to the
server) or ``failed`` (refused by the server; re-sendable). Row ids follow queue order. Each
kernel is an *owner*; a new kernel claims the rows and spools of owners that died inside one
``BEGIN IMMEDIATE`` transaction, so two kernels never take the same rows.

Every failure is a ``JournalError`` whose ``kind`` says why: ``corrupt`` (SQLite says the file
is not a database or its image is malformed — the only kind that moves the file aside),
``full`` (disk full), ``readonly`` (read-only file system or file), ``denied`` (permissions),
``cantopen`` (SQLite cannot open it and its folder does not say why), ``locked`` (another
process holds it too long; transient), ``closed`` (not open yet, or no more), ``replaced``
(another kernel moved a damaged file aside and made a new one) or ``error`` (anything else). A
damaged file is moved aside when (re)opened and a fresh one created; ``moved_to`` then names
the old file.

``JournalFile`` is the file alone (SQL, no policy); ``journal.py`` decides what to write when,
and carries on while the file cannot be written. ``journal_counts`` reads a journal without
opening it for writing (``%hindsight doctor``).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .._errors import Error
from .._machine import data_dir, pid_exists
from .._text import plural
from .items import MemoryItem
from .spool import decode, read_from, spool_path, spool_prefix

JOURNAL_FILE = "journal.sqlite3"
HEARTBEAT_S = 20.0
STALE_AFTER_S = 120.0
# An owner whose process still runs on this host is given longer: one pump against a hung
# server can take minutes (each request waits out its timeout), and its pid may be reused.
STALE_LIVE_PROCESS_S = 900.0
BUSY_TIMEOUT_S = 2.0
# The write-ahead log is copied into the file every this many pages (SQLite's default, 1 000
# pages, let it reach 4 MB; a session writes a few pages per batch, and what is written is
# soon deleted again), and cut back to this size when a large burst made it longer.
WAL_CHECKPOINT_PAGES = 100
WAL_KEEP_BYTES = 512 * 1024
CORRUPT_SUFFIX = ".corrupt-"

SCHEMA = """
create table if not exists items (
    id integer primary key autoincrement,
    owner text not null,
    bank text not null,
    tags text,
    body text not null,
    state text not null default 'pending',
    operation_id text,
    error text
);
create index if not exists items_owner_state on items(owner, state, id);
create table if not exists owners (
    owner text primary key,
    host text not null,
    pid integer not null,
    heartbeat real not null
);
create table if not exists spools (
    name text primary key,
    owner text not null,
    offset integer not null default 0
);
"""


def journal_path(setting: str, project: str | None = None) -> Path | None:
    """The journal file the ``journal_path`` setting names: ``''`` is ``journal.sqlite3`` in the
    data dir (of the project at folder ``project``, when it has its own), ``off`` is None
    (memories are kept in memory only), anything else a file path."""
    path = setting.strip()
    if path.lower() == "off":
        return None
    return Path(path).expanduser() if path else data_dir(project) / JOURNAL_FILE


# -- failures ----------------------------------------------------------------------------------

RowState = Literal["pending", "spilled", "batched", "failed"]  # a row's ``state`` column
JournalKind = Literal[
    "error", "corrupt", "full", "readonly", "denied", "cantopen", "locked", "closed", "replaced"
]  # why the file cannot be used (``REASONS`` words them)


_SQLITE_KINDS: dict[int, JournalKind] = {
    # SQLite's primary result codes (the sqlite3 module names them from Python 3.11 on; they
    # are fixed by SQLite's C API): CORRUPT, NOTADB, FULL, READONLY, PERM, CANTOPEN, BUSY
    11: "corrupt",
    26: "corrupt",
    13: "full",
    8: "readonly",
    3: "denied",
    14: "cantopen",
    5: "locked",
}
_SQLITE_TEXTS: tuple[tuple[str, JournalKind], ...] = (  # SQLite's words for each code above
    ("malformed", "corrupt"),
    ("not a database", "corrupt"),
    ("disk is full", "full"),
    ("readonly", "readonly"),
    ("read-only", "readonly"),
    ("access permission denied", "denied"),
    ("unable to open database file", "cantopen"),
    ("database is locked", "locked"),
)
_OS_KINDS: dict[int, JournalKind] = {
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


class JournalError(Error):
    """The journal file cannot be used right now; ``kind`` says why (see the module doc)."""

    def __init__(
        self, message: str, kind: JournalKind = "error", detail: str | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.detail = detail or message

    @property
    def reason(self) -> str:
        """A few words for the user: ``disk full``, ``read-only`` …"""
        return REASONS.get(self.kind, self.detail)


def kind_of(error: BaseException) -> JournalKind:
    """The kind of a ``sqlite3.Error`` or ``OSError``."""
    if isinstance(error, JournalError):
        return error.kind
    if isinstance(error, sqlite3.Error):
        code = getattr(error, "sqlite_errorcode", None)
        if code is not None:
            return _SQLITE_KINDS.get(code & 0xFF, "error")
        # no code: Python 3.10 (no sqlite_errorcode), or raised before SQLite gave one
        text = str(error).lower()
        return next((kind for words, kind in _SQLITE_TEXTS if words in text), "error")
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


def _folder_kind(folder: Path) -> JournalKind:
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return "readonly"
    except (OSError, AttributeError):  # no folder (yet), or no statvfs (Windows)
        return "error"
    return "error" if os.access(folder, os.W_OK) else "denied"


# -- the file on disk --------------------------------------------------------------------------


def connect(path: Path) -> sqlite3.Connection:
    """A connection to ``path`` (nothing read yet); raises sqlite3.Error/OSError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return sqlite3.connect(
        str(path), isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S
    )


def prepare(db: sqlite3.Connection, path: Path) -> None:
    """WAL mode and the schema in place, the file private; raises sqlite3.Error/OSError."""
    db.execute("pragma journal_mode=wal")
    db.execute("pragma synchronous=normal")
    db.execute(f"pragma wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")  # each connection's own
    db.execute(f"pragma journal_size_limit={WAL_KEEP_BYTES}")
    db.executescript(SCHEMA)
    os.chmod(path, 0o600)


def damage(db: sqlite3.Connection) -> str | None:
    """What SQLite finds wrong with the file (``quick_check``: reads every page once), in its
    words; None when it is sound."""
    try:
        found = db.execute("pragma quick_check(1)").fetchone()[0]
    except UnicodeDecodeError:  # the report quotes bytes of the damaged page
        return "database disk image is malformed"
    except sqlite3.DatabaseError as error:
        if kind_of(error) == "corrupt":
            return str(error)
        raise
    return None if found == "ok" else "database disk image is malformed"


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


def journal_counts(path: Path) -> dict[str, int]:
    """How many memories the journal at ``path`` holds in each state (all owners), read without
    opening it for writing; raises ``JournalError`` when it cannot be read."""
    try:
        with contextlib.closing(
            sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
        ) as db:
            rows = db.execute("select state, count(*) from items group by state").fetchall()
    except sqlite3.Error as error:
        raise journal_error(path, error) from None
    return {str(state): int(count) for state, count in rows}


# -- rows --------------------------------------------------------------------------------------

INSERT_INTO = "insert into items(owner, bank, tags, body, state, operation_id, error) values"
ROW = "(?, ?, ?, ?, ?, ?, ?)"
# One statement per many rows: the sqlite3 module releases the GIL around every step, and a
# worker that must win the GIL back after each one (the kernel thread busy with a cell) moved
# a batch's rows one every few milliseconds. SQLite before 3.32 allows 999 parameters.
ROWS_PER_INSERT = 128  # x 7 parameters
IDS_PER_STATEMENT = 900


def insert_rows(db: sqlite3.Connection, rows: Sequence[tuple[Any, ...]]) -> list[int]:
    """Insert rows (``HeldRow.values`` tuples) a chunk per statement; their new ids, in order.

    Inside one write transaction an ``autoincrement`` key gives a statement's rows consecutive
    ids ending at ``lastrowid``.
    """
    ids: list[int] = []
    for start in range(0, len(rows), ROWS_PER_INSERT):
        chunk = rows[start : start + ROWS_PER_INSERT]
        flat = [value for row in chunk for value in row]
        last = db.execute(f"{INSERT_INTO} {', '.join([ROW] * len(chunk))}", flat).lastrowid or 0
        ids.extend(range(last - len(chunk) + 1, last + 1))
    return ids


def by_ids(db: sqlite3.Connection, statement: str, ids: Iterable[int], *first: Any) -> None:
    """Run ``statement`` (ending in ``where id in``) for ``ids``, a chunk per statement;
    ``first`` are the parameters before the ids."""
    rows = list(ids)
    for start in range(0, len(rows), IDS_PER_STATEMENT):
        chunk = rows[start : start + IDS_PER_STATEMENT]
        db.execute(f"{statement} ({', '.join('?' * len(chunk))})", (*first, *chunk))


Spooled = tuple[str, "tuple[str, ...] | None", MemoryItem]  # (bank, tags, item), as ``decode``


@dataclass
class JournalRow:
    """One stored memory."""

    id: int
    bank_id: str
    tags: tuple[str, ...] | None
    item: MemoryItem
    state: RowState
    operation_id: str | None
    error: str | None


@dataclass(frozen=True)
class HeldRow:
    """One memory a kernel holds, as ``ingest`` and ``reconcile`` write it."""

    bank_id: str
    tags: tuple[str, ...] | None
    item: MemoryItem
    state: RowState = "pending"
    operation_id: str | None = None
    error: str | None = None

    def values(self, owner: str) -> tuple[Any, ...]:
        """The row's values for ``insert_rows``."""
        tags = json.dumps(self.tags) if self.tags else None
        body = body_of(self.item)
        return (owner, self.bank_id, tags, body, self.state, self.operation_id, self.error)


def body_of(item: MemoryItem) -> str:
    """The ``body`` column of an item."""
    return json.dumps(item.stored())


def item_from(body: str, row_id: int) -> MemoryItem:
    """The item a row stores."""
    return MemoryItem.from_stored(json.loads(body), journal_ids=(row_id,))


def row_from(found: tuple[Any, ...]) -> JournalRow:
    """A ``JournalRow`` from ``select id, bank, tags, body, state, operation_id, error``."""
    row_id, bank, tags, body, state, operation_id, error = found
    parsed = tuple(json.loads(tags)) if tags else None
    return JournalRow(row_id, bank, parsed, item_from(body, row_id), state, operation_id, error)


# -- dead owners -------------------------------------------------------------------------------


def dead_owners(db: sqlite3.Connection, me: str) -> list[str]:
    """Owners (other than ``me``) that will not come back for their rows.

    An owner is dead when its process is gone (same host), its heartbeat is stale (another
    host: ``STALE_AFTER_S``; this host, its process still running: ``STALE_LIVE_PROCESS_S``),
    or it has rows or spools but no heartbeat row.
    """
    host, now = socket.gethostname(), time.time()
    owners = db.execute("select owner, host, pid, heartbeat from owners").fetchall()
    known = {owner for owner, *_ in owners}
    dead = []
    for owner, owner_host, pid, beat in owners:
        if owner == me:
            continue
        if owner_host != host:
            gone = now - beat > STALE_AFTER_S
        else:
            gone = not pid_exists(pid) or now - beat > STALE_LIVE_PROCESS_S
        if gone:
            dead.append(owner)
    for table in ("items", "spools"):
        found = db.execute(f"select distinct owner from {table} where owner != ?", (me,))
        dead += [owner for (owner,) in found if owner not in known]
    return list(dict.fromkeys(dead))


@dataclass(frozen=True)
class Claimed:
    """What ``claim`` took from dead owners: memories, spool files to delete, and spool files
    with lines that could not be read (with how many), to keep aside rather than delete."""

    count: int
    leftovers: list[Path]
    damaged: dict[Path, int]


def claim(db: sqlite3.Connection, me: str, journal: Path, files: set[str]) -> Claimed:
    """Take the rows and spools of dead owners (inside a transaction).

    ``files`` are the spool files that existed before the transaction began: one the journal
    does not know was taken in already.
    """
    claimed, leftovers, damaged = 0, set(), {}
    for owner in dead_owners(db, me):
        cursor = db.execute(
            "update items set owner = ?, state = case state when 'pending' then 'spilled' "
            "else state end where owner = ?",
            (me, owner),
        )
        claimed += cursor.rowcount
        spools = db.execute("select name, offset from spools where owner = ?", (owner,))
        for name, offset in spools.fetchall():
            lines, _ = read_from(journal.with_name(name), offset, finished=True)
            found = [entry for entry in map(decode, lines) if entry is not None]
            insert_rows(
                db, [HeldRow(bank, tags, item, "spilled").values(me) for bank, tags, item in found]
            )
            claimed += len(found)
            if len(found) < len(lines):
                damaged[journal.with_name(name)] = len(lines) - len(found)
            else:
                leftovers.add(journal.with_name(name))
        db.execute("delete from spools where owner = ?", (owner,))
        db.execute("delete from owners where owner = ?", (owner,))
    registered = {name for (name,) in db.execute("select name from spools")}
    leftovers.update(journal.with_name(name) for name in files - registered)
    return Claimed(claimed, sorted(leftovers - damaged.keys()), damaged)


def spool_files(journal: Path) -> set[str]:
    """Names of the spool files next to ``journal`` now."""
    prefix = spool_prefix(journal)
    try:
        return {p.name for p in journal.parent.iterdir() if p.name.startswith(prefix)}
    except OSError:
        return set()


# -- one owner's open file ---------------------------------------------------------------------


class JournalFile:
    """The journal file as one owner (kernel) uses it; thread-safe within a process."""

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

    # -- opening ----------------------------------------------------------------------------

    def open(self, check: bool = False) -> None:
        """(Re)connect; a damaged file is moved aside and a fresh one used (``moved_to``).

        ``check`` reads every page first (a kernel's first open, and after a run-time
        corruption error): damage to the schema page would otherwise read as an empty journal,
        and the memories in it would be lost without a word. Raises
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
        found = damage(self._db) if check else None  # before prepare writes to the file
        if found is not None:
            raise sqlite3.DatabaseError(found)
        prepare(self._db, self.path)
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

    def close(self) -> None:
        """Release ownership (rows left behind are claimed by the next kernel) and close."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                if self._db is not None:
                    self._db.execute("delete from owners where owner = ?", (self.owner,))
            except sqlite3.Error:
                pass  # a stale heartbeat tells the next kernel the same
            finally:
                self._disconnect()

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

    # -- heartbeat --------------------------------------------------------------------------

    def heartbeat(self, force: bool = False) -> None:
        """Tell other kernels this owner is alive (at most every ``HEARTBEAT_S``)."""
        if self._closed:  # unloading: the next kernel adopts what is left
            return
        now = time.time()
        if not force and now - self._last_beat < HEARTBEAT_S:
            return
        with self._using():
            self._beat(now)

    def until_beat(self) -> float:
        """Seconds until ``heartbeat`` writes again (0: due now; never once closed)."""
        if self._closed:
            return float("inf")
        return max(0.0, self._last_beat + HEARTBEAT_S - time.time())

    def _beat(self, now: float) -> None:
        assert self._db is not None
        self._db.execute(
            "insert or replace into owners(owner, host, pid, heartbeat) values (?, ?, ?, ?)",
            (self.owner, socket.gethostname(), os.getpid(), now),
        )
        self._last_beat = now

    # -- writes -----------------------------------------------------------------------------

    def ingest(
        self, kept: Sequence[HeldRow], offsets: Mapping[str, int], retire: Iterable[str] = ()
    ) -> list[int]:
        """Store spooled memories and how far each spool (by name) is now taken, forgetting
        the spools in ``retire`` (taken entirely); the new row ids."""
        with self._transaction() as db:
            ids = insert_rows(db, [entry.values(self.owner) for entry in kept])
            db.executemany(
                "update spools set offset = ? where name = ? and owner = ?",
                [(end, name, self.owner) for name, end in offsets.items()],
            )
            db.executemany("delete from spools where name = ?", [(name,) for name in retire])
        return ids

    def register_spool(self, name: str) -> None:
        """Record a spool file of this owner (before it is created)."""
        with self._transaction() as db:
            db.execute(
                "insert or replace into spools(name, owner, offset) values (?, ?, 0)",
                (name, self.owner),
            )

    def retire_spools(self, names: Iterable[str]) -> None:
        """Forget spools taken in entirely (their files are deleted next)."""
        with self._transaction() as db:
            db.executemany("delete from spools where name = ?", [(name,) for name in names])

    def mark_batched(self, operation_id: str, ids: Iterable[int]) -> None:
        """Rows now travel in the batch ``operation_id``."""
        self._update("state = 'batched', operation_id = ?, error = null", operation_id, ids)

    def mark_failed(self, ids: Iterable[int], error: str) -> None:
        """The server refused these rows; keep them for ``%hindsight retry``."""
        self._update("state = 'failed', error = ?", error, ids)

    def _update(self, assignment: str, value: str, ids: Iterable[int]) -> None:
        if self._closed:  # unloading: the next kernel adopts what is left
            return
        with self._transaction() as db:
            by_ids(db, f"update items set {assignment} where id in", ids, value)

    def delete(self, ids: Iterable[int]) -> None:
        """Forget rows (the server accepted them, or the user dropped them)."""
        if self._closed:  # unloading: the next kernel adopts what is left
            return
        with self._transaction() as db:
            by_ids(db, "delete from items where id in", ids)

    def delete_spilled(self, document_ids: Iterable[str]) -> list[str]:
        """Forget this owner's spilled rows of these documents (the user cancelled them);
        the document id of each row deleted. A substring test finds the candidates, the
        row's JSON decides."""
        wanted = set(document_ids)
        if not wanted or self._closed:
            return []
        test = " or ".join("instr(body, ?) > 0" for _ in wanted)
        with self._transaction() as db:
            found = db.execute(
                f"select id, body from items where owner = ? and state = 'spilled' and ({test})",
                (self.owner, *(json.dumps(i)[1:-1] for i in wanted)),
            ).fetchall()
            doomed = {row: json.loads(body).get("document_id") for row, body in found}
            doomed = {row: doc for row, doc in doomed.items() if doc in wanted}
            by_ids(db, "delete from items where id in", doomed)
        return list(doomed.values())

    def reconcile(
        self, kept: Sequence[HeldRow], spilled: Sequence[HeldRow], spool: str
    ) -> tuple[list[int], list[str]]:
        """Make this owner's rows match what it holds, after a while without the journal.

        Its rows become ``kept`` (in order), then its spilled rows, then ``spilled`` (memories
        spooled while memory was full, not taken in yet); its spools are replaced by ``spool``.
        Returns the new row ids of ``kept`` and the names of the spool files to delete.
        """
        with self._transaction() as db:
            old = db.execute(
                "select bank, tags, body from items where owner = ? and state = 'spilled' "
                "order by id",
                (self.owner,),
            ).fetchall()
            db.execute("delete from items where owner = ?", (self.owner,))
            ids = insert_rows(db, [entry.values(self.owner) for entry in kept])
            insert_rows(db, [(self.owner, *row, "spilled", None, None) for row in old])
            insert_rows(db, [entry.values(self.owner) for entry in spilled])
            spools = db.execute("select name from spools where owner = ?", (self.owner,))
            names = [name for (name,) in spools.fetchall() if name != spool]
            db.execute("delete from spools where owner = ?", (self.owner,))
            db.execute("insert into spools(name, owner) values (?, ?)", (spool, self.owner))
            self._beat(time.time())
        return ids, names

    # -- reads ------------------------------------------------------------------------------

    def load_spilled(self, limit: int) -> list[JournalRow]:
        """Up to ``limit`` of this owner's spilled rows, oldest first, now ``pending``."""
        with self._transaction() as db:
            rows = self._select(db, "state = 'spilled'", limit)
            by_ids(db, "update items set state = 'pending' where id in", [r.id for r in rows])
        return rows

    def rows(self, state: RowState) -> list[JournalRow]:
        """All of this owner's rows in ``state``, oldest first."""
        with self._using() as db:
            return self._select(db, "state = ?", -1, state)

    def _select(
        self, db: sqlite3.Connection, where: str, limit: int, *args: Any
    ) -> list[JournalRow]:
        found = db.execute(
            "select id, bank, tags, body, state, operation_id, error from items "
            f"where owner = ? and {where} order by id limit ?",
            (self.owner, *args, limit),
        ).fetchall()
        return [row_from(row) for row in found]

    def queued_elsewhere(self, bank_id: str) -> list[Spooled]:
        """What other owners (kernels on this machine) hold for ``bank_id`` and have not sent:
        their ``pending`` and ``spilled`` rows, then the lines of their spools not taken in yet
        (a ``%retain`` of a second ago is only there), as (bank, tags, item).

        Read only: the owners keep their rows and send them as before. A reader that sends
        these first (an agent's recall) uses each memory's own document id, so the server keeps
        one copy whoever sends it, and when.
        """
        with self._transaction() as db:  # one snapshot: an ingest moves lines into rows
            rows = db.execute(
                "select id, bank, tags, body, state, operation_id, error from items "
                "where owner != ? and bank = ? and state in ('pending', 'spilled') order by id",
                (self.owner, bank_id),
            ).fetchall()
            spools = db.execute(
                "select name, offset from spools where owner != ?", (self.owner,)
            ).fetchall()
        found = [(row.bank_id, row.tags, row.item) for row in map(row_from, rows)]
        for name, offset in spools:
            lines, _ = read_from(self.path.with_name(name), offset)
            found += [e for e in map(decode, lines) if e is not None and e[0] == bank_id]
        return found

    def count(self, state: RowState) -> int:
        """How many of this owner's rows are in ``state``."""
        with self._using() as db:
            row = db.execute(
                "select count(*) from items where owner = ? and state = ?", (self.owner, state)
            ).fetchone()
        return int(row[0])

    # -- recovery ---------------------------------------------------------------------------

    def claim_orphans(self) -> tuple[int, list[str]]:
        """Take over the rows and spools of owners that died; returns the memory count and a
        line for each spool file with lines that could not be read.

        Their ``pending`` rows and spooled memories become ``spilled``: this kernel loads them
        when it has room. A spool with unreadable lines (its disk damaged it) is renamed
        ``….damaged-spool-…`` and kept, so what it still holds can be read by hand.
        """
        if self._closed:  # unloading: the next kernel adopts what is left
            return 0, []
        files = spool_files(self.path)  # listed before: see ``claim``
        with self._transaction() as db:
            claimed = claim(db, self.owner, self.path, files)
        for path in claimed.leftovers:
            with contextlib.suppress(OSError):
                os.unlink(path)
        lines = []
        for path, unreadable in claimed.damaged.items():
            kept = path.with_name(path.name.replace(".spool-", ".damaged-spool-", 1))
            try:
                os.replace(path, kept)
                where = f"kept in {kept}"
            except OSError as error:  # a later kernel removes it as a leftover
                where = f"{path} could not be kept aside ({error.strerror})"
            lines.append(
                "Some memories spooled by an earlier kernel could not be read "
                f"({plural(unreadable, 'damaged line', 'damaged lines')}); {where}."
            )
        return claimed.count, lines

    def spool_path(self, generation: int) -> Path:
        """Where this owner's spool ``generation`` lives."""
        return spool_path(self.path, self.owner, generation)
