"""Read-after-write across processes: a session that ``reads_others`` sends, before it reads,
what other kernels queued for its bank and have not delivered (their rows and unread spool
lines), under each memory's own document id; their journal rows stay theirs."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from helpers import RunningServer

from hindsight_magic._delivery.indexing import send_queued_elsewhere
from hindsight_magic._delivery.items import Route, new_item
from hindsight_magic._session.wiring import queue_memory


def parts_of(session: Any) -> Any:
    """The session's parts, for the test below of its journal's own query (what other kernels
    left queued for a bank, as this one sees it) and of the spool's ingest the worker would
    run: a user sees those only as what a read sends first, which the other tests here check."""
    from hindsight_magic._session import PARTS

    return PARTS[id(session)]


def test_another_kernels_spooled_and_stored_memories_are_listed_not_taken(sessions: Any) -> None:
    kernel = sessions(start_worker=False)  # never sends: its memories stay queued
    agent = sessions(start_worker=False, reads_others=True)
    first = kernel.retain("The first fact, only in the kernel's spool.")
    parts_of(kernel).queue.journal.ingest()  # the worker would: now a pending row
    second = kernel.retain("The second fact, spooled a moment ago.")
    queue_memory(kernel)("[cell 3]\nx = 1", document_id="doc-of-transcript", update_mode="append")
    agent.retain("The agent's own fact is not another kernel's.")
    bank = kernel.scope.bank_id
    listed = parts_of(agent).journal_file.queued_elsewhere(bank)
    ids = [item.document_id for _, _, item in listed]
    assert first in ids
    assert second in ids
    assert parts_of(agent).journal_file.queued_elsewhere("another-bank") == []
    assert kernel.queue_stats().pending == 4 - 1  # the kernel still holds its own three


class RecordingSender:
    """A sender that records what it is asked to send (synchronously, as a read's)."""

    def __init__(self) -> None:
        self.sent: list[list[str]] = []
        self.reading_banks: list[str] = []  # the banks of the batches marked for a read
        self.client = None

    def __call__(self, batch: Any) -> bool:
        self.sent.append([item.content for item in batch.items])
        if batch.for_read:
            self.reading_banks.append(batch.route.bank_id)
        return True


def test_only_memories_with_their_own_ids_are_sent_once_each() -> None:
    def item(text: str, document_id: str | None, mode: str | None = None) -> Any:
        made = new_item(
            text,
            timestamp="2026-01-01T00:00:00+00:00",
            context="c",
            metadata={},
            tags=(),
            secrets=(),
            document_id=document_id,
            update_mode=mode,
        )
        return ("bank", None, made)

    queued = [
        item("mine", "hm-1"),
        item("mine again", "hm-1"),  # the same memory, a row and a spool line
        item("a transcript", "session-doc", "append"),
        item("no id", None),
        ("other-bank", None, item("elsewhere", "hm-2")[2]),
    ]
    sender = RecordingSender()
    assert send_queued_elsewhere("bank", sender, queued) == 1  # type: ignore[arg-type]
    assert sender.sent == [["mine"]]
    assert sender.reading_banks == ["bank"]
    assert Route("bank", None).bank_id == "bank"


@pytest.mark.integration
def test_an_agent_session_finds_what_a_kernel_never_sent(
    sessions: Any, hindsight_server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HINDSIGHT_API_URL", hindsight_server.url)
    monkeypatch.setenv("HINDSIGHT_BANK_ID", f"test-{uuid.uuid4().hex[:12]}")
    word = f"w{uuid.uuid4().hex[:8]}"
    kernel = sessions(start_worker=False)
    kernel.retain(f"The {word} gauge reads in kPa.")
    plain = sessions()  # a session that does not read others' queues does not find it
    assert f"The {word} gauge reads in kPa." not in plain.recall(f"{word} gauge").texts
    agent = sessions(reads_others=True)
    found = agent.recall(f"{word} gauge kPa")
    assert f"The {word} gauge reads in kPa." in found.texts
