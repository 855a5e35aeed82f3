"""A notebook's memory as its current understanding plus its history: one memory per cell
version, the current version valid, the earlier ones kept but superseded.

``CellVersions`` decides, on the worker, what an auto-retained cell becomes
(``_capture/identity.py`` names the cell and its version):

- **an unchanged re-run** (its version is the cell's current one): nothing is sent — no new
  document, no re-embedding, no request;
- **a changed cell** (a new version): the new version is sent, saying when the one it replaces
  ran (``replaces`` in its metadata); once the server has it, the earlier version's memories
  are invalidated (the server's curation state ``invalidated``, with the reason ``superseded
  by cell 4 of churn.ipynb, 2026-12-04 09:12``): left out of recall, kept for ``history``,
  as-of reads and ``restore``;
- **a version seen before** (an edit undone): its memories are brought back and the version
  it replaced is superseded; nothing is re-sent. A memory the user forgot stays forgotten.

What the server holds is learned once per notebook and kernel, with one listing of the
notebook's documents (their ids carry cell and version, their memory counts say which are
still valid), and kept up to date by what this kernel does. Two kernels that race (the same
notebook run in two places at once) may both leave a version valid for a moment: recall shows
one memory per cell whatever the bank holds (``collapse``), and ``%hindsight dedupe`` tidies.

Superseding waits until the server has the new version, so a cell is never without a valid
memory; it is retried (bounded) while the server does not answer, and never raises.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Protocol, TypeVar

from .._api.vocabulary import DocumentEventKind, FactType, MemoryState
from .._capture.identity import (
    CELL_DOCUMENT,
    CellIdentity,
    CellPlan,
    cell_document,
    notebook_document,
)
from .._errors import HindsightError
from .._text import parse_iso

if TYPE_CHECKING:
    from .._api.client import Connection, HindsightClient
    from .._api.replies import DocumentItem, MemoryUnit

log = logging.getLogger("hindsight_magic")

SUPERSEDED = "superseded by"  # how the reason of a superseded version begins
LIST_PAGE = 100
LIST_CAP = 1000  # the server's own cap on a ``q`` search of documents
RELIST_AFTER_S = 60.0  # a listing that failed (server down) is tried again after this
SETTLE_WAIT_S = 2.0  # how often a supersede waits for the new version to be on the server …
SETTLE_GIVE_UP_S = 1800.0  # … and how long, at most (the old version then stays valid)
SETTLE_POLL_S = 0.25  # how often a flush or an exit asks whether the new version is there
FACT_TYPES = (FactType.WORLD, FactType.EXPERIENCE)  # what the server lets be curated
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass
class VersionRecord:
    """One version of a cell as this kernel knows it."""

    version: str
    documents: list[str]
    when: str  # when it ran (its own time) or, learned from the server, when it was stored
    valid: bool


@dataclass
class _Supersede:
    """Invalidate ``old`` once ``after`` (the new version's first document) is on the server."""

    bank_id: str
    old: list[VersionRecord]
    after: str | None
    reason: str
    revive: VersionRecord | None = None
    started: float = field(default_factory=time.monotonic)
    attempts: int = 0


class CellVersions:
    """The versions of this kernel's cells, per bank: what to send, what to supersede."""

    def __init__(
        self,
        connection: Connection,
        submit: Callable[[Callable[[], object], float], bool],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._connection = connection
        self._submit = submit
        self._clock = clock
        self._lock = threading.Lock()
        self._cells: dict[tuple[str, str], dict[str, VersionRecord]] = {}
        self._listed: dict[tuple[str, str], float | None] = {}  # → when to list again (failed)
        self._pending: list[_Supersede] = []
        self._stored: set[tuple[str, str]] = set()  # (bank, document) the server holds, valid
        self.superseded = 0  # earlier versions this kernel superseded
        self.already_stored = 0  # memories not sent: the server held them already

    # -- deciding (worker thread) -------------------------------------------------------------

    def plan(
        self,
        bank_id: str,
        identity: CellIdentity,
        pieces: int,
        ran_at: str,
        label: str,
        as_sent: str | None = None,
    ) -> CellPlan | None:
        """What to send for a cell that just ran: None when nothing is to be sent (its version
        is current, or an earlier copy was brought back), else the plan of a new version.
        ``label`` names the cell for a superseded version's reason (``cell 4 of churn.ipynb``).
        ``identity`` is the cell as it showed its outputs; ``as_sent``, when it differs, the
        version of what is sent (the texts the extension showed cut out: a recall that showed
        the cell's own memory makes its unchanged value such a text). A bank written before
        versions were taken from the cell as shown may hold that one: the cell is then that
        version, not a new one.
        """
        self._learn(bank_id, identity.notebook_prefix)
        with self._lock:
            known = self._cells.setdefault((bank_id, identity.key), {})
            version = identity.version
            if version not in known and as_sent in known:
                version = as_sent
            record = known.get(version)
            others = [r for v, r in known.items() if v != version and r.valid]
            reason = f"{SUPERSEDED} {label}, {_local_minute(ran_at)}"
            if record is not None:
                if record.valid and not others:
                    return None
                revive = None if record.valid else record
                record.valid = True
                for other in others:
                    other.valid = False
                self._pending.append(_Supersede(bank_id, others, None, reason, revive))
                self._submit(self.settle, 0.0)
                return None
            documents = [identity.document_id(n) for n in range(1, pieces + 1)]
            known[identity.version] = VersionRecord(identity.version, documents, ran_at, True)
            replaces = max((other.when for other in others), default=None)
            for other in others:
                other.valid = False
            if others:
                self._pending.append(_Supersede(bank_id, others, documents[0], reason))
                self._submit(self.settle, SETTLE_WAIT_S)
            return CellPlan(identity, replaces)

    def retained(self, bank_id: str, identity: CellIdentity, ran_at: str, label: str) -> None:
        """A ``%retain`` line of a cell retained ``identity`` (``identity.retained_line``):
        decided on the worker (``plan_retained``), never here on the kernel thread."""
        self._submit(lambda: self.plan_retained(bank_id, identity, ran_at, label), 0.0)

    def plan_retained(self, bank_id: str, identity: CellIdentity, ran_at: str, label: str) -> None:
        """A ``%retain`` line's text, already queued: its line's earlier text is superseded
        once the server has the new one. A text the line had before (an edit undone) is
        brought back and not sent again; one the user forgot stays forgotten. Worker thread."""
        self._learn(bank_id, identity.notebook_prefix)
        document = identity.document_id(1)
        reason = f"{SUPERSEDED} {label}, {_local_minute(ran_at)}"
        with self._lock:
            known = self._cells.setdefault((bank_id, identity.key), {})
            record = known.get(identity.version)
            others = [r for v, r in known.items() if v != identity.version and r.valid]
            for other in others:
                other.valid = False
                self._stored.difference_update((bank_id, d) for d in other.documents)
            if record is None:
                known[identity.version] = VersionRecord(identity.version, [document], ran_at, True)
                if others:
                    self._pending.append(_Supersede(bank_id, others, document, reason))
                    self._submit(self.settle, SETTLE_WAIT_S)
                return
            revive = None if record.valid else record
            record.valid = True
            self._stored.add((bank_id, document))  # on the server already: not sent again
            if others or revive is not None:
                self._pending.append(_Supersede(bank_id, others, None, reason, revive))
                self._submit(self.settle, 0.0)

    def _learn(self, bank_id: str, prefix: str) -> None:
        """List the notebook's documents once (a failed listing again after a minute)."""
        key = (bank_id, prefix)
        with self._lock:
            if key in self._listed:
                retry_at = self._listed[key]
                if retry_at is None or self._clock() < retry_at:
                    return
            self._listed[key] = None
        try:
            documents = self._documents(bank_id, prefix)
        except HindsightError as error:
            log.debug("Hindsight: could not list the notebook's cells: %s", error)
            with self._lock:
                self._listed[key] = self._clock() + RELIST_AFTER_S
            return
        with self._lock:
            for document in documents:
                if document.memory_unit_count > 0:
                    self._stored.add((bank_id, document.id))
                found = cell_document(document.id)
                if found is None:
                    continue
                known = self._cells.setdefault((bank_id, found.key), {})
                record = known.get(found.version)
                if record is None:
                    when = document.created_at or ""
                    record = known[found.version] = VersionRecord(found.version, [], when, False)
                if document.id not in record.documents:
                    record.documents.append(document.id)
                record.valid = record.valid or document.memory_unit_count > 0

    # -- what need not be sent again (worker thread) ------------------------------------------

    def stored(self, bank_id: str, document_id: str | None) -> bool:
        """Whether the server already holds ``document_id`` with valid memories (one listing
        of its notebook per kernel, then what this kernel sent): re-sending it would only
        replace it with itself, re-embedding the same text. Counted in ``already_stored``."""
        found = notebook_document(document_id)
        if found is None:
            return False
        self._learn(bank_id, f"{CELL_DOCUMENT}{found.key.split('-')[0]}-")
        with self._lock:
            held = (bank_id, str(document_id)) in self._stored
            self.already_stored += held
        return held

    def sent(self, bank_id: str, document_ids: Sequence[str | None]) -> None:
        """``document_ids`` were accepted by the server (the next run need not send them)."""
        with self._lock:
            self._stored.update((bank_id, d) for d in document_ids if d and notebook_document(d))

    def _documents(self, bank_id: str, prefix: str) -> list[DocumentItem]:
        client, found, offset = self._connection.client, [], 0
        while offset < LIST_CAP:
            reply = client.list_documents(bank_id, q=prefix, limit=LIST_PAGE, offset=offset)
            page = reply.items
            found += [d for d in page if d.id.startswith(prefix)]
            offset += len(page)
            if len(page) < LIST_PAGE or offset >= reply.total:
                break
        return found

    # -- superseding (worker thread) ----------------------------------------------------------

    def settle(self) -> None:
        """Invalidate the versions that were replaced, once their replacements are on the
        server; what cannot be done yet is tried again later. Never raises."""
        with self._lock:
            pending, self._pending = self._pending, []
        later: list[_Supersede] = []
        for job in pending:
            try:
                done = self._supersede(job)
            except HindsightError as error:
                log.debug("Hindsight: superseding a cell version failed: %s", error)
                done = False
            except Exception:  # never let a bug here stop the worker
                log.warning("Hindsight: superseding a cell version failed", exc_info=True)
                done = True
            if not done:
                job.attempts += 1
                if time.monotonic() - job.started < SETTLE_GIVE_UP_S:
                    later.append(job)
                else:
                    log.info("Hindsight: gave up superseding an earlier version of a cell")
        if later:
            with self._lock:
                self._pending = later + self._pending
            delay = min(SETTLE_WAIT_S * 2 ** min(max(j.attempts for j in later), 5), 60.0)
            self._submit(self.settle, delay)

    def _supersede(self, job: _Supersede) -> bool:
        client, bank = self._connection.client, job.bank_id
        if job.after is not None and client.document(bank, job.after) is None:
            return False  # the new version is not on the server yet
        if job.revive is not None and not self._revive(bank, job.revive):
            return True  # the earlier copy was forgotten by the user: it stays so
        with self._lock:  # one made current again since (an edit undone) is not superseded
            old = [record for record in job.old if not record.valid]
        for record in old:
            for document_id in record.documents:
                reply = client.list_memories(bank, document_id=document_id, limit=LIST_PAGE)
                if not reply.items and not self._has_memories(bank, document_id):
                    return False  # sent a moment ago: the server has not made its memories yet
                for memory in reply.items:
                    if (memory.fact_type or "world") in FACT_TYPES and memory.id:
                        client.update_memory(
                            bank, memory.id, state="invalidated", reason=job.reason
                        )
        with self._lock:
            self.superseded += len(old)
        return True

    def _has_memories(self, bank_id: str, document_id: str) -> bool:
        """Whether the server made any memory of ``document_id`` yet (invalidated ones too)."""
        reply = self._connection.client.list_memories(
            bank_id, document_id=document_id, state=MemoryState.INVALIDATED, limit=1
        )
        return bool(reply.items)

    def _revive(self, bank_id: str, record: VersionRecord) -> bool:
        """Bring back a superseded version's memories (not ones the user forgot); whether it
        is current now: False only when the user forgot it (its memories invalidated, none by
        a supersede). One not superseded yet (its supersede came too late and saw it current
        again) is current as it is."""
        client, revived, forgotten = self._connection.client, False, False
        for document_id in record.documents:
            reply = client.list_memories(
                bank_id, document_id=document_id, state=MemoryState.INVALIDATED, limit=LIST_PAGE
            )
            for memory in reply.items:
                reason = memory.invalidation_reason or ""
                if reason.startswith(SUPERSEDED) and memory.id:
                    client.update_memory(bank_id, memory.id, state="valid")
                    revived = True
                else:
                    forgotten = True
        return revived or not forgotten

    def settle_until(self, timeout_s: float) -> bool:
        """``settle`` again and again for at most ``timeout_s``, while new versions are being
        indexed: a flush, and a kernel's exit (a headless run ends right after its last cell),
        leave no earlier version valid when it can be helped. Whether nothing is left."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.settle()
            if not self.pending() or time.monotonic() >= deadline:
                return not self.pending()
            time.sleep(SETTLE_POLL_S)

    def pending(self) -> int:
        """How many supersedes wait for their new version (or for the server)."""
        with self._lock:
            return len(self._pending)

    def forget_bank(self, bank_id: str) -> None:
        """Drop what is known of ``bank_id`` (it was replaced, restored or cleared)."""
        with self._lock:
            self._cells = {k: v for k, v in self._cells.items() if k[0] != bank_id}
            self._listed = {k: v for k, v in self._listed.items() if k[0] != bank_id}
            self._stored = {k for k in self._stored if k[0] != bank_id}


def _local_minute(stamp: str) -> str:
    """``2026-12-04 09:12`` of an ISO time, in the kernel's local time."""
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


_HEADER = re.compile(r"^\[cell \d+(?:, part \d+ of \d+)?\]\n")


def _same_text(text: str) -> str:
    """What makes two memories copies of each other: their text without the ``[cell N]``
    header (the execution count differs between runs) and with whitespace folded."""
    return " ".join(_HEADER.sub("", text.strip()).split())


class Foldable(Protocol):
    """What ``collapse`` reads of a recalled memory (``parsed_replies.RecalledMemory``)."""

    id: str | None
    text: str
    document_id: str | None
    mentioned_at: str | None
    copies: int


M = TypeVar("M", bound=Foldable)


def collapse(memories: Sequence[M]) -> list[M]:
    """One memory per cell, and one per text: ``memories`` (best first) with every later
    version, piece or copy of a cell folded into one, at the rank of the best of them.

    A cell's memory shown is its newest version (a bank may briefly hold two, or hold copies
    from before versions were kept); the others are counted in its ``copies``, as are
    memories that say the same thing (the same cell run again before versions were kept, the
    same ``%retain`` line twice, a cell in two copies of a notebook). Pieces of one version
    (a long cell cut in parts) are not copies: only the best of them is shown."""
    groups: list[list[M]] = []
    by_key: dict[str, int] = {}
    for memory in memories:
        found = cell_document(memory.document_id)
        keys = [f"text:{_same_text(memory.text)}"]
        if found is not None:
            keys.insert(0, f"cell:{found.key}")
        index = next((by_key[k] for k in keys if k in by_key), None)
        if index is None:
            index = len(groups)
            groups.append([])
        groups[index].append(memory)
        for k in keys:
            by_key.setdefault(k, index)
    return [_one_of(group) for group in groups]


def _one_of(group: list[M]) -> M:
    """The memory a group is shown as: the newest version's best piece, with the other
    versions and copies counted."""
    if len(group) == 1:
        return group[0]

    def version(memory: M) -> str:
        found = cell_document(memory.document_id)
        return found.version if found else f"id:{memory.id or memory.document_id}"

    newest = max(group, key=lambda m: parse_iso(m.mentioned_at) or EPOCH)
    shown = next(m for m in group if version(m) == version(newest))
    versions = {version(m) for m in group} - {version(shown)}
    shown.copies = len(versions) + sum(m.copies for m in group if m is not shown)
    return shown


# -- a cell's history, restoring a version, tidying copies -------------------------------------

HISTORY_VERSIONS = 20  # versions a history reads and shows (the newest)
CHANGED_LINES = 3  # changed lines shown per version


@dataclass
class CellVersion:
    """One version of a cell on the server, as its history shows it."""

    version: str
    documents: list[str]
    stored_at: str  # when the server got it
    valid: bool
    text: str = ""
    superseded_at: str | None = None
    reason: str | None = None
    corrected_at: str | None = None  # the newest ``%hindsight correct`` of its memories
    corrections: int = 0
    says: str = ""  # what its corrected memories say now (their text as retained: ``text``)
    restored_at: str | None = None  # the newest restore of its memories


def versions_on_server(client: HindsightClient, bank_id: str, prefix: str) -> list[CellVersion]:
    """Every version of the cell whose documents start with ``prefix``, newest first."""
    found: dict[str, CellVersion] = {}
    offset = 0
    while offset < LIST_CAP:
        reply = client.list_documents(bank_id, q=prefix, limit=LIST_PAGE, offset=offset)
        page = reply.items
        offset += len(page)
        for document in page:
            parsed = cell_document(document.id)
            if parsed is None or not document.id.startswith(prefix):
                continue
            stored = document.created_at or ""
            version = found.setdefault(
                parsed.version, CellVersion(parsed.version, [], stored, False)
            )
            version.documents.append(document.id)
            version.stored_at = min(version.stored_at, stored) if version.stored_at else stored
            version.valid = version.valid or document.memory_unit_count > 0
        if len(page) < LIST_PAGE or offset >= reply.total:
            break
    for version in found.values():
        version.documents.sort(key=_piece)
    return sorted(found.values(), key=lambda v: v.stored_at, reverse=True)


def _piece(document_id: str) -> int:
    found = cell_document(document_id)
    return found.piece if found else 0


def read_history(client: HindsightClient, bank_id: str, prefix: str) -> list[CellVersion]:
    """``versions_on_server`` with each version's text as retained, what its memories were
    corrected to and when, when they were last restored, and, for a superseded or forgotten
    one, when and why (the newest ``HISTORY_VERSIONS``)."""
    versions = versions_on_server(client, bank_id, prefix)[:HISTORY_VERSIONS]
    for version in versions:
        texts, edited = [], set()
        for document_id in version.documents:
            document = client.document(bank_id, document_id)
            texts.append(_HEADER.sub("", (document and document.original_text) or ""))
            for event in client.document_history(bank_id, document_id):
                when = event.created_at
                if event.kind == DocumentEventKind.FACT_EDITED:
                    version.corrections += 1
                    version.corrected_at = max(version.corrected_at or "", when or "") or None
                    edited.add(event.fact_id)
                elif event.kind == DocumentEventKind.FACT_RESTORED:
                    version.restored_at = max(version.restored_at or "", when or "") or None
        version.text = "\n".join(texts)
        state = MemoryState.VALID if version.valid else MemoryState.INVALIDATED
        if not edited and version.valid:
            continue
        says = []
        for document_id in version.documents:
            reply = client.list_memories(
                bank_id, document_id=document_id, state=state, limit=LIST_PAGE
            )
            for memory in reply.items:
                if memory.id in edited:
                    says.append(_HEADER.sub("", memory.text))
                if not version.valid and version.reason is None:
                    version.superseded_at = memory.invalidated_at
                    version.reason = memory.invalidation_reason
        version.says = "\n".join(says)
    return versions


def what_changed(before: str, after: str) -> str:
    """``TENURE_CUTOFF_MONTHS = 2 → TENURE_CUTOFF_MONTHS = 3`` (the lines that changed, at
    most ``CHANGED_LINES`` each way), so a value's past shows in a cell's history."""
    import difflib

    removed, added = [], []
    for line in difflib.ndiff(before.splitlines(), after.splitlines()):
        if line.startswith("- ") and line[2:].strip():
            removed.append(line[2:].strip())
        elif line.startswith("+ ") and line[2:].strip():
            added.append(line[2:].strip())
    if not removed and not added:
        return "the same text"

    def shown(lines: list[str]) -> str:
        more = f" (+{len(lines) - CHANGED_LINES} lines)" if len(lines) > CHANGED_LINES else ""
        return " ⏎ ".join(lines[:CHANGED_LINES]) + more if lines else "(nothing)"

    return f"{shown(removed)} → {shown(added)}"


def supersede_others(
    client: HindsightClient, bank_id: str, prefix: str, keep: str, reason: str
) -> list[CellVersion]:
    """Invalidate every valid version of a cell but ``keep`` (its version hash), with
    ``reason``; the versions that were superseded."""
    done = []
    for version in versions_on_server(client, bank_id, prefix):
        if version.version == keep or not version.valid:
            continue
        for document_id in version.documents:
            reply = client.list_memories(bank_id, document_id=document_id, limit=LIST_PAGE)
            for memory in reply.items:
                if (memory.fact_type or "world") in FACT_TYPES and memory.id:
                    client.update_memory(bank_id, memory.id, state="invalidated", reason=reason)
        done.append(version)
    return done


@dataclass
class Redundant:
    """What ``%hindsight dedupe`` would tidy: documents that only repeat what a newer memory
    says (deleted), and memories of a cell's older versions still valid (superseded)."""

    documents: dict[str, list[str]] = field(default_factory=dict)  # document → its texts
    stale: dict[str, str] = field(default_factory=dict)  # memory id → its text
    read: int = 0  # memories looked at
    complete: bool = True  # False: the scope holds more than were read


def redundant(memories: Sequence[MemoryUnit], complete: bool = True) -> Redundant:
    """Of ``memories`` (a scope's valid ones, as listed), what to tidy: each document none
    of whose memories says anything a newer memory does not say too (copies from before
    versions were kept: re-runs, a ``%retain`` line retained twice); and, for a cell with
    several valid versions, the memories of all but the newest. A cell's current version is
    never deleted: a notebook's copy of a cell is that copy's own memory."""
    found = Redundant(read=len(memories), complete=complete)
    newest_first = sorted(memories, key=lambda m: m.mentioned_at or "", reverse=True)
    said: set[str] = set()
    newest_version: dict[str, str] = {}
    copies: set[str] = set()
    by_document: dict[str, list[MemoryUnit]] = {}
    for memory in newest_first:
        document_id = memory.document_id or ""
        by_document.setdefault(document_id, []).append(memory)
        cell = cell_document(document_id)
        if cell is not None and newest_version.setdefault(cell.key, cell.version) != cell.version:
            found.stale[memory.id] = memory.text
            continue
        text = _same_text(memory.text)
        if text in said:
            copies.add(memory.id)
        said.add(text)
    for document_id, members in by_document.items():
        if not document_id or cell_document(document_id) is not None:
            continue
        if all(m.id in copies for m in members):
            found.documents[document_id] = [m.text for m in members]
    return found
