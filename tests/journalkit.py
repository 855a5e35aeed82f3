"""Tools for the journal's tests: what is on disk, and a small disk to fill or make read-only.

``on_disk`` lists what a journal and its spools hold (what a next kernel would find).


As root where ``mount`` is allowed, it is a tmpfs of its own (``mount -t tmpfs -o size=…``):
SQLite and the OS raise their real errors (``database or disk is full``, ENOSPC, EROFS). Where
mounting is not allowed (no root, a locked-down container), the same calls make the journal's
connections and spool writes raise exactly those errors instead (SQLite's own messages, the OS's
errno), so every test runs and asserts the same things either way.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hindsight_magic._delivery import journal_file
from hindsight_magic._delivery.spool import Spool


def on_disk(journal: Path) -> list[tuple[str, str]]:
    """(state, content) of every memory in a journal, oldest first, then its spools' lines not
    taken into it yet (state ``spooled``): everything a next kernel would find."""
    with contextlib.closing(sqlite3.connect(journal, isolation_level=None)) as db:
        db.execute("begin")  # one snapshot: the worker may take spooled lines in meanwhile
        rows = db.execute("select state, body from items order by id").fetchall()
        taken = dict(db.execute("select name, offset from spools").fetchall())
        db.execute("commit")
    found = [(str(state), str(json.loads(body)["content"])) for state, body in rows]
    for spool in sorted(journal.parent.glob(f"{journal.name}.spool-*")):
        if spool.name in taken:  # a spool the journal does not know was taken in already
            data = spool.read_bytes()[taken[spool.name] :].split(b"\0", 1)[0]  # unused: NULs
            lines = data[: data.rfind(b"\n") + 1].splitlines()
            found += [("spooled", str(json.loads(line)["item"]["content"])) for line in lines]
    return found


SIZE = "2m"
MESSAGES = {
    "full": "database or disk is full",
    "readonly": "attempt to write a readonly database",
}
WRITES = ("insert", "update", "delete", "begin", "create", "replace")


class FaultyConnection:
    """A real SQLite connection whose writes fail while the disk says so."""

    def __init__(self, real: sqlite3.Connection, disk: SmallDisk) -> None:
        self._real = real
        self._disk = disk

    def _check(self, sql: str) -> None:
        fault = self._disk.fault
        if fault and sql.lstrip().lower().startswith(WRITES):
            raise sqlite3.OperationalError(MESSAGES[fault])

    def execute(self, sql: str, *args: Any) -> Any:
        self._check(sql)
        return self._real.execute(sql, *args)

    def executemany(self, sql: str, *args: Any) -> Any:
        self._check(sql)
        return self._real.executemany(sql, *args)

    def executescript(self, sql: str) -> Any:
        return self._real.executescript(sql)

    def close(self) -> None:
        self._real.close()

    @property
    def in_transaction(self) -> bool:
        return self._real.in_transaction


class SmallDisk:
    """A folder on a small file system of its own, or one whose journal writes fail on demand."""

    def __init__(self, root: Path, mounted: bool) -> None:
        self.root = root
        self.mounted = mounted
        self.fault: str | None = None  # injected only (not mounted)
        self._filler = root / "filler"

    @property
    def kind(self) -> str:
        return "tmpfs" if self.mounted else "injected"

    def fill(self) -> None:
        """No space left: a file takes every free block."""
        if not self.mounted:
            self.fault = "full"
            return
        fd = os.open(self._filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            for size in (65536, 4096, 1):  # big blocks, then what is left of the last ones
                with contextlib.suppress(OSError):
                    while os.write(fd, b"\0" * size):
                        pass
        finally:
            os.close(fd)
        assert os.statvfs(self.root).f_bavail == 0

    def free(self) -> None:
        """Space again."""
        if not self.mounted:
            self.fault = None
            return
        self._filler.unlink(missing_ok=True)

    def read_only(self) -> None:
        """Remount read-only (every write fails with EROFS)."""
        if not self.mounted:
            self.fault = "readonly"
            return
        subprocess.run(["mount", "-o", "remount,ro", str(self.root)], check=True)

    def writable(self) -> None:
        if not self.mounted:
            self.fault = None
            return
        subprocess.run(["mount", "-o", "remount,rw", str(self.root)], check=True)


def _mount(root: Path) -> bool:
    if os.name != "posix" or os.geteuid() != 0:
        return False
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE},mode=0700", "tmpfs", str(root)],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


@contextlib.contextmanager
def small_disk(root: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[SmallDisk]:
    """A small disk at ``root``: ``tmpfs`` (injected errors where mount is not allowed), or
    ``injected``. Use as a fixture parametrized over both kinds."""
    root.mkdir()
    mounted = kind == "tmpfs" and _mount(root)
    small = SmallDisk(root, mounted)
    if not mounted:
        real = journal_file.connect

        def faulty(path: Path) -> Any:
            return FaultyConnection(real(path), small)  # opening writes a heartbeat

        monkeypatch.setattr(journal_file, "connect", faulty)
        real_append = Spool.append

        def append(spool: Spool, line: bytes) -> int:
            if small.fault:  # what os.write says on a full or read-only file system
                code = errno.ENOSPC if small.fault == "full" else errno.EROFS
                raise OSError(code, os.strerror(code), str(spool.path))
            return real_append(spool, line)

        monkeypatch.setattr(Spool, "append", append)
    print(f"\n[disk] {small.kind}", flush=True)
    try:
        yield small
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(root)], check=False)
