"""The Recent feed: each queued memory's delivery state, driven through a real queue and its
worker's pump()."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from helpers import BatchRecorder, FakeClock, delivery, item

from hindsight_magic._delivery.items import Route
from hindsight_magic._delivery.journal_file import JournalFile
from hindsight_magic._delivery.queue import RetainQueue
from hindsight_magic._delivery.recent import RECENT_ITEMS, TEXT_CHARS, RecentFeed
from hindsight_magic._delivery.worker import Worker
from hindsight_magic._errors import HindsightError
from hindsight_magic._text import one_line

A = Route("bank-a")


def states(queue: RetainQueue) -> list[tuple[str, str, str]]:
    """(text, state, error) of each feed item, newest first."""
    return [(i.text, i.state, i.error) for i in queue.feed.items()]


@pytest.fixture
def sender() -> BatchRecorder:
    return BatchRecorder()


@pytest.fixture(params=["memory", "journal"])
def pair(
    request: pytest.FixtureRequest, sender: BatchRecorder, tmp_path: Path
) -> tuple[RetainQueue, Worker]:
    journal = JournalFile(tmp_path / "journal.sqlite3") if request.param == "journal" else None
    return delivery(sender, journal, clock=FakeClock(), jitter=lambda: 1.0)


def test_queued_sent_indexed(queue: RetainQueue, worker: Worker, sender: BatchRecorder) -> None:
    queue.enqueue(A, item("first fact"))
    queue.enqueue(A, item("second fact"))
    assert states(queue) == [("second fact", "queued", ""), ("first fact", "queued", "")]
    queue.request_flush()
    worker.pump()
    operation = sender.batches[0].operation_id
    assert queue.feed.awaiting() == [("bank-a", operation)]
    assert {state for _, state, _ in states(queue)} == {"sent"}
    queue.feed.indexed([operation])
    assert {state for _, state, _ in states(queue)} == {"indexed"}
    assert queue.feed.awaiting() == []


def test_a_refused_memory_fails_alone_with_the_reason(queue, worker, sender) -> None:
    queue.enqueue(A, item("bad one"))
    queue.enqueue(A, item("good one"))
    refused = HindsightError("retainBatch", "retainBatch failed: bad field", 422)
    sender.failures = [refused, refused]  # the pair, then its first half
    queue.request_flush()
    worker.pump()
    assert states(queue) == [
        ("good one", "sent", ""),
        ("bad one", "failed", "retainBatch failed: bad field"),
    ]
    queue.retry_failed()
    assert states(queue)[1] == ("bad one", "queued", "")
    worker.pump()
    assert states(queue)[1] == ("bad one", "sent", "")


def test_a_transient_failure_shows_retrying_then_sent(queue, worker, sender) -> None:
    queue.enqueue(A, item("patient fact"))
    sender.failures = [HindsightError("x", "x request failed: down", kind="connect")]
    queue.request_flush()
    worker.pump()
    assert states(queue) == [("patient fact", "retrying", "x request failed: down")]
    queue.request_flush()
    worker.pump()
    assert states(queue) == [("patient fact", "sent", "")]


def test_merged_appends_to_one_document_are_all_sent(queue, worker, sender) -> None:
    for part in ("cells 1-3", "cells 4-6"):
        queue.enqueue(A, item(part, document_id="session-1", update_mode="append"))
    queue.request_flush()
    worker.pump()
    assert len(sender.batches[0].items) == 1  # folded into one item
    assert states(queue) == [("cells 4-6", "sent", ""), ("cells 1-3", "sent", "")]


def test_indexing_failure_and_the_bound() -> None:
    feed = RecentFeed(size=3)
    queue, worker = delivery(BatchRecorder(), clock=FakeClock())
    queue.feed = feed
    for n in range(5):
        queue.enqueue(A, item(f"fact {n}"))
    assert [i.text for i in feed.items()] == ["fact 4", "fact 3", "fact 2"]
    queue.request_flush()
    worker.pump()
    operation = feed.items()[0].operation_id
    feed.index_failed(operation, "the server's indexing failed:\n  LLM error")
    assert {(i.state, i.error) for i in feed.items()} == {
        ("failed", "the server's indexing failed: LLM error")
    }
    assert RECENT_ITEMS == 50


def test_text_is_one_short_line() -> None:
    assert (
        one_line("[cell 1]\nx = 1\n\n[cell 2]\nx + 41", TEXT_CHARS)
        == "[cell 1] x = 1 [cell 2] x + 41"
    )
    long = one_line("word " * 100, TEXT_CHARS)
    assert len(long) == TEXT_CHARS
    assert long.endswith("…")


def test_hooks_from_many_threads_keep_the_feed_consistent() -> None:
    queue, worker = delivery(BatchRecorder(), clock=FakeClock())

    def fill(prefix: str) -> None:
        for n in range(200):
            queue.enqueue(A, item(f"{prefix} {n}"))
            queue.feed.items()

    threads = [threading.Thread(target=fill, args=(f"t{t}",)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(queue.feed.items()) == RECENT_ITEMS
    queue.request_flush()
    worker.pump()
    assert {i.state for i in queue.feed.items()} == {"sent"}
