"""Read-after-write: what a read sends before it asks (a fake server behind MockTransport).

A read (``%recall``/``%%reflect``) sends its bank's new batches synchronously when every item
has its own ``document_id`` and none appends: the server answers once they are searchable, so
no operation is polled. Everything else — transcript appends, big batches, retries, servers
that refuse synchronous retains — goes async under the batch's ``operation_id`` and the read
polls that operation. Every send carries the memories' own document ids (their retain ids). The
lost-reply proofs against the real server are in
``test_read_after_write_server.py``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import FakeHindsight, wait_for

from hindsight_magic._api.client import HindsightClient, Timeouts
from hindsight_magic._capture.autoretain import AUTORETAIN
from hindsight_magic._delivery.indexing import Indexing, operation_state
from hindsight_magic._session.wiring import deliver, queue_memory
from hindsight_magic.testing import Driver

RECALL = "POST /memories/recall$"
BATCH_API = (
    "Batch API is enabled (HINDSIGHT_API_RETAIN_BATCH_ENABLED=true) but async=false. "
    "Please set async=true in your request to use background processing."
)


@pytest.fixture
def fake(fake: FakeHindsight) -> FakeHindsight:
    fake.fail[RECALL] = (200, {"results": []})
    return fake


Handler = Callable[[httpx.Request], httpx.Response]


@pytest.fixture
def make_session(make_session: Any, tmp_path: Path) -> Any:
    """``make(handler=…, batch_size=…, **settings)``: the shared ``make_session`` with its
    worker running and a journal on disk, requests to ``handler`` (default: the fake)."""

    def make(handler: Handler | None = None, batch_size: int = 16, **settings: Any) -> Any:
        return make_session(
            handler,
            run_worker=True,
            journal_path=str(tmp_path / "journal.sqlite3"),
            queue_options={"backoff_base_s": 0.05, "batch_size": batch_size},
            **settings,
        )

    return make


def is_sync_retain(request: httpx.Request) -> bool:
    # parsed, not matched: httpx before 0.28 writes JSON with spaces after the colons
    return request.url.path.endswith("/memories") and json.loads(request.content)["async"] is False


def retains(fake: FakeHindsight) -> list[dict[str, Any]]:
    """The bodies of every ``POST …/memories`` the fake got, in order."""
    return [body for _, _, _, body in fake.calls("POST", r"/memories$")]


def polled(fake: FakeHindsight) -> int:
    return len(fake.calls("GET", "/operations/"))


def test_a_read_sends_its_memories_synchronously_and_polls_nothing(fake, make_session):
    session = make_session()
    session.retain("The churn table double-counts Q3 refunds.")
    session.retain("Revenue is in cents.")
    session.recall("refunds")
    bodies = retains(fake)  # one batch; two if the worker took the first memory in alone
    assert 1 <= len(bodies) <= 2, bodies
    assert all(body["async"] is False for body in bodies)
    assert all("operation_id" not in body for body in bodies)  # ignored when synchronous
    ids = [item["document_id"] for body in bodies for item in body["items"]]
    assert len(ids) == len(set(ids)) == 2  # each memory its own document: a re-send replaces it
    assert all(ids)
    assert polled(fake) == 0
    assert session.queue_stats().accepted == 2


def test_without_a_read_a_batch_goes_async_each_memory_under_its_retain_id(fake, make_session):
    session = make_session()
    made = [
        session.retain("Weekly cohorts start on Monday."),
        session.retain("Outliers above p99.9 are test orders."),
    ]
    assert all(made)
    assert len(set(made)) == 2
    session.flush(5)
    [body] = retains(fake)
    assert body["async"] is True
    assert body["operation_id"]
    assert [item.get("document_id") for item in body["items"]] == made  # forgettable by id
    session.recall("cohorts")
    assert len(retains(fake)) == 1
    assert polled(fake) == 1  # the read waits for the async operation the worker sent


def test_a_resent_async_batch_carries_the_document_ids_under_the_same_operation(fake, make_session):
    sent: list[dict[str, Any]] = []

    def lose_first_reply(request: httpx.Request) -> httpx.Response:
        reply = fake.handle(request)
        if request.url.path.endswith("/memories") and not sent:
            sent.append(json.loads(request.content))
            raise httpx.ReadTimeout("lost", request=request)
        return reply

    session = make_session(lose_first_reply)
    driver = Driver(session)
    session.retain("Revenue is in cents.")
    made = driver.queued()[0][1].document_id
    session.flush(5)
    wait_for(lambda: session.queue_stats().accepted == 1, 10, "the re-send")
    first, second = retains(fake)
    assert first["operation_id"] == second["operation_id"]  # the same operation to the server
    assert first["items"][0]["document_id"] == second["items"][0]["document_id"] == made


def test_an_append_of_the_user_s_goes_async_and_the_read_waits_for_it(fake, make_session):
    session = make_session()
    driver = Driver(session)
    queue_memory(session)("Day 1: x = 1", document_id="kernel-1", update_mode="append")
    session.retain("A fact retained by hand.")
    assert driver.queued()[0][1].document_id == "kernel-1"
    session.recall("x")
    [body] = retains(fake)
    assert body["async"] is True  # an append re-sent would be appended twice
    assert body["operation_id"]
    assert polled(fake) == 1


def test_a_read_waits_for_the_user_s_memories_but_not_for_transcripts(fake, make_session):
    def never_indexed(request: httpx.Request) -> httpx.Response:
        if "/operations/" in request.url.path:  # the server is slow to index transcripts
            return httpx.Response(200, json={"status": "pending"})
        return fake.handle(request)

    session = make_session(never_indexed)
    cells = "[cell 1]\nx = 1\n\n[cell 2]\ny = 2\n\n[cell 3]\nz = x + y"
    queue_memory(session)(cells, document_id="k-1", update_mode="append", source=AUTORETAIN)
    session.retain("A fact retained by hand.")
    started = time.monotonic()
    result = session.recall("fact")
    assert time.monotonic() - started < 3  # not READ_WAIT_S: nothing waits for the transcript
    first = retains(fake)[0]
    assert first["async"] is False  # the user's memory went first, synchronously …
    assert [item["content"] for item in first["items"]] == ["A fact retained by hand."]
    assert "the last 3 cells are still being indexed" in result.headline()  # … and it says so
    wait_for(lambda: len(retains(fake)) == 2, 10, "the transcript, sent meanwhile")
    assert retains(fake)[1]["async"] is True


def test_a_big_batch_goes_async(fake, make_session):
    session = make_session(batch_size=100)
    for n in range(20):
        session.retain(f"Fact {n}.")
    session.recall("fact")
    [body] = retains(fake)
    assert body["async"] is True  # a synchronous retain of 20 would wait for 20 extractions
    assert polled(fake) == 1


def test_a_server_that_refuses_sync_gets_async_at_once_and_is_not_asked_again(fake, make_session):
    refused: list[bytes] = []

    def refuse_sync(request: httpx.Request) -> httpx.Response:
        if is_sync_retain(request):
            refused.append(request.content)
            return httpx.Response(400, json={"detail": BATCH_API})
        return fake.handle(request)

    session = make_session(refuse_sync)
    session.retain("First fact.")
    session.recall("first")
    session.retain("Second fact.")
    session.recall("second")
    assert len(refused) == 1  # asked once …
    assert [body["async"] for body in retains(fake)] == [True, True]  # … async took both
    stats = session.queue_stats()
    assert (stats.accepted, stats.failed, stats.retrying) == (2, 0, 0)
    assert Driver(session).notices() == ()  # nothing failed: the user hears nothing


def test_a_sync_send_that_times_out_is_retried_async_under_the_same_document_id(fake, make_session):
    def lose_sync_replies(request: httpx.Request) -> httpx.Response:
        reply = fake.handle(request)  # the server does the work …
        if is_sync_retain(request):
            raise httpx.ReadTimeout("lost", request=request)  # … and the reply is lost
        return reply

    session = make_session(lose_sync_replies)
    session.retain("A fact whose acknowledgement is lost.")
    started = time.monotonic()
    session.recall("fact")
    assert time.monotonic() - started < 5  # the read does not wait for the retry
    wait_for(lambda: session.queue_stats().accepted == 1, 10, "the retry")
    first, second = retains(fake)
    assert (first["async"], second["async"]) == (False, True)
    assert first["items"][0]["document_id"] == second["items"][0]["document_id"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_every_memory_gets_a_document_id_of_its_own_and_a_forked_child_new_ones():
    from hindsight_magic._delivery.items import own_document_id

    ids = [own_document_id(None) for _ in range(10_000)]
    assert len(set(ids)) == len(ids)
    assert all(i and i.startswith("hm-") for i in ids)
    assert own_document_id("append") is None  # an append needs its document's id
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # a forked process counts on from the parent's state: it must not reuse it
        os.write(write, (own_document_id(None) or "").encode())
        os._exit(0)
    os.waitpid(child, 0)
    os.close(write)
    forked = os.read(read, 200).decode()
    os.close(read)
    mine = own_document_id(None) or ""
    assert forked.startswith("hm-")
    assert forked.rsplit("-", 1)[0] != mine.rsplit("-", 1)[0]


def test_the_worker_follows_a_sent_transcript_until_it_is_indexed(fake, make_session):
    asked: list[str] = []

    def indexed_on_the_third_ask(request: httpx.Request) -> httpx.Response:
        if "/operations/" in request.url.path:
            asked.append(request.url.path)
            status = "completed" if len(asked) >= 3 else "processing"
            return httpx.Response(200, json={"status": status})
        return fake.handle(request)

    session = make_session(indexed_on_the_third_ask)
    cells = "[cell 1]\nx = 1\n\n[cell 2]\ny = 2"
    queue_memory(session)(cells, document_id="k-2", update_mode="append", source=AUTORETAIN)
    session.flush(5)  # sent async: the server indexes it later
    wait_for(lambda: len(asked) >= 3, 10, "the watch to see it indexed")
    time.sleep(1.5)  # a second more: a watch still running would ask again
    assert len(asked) == 3  # asked every second while it was being indexed, then no more
    assert session.recall("x").still_indexing == 0
    assert len(asked) == 3  # the read knew: it asked nothing either


def test_a_read_says_when_the_user_s_memories_are_not_indexed_within_its_wait(
    fake, make_session, monkeypatch
):
    """An empty answer must never read as "nothing there" when what the user just retained
    is still being indexed (a loaded server can take longer than the read waits)."""

    def never_indexed(request: httpx.Request) -> httpx.Response:
        if "/operations/" in request.url.path:
            return httpx.Response(200, json={"status": "pending"})
        return fake.handle(request)

    session = make_session(never_indexed)
    monkeypatch.setattr("hindsight_magic._delivery.indexing.READ_WAIT_S", 0.5)
    append = queue_memory(session)
    append("Day 1: x = 1", document_id="kernel-1", update_mode="append")  # goes async
    result = session.recall("nothing matches this")
    assert "your newest memories are still being indexed" in result.headline()
    from hindsight_magic._memory.results import ReflectResult

    answer = ReflectResult("An answer.", "what happened?", memories_waiting=True)
    assert "(Your newest memories are still being indexed: the answer" in repr(answer)


def test_a_read_that_gave_up_waiting_tells_the_next_reads_the_memory_is_not_found_yet(
    fake, make_session
):
    """A read waits (bounded) for the user's memory the worker sent asynchronously; when the
    server has not indexed it by then, the next reads must not say it was found: each looks at
    it once (no second long wait) and says it is still being indexed, until it is."""
    indexed = False
    asked: list[str] = []

    def slow_to_index(request: httpx.Request) -> httpx.Response:
        if "/operations/" in request.url.path:  # a busy server: the class's cells go first
            asked.append(request.url.path)
            return httpx.Response(200, json={"status": "completed" if indexed else "pending"})
        return fake.handle(request)

    session = make_session(slow_to_index)
    session.retain("My baseline reached RMSE 4.017 with 3 features.")
    session.flush(5)  # sent asynchronously, as the worker sends a batch no read waits on
    assert [body["async"] for body in retains(fake)] == [True]
    assert deliver(session, [], wait_s=0.3) is False  # the first read gave up waiting
    first = len(asked)
    assert first >= 1
    started = time.monotonic()
    assert deliver(session, [], wait_s=5) is False  # still not indexed: the next read says so …
    assert time.monotonic() - started < 2  # … without waiting its bound again …
    assert len(asked) == first + 1  # … having asked once
    indexed = True
    assert deliver(session, [], wait_s=5) is True
    done = len(asked)
    assert deliver(session, [], wait_s=5) is True
    assert len(asked) == done  # once found indexed, no read asks about it again


@pytest.mark.parametrize(
    ("reply", "state", "shown"),
    [
        (httpx.Response(200, json={"status": "pending"}), "indexing", "indexing"),
        (httpx.Response(200, json={"status": "processing"}), "indexing", "indexing"),
        (httpx.Response(200, json={"status": "completed"}), "done", "done"),
        (httpx.Response(200, json={"status": "not_found"}), "done", "done"),
        (
            httpx.Response(200, json={"status": "failed", "error_message": "LLM error"}),
            "failed",
            "failed: LLM error",
        ),
        (
            httpx.Response(200, json={"status": "cancelled"}),
            "failed",
            "failed: the server indexing cancelled",
        ),
        (httpx.Response(503, json={"detail": "down"}), "unknown", "unknown"),
    ],
)
def test_an_operation_s_state_is_a_member_and_says_why_it_failed(
    reply: httpx.Response, state: str, shown: str
) -> None:
    """The server's status words map to ``Indexing`` members; a failure keeps its reason for
    the panel's note (``Refresh of mental model … failed: …``)."""
    client = HindsightClient(
        "http://hindsight.test", None, Timeouts(), transport=httpx.MockTransport(lambda _: reply)
    )
    found = operation_state(client, "bank-a", "op-1")
    assert found.state is Indexing(state)
    assert str(found) == shown
