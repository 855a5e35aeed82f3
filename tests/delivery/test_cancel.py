"""Cancelling queued memories by their retain ids: out of the queue, the journal and the spool,
so they are never sent — also by the kernel that recovers a killed one's journal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import BatchRecorder, delivery, item
from journalkit import on_disk

from hindsight_magic._delivery.items import Route
from hindsight_magic._delivery.journal_file import JournalFile
from hindsight_magic._errors import HindsightError

A = Route("bank-a", ("project:a",))
DOWN = HindsightError("retainBatch", "retainBatch request failed: refused", kind="connect")


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "journal.sqlite3"


def doc(n: int) -> str:
    return f"hm-{'0' * 32}-{n}"


def test_a_pending_memory_is_cancelled_in_memory_and_on_disk(path: Path) -> None:
    sender = BatchRecorder()
    queue, worker = delivery(sender, JournalFile(path))
    for n in range(3):
        queue.enqueue(A, item(f"fact {n}", document_id=doc(n)))
    assert len(on_disk(path)) == 3  # spooled
    outcome = queue.cancel([doc(1)])
    assert outcome.cancelled == (doc(1),)
    assert outcome.in_flight == ()
    assert [text for _, text in on_disk(path)] == ["fact 0", "fact 2"]  # gone at once
    queue.request_flush()
    worker.pump()
    assert sender.texts() == ["fact 0", "fact 2"]
    assert [r.state for r in queue.feed.items() if r.document_id == doc(1)] == ["cancelled"]


def test_an_unknown_id_cancels_nothing(path: Path) -> None:
    queue, _ = delivery(BatchRecorder(), JournalFile(path))
    queue.enqueue(A, item("kept", document_id=doc(1)))
    assert queue.cancel([doc(9)]) == ((), ())
    assert [text for _, text in on_disk(path)] == ["kept"]


def test_a_batch_never_tried_loses_the_memory_and_one_tried_reports_it_in_flight(
    path: Path,
) -> None:
    sender = BatchRecorder()
    queue, worker = delivery(sender, JournalFile(path))
    queue.enqueue(A, item("first", document_id=doc(1)))
    queue.enqueue(A, item("second", document_id=doc(2)))
    sender.failures = [DOWN]  # the batch goes out once and fails: it may be on the server
    queue.request_flush()
    worker.pump()
    queue.enqueue(A, item("third", document_id=doc(3)))
    outcome = queue.cancel([doc(2), doc(3)])
    assert outcome.cancelled == (doc(3),)
    assert outcome.in_flight == (("bank-a", doc(2)),)  # deleted on the server once it is there
    assert "third" not in [text for _, text in on_disk(path)]


def test_failed_memories_are_cancelled_too(path: Path) -> None:
    refused = HindsightError("retainBatch", "retainBatch failed: bad", 400, {}, "http")
    sender = BatchRecorder()
    queue, worker = delivery(sender, JournalFile(path))
    queue.enqueue(A, item("refused", document_id=doc(1)))
    sender.failures = [refused]
    queue.request_flush()
    worker.pump()
    assert queue.stats().failed == 1
    assert queue.cancel([doc(1)]).cancelled == (doc(1),)
    assert queue.stats().failed == 0
    worker.pump()
    assert on_disk(path) == []


def test_memories_waiting_on_disk_only_are_cancelled_there(path: Path) -> None:
    sender = BatchRecorder()
    queue, worker = delivery(sender, JournalFile(path), memory_cap=2)
    for n in range(6):
        queue.enqueue(A, item(f"fact {n}", document_id=doc(n)))
    worker.pump()  # the spool into the journal: four rows spilled (memory holds two)
    assert queue.cancel([doc(4), doc(0)]).cancelled == (doc(0), doc(4))
    assert queue.stats().pending == 4
    for _ in range(5):
        queue.request_flush()
        worker.pump()
    assert sorted(sender.texts()) == ["fact 1", "fact 2", "fact 3", "fact 5"]


def test_without_a_journal_cancel_works_in_memory() -> None:
    sender = BatchRecorder()
    queue, worker = delivery(sender)
    queue.enqueue(A, item("a", document_id=doc(1)))
    queue.enqueue(A, item("b", document_id=doc(2)))
    assert queue.cancel([doc(1)]).cancelled == (doc(1),)
    queue.request_flush()
    worker.pump()
    assert sender.texts() == ["b"]


# A process queues three memories, cancels one and is SIGKILLed at once: the next queue on the
# journal (a new kernel) must find only the other two.
CANCEL_THEN_DIE = """
import os, signal, sys
from pathlib import Path
sys.path[:0] = {paths!r}
from helpers import item
from hindsight_magic._delivery.items import Route
from hindsight_magic._delivery.journal_file import JournalFile
from hindsight_magic._delivery.queue import RetainQueue
queue = RetainQueue(JournalFile(Path({journal!r})))
for n, text in enumerate(["kept 1", "cancelled", "kept 2"]):
    queue.enqueue(Route("bank-a"), item(text, document_id=f"hm-{{'0' * 32}}-{{n}}"))
assert queue.cancel([f"hm-{{'0' * 32}}-1"]).cancelled
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_cancel_survives_the_kernel_being_killed_right_after(path: Path) -> None:
    tests = str(Path(__file__).parents[1])
    script = CANCEL_THEN_DIE.format(paths=[tests], journal=str(path))
    done = subprocess.run([sys.executable, "-c", script], check=False, timeout=60)
    assert done.returncode == -9
    sender = BatchRecorder()
    queue, worker = delivery(sender, JournalFile(path))
    assert queue.recover() == 2
    for _ in range(3):
        queue.request_flush()
        worker.pump()
    assert sorted(sender.texts()) == ["kept 1", "kept 2"]
