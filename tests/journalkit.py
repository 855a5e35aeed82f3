"""A small disk for the journal's fault tests: it can be filled, made read-only, and freed.

As root where ``mount`` is allowed, it is a tmpfs of its own (``mount -t tmpfs -o size=…``):
SQLite and the OS raise their real errors (``database or disk is full``, ENOSPC, EROFS). Where
mounting is not allowed (no root, a locked-down container), the same calls make the journal's
connections raise exactly those errors instead (SQLite's own messages), so every test runs and
asserts the same things either way.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hindsight_magic.delivery import sqlite_file

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
        real = sqlite_file.connect

        def faulty(path: Path) -> Any:
            return FaultyConnection(real(path), small)  # opening writes a heartbeat

        monkeypatch.setattr(sqlite_file, "connect", faulty)
    print(f"\n[disk] {small.kind}", flush=True)
    try:
        yield small
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(root)], check=False)
