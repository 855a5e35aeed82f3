"""A damaged journal: moved aside (``journal.sqlite3.corrupt-<UTC time>``), a fresh one used.

One line says so and where the old file is; durability stays on; nothing held in memory is
lost. Only damage moves a file: a journal that cannot be opened for another reason is not.
"""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path
from typing import Any

from helpers import BatchRecorder, FakeClock, delivery, item
from journalkit import on_disk

from hindsight_magic._delivery.items import Route
from hindsight_magic._delivery.journal import open_journal
from hindsight_magic._delivery.journal_file import JournalFile
from hindsight_magic._delivery.queue import RetainQueue

A = Route("bank-a")
STAMP = r"\d{8}T\d{6}Z"


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
    queue, worker = delivery(sender, journal, on_notice=lines.append)
    queue.enqueue(A, item("after the damage"))
    assert on_disk(path) == [("spooled", "after the damage")]  # durability stays on
    queue.request_flush()
    worker.pump()
    assert sender.texts() == ["after the damage"]
    assert on_disk(path) == []
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
    dead = JournalFile(path)
    queue = RetainQueue(dead)
    for n in range(300):
        queue.enqueue(A, item(f"memory {n} of a kernel that died " + "x" * 80))
    dead.close()  # the last connection: everything is in the main file now
    damage_pages(path)
    before = path.read_bytes()

    journal, line = open_journal(str(path))
    moved = moved_aside(line, path, "database disk image is malformed")
    assert moved.read_bytes() == before
    clock, sender, lines = FakeClock(), BatchRecorder(), [line]
    fresh, fresh_worker = delivery(sender, journal, on_notice=lines.append, clock=clock)
    assert fresh.recover() == 0  # what the damaged file held stays in it
    fresh.enqueue(A, item("kept in the fresh journal"))
    assert on_disk(path) == [("spooled", "kept in the fresh journal")]
    clock.advance(10)
    fresh_worker.pump()
    assert len(lines) == 1  # one line says what happened and where the old file is
    assert sender.texts() == ["kept in the fresh journal"]


def test_damage_found_while_running_moves_the_file_aside_and_keeps_every_memory(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.sqlite3"
    journal = JournalFile(path)
    clock, sender, lines = FakeClock(), BatchRecorder(), []
    queue, worker = delivery(  # sends only when flushed
        sender, journal, on_notice=lines.append, clock=clock, batch_size=1000, window_s=60
    )
    texts = [f"memory {n} " + "x" * 80 for n in range(301)]
    for text in texts[:-1]:
        queue.enqueue(A, item(text))
    with sqlite3.connect(path) as other:  # everything into the main file, then damage it
        other.execute("pragma wal_checkpoint(truncate)")
    damage_pages(path)
    queue.enqueue(A, item(texts[-1]))
    worker.pump()  # the next write finds the damage
    clock.advance(1)
    worker.pump()
    [line] = lines
    moved = moved_aside(line, path, "database disk image is malformed")
    assert moved.exists()
    assert on_disk(path) == [("pending", text) for text in texts]  # rewritten from memory
    queue.request_flush()
    worker.pump()
    assert sender.texts() == texts
    assert on_disk(path) == []


def test_a_file_moved_aside_by_another_kernel_gets_this_kernels_memories_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.sqlite3"
    clock, sender, lines = FakeClock(), BatchRecorder(), []
    queue, worker = delivery(sender, JournalFile(path), on_notice=lines.append, clock=clock)
    for n in range(3):
        queue.enqueue(A, item(f"held {n}"))
    for suffix in ("", "-wal", "-shm"):  # what the other kernel's move does
        if Path(f"{path}{suffix}").exists():
            os.replace(f"{path}{suffix}", tmp_path / f"aside{suffix}")
    JournalFile(path)  # ... and the fresh file it creates
    worker.pump()  # the window is still open: nothing sent, but the worker notices
    clock.advance(1)
    worker.pump()
    assert on_disk(path) == [("pending", f"held {n}") for n in range(3)]
    assert lines == []  # nothing the user needs to know
    queue.request_flush()
    worker.pump()
    assert sender.texts() == [f"held {n}" for n in range(3)]
    assert on_disk(path) == []


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


def test_a_notebook_on_a_damaged_journal_is_told_once_and_keeps_durability(
    notebook: Any, dead_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "journal.sqlite3"  # the notebook fixture's journal
    path.write_bytes(b"not a database at all " * 100)
    notebook.load(api_url=dead_url, bank_id="damaged", auto_retain="false", mental_models="false")
    first = notebook.run("%retain The export job writes UTC timestamps.")
    assert first.error is None, first.text
    [line] = [line for line in first.text.splitlines() if "was damaged" in line]
    moved = moved_aside(line, path, "file is not a database")
    assert moved.read_bytes() == b"not a database at all " * 100
    later = notebook.run("%retain The churn table double-counts refunds.")
    status = notebook.run("%hindsight status")
    assert "was damaged" not in later.text + status.text  # said once
    assert str(path) in status.text
    assert "memory only" not in status.text
    assert [text for _, text in on_disk(path)] == [
        "The export job writes UTC timestamps.",
        "The churn table double-counts refunds.",
    ]
