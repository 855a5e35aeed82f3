"""An owner's open journal file: (re)opening it, a damaged one moved aside, failures as
``JournalError``, transactions, and the owner's heartbeat. ``Journal`` adds the rows."""

from __future__ import annotations

import contextlib
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

from . import sqlite_file
from .sqlite_file import (
    JournalError,
    aside_name,
    exclusive,
    file_id,
    intact,
    journal_error,
    kind_of,
    move_aside,
    prepare,
)

HEARTBEAT_S = 20.0


class JournalFile:
    """The open journal file of one owner (thread-safe within a process)."""

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
        self._db = sqlite_file.connect(self.path)  # kept on failure: closing may delete the -wal
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
