"""One memory per cell version, without a server: what a recall folds into one memory, what
``dedupe`` tidies, how a cell's history says what changed, and what the versions planner does
when the server does not answer (``_memory/versions.py``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest

from hindsight_magic._api.client import Connection, Timeouts
from hindsight_magic._api.replies import MemoryUnit
from hindsight_magic._capture.identity import identify
from hindsight_magic._memory.parsed_replies import RecalledMemory
from hindsight_magic._memory.versions import CellVersions, collapse, redundant, what_changed
from hindsight_magic._timewindow import AsOf, WhenError

WHERE = "project\x1fchurn.ipynb"


def cell_id(version: int, piece: int = 1, cell: str = "cutoff") -> str:
    text = f"TENURE_CUTOFF_MONTHS = {version}"
    identity = identify([f"[cell 4]\n{text}"], source=text, number=4, where=WHERE, cell_id=cell)
    return identity.document_id(piece)


def memory(text: str, document_id: str | None, day: int, memory_id: str = "") -> RecalledMemory:
    return RecalledMemory(
        id=memory_id or f"m-{document_id}-{day}-{text[:8]}",
        text=text,
        document_id=document_id,
        mentioned_at=f"2026-11-{day:02d}T10:00:00+00:00",
    )


def test_recall_shows_each_cell_once_as_its_newest_version_at_the_best_rank() -> None:
    ranked = [
        memory("[cell 4]\nTENURE_CUTOFF_MONTHS = 2", cell_id(2), 1),  # the best match is old
        memory("something else", "notes", 2),
        memory("[cell 9]\nTENURE_CUTOFF_MONTHS = 3", cell_id(3), 3),
        memory("[cell 9, part 2 of 2]\nmore of it", cell_id(3, piece=2), 3),
    ]
    shown = collapse(ranked)
    assert [m.text for m in shown] == ["[cell 9]\nTENURE_CUTOFF_MONTHS = 3", "something else"]
    assert shown[0].copies == 1  # the earlier version, folded in; the second piece is no copy


def test_copies_from_before_versions_are_folded_with_a_count() -> None:
    text = "# refunds double-count Q3\nrefunds = load()"
    ranked = [memory(f"[cell {n}]\n{text}", f"hm-{'0' * 31}{n}-{n}", n) for n in (3, 5, 1, 4, 2)]
    ranked.insert(2, memory("The refunds table is reloaded on Mondays.", "hm-a-1", 6))
    ranked.append(memory("The refunds table is reloaded on Mondays.", "hm-b-1", 7))
    shown = collapse(ranked)
    assert len(shown) == 2
    assert shown[0].text == f"[cell 5]\n{text}"  # the newest copy, at the first one's rank
    assert shown[0].copies == 4
    assert shown[1].copies == 1
    assert shown[1].mentioned_at.startswith("2026-11-07")


def listed(text: str, document_id: str, day: int, memory_id: str) -> MemoryUnit:
    return MemoryUnit(
        id=memory_id,
        text=text,
        document_id=document_id,
        mentioned_at=f"2026-11-{day:02d}T10:00:00+00:00",
    )


def test_dedupe_deletes_only_documents_that_hold_nothing_but_copies() -> None:
    copies = [listed("[cell 2]\nrefunds = load()", f"old-{n}", n, f"m{n}") for n in range(1, 4)]
    mixed = [
        listed("refunds = load()", "kernel-doc", 4, "m4"),  # newest: the one kept
        listed("a line said nowhere else", "kernel-doc", 4, "m5"),
    ]
    versions = [
        listed("TENURE_CUTOFF_MONTHS = 3", cell_id(3), 9, "v3"),
        listed("TENURE_CUTOFF_MONTHS = 2", cell_id(2), 8, "v2"),  # still valid: a race
    ]
    found = redundant(copies + mixed + versions)
    assert sorted(found.documents) == ["old-1", "old-2", "old-3"]  # kernel-doc says more
    assert list(found.stale) == ["v2"]
    assert found.read == 7


def test_a_cells_history_says_what_changed() -> None:
    before = "# tenure cut-off\nTENURE_CUTOFF_MONTHS = 2\n[result]\n0.81"
    after = "# tenure cut-off\nTENURE_CUTOFF_MONTHS = 3\n[result]\n0.84"
    assert what_changed(before, after) == (
        "TENURE_CUTOFF_MONTHS = 2 ⏎ 0.81 → TENURE_CUTOFF_MONTHS = 3 ⏎ 0.84"
    )
    assert what_changed(before, before) == "the same text"
    many = "\n".join(f"line {n}" for n in range(6))
    assert what_changed("", many).endswith("(+3 lines)")


def test_as_of_reads_a_day_as_its_end_and_refuses_the_future() -> None:
    now = datetime(2026, 12, 4, 9, 30, tzinfo=timezone.utc)
    day = AsOf.parse("2026-12-02", now=now)
    assert day.at == datetime(2026, 12, 3, tzinfo=day.at.tzinfo)
    assert day.label == "on 2 Dec"
    assert AsOf.parse("yesterday", now=now).label == "yesterday"
    moment = AsOf.parse("2026-12-04T09:00", now=now)
    recorded = moment.at - timedelta(hours=1)
    assert moment.holds(recorded, None)
    assert moment.holds(recorded, moment.at + timedelta(minutes=5))  # superseded after
    assert not moment.holds(recorded, moment.at - timedelta(minutes=5))  # superseded before
    assert not moment.holds(moment.at + timedelta(minutes=1), None)  # recorded after
    assert not moment.holds(None, None)
    with pytest.raises(WhenError, match="in the future"):
        AsOf.parse("2026-12-05", now=now)


class Recorded:
    """The requests the planner made, answered by ``answer`` (a server that fails)."""

    def __init__(self, answer: Callable[[httpx.Request], httpx.Response]) -> None:
        self.requests: list[str] = []
        self.answer = answer

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(f"{request.method} {request.url.path}")
        return self.answer(request)


def planner(answer: Callable[[httpx.Request], httpx.Response]) -> tuple[CellVersions, Recorded]:
    recorded = Recorded(answer)
    connection = Connection(
        "http://hindsight.test", None, Timeouts(5, 5, 5, 5), httpx.MockTransport(recorded)
    )
    jobs: list[Any] = []
    return CellVersions(connection, lambda job, delay_s=0.0: jobs.append(job) or True), recorded


def identity_of(months: int) -> Any:
    text = f"TENURE_CUTOFF_MONTHS = {months}"
    return identify([f"[cell 4]\n{text}"], source=text, number=4, where=WHERE, cell_id="cutoff")


def test_a_server_that_cannot_list_the_cells_still_gets_every_cell_and_is_asked_again() -> None:
    versions, recorded = planner(lambda request: httpx.Response(503, json={"detail": "down"}))
    first = versions.plan("b", identity_of(2), 1, "2026-12-04T09:00:00+00:00", "cell 4")
    assert first is not None  # sent, as new: nothing is lost
    assert recorded.requests == ["GET /v1/default/banks/b/documents"]
    again = versions.plan("b", identity_of(2), 1, "2026-12-04T09:01:00+00:00", "cell 4")
    assert again is None  # this kernel sent it: an unchanged re-run sends nothing
    assert len(recorded.requests) == 1  # not asked again within the minute


def test_a_revised_cell_is_superseded_only_once_its_new_version_is_on_the_server() -> None:
    state = {"new_stored": False}
    old = identity_of(2)

    def answer(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path.endswith("/documents"):
            item = {"id": old.document_id(1), "memory_unit_count": 1, "created_at": "2026-12-01"}
            return httpx.Response(200, json={"items": [item], "total": 1})
        if "/documents/" in path:
            if state["new_stored"]:
                return httpx.Response(200, json={"id": path.rsplit("/", 1)[-1]})
            return httpx.Response(404, json={"detail": "not found"})
        if path.endswith("/memories/list"):
            return httpx.Response(200, json={"items": [{"id": "m-old", "fact_type": "world"}]})
        return httpx.Response(200, json={"id": "m-old", "state": "invalidated"})

    versions, recorded = planner(answer)
    plan = versions.plan("b", identity_of(3), 1, "2026-12-04T09:12:00+00:00", "cell 4 of x.ipynb")
    assert plan is not None
    assert plan.replaces == "2026-12-01"
    versions.settle()
    assert not any(r.startswith("PATCH") for r in recorded.requests)  # not there yet
    assert versions.pending() == 1
    state["new_stored"] = True
    versions.settle()
    assert recorded.requests[-1] == "PATCH /v1/default/banks/b/memories/m-old"
    assert versions.pending() == 0
    assert versions.superseded == 1
