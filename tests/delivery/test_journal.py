"""The durable queue: the SQLite journal alone, and the retain queue on top of it."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from helpers import BatchRecorder, FakeHindsight, delivery, item
from journalkit import on_disk

from hindsight_magic._delivery import journal_file as journal_module
from hindsight_magic._delivery.items import QueueFullError, Route
from hindsight_magic._delivery.journal_file import JournalError, JournalFile
from hindsight_magic._delivery.queue import RetainQueue
from hindsight_magic._errors import HindsightError
from hindsight_magic.testing import Driver

A = Route("bank-a", ("project:a",))
DOWN = HindsightError("retainBatch", "retainBatch request failed: refused", kind="connect")


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "journal.sqlite3"


def set_owners(path: Path, assignment: str) -> None:
    """Change every owner row as another process would see it (e.g. its pid is gone)."""
    with sqlite3.connect(path) as db:
        db.execute(f"update owners set {assignment}")


def heartbeat_of(path: Path, owner: str) -> float:
    """The heartbeat other kernels read for ``owner``."""
    with sqlite3.connect(path) as db:
        [(beat,)] = db.execute("select heartbeat from owners where owner = ?", (owner,)).fetchall()
    return float(beat)


def test_rows_live_from_enqueue_until_the_server_accepts(path: Path) -> None:
    sender = BatchRecorder()
    queue, worker = delivery(sender, JournalFile(path))
    queue.enqueue(A, item("kept on disk"))
    assert on_disk(path) == [("spooled", "kept on disk")]  # on disk when enqueue returns
    worker.pump()  # the worker takes the spool into the journal
    assert on_disk(path) == [("pending", "kept on disk")]
    sender.failures = [DOWN]
    queue.request_flush()
    worker.pump()
    assert [state for state, _ in on_disk(path)] == ["batched"]
    queue.request_flush()
    worker.pump()
    assert on_disk(path) == []
    assert queue.stats().accepted == 1


def test_refused_batches_are_kept_failed_then_retried_or_dropped(path: Path) -> None:
    sender = BatchRecorder()
    queue, worker = delivery(sender, JournalFile(path))
    sender.failures = [HindsightError("retainBatch", "retainBatch failed: too large", 413)]
    queue.enqueue(A, item("too big"))
    queue.enqueue(Route("bank-b"), item("fine"))
    queue.request_flush()
    worker.pump()
    assert [state for state, _ in on_disk(path)] == ["failed"]
    assert queue.stats().accepted == 1  # nothing else stalled behind the refused batch
    assert queue.retry_failed() == 1
    sender.failures = [DOWN]
    worker.pump()  # the worker writes the new operation id before it sends
    assert [state for state, _ in on_disk(path)] == ["batched"]
    sender.failures = [HindsightError("retainBatch", "retainBatch failed: too large", 413)]
    queue.request_flush()
    worker.pump()
    assert [state for state, _ in on_disk(path)] == ["failed"]
    assert queue.drop_failed() == 1
    worker.pump()  # %hindsight retry --drop leaves the writing to the worker
    assert on_disk(path) == []


def test_a_refused_batch_keeps_the_servers_reason_in_the_next_kernel(path: Path) -> None:
    sender = BatchRecorder()
    sender.failures = [HindsightError("retainBatch", "retainBatch failed: Invalid API key", 401)]
    queue, worker = delivery(sender, JournalFile(path))
    queue.enqueue(A, item("refused"))
    queue.request_flush()
    worker.pump()
    worker.close(0.1)  # the kernel goes away; its rows stay
    later = RetainQueue(JournalFile(path))
    assert later.recover() == 1
    assert [b.error for b in later.failed_batches()] == ["retainBatch failed: Invalid API key"]


def test_a_new_queue_adopts_what_a_dead_owner_left(path: Path) -> None:
    sender = BatchRecorder()
    dead_queue, dead_worker = delivery(sender, JournalFile(path))
    for n in range(5):
        dead_queue.enqueue(A, item(f"pending {n}"))
    sender.failures = [DOWN]
    dead_queue.request_flush()
    dead_worker.pump()  # one batch now carries an operation id, then the "kernel dies"
    dead_queue.enqueue(A, item("pending late"))
    operation_id = sender.batches[0].operation_id
    set_owners(path, "pid = 999999999")  # its process is gone

    survivor = BatchRecorder()
    queue, worker = delivery(survivor, JournalFile(path))
    assert queue.recover() == 6
    queue.request_flush()
    worker.pump()
    assert survivor.batches[0].operation_id == operation_id  # same operation: no duplicate
    assert sorted(survivor.texts()) == sorted([f"pending {n}" for n in range(5)] + ["pending late"])
    assert on_disk(path) == []


def test_a_live_owner_keeps_its_rows(path: Path) -> None:
    alive = JournalFile(path)
    RetainQueue(alive).enqueue(A, item("mine"))
    other = RetainQueue(JournalFile(path))
    assert other.recover() == 0
    assert other.stats().pending == 0


def test_stale_heartbeat_counts_as_dead(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    RetainQueue(JournalFile(path)).enqueue(A, item("orphan"))
    set_owners(path, f"heartbeat = heartbeat - {10 * 3600}")
    other = RetainQueue(JournalFile(path))
    assert other.recover() == 1


# A claimer reports what it took, then stays alive (owning its rows) until stdin closes.
CLAIM = (
    "import sys; from pathlib import Path; "
    "from hindsight_magic._delivery.journal_file import JournalFile; "
    "journal = JournalFile(Path(sys.argv[1])); print(journal.claim_orphans()[0], flush=True); "
    "sys.stdin.read()"
)


def test_two_kernels_never_claim_the_same_rows(path: Path) -> None:
    queue = RetainQueue(JournalFile(path))
    for n in range(200):
        queue.enqueue(A, item(f"orphan {n}"))
    set_owners(path, "pid = 999999999")
    claimers = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIM, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    try:
        claimed = sorted(int(proc.stdout.readline()) for proc in claimers)  # type: ignore[union-attr]
    finally:
        for proc in claimers:
            proc.communicate(timeout=30)
    assert claimed == [0, 0, 0, 200]  # one claimer took everything, the others nothing


def test_memory_is_capped_and_the_rest_waits_on_disk(path: Path) -> None:
    sender = BatchRecorder()
    queue, worker = delivery(sender, JournalFile(path), memory_cap=10, max_batch_items=4)
    for n in range(25):
        queue.enqueue(A, item(f"m{n:02d}"))
    assert len(queue.held()) == 10  # the rest waits on disk only
    assert queue.stats().pending == 25
    queue.request_flush()
    while queue.stats().pending:
        queue.request_flush()
        worker.pump()
    assert sender.texts() == [f"m{n:02d}" for n in range(25)]  # order kept across spills
    assert on_disk(path) == []


def sqlite_bytes(path: Path) -> int:
    """The journal's SQLite files on disk: the database, its write-ahead log and its index."""
    return sum(
        side.stat().st_size
        for side in (path, Path(f"{path}-wal"), Path(f"{path}-shm"))
        if side.exists()
    )


def test_a_long_sessions_journal_stays_small(path: Path) -> None:
    """A day of auto-retain (memories queued a few at a time, each sent) leaves the journal
    as small at the end as early on: SQLite's write-ahead log is checkpointed and reused at
    a small size, not left to reach its default 4 MB."""
    queue, worker = delivery(BatchRecorder(), JournalFile(path))
    sizes = []
    for n in range(1, 601):
        for piece in range(3):
            queue.enqueue(A, item(f"cell {n}, piece {piece}: " + "rows by plan " * 20))
        queue.request_flush()
        worker.pump()
        if n in (100, 600):
            sizes.append(sqlite_bytes(path))
    assert on_disk(path) == []  # every memory was sent and forgotten
    early, late = sizes
    assert late <= early * 1.1, sizes  # it does not grow with the session
    assert late < 1_000_000, sizes


def test_the_journal_shrinks_back_after_a_burst(path: Path) -> None:
    """Thousands of memories at once (a loop of ``%retain``) swell the write-ahead log; once
    they are sent, the next writes cut it back, so the burst does not stay on disk."""
    queue, worker = delivery(BatchRecorder(), JournalFile(path))
    for n in range(3000):
        queue.enqueue(A, item(f"memory {n}: " + "rows by plan " * 20))
    worker.pump()  # one transaction takes them all in
    swollen = sqlite_bytes(path)
    while queue.stats().pending:
        queue.request_flush()
        worker.pump()
    for n in range(50):  # the session goes on
        queue.enqueue(A, item(f"later {n}: " + "rows by plan " * 20))
        queue.request_flush()
        worker.pump()
    assert on_disk(path) == []
    assert Path(f"{path}-wal").stat().st_size <= journal_module.WAL_KEEP_BYTES, swollen


def test_without_a_journal_a_full_queue_says_so(path: Path) -> None:
    queue = RetainQueue(memory_cap=3)
    for n in range(3):
        queue.enqueue(A, item(f"m{n}"))
    with pytest.raises(QueueFullError, match="journal is off"):
        queue.enqueue(A, item("one too many"))
    assert queue.stats().pending == 3


def test_a_retrying_route_holds_new_items_in_order(path: Path) -> None:
    clock = [100.0]
    sender = BatchRecorder()
    queue, worker = delivery(sender, JournalFile(path), clock=lambda: clock[0])
    sender.failures = [DOWN]
    queue.enqueue(A, item("first"))
    queue.request_flush()
    worker.pump()
    for n in range(3):
        queue.enqueue(A, item(f"later {n}"))
    clock[0] += 6  # the window closes while "first" still waits to retry (~1 s, then 6 s later)
    worker.pump()
    assert sender.texts() == ["first", "first", "later 0", "later 1", "later 2"]


def test_appends_recovered_from_one_batch_are_merged_again(path: Path) -> None:
    sender = BatchRecorder()
    queue, worker = delivery(sender, JournalFile(path))
    for n in range(3):
        queue.enqueue(A, item(f"[cell {n}]", document_id="session", update_mode="append"))
    sender.failures = [DOWN]
    queue.request_flush()
    worker.pump()
    set_owners(path, "pid = 999999999")
    survivor = BatchRecorder()
    fresh, fresh_worker = delivery(survivor, JournalFile(path))
    fresh.recover()
    fresh.request_flush()
    fresh_worker.pump()
    [batch] = survivor.batches
    assert len(batch.items) == 1  # the server refuses one document twice in a batch
    assert batch.items[0].content == "[cell 0]\n\n[cell 1]\n\n[cell 2]"
    assert batch.count == 3


def test_a_journal_that_cannot_be_opened_is_one_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(JournalError, match="cannot use the journal"):
        JournalFile(blocker / "journal.sqlite3")


def test_the_journal_file_is_private(path: Path) -> None:
    JournalFile(path)
    assert os.stat(path).st_mode & 0o077 == 0


def test_heartbeat_is_throttled(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    journal = JournalFile(path)
    before = heartbeat_of(path, journal.owner)
    time.sleep(0.01)
    journal.heartbeat()
    assert heartbeat_of(path, journal.owner) == before
    monkeypatch.setattr(journal_module, "HEARTBEAT_S", 0.0)
    time.sleep(0.01)
    journal.heartbeat()
    assert heartbeat_of(path, journal.owner) > before


def test_many_rows_are_written_a_chunk_per_statement_with_the_right_ids(path: Path) -> None:
    # ingest returns the new rows' ids from each statement's last id; another kernel's rows
    # between two ingests must not shift them, nor must a batch past one statement's chunk.
    from hindsight_magic._delivery.journal_file import HeldRow

    mine, other = JournalFile(path), JournalFile(path)
    first = mine.ingest([HeldRow("b", None, item(f"mine {n}")) for n in range(300)], {})
    other.ingest([HeldRow("b", None, item(f"other {n}")) for n in range(5)], {})
    second = mine.ingest([HeldRow("b", None, item(f"mine {n}")) for n in range(300, 500)], {})
    by_id = {row.id: row.item.content for row in mine.rows("pending")}
    assert [by_id[row] for row in first + second] == [f"mine {n}" for n in range(500)]
    mine.mark_batched("op-1", (first + second)[100:450])
    assert [row.id for row in mine.rows("batched")] == (first + second)[100:450]
    mine.delete(first + second)
    assert mine.rows("pending") == mine.rows("batched") == []
    assert [row.item.content for row in other.rows("pending")] == [f"other {n}" for n in range(5)]


def test_an_idle_kernel_keeps_its_heartbeat_fresh(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Other kernels take the rows of an owner whose heartbeat is stale (STALE_AFTER_S): a
    # kernel holding failed memories and doing nothing else must go on beating.
    monkeypatch.setattr(journal_module, "HEARTBEAT_S", 0.2)
    sender = BatchRecorder()
    sender.failures = [HindsightError("retainBatch", "refused", 400)]
    file = JournalFile(path)
    queue, worker = delivery(sender, file)
    queue.enqueue(A, item("refused for good"))
    worker.start()
    try:
        worker.flush(5)
        assert queue.stats().failed == 1
        first = heartbeat_of(path, file.owner)
        time.sleep(1.0)  # idle: nothing pending, nothing to retry
        assert heartbeat_of(path, file.owner) > first + 0.5
    finally:
        worker.close(1.0)


def test_a_kernel_on_this_host_whose_process_runs_is_given_longer(path: Path) -> None:
    # one pump against a hung server can outlast STALE_AFTER_S; its process is still there
    RetainQueue(JournalFile(path)).enqueue(A, item("still mine"))
    set_owners(path, "heartbeat = heartbeat - 600")  # this test's own pid: alive
    assert RetainQueue(JournalFile(path)).recover() == 0
    set_owners(path, "heartbeat = heartbeat - 1200")  # past STALE_LIVE_PROCESS_S
    assert RetainQueue(JournalFile(path)).recover() == 1


def test_the_heartbeat_goes_on_between_slow_sends(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "HEARTBEAT_S", 0.1)
    seen: list[float] = []
    file = JournalFile(path)

    def slow_server(batch: object) -> None:
        seen.append(heartbeat_of(path, file.owner))
        time.sleep(0.3)

    queue, worker = delivery(slow_server, file)
    for bank in ("one", "two", "three"):  # three routes: three sends in one pump
        queue.enqueue(Route(bank, None), item(f"to {bank}"))
    queue.request_flush()
    assert worker.pump() == 3
    assert seen[2] - seen[0] >= 0.5, seen


def test_two_ingests_at_once_take_each_memory_in_once(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # unloading takes in what is spooled while a worker stuck in a send may wake and do it too
    import threading

    file = JournalFile(path)
    queue = RetainQueue(file, window_s=60)
    for n in range(5):
        queue.enqueue(A, item(f"once {n}"))
    real_ingest = file.ingest

    def slow_ingest(*args: object, **kwargs: object) -> list[int]:
        time.sleep(0.2)
        return real_ingest(*args, **kwargs)

    monkeypatch.setattr(file, "ingest", slow_ingest)
    threads = [threading.Thread(target=queue.journal.ingest) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert on_disk(path) == [("pending", f"once {n}") for n in range(5)]


def test_counts_are_read_without_writing_even_while_another_kernel_writes(path: Path) -> None:
    # %hindsight doctor counts what waits in the journal; it must neither wait for a kernel's
    # write transaction nor create or change the file.
    from hindsight_magic._delivery.journal_file import HeldRow, journal_counts

    mine, other = JournalFile(path), JournalFile(path)
    ids = mine.ingest([HeldRow("b", None, item(f"m{n}")) for n in range(3)], {})
    mine.mark_failed(ids[:1], "refused")
    other.ingest([HeldRow("b", None, item("theirs"), "spilled")], {})
    with sqlite3.connect(path, isolation_level=None) as writer:
        writer.execute("begin immediate")  # a kernel in the middle of a write
        assert journal_counts(path) == {"failed": 1, "pending": 2, "spilled": 1}
        writer.execute("rollback")
    missing = path.with_name("missing.sqlite3")
    with pytest.raises(JournalError):
        journal_counts(missing)
    assert not missing.exists()


# A process that queues one dated memory with the server down and exits at once, as a kernel
# killed before it could send: what it queued is only on disk.
DATED = (
    "import os, sys, hindsight_magic as hm; "
    "hm.retain('The pump was recalibrated on 14 March.', timestamp=sys.argv[1]); "
    "os._exit(0)"
)


def test_a_dated_memory_keeps_its_date_through_a_restart(
    path: Path, fake: FakeHindsight, make_session: Any, dead_url: str
) -> None:
    env = {**os.environ, "HINDSIGHT_JOURNAL_PATH": str(path), "HINDSIGHT_API_URL": dead_url}
    env |= {"HINDSIGHT_AUTO_RETAIN": "false", "HINDSIGHT_MENTAL_MODELS": "false"}
    when = "2025-03-14T09:30:00+01:00"
    subprocess.run([sys.executable, "-c", DATED, when], env=env, check=True, timeout=60)
    # spooled, or taken into the journal (and tried) by its worker before it exited
    assert [text for _, text in on_disk(path)] == ["The pump was recalibrated on 14 March."]

    driver = Driver(make_session(journal_path=str(path)))  # the next kernel, on the same journal
    driver.request_flush()
    deadline = time.monotonic() + 10
    while not fake.calls("POST", "/memories$") and time.monotonic() < deadline:
        driver.pump()
        driver.request_flush()
    [(_, _, _, body)] = fake.calls("POST", "/memories$")
    [sent] = body["items"]
    assert sent["content"] == "The pump was recalibrated on 14 March."
    assert datetime.fromisoformat(sent["timestamp"]) == datetime.fromisoformat(when)
    assert on_disk(path) == []
