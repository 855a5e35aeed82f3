"""The spool: ``%retain`` writes to its own file and never waits for the shared journal.

What a spool holds is on disk when ``enqueue`` returns; the worker takes it into the journal
exactly once; a new kernel takes in the spools of dead ones; nothing is left behind.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import BatchRecorder, delivery, item
from journalkit import on_disk

from hindsight_magic._delivery import journal as journal_module
from hindsight_magic._delivery.items import Route
from hindsight_magic._delivery.journal_file import JournalFile
from hindsight_magic._delivery.queue import RetainQueue
from hindsight_magic._delivery.spool import Spool, encode, read_from

A = Route("bank-a", ("project:a",))

# Another process takes the journal's write lock and holds it until its stdin closes.
HOLD_LOCK = (
    "import sqlite3, sys; db = sqlite3.connect(sys.argv[1], isolation_level=None); "
    "db.execute('begin exclusive'); print('locked', flush=True); sys.stdin.read()"
)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "journal.sqlite3"


def spools(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.glob(f"{path.name}.spool-*"))


def died(path: Path) -> None:
    """Every owner so far is a process that is gone (as after a SIGKILL)."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("update owners set pid = 999999999")
        db.commit()


def test_retain_returns_at_once_while_another_kernel_holds_the_journal_lock(path: Path) -> None:
    sender = BatchRecorder()
    queue, worker = delivery(sender, JournalFile(path))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        started = time.perf_counter()
        for n in range(100):
            queue.enqueue(A, item(f"while locked {n}"))
        elapsed = time.perf_counter() - started
    finally:
        holder.communicate(timeout=30)
    assert elapsed < 0.5, f"100 enqueues took {elapsed:.3f} s behind another process's lock"
    assert on_disk(path) == [("spooled", f"while locked {n}") for n in range(100)]
    queue.request_flush()
    worker.pump()
    assert sender.texts() == [f"while locked {n}" for n in range(100)]
    assert on_disk(path) == []


def test_a_dead_kernels_spool_is_taken_in_once(path: Path) -> None:
    dead, dead_worker = delivery(BatchRecorder(), JournalFile(path), batch_size=1000, window_s=60)
    for n in range(30):
        dead.enqueue(A, item(f"early {n}"))
    dead_worker.pump()  # these are in the journal now; the next ones only in the spool
    for n in range(20):
        dead.enqueue(A, item(f"late {n}"))
    [dead_spool] = spools(path)
    died(path)

    sender = BatchRecorder()
    survivor, survivor_worker = delivery(sender, JournalFile(path))
    assert survivor.recover() == 50
    other = RetainQueue(JournalFile(path))
    assert other.recover() == 0  # taken once: nothing left for a second kernel
    assert dead_spool not in spools(path)
    while survivor.stats().pending:
        survivor.request_flush()
        survivor_worker.pump()
    expected = [f"early {n}" for n in range(30)] + [f"late {n}" for n in range(20)]
    assert sender.texts() == expected


def test_a_line_cut_short_by_the_kill_is_not_taken(path: Path) -> None:
    dead = RetainQueue(JournalFile(path))
    dead.enqueue(A, item("whole"))
    [spool] = spools(path)
    with open(path.with_name(spool), "r+b") as file:  # a write the kill interrupted
        data = file.read()
        end = data.index(b"\n") + 1
        file.seek(end)  # all but its newline: its %retain never returned
        file.write(data[:end].replace(b"whole", b"unfinished").rstrip(b"\n"))
    died(path)
    sender = BatchRecorder()
    survivor, survivor_worker = delivery(sender, JournalFile(path))
    assert survivor.recover() == 1
    survivor.request_flush()
    survivor_worker.pump()
    assert sender.texts() == ["whole"]


def test_a_large_spool_is_replaced_and_deleted_once_taken_in(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "ROTATE_BYTES", 2000)
    sender = BatchRecorder()
    queue, worker = delivery(sender, JournalFile(path), batch_size=1000, window_s=60)
    texts = [f"memory {n} " + "x" * 100 for n in range(60)]
    for text in texts[:30]:
        queue.enqueue(A, item(text))
    [first] = spools(path)
    worker.pump()  # taken in; past the size: a fresh spool, the old one deleted
    [second] = spools(path)
    assert second != first
    for text in texts[30:]:
        queue.enqueue(A, item(text))
    assert [state for state, _ in on_disk(path)] == ["pending"] * 30 + ["spooled"] * 30
    queue.request_flush()
    worker.pump()
    worker.pump()
    assert sender.texts() == texts
    assert on_disk(path) == []


def test_a_spool_file_the_journal_does_not_know_is_removed_not_sent(path: Path) -> None:
    leftover = path.with_name(f"{path.name}.spool-gone-host-1-abc-1")
    JournalFile(path).close()
    leftover.write_bytes(
        b'{"bank":"bank-a","tags":[],"item":{"content":"taken","timestamp":"t"}}\n'
    )
    sender = BatchRecorder()
    queue, _ = delivery(sender, JournalFile(path))
    assert queue.recover() == 0
    assert not leftover.exists()
    assert sender.texts() == []


def test_unloading_takes_everything_in_and_leaves_no_spool(path: Path) -> None:
    queue, worker = delivery(BatchRecorder(), JournalFile(path), batch_size=1000, window_s=60)
    for n in range(5):
        queue.enqueue(A, item(f"left {n}"))
    worker.close(0.1)  # not sent (no worker ran): the memories stay, in the journal
    assert spools(path) == []
    assert on_disk(path) == [("pending", f"left {n}") for n in range(5)]
    later = RetainQueue(JournalFile(path))
    assert later.recover() == 5


@pytest.mark.parametrize(
    "reserve", ["mapped, then past its reserve", "no reserve (macOS, Windows)"]
)
def test_every_line_written_is_read_back_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reserve: str
) -> None:
    if reserve.startswith("no"):
        monkeypatch.delattr(os, "posix_fallocate", raising=False)
    spool = Spool.create(tmp_path / "journal.sqlite3.spool-x-1", capacity=4096)
    assert (spool.view is not None) == reserve.startswith("mapped")
    lines = [encode(A, item(f"line {n} " + "y" * 90)) for n in range(100)]  # ~12 kB
    for line in lines:
        spool.append(line)
    spool.close()
    found, end = read_from(spool.path, 0)
    assert [line + b"\n" for line in found] == lines
    assert end == sum(map(len, lines))


def test_a_flush_during_the_workers_journal_work_sends_everything_in_one_batch(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sender = BatchRecorder()
    queue, worker = delivery(sender, JournalFile(path), window_s=60)
    queue.enqueue(A, item("first"))
    journal_work = queue.journal.write_pending
    arrived: list[str] = []

    def a_read_comes_in_meanwhile() -> None:  # the kernel retains and reads while it works
        journal_work()
        if not arrived:
            arrived.append("second")
            queue.enqueue(A, item("second"))
            queue.request_flush()

    monkeypatch.setattr(queue.journal, "write_pending", a_read_comes_in_meanwhile)
    worker.pump()
    assert sender.contents() == [["first", "second"]]  # one request, not one per memory


def test_the_worker_does_not_wake_for_each_retain_only_for_each_batch(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The spool already keeps each memory through a SIGKILL; waking the worker to take every
    # one into SQLite made it compete with the kernel thread for the GIL during a burst.
    sender = BatchRecorder()
    queue, worker = delivery(sender, JournalFile(path), batch_size=16, window_s=60)
    pumps: list[int] = []
    real_pump = worker.pump

    def counted_pump() -> int:
        pumps.append(len(pumps))
        return real_pump()

    monkeypatch.setattr(worker, "pump", counted_pump)
    worker.start()
    try:
        time.sleep(0.2)  # the worker is up and waiting (the journal beat when it opened)
        before = len(pumps)
        for n in range(15):
            queue.enqueue(A, item(f"burst {n}"))
            time.sleep(0.01)
        time.sleep(0.2)
        assert len(pumps) == before, "the worker woke for memories below a batch"
        assert on_disk(path) == [("spooled", f"burst {n}") for n in range(15)]
        queue.enqueue(A, item("burst 15"))  # a batch is due: taken in and sent together
        deadline = time.monotonic() + 10
        while not sender.contents() and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        worker.close(2.0)
    assert sender.contents() == [[f"burst {n}" for n in range(16)]]
    assert len(pumps) - before <= 3
