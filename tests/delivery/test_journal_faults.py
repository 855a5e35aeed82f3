"""A journal that cannot be written (disk full, read-only): nothing lost, nothing sent twice.

The memories are kept in memory (delivery goes on), the user is told once, and the journal is
used again by itself once it can be written — told once too. The ``disk`` fixture is a
real tmpfs where mounting is allowed, else injected SQLite errors (``conftest.py``).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faultkit import ServerReader, exactly_once
from helpers import BatchRecorder, FakeClock, RunningServer, delivery, item, wait_for
from journalkit import SmallDisk, on_disk, small_disk

from hindsight_magic._delivery import journal as journal_module
from hindsight_magic._delivery.items import Route
from hindsight_magic._delivery.journal import open_journal
from hindsight_magic._delivery.journal_file import JournalFile
from hindsight_magic._errors import HindsightError

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


def test_a_read_only_journal_keeps_memories_in_memory_then_comes_back(disk: SmallDisk) -> None:
    path = disk.root / "journal.sqlite3"
    JournalFile(path).close()
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
    queue, worker = delivery(sender, journal, on_notice=lines.append, clock=clock)
    assert queue.recover() == 0
    for n in range(3):
        queue.enqueue(A, item(f"while read-only {n}"))
    assert queue.stats().journal_problem == "read-only"
    sender.failures = [DOWN] * 3  # the server is away too, until the end
    queue.request_flush()
    worker.pump()  # tried once; waits to retry
    clock.advance(journal_module.RETRY_S + 0.1)
    worker.pump()  # still read-only: tried again, quietly
    assert len(lines) == 1

    disk.writable()
    clock.advance(journal_module.RETRY_S + 0.1)
    worker.pump()
    assert lines[1:] == [f"The journal {path} can be written again: 3 queued memories are on disk."]
    assert queue.stats().journal_problem is None
    [first, *_] = sender.batches
    with sqlite3.connect(path) as db:  # the batch keeps its operation id: a re-send is no double
        assert db.execute("select distinct state, operation_id from items").fetchall() == [
            ("batched", first.operation_id)
        ]
    queue.request_flush()
    worker.pump()
    assert [b.operation_id for b in sender.batches] == [first.operation_id] * 4
    assert sender.texts()[-3:] == [f"while read-only {n}" for n in range(3)]
    assert on_disk(path) == []
    assert len(lines) == 2


def test_a_full_disk_mid_session_keeps_memories_delivers_each_once_and_comes_back(
    disk: SmallDisk,
) -> None:
    path = disk.root / "journal.sqlite3"
    journal, line = open_journal(str(path))
    assert line is None
    clock, sender, lines = FakeClock(), BatchRecorder(), []
    queue, worker = delivery(  # batches only when flushed
        sender, journal, on_notice=lines.append, clock=clock, window_s=60
    )
    texts = [f"memory {n}" for n in range(25)]
    for text in texts[:5]:
        queue.enqueue(A, item(text))
    assert on_disk(path) == [("spooled", text) for text in texts[:5]]

    disk.fill()
    for text in texts[5:20]:
        queue.enqueue(A, item(text))  # no error (in the spool's last block, or in memory)
    assert queue.stats().pending == 20
    queue.request_flush()
    worker.pump()  # delivery goes on while the disk is full
    assert sender.texts() == texts[:20]
    assert queue.stats().journal_problem == "disk full"
    assert lines == [
        f"The journal {path} cannot be written (disk full): queued memories are kept in memory "
        "only until it can; retrying by itself."
    ]
    for text in texts[20:]:
        queue.enqueue(A, item(text))
    clock.advance(journal_module.RETRY_S + 0.1)
    worker.pump()  # still full
    assert len(lines) == 1

    disk.free()
    clock.advance(journal_module.RETRY_S + 0.1)
    worker.pump()
    assert lines[1:] == [f"The journal {path} can be written again: 5 queued memories are on disk."]
    # the rows of what was delivered meanwhile are gone; what memory held is on disk
    assert on_disk(path) == [("pending", text) for text in texts[20:]]
    queue.request_flush()
    worker.pump()
    assert sender.texts() == texts  # each exactly once, in order
    assert on_disk(path) == []
    assert len(lines) == 2


@pytest.mark.integration
def test_a_full_disk_in_a_notebook_is_said_once_and_each_memory_reaches_the_server_once(
    notebook: Any,
    disk: SmallDisk,
    hindsight_server: RunningServer,
    bank_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(journal_module, "RETRY_S", 0.5)
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
    stats = notebook.magics.session.queue_stats  # its worker finds the disk full (or the kernel)
    wait_for(lambda: stats().journal_problem, 10, "the journal found full")
    assert "journal memory only (disk full) — retrying" in one_spaced(run("%hindsight status"))
    run("%hindsight flush")  # delivered while the disk is full
    for text in texts[8:]:
        run(f"%retain {text}")

    disk.free()
    wait_for(lambda: stats().journal_problem is None, 10, "the journal written again")
    assert f"journal {path}\n" in one_spaced(run("%hindsight status"))
    assert [state for state, _ in on_disk(path)] == ["pending"] * 4  # what memory held
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
    assert on_disk(path) == []


def one_spaced(text: str) -> str:
    """Status text with runs of spaces as one (its columns are padded)."""
    return re.sub(r"[ \t]+", " ", text)
