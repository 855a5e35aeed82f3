"""A kernel's spool: the append-only file ``%retain`` writes each memory to before it returns.

One line copied into the file (``Spool.append``): a few microseconds, no lock shared with
another process, and once it returned the line is in the OS's page cache, so it survives the
kernel being SIGKILLed. The worker thread moves spooled memories into the shared SQLite
journal (``Journal.ingest``) and records how far each spool was taken, so the kernel thread
never waits for SQLite's locks or checkpoints. Spool files sit next to the journal
(``journal.sqlite3.spool-<owner>-<n>``), each registered in the journal *before* it is created:
a spool file the journal does not know is left over from one already taken in, and is removed.
A new kernel takes in the spools of owners that died (``JournalFile.claim_orphans``).

This module is the file format alone; ``journal.py`` decides when to write, take in and replace
a spool.
"""

from __future__ import annotations

import contextlib
import errno
import json
import mmap
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .items import MemoryItem, Route

CAPACITY = 1 << 20  # bytes reserved per spool file
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def spool_prefix(journal: Path) -> str:
    """The start of every spool file name of ``journal``."""
    return f"{journal.name}.spool-"


def spool_path(journal: Path, owner: str, generation: int) -> Path:
    """The spool file ``owner`` uses for ``generation``."""
    return journal.with_name(f"{spool_prefix(journal)}{_UNSAFE.sub('-', owner)}-{generation}")


def encode(route: Route, item: MemoryItem) -> bytes:
    """One line: the memory's route and its stored form."""
    record = {"bank": route.bank_id, "tags": list(route.tags or ()), "item": item.stored()}
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


def decode(line: bytes) -> tuple[str, tuple[str, ...] | None, MemoryItem] | None:
    """(bank, tags, item) of a spooled line; None for a line that cannot be read."""
    try:
        record = json.loads(line)
        item = MemoryItem.from_stored(record["item"])
        return str(record["bank"]), tuple(record["tags"]) or None, item
    except (ValueError, KeyError, TypeError):
        return None


def read_from(path: Path, offset: int, *, finished: bool = False) -> tuple[list[bytes], int]:
    """The complete lines of ``path`` after ``offset``, and the offset after the last one.

    A line without its newline was being written when its kernel died: its ``%retain`` never
    returned, so it is not taken. A file that is gone or shorter than ``offset`` has nothing.
    The reserved space not written yet is NUL bytes: while the writer lives, the first NUL ends
    what it wrote. Once it is ``finished`` (dead), everything up to the last byte that is not
    NUL counts, so a NUL that damage put amid the lines costs the one line it is in (which then
    cannot be read) rather than every line after it.
    """
    try:
        with open(path, "rb") as spool:
            spool.seek(offset)
            data = spool.read()
    except FileNotFoundError:
        return [], offset
    data = data.rstrip(b"\0") if finished else data.split(b"\0", 1)[0]
    complete = data.rfind(b"\n") + 1
    return [line for line in data[:complete].split(b"\n") if line], offset + complete


def _write_at(fd: int, data: bytes, offset: int) -> int:
    """``os.pwrite``; where there is none (Windows), a seek and a write (one writer per fd)."""
    if hasattr(os, "pwrite"):
        return os.pwrite(fd, data, offset)
    os.lseek(fd, offset, os.SEEK_SET)
    return os.write(fd, data)


@dataclass(eq=False)
class Spool:
    """An open spool file; ``append`` runs on the kernel thread (under the queue's lock).

    Where the OS can reserve the file's blocks up front (``posix_fallocate``: Linux), the file is
    mapped and a line is copied into the mapping: no system call, so the kernel thread keeps
    Python's GIL (an ``os.write`` hands it to the worker thread, which may keep it for
    milliseconds), and no SIGBUS on a full disk since the blocks are already there. Elsewhere,
    and past the reserved size, each line is one ``os.pwrite``. Unused space reads as NUL bytes,
    which a JSON line never contains.
    """

    path: Path
    fd: int
    size: int = 0
    capacity: int = 0
    view: mmap.mmap | None = None

    @classmethod
    def create(cls, path: Path, capacity: int = CAPACITY) -> Spool:
        """Create ``path`` (it must not exist) for appending; raises OSError."""
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL
        flags |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)  # Windows: no CRLF
        spool = cls(path, os.open(path, flags, 0o600))
        reserve = getattr(os, "posix_fallocate", None)
        if reserve is not None:
            try:
                reserve(spool.fd, 0, capacity)
                spool.view = mmap.mmap(spool.fd, capacity)
                spool.capacity = capacity
            except (OSError, ValueError):  # no room to reserve, or a file system without it
                with contextlib.suppress(OSError):
                    os.ftruncate(spool.fd, 0)
        return spool

    def touch(self) -> None:
        """Write the page the next line goes to once: a NUL over the NUL already there (unused
        space reads as NUL), so nothing changes but that the file system's work on the first
        write into a fresh file (a fraction of a millisecond, at times several) is not the next
        ``append``'s. For the worker, under the queue's lock."""
        if self.view is not None and self.size < self.capacity:
            self.view[self.size] = 0

    def append(self, line: bytes) -> int:
        """Write ``line``; the spool's size after it. Raises OSError (disk full, read-only)."""
        end = self.size + len(line)
        if self.view is not None and end <= self.capacity:
            self.view[self.size : end] = line
        else:
            written = _write_at(self.fd, line, self.size)
            if written != len(line):  # the disk filled up mid-line: take the piece back
                with contextlib.suppress(OSError):
                    os.ftruncate(self.fd, max(self.size, self.capacity))
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
        self.size = end
        return end

    def close(self, remove: bool = False) -> None:
        """Close the file (and delete it: everything in it is in the journal)."""
        if self.view is not None:
            with contextlib.suppress(ValueError, OSError):
                self.view.close()
            self.view = None
        with contextlib.suppress(OSError):
            os.close(self.fd)
        if remove:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
