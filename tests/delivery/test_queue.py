"""The retain queue's policy, driven by a fake clock and the worker's ``pump()`` (no thread, no
network)."""

from __future__ import annotations

import random
import time

import pytest
from helpers import BatchRecorder, FakeClock, delivery, item

from hindsight_magic._capture.autoretain import AUTORETAIN
from hindsight_magic._delivery.items import Batch, MemoryItem, QueueClosedError, Route, form_batches
from hindsight_magic._delivery.queue import RetainQueue
from hindsight_magic._delivery.worker import Worker
from hindsight_magic._errors import HindsightError

A = Route("bank-a", ("project:a",))
B = Route("bank-b")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sender() -> BatchRecorder:
    return BatchRecorder()


@pytest.fixture
def pair(clock: FakeClock, sender: BatchRecorder) -> tuple[RetainQueue, Worker]:
    return delivery(sender, clock=clock, jitter=lambda: 1.0)


def test_enqueue_returns_pending_count_and_sends_nothing(
    queue: RetainQueue, worker: Worker, sender: BatchRecorder
):
    assert queue.enqueue(A, item("one")) == 1
    assert queue.enqueue(A, item("two")) == 2
    assert worker.pump() == 0
    assert sender.batches == []
    assert queue.stats().pending == 2


def test_window_is_fixed_from_the_first_item(queue, worker, clock, sender):
    queue.enqueue(A, item("first"))
    clock.advance(4.0)
    queue.enqueue(A, item("second"))  # does not reset the window
    worker.pump()
    assert sender.batches == []
    clock.advance(1.0)  # 5 s after the first item
    assert worker.pump() == 1
    assert sender.contents() == [["first", "second"]]


def test_sixteen_items_flush_at_once(queue, worker, sender):
    for n in range(15):
        queue.enqueue(A, item(f"m{n}"))
    worker.pump()
    assert sender.batches == []
    queue.enqueue(A, item("m15"))
    assert worker.pump() == 1
    assert len(sender.batches[0].items) == 16
    assert queue.stats().accepted == 16


def test_one_request_per_consecutive_route_run(queue, worker, sender):
    for text, route in [("a1", A), ("a2", A), ("b1", B), ("a3", A)]:
        queue.enqueue(route, item(text))
    queue.request_flush()
    worker.pump()
    assert sender.contents() == [["a1", "a2"], ["b1"], ["a3"]]
    assert [b.route for b in sender.batches] == [A, B, A]
    assert len({b.operation_id for b in sender.batches}) == 3


def test_large_bursts_are_split_into_bounded_batches(clock, sender):
    queue, worker = delivery(sender, clock=clock, max_batch_items=10)
    for n in range(25):
        queue.enqueue(A, item(f"m{n}"))
    worker.pump()
    assert [len(b.items) for b in sender.batches] == [10, 10, 5]


def test_transient_failure_retries_with_backoff_and_same_operation_id(queue, worker, clock, sender):
    sender.failures = [HindsightError("retainBatch", "retainBatch failed: busy", 503)] * 2
    queue.enqueue(A, item("keep me"))
    queue.request_flush()
    worker.pump()
    stats = queue.stats()
    assert (stats.retrying, stats.accepted, stats.failed) == (1, 0, 0)
    assert stats.last_error == "retainBatch failed: busy"
    clock.advance(0.9)  # back-off 1 s (jitter pinned to the top of its range)
    assert worker.pump() == 0
    clock.advance(0.2)
    worker.pump()  # second failure: back-off doubles to 2 s
    clock.advance(1.5)
    assert worker.pump() == 0
    clock.advance(0.6)
    worker.pump()
    assert queue.stats().accepted == 1
    assert len({b.operation_id for b in sender.batches}) == 1  # re-sent as the same operation
    assert len(sender.batches) == 3


def test_backoff_doubles_then_is_capped(clock, sender):
    queue, worker = delivery(
        sender, clock=clock, wall=lambda: 0.0, backoff_cap_s=4.0, jitter=lambda: 1.0
    )
    sender.failures = [HindsightError("x", "x request failed: down", kind="connect")] * 10
    queue.enqueue(A, item("m"))
    queue.request_flush()
    delays = []
    for _ in range(5):
        worker.pump()
        delay = queue.stats().retry_at  # wall clock pinned at 0: seconds until the retry
        assert delay is not None
        delays.append(round(delay, 3))
        clock.advance(delay)
    assert delays == [1.0, 2.0, 4.0, 4.0, 4.0]
    assert len(sender.batches) == 5


def test_retry_jitter_leaves_the_users_random_numbers_alone(clock, sender):
    # a notebook that seeds `random` must get the same numbers whatever the worker retries
    random.seed(2026)
    expected = [random.random() for _ in range(3)]
    queue, worker = delivery(sender, clock=clock, wall=lambda: 0.0)  # the default jitter
    sender.failures = [HindsightError("x", "x request failed: down", kind="connect")] * 3
    queue.enqueue(A, item("m"))
    queue.request_flush()
    random.seed(2026)
    for _ in range(3):
        worker.pump()
        delay = queue.stats().retry_at
        assert delay is not None
        clock.advance(delay)
    assert len(sender.batches) == 3  # three retries, each with a jittered back-off
    assert [random.random() for _ in range(3)] == expected


def test_jitter_spreads_retries_between_half_and_full_delay(clock, sender):
    low, worker = delivery(sender, clock=clock, wall=lambda: 0.0, jitter=lambda: 0.0)
    sender.failures = [HindsightError("x", "x request failed: down", kind="connect")]
    low.enqueue(A, item("m"))
    low.request_flush()
    worker.pump()
    assert low.stats().retry_at == pytest.approx(0.5)


def test_later_batches_of_a_route_wait_behind_a_retrying_one(queue, worker, clock, sender):
    sender.failures = [HindsightError("x", "x request failed: down", kind="connect")]
    queue.enqueue(A, item("a-first"))
    queue.request_flush()
    worker.pump()
    queue.enqueue(A, item("a-second"))
    queue.enqueue(B, item("b-other"))
    queue.request_flush()  # a flush retries at once
    worker.pump()
    assert sender.contents() == [["a-first"], ["a-first"], ["a-second"], ["b-other"]]


def test_blocked_route_does_not_hold_up_other_routes(clock, sender):
    queue, worker = delivery(sender, clock=clock, backoff_base_s=10.0, jitter=lambda: 1.0)
    sender.failures = [HindsightError("x", "x request failed: down", kind="connect")]
    queue.enqueue(A, item("a1"))
    queue.request_flush()
    worker.pump()  # a1 fails; its retry is due in 10 s
    queue.enqueue(A, item("a2"))
    queue.enqueue(B, item("b1"))
    clock.advance(5.0)  # the window closes
    worker.pump()
    assert sender.contents() == [["a1"], ["b1"]]  # a2 waits behind a1, b1 does not
    clock.advance(5.0)
    worker.pump()
    assert sender.contents() == [["a1"], ["b1"], ["a1"], ["a2"]]


def test_permanent_failure_goes_to_failed_list_and_notifies(clock, sender):
    notices: list[str] = []
    queue, worker = delivery(sender, clock=clock, on_failure=lambda b, m: notices.append(m))
    sender.failures = [HindsightError("retainBatch", "retainBatch failed: bad field", 422)]
    queue.enqueue(A, item("rejected"))
    queue.enqueue(B, item("fine"))
    queue.request_flush()
    worker.pump()
    stats = queue.stats()
    assert (stats.failed, stats.accepted, stats.retrying) == (1, 1, 0)
    assert notices == ["retainBatch failed: bad field"]
    assert [b.items[0].content for b in queue.failed_batches()] == ["rejected"]


class RefuseContaining(BatchRecorder):
    """A server that refuses (``status``) every batch carrying an item with "bad" in it."""

    def __init__(self, status: int) -> None:
        super().__init__()
        self.status = status

    def __call__(self, batch: Batch) -> None:
        self.batches.append(batch)
        if any("bad" in i.content for i in batch.items):
            raise HindsightError("retainBatch", "retainBatch failed: no", self.status)


@pytest.mark.parametrize("status", [400, 413, 422])
def test_an_item_refusal_splits_the_batch_so_only_the_bad_memory_fails(clock, status):
    sender = RefuseContaining(status)
    notices: list[str] = []
    queue, worker = delivery(sender, clock=clock, on_failure=lambda b, m: notices.append(m))
    for n in range(7):
        queue.enqueue(A, item(f"bad {n}" if n == 4 else f"good {n}"))
    queue.request_flush()
    worker.pump()
    stats = queue.stats()
    assert (stats.accepted, stats.failed, stats.retrying, stats.pending) == (6, 1, 0, 0)
    assert [b.items[0].content for b in queue.failed_batches()] == ["bad 4"]
    assert notices == ["retainBatch failed: no"]  # one notice, for the one memory at fault
    accepted = [c for c in sender.contents() if "bad 4" not in c]
    assert sorted(t for c in accepted for t in c) == [f"good {n}" for n in (0, 1, 2, 3, 5, 6)]
    assert len({b.operation_id for b in sender.batches}) == len(sender.batches)


def test_an_auth_refusal_is_not_split(queue, worker, sender):
    sender.failures = [HindsightError("retainBatch", "retainBatch failed: Invalid API key", 401)]
    for n in range(4):
        queue.enqueue(A, item(f"m{n}"))
    queue.request_flush()
    worker.pump()
    assert len(sender.batches) == 1
    assert queue.stats().failed == 4


def test_batches_formed_behind_a_retrying_one_still_count_as_pending(queue, worker, clock, sender):
    down = HindsightError("retainBatch", "retainBatch request failed: refused", kind="connect")
    sender.failures = [down, down]
    queue.enqueue(A, item("a1"))
    queue.request_flush()
    worker.pump()  # a1 fails and waits to retry
    queue.enqueue(A, item("a2"))
    queue.enqueue(A, item("a3"))
    clock.advance(5.0)  # a1 is due again and a2, a3 become a batch behind it
    queue.request_flush()
    worker.pump()  # a1 fails again; a2, a3 were batched but never tried
    stats = queue.stats()
    assert (stats.retrying, stats.pending, stats.accepted) == (1, 2, 0)
    assert worker.close(0.1) == 3  # what close reports as undelivered counts them too


def test_retry_failed_resends_with_a_new_operation_id(queue, worker, sender):
    sender.failures = [HindsightError("retainBatch", "retainBatch failed: unauthorized", 401)]
    queue.enqueue(A, item("later"))
    queue.request_flush()
    worker.pump()
    first_id = sender.batches[0].operation_id
    assert queue.retry_failed() == 1
    worker.pump()
    stats = queue.stats()
    assert (stats.failed, stats.accepted) == (0, 1)
    assert sender.batches[1].operation_id != first_id
    assert sender.batches[1].route == A


def test_unexpected_exception_keeps_items_visible(queue, worker, sender):
    sender.failures = [RuntimeError("bug")]
    queue.enqueue(A, item("m"))
    queue.request_flush()
    worker.pump()
    stats = queue.stats()
    assert stats.failed == 1
    assert "RuntimeError: bug" in (stats.last_error or "")


def test_sent_memories_lists_accepted_operations_until_they_are_indexed(queue, worker, sender):
    queue.enqueue(A, item("a"))
    queue.enqueue(B, item("b"))
    queue.request_flush()
    worker.pump()
    sent = queue.sent_memories("bank-a")
    assert [op for _, op in sent] == [sender.batches[0].operation_id]
    assert queue.sent_memories("bank-a") == sent  # a read that gave up leaves them listed
    queue.indexed(op for _, op in sent)
    assert queue.sent_memories("bank-a") == []
    assert len(queue.sent_memories("bank-b")) == 1


def test_worker_thread_flushes_and_close_stops_it(sender):
    queue, worker = delivery(sender)
    worker.start()
    for n in range(3):
        queue.enqueue(A, item(f"m{n}"))
    outcome = worker.flush(5.0)
    assert outcome.settled
    assert queue.stats().accepted == 3
    assert worker.close(2.0) == 0
    assert not worker.running
    with pytest.raises(QueueClosedError, match=r"Hindsight retain queue is closed\."):
        queue.enqueue(A, item("late"))


def test_worker_sends_after_the_window_without_a_flush(sender):
    queue, worker = delivery(sender, window_s=0.2)
    worker.start()
    queue.enqueue(A, item("by the timer"))
    deadline = time.monotonic() + 5
    while not sender.batches and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sender.contents() == [["by the timer"]]
    worker.close(1.0)


def test_close_reports_what_could_not_be_delivered(sender):
    sender.failures = [HindsightError("x", "x request failed: down", kind="connect")] * 5
    queue, worker = delivery(sender)
    worker.start()
    queue.enqueue(A, item("stranded"))
    assert worker.close(1.0) == 1


def test_a_job_waits_once_and_a_cancelled_one_does_not_run(worker: Worker, clock: FakeClock):
    ran: list[str] = []

    def job() -> None:
        ran.append("ran")

    assert worker.submit(job, 1.0)
    assert worker.submit(job, 1.0)  # already waiting: not queued twice
    assert worker.scheduled() == [job]
    assert worker.cancel(job)
    assert not worker.cancel(job)
    clock.advance(2.0)
    worker.pump()
    assert ran == []
    worker.submit(job)
    worker.pump()
    assert ran == ["ran"]


# -- a read sends the user's memories, not the transcripts ------------------------------------


def transcript(cells: str) -> MemoryItem:
    """An auto-retained transcript of ``cells`` (e.g. "1 2 3")."""
    text = "\n\n".join(f"[cell {n}]\nx = {n}" for n in cells.split())
    return item(text, metadata={"source": AUTORETAIN}, document_id="k", update_mode="append")


def test_a_read_forms_the_memories_and_leaves_transcripts_their_window(queue, worker, clock):
    queue.enqueue(A, transcript("1 2 3"))
    queue.enqueue(A, item("a fact"))
    queue.enqueue(A, transcript("4 5 6"))
    queue.request_memories()
    worker.pump()
    assert worker.send.contents() == [["a fact"]]  # the memory alone, at once
    assert queue.unsent_cells("bank-a") == 6
    assert queue.transcript_cells("bank-b") == 0
    clock.advance(5.0)  # the transcripts' own window, counted from the first one
    worker.pump()
    assert len(worker.send.batches) == 2  # the two appends, folded into one item
    assert queue.unsent_cells("bank-a") == 0


def test_memories_and_transcripts_never_share_a_batch() -> None:
    entries = [(A, transcript("1")), (A, item("m1")), (A, item("m2")), (A, transcript("2"))]
    batches = form_batches(entries)
    assert [[i.content[:7] for i in b.items] for b in batches] == [
        ["[cell 1"],
        ["m1", "m2"],
        ["[cell 2"],
    ]
    assert [b.carries_memories for b in batches] == [False, True, False]
    assert [b.cells for b in batches] == [1, 0, 1]
