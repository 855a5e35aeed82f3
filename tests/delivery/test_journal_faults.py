"""The journal damaged, full or read-only: nothing lost, nothing sent twice, one line each way.

A damaged file is moved aside (``journal.sqlite3.corrupt-<UTC time>``) and a fresh one used;
a journal that cannot be written keeps the memories in memory (delivery goes on), says so
once, and goes back to the journal by itself once it can be written. The ``disk`` fixture is a
real tmpfs where mounting is allowed, else injected SQLite errors (``conftest.py``).
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faultkit import ServerReader, exactly_once
from helpers import BatchRecorder, FakeClock, RunningServer, item, wait_for
from smalldisk import SmallDisk, small_disk

from hindsight_magic.api.client import HindsightError
from hindsight_magic.delivery import keeping
from hindsight_magic.delivery.batches import Route
from hindsight_magic.delivery.journal import Journal
from hindsight_magic.delivery.opening import open_journal
from hindsight_magic.delivery.queue import RetainQueue

A = Route("bank-a")
DOWN = HindsightError("retainBatch", "retainBatch request failed: refused", kind="connect")
STAMP = r"\d{8}T\d{6}Z"


@pytest.fixture(params=["tmpfs", "injected"])
def disk(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[SmallDisk]:
    """A small disk: a tmpfs of its own (injected errors where mount is not allowed), and the
    injected errors alone, so both ways are asserted wherever both are possible."""
    with small_disk(tmp_path / "small-disk", request.param, monkeypatch) as small:
        yield small


def rows_in(path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(path) as db:
        found = db.execute("select state, body from items order by id").fetchall()
    return [(state, body.split('"content": "')[1].split('"')[0]) for state, body in found]


def moved_aside(line: str | None, path: Path, damage: str) -> Path:
    """The file the one line names, checked to be ``<name>.corrupt-<UTC time>``."""
    assert line is not None
    found = re.fullmatch(
        rf"The journal {re.escape(str(path))} was damaged \({damage}\): moved aside to (\S+); "
        r"a fresh journal is in use\.",
        line,
    )
    assert found, line
    moved = Path(found.group(1))
    assert moved.parent == path.parent
    assert re.fullmatch(rf"journal\.sqlite3\.corrupt-{STAMP}", moved.name), moved.name
    return moved


def test_a_file_that_is_not_a_database_is_moved_aside_and_a_fresh_journal_used(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.sqlite3"
    damaged = b"this is not a database " * 200
    path.write_bytes(damaged)
    Path(f"{path}-wal").write_bytes(b"stale wal" * 50)
    journal, line = open_journal(str(path))
    moved = moved_aside(line, path, "file is not a database")
    assert moved.read_bytes() == damaged  # the old file is kept, as it was
    assert Path(f"{moved}-wal").read_bytes() == b"stale wal" * 50

    assert journal is not None
    sender, lines = BatchRecorder(), []
    queue = RetainQueue(sender, journal=journal, on_notice=lines.append)
    queue.enqueue(A, item("after the damage"))
    assert rows_in(path) == [("pending", "after the damage")]  # durability stays on
    queue.request_flush()
    queue.pump()
    assert sender.texts() == ["after the damage"]
    assert rows_in(path) == []
    assert lines == []
    assert queue.stats().journal_problem is None


def damage_pages(path: Path) -> None:
    """Overwrite the header of every b-tree page after the first (SQLite: malformed)."""
    data = bytearray(path.read_bytes())
    for start in range(4096, len(data), 4096):
        data[start : start + 12] = b"\xff" * 12
    path.write_bytes(bytes(data))


def test_a_malformed_journal_left_by_a_dead_kernel_is_moved_aside_with_one_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.sqlite3"
    dead = Journal(path)
    queue = RetainQueue(BatchRecorder(), journal=dead)
    for n in range(300):
        queue.enqueue(A, item(f"memory {n} of a kernel that died " + "x" * 80))
    dead.close()  # the last connection: everything is in the main file now
    damage_pages(path)
    before = path.read_bytes()

    journal, line = open_journal(str(path))
    moved = moved_aside(line, path, "database disk image is malformed")
    assert moved.read_bytes() == before
    clock, sender, lines = FakeClock(), BatchRecorder(), [line]
    fresh = RetainQueue(sender, journal=journal, on_notice=lines.append, clock=clock)
    assert fresh.recover() == 0  # what the damaged file held stays in it
    fresh.enqueue(A, item("kept in the fresh journal"))
    assert rows_in(path) == [("pending", "kept in the fresh journal")]
    clock.advance(10)
    fresh.pump()
    assert len(lines) == 1  # one line says what happened and where the old file is
    assert sender.texts() == ["kept in the fresh journal"]


def test_damage_found_while_running_moves_the_file_aside_and_keeps_every_memory(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.sqlite3"
    journal = Journal(path)
    clock, sender, lines = FakeClock(), BatchRecorder(), []
    queue = RetainQueue(  # sends only when flushed
        sender, journal=journal, on_notice=lines.append, clock=clock, batch_size=1000, window_s=60
    )
    texts = [f"memory {n} " + "x" * 80 for n in range(301)]
    for text in texts[:-1]:
        queue.enqueue(A, item(text))
    with sqlite3.connect(path) as other:  # everything into the main file, then damage it
        other.execute("pragma wal_checkpoint(truncate)")
    journal._db.execute("pragma cache_size=1")  # type: ignore[union-attr]  # read from disk
    damage_pages(path)
    queue.enqueue(A, item(texts[-1]))
    queue.pump()  # the next write finds the damage
    clock.advance(1)
    queue.pump()
    [line] = lines
    moved = moved_aside(line, path, "database disk image is malformed")
    assert moved.exists()
    assert rows_in(path) == [("pending", text) for text in texts]  # rewritten from memory
    queue.request_flush()
    queue.pump()
    assert sender.texts() == texts
    assert rows_in(path) == []


def test_a_file_moved_aside_by_another_kernel_gets_this_kernels_memories_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.sqlite3"
    clock, sender, lines = FakeClock(), BatchRecorder(), []
    queue = RetainQueue(sender, journal=Journal(path), on_notice=lines.append, clock=clock)
    for n in range(3):
        queue.enqueue(A, item(f"held {n}"))
    for suffix in ("", "-wal", "-shm"):  # what the other kernel's move does
        if Path(f"{path}{suffix}").exists():
            os.replace(f"{path}{suffix}", tmp_path / f"aside{suffix}")
    Journal(path)  # ... and the fresh file it creates
    queue.pump()  # the window is still open: nothing sent, but the worker notices
    clock.advance(1)
    queue.pump()
    assert rows_in(path) == [("pending", f"held {n}") for n in range(3)]
    assert lines == []  # nothing the user needs to know
    queue.request_flush()
    queue.pump()
    assert sender.texts() == [f"held {n}" for n in range(3)]
    assert rows_in(path) == []


def test_a_read_only_journal_keeps_memories_in_memory_then_comes_back(disk: SmallDisk) -> None:
    path = disk.root / "journal.sqlite3"
    Journal(path).close()
    before = path.read_bytes()
    disk.read_only()
    journal, line = open_journal(str(path))
    assert line == (
        f"The journal {path} cannot be written (read-only): queued memories are kept in "
        "memory only, and go back to the journal by themselves once it can be written."
    )
    assert journal is not None
    assert not journal.available
    assert path.read_bytes() == before  # not damage: nothing moved aside
    assert sorted(p.name for p in disk.root.iterdir() if "corrupt" in p.name) == []

    clock, sender, lines = FakeClock(), BatchRecorder(), [line]
    queue = RetainQueue(sender, journal=journal, on_notice=lines.append, clock=clock)
    assert queue.recover() == 0
    for n in range(3):
        queue.enqueue(A, item(f"while read-only {n}"))
    assert queue.stats().journal_problem == "read-only"
    sender.failures = [DOWN] * 3  # the server is away too, until the end
    queue.request_flush()
    queue.pump()  # tried once; waits to retry
    clock.advance(keeping.RETRY_S + 0.1)
    queue.pump()  # still read-only: tried again, quietly
    assert len(lines) == 1

    disk.writable()
    clock.advance(keeping.RETRY_S + 0.1)
    queue.pump()
    assert lines[1:] == [f"The journal {path} can be written again: 3 queued memories are on disk."]
    assert queue.stats().journal_problem is None
    [first, *_] = sender.batches
    with sqlite3.connect(path) as db:  # the batch keeps its operation id: a re-send is no double
        assert db.execute("select distinct state, operation_id from items").fetchall() == [
            ("batched", first.operation_id)
        ]
    queue.request_flush()
    queue.pump()
    assert [b.operation_id for b in sender.batches] == [first.operation_id] * 4
    assert sender.texts()[-3:] == [f"while read-only {n}" for n in range(3)]
    assert rows_in(path) == []
    assert len(lines) == 2


def test_a_full_disk_mid_session_keeps_memories_delivers_each_once_and_comes_back(
    disk: SmallDisk,
) -> None:
    path = disk.root / "journal.sqlite3"
    journal, line = open_journal(str(path))
    assert line is None
    clock, sender, lines = FakeClock(), BatchRecorder(), []
    queue = RetainQueue(  # batches only when flushed
        sender, journal=journal, on_notice=lines.append, clock=clock, window_s=60
    )
    texts = [f"memory {n}" for n in range(25)]
    for text in texts[:5]:
        queue.enqueue(A, item(text))
    assert [state for state, _ in rows_in(path)] == ["pending"] * 5

    disk.fill()
    for text in texts[5:20]:
        queue.enqueue(A, item(text))  # no error: kept in memory
    assert queue.stats().pending == 20
    assert queue.stats().journal_problem == "disk full"
    assert lines == [
        f"The journal {path} cannot be written (disk full): queued memories are kept in memory "
        "only until it can; retrying by itself."
    ]
    queue.request_flush()
    queue.pump()  # delivery goes on while the disk is full
    assert sender.texts() == texts[:20]
    for text in texts[20:]:
        queue.enqueue(A, item(text))
    clock.advance(keeping.RETRY_S + 0.1)
    queue.pump()  # still full
    assert len(lines) == 1

    disk.free()
    clock.advance(keeping.RETRY_S + 0.1)
    queue.pump()
    assert lines[1:] == [f"The journal {path} can be written again: 5 queued memories are on disk."]
    # the rows of what was delivered meanwhile are gone; what memory held is on disk
    assert rows_in(path) == [("pending", text) for text in texts[20:]]
    queue.request_flush()
    queue.pump()
    assert sender.texts() == texts  # each exactly once, in order
    assert rows_in(path) == []
    assert len(lines) == 2


def test_only_damage_moves_a_journal_aside(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    journal, line = open_journal(str(blocker / "journal.sqlite3"))
    assert journal is not None
    assert not journal.available
    assert line is not None
    assert "kept in memory only" in line
    assert blocker.read_text() == "not a folder"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


@pytest.mark.integration
def test_a_full_disk_in_a_notebook_is_said_once_and_each_memory_reaches_the_server_once(
    notebook: Any,
    disk: SmallDisk,
    hindsight_server: RunningServer,
    bank_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(keeping, "RETRY_S", 0.5)
    path = disk.root / "journal.sqlite3"
    notebook.load(
        api_url=hindsight_server.url,
        bank_id=bank_id,
        journal_path=str(path),
        auto_retain="false",
        mental_models="false",
        scoping="global",
    )
    marker = f"disk-{bank_id}"
    texts = [f"Memory {n} of {marker}: the nightly job wrote {n * 7} rows." for n in range(12)]
    shown: list[str] = []

    def run(source: str) -> str:
        cell = notebook.run(source)
        assert cell.error is None, cell.text
        shown.append(cell.text)
        return cell.text

    for text in texts[:4]:
        assert "1 memory queued." in run(f"%retain {text}")
    disk.fill()
    for text in texts[4:8]:
        run(f"%retain {text}")
    assert "journal memory only (disk full) — retrying" in one_spaced(run("%hindsight status"))
    run("%hindsight flush")  # delivered while the disk is full
    for text in texts[8:]:
        run(f"%retain {text}")

    disk.free()
    queue = notebook.magics.session.queue
    wait_for(lambda: queue.stats().journal_problem is None, 10, "the journal written again")
    assert f"journal {path}\n" in one_spaced(run("%hindsight status"))
    assert [state for state, _ in rows_in(path)] == ["pending"] * 4  # what memory held
    run("%hindsight flush")
    everything = "\n".join(shown)
    assert everything.count("cannot be written (disk full)") == 1, everything
    assert everything.count("can be written again: 4 queued memories are on disk.") == 1

    reader = ServerReader(hindsight_server.url, bank_id)
    try:
        accepted = exactly_once(reader.accepted_contents(), set(texts), marker)
    finally:
        reader.close()
    assert accepted == (0, 0, 0), "{} missing, {} doubled, {} unexpected".format(*accepted)
    assert rows_in(path) == []


def one_spaced(text: str) -> str:
    """Status text with runs of spaces as one (its columns are padded)."""
    return re.sub(r"[ \t]+", " ", text)
