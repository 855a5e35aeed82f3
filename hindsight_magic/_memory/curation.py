"""Tending memory: forget (reversible), restore, correct, history, the forgotten list, delete a
document, purge what matches — one implementation behind the ``%hindsight`` subcommands, the
methods of a recalled memory, the public functions and the panel's buttons.

A memory is named three ways, and ``Curator.resolve`` reads each:

- ``#3``: the third memory of the last ``%recall`` (its server id and document id);
- a retain id (``hm-…``, ``RetainResult.ids``): the document a ``%retain`` made, which may still
  be queued in this kernel — then it is cancelled there (queue, journal and spool), and never
  reaches the server; one already in flight is deleted once the server has it;
- a memory id (a UUID the server gave, ``r[2].id``).

On the server, *forget* is ``PATCH …/memories/{id}`` with ``state: invalidated`` and a reason (left
out of recall and reflect, kept for audit, reversible), *correct* is a ``PATCH`` of the text
(re-embedded, so recall finds the new words), *delete* is ``DELETE …/documents/{id}`` (the
document and every memory made from it; irreversible, so it first lists what would go unless
``yes``). The server curates facts only: an observation (derived from facts) is refused with a
line saying to curate its sources. Every text here came from the server or the user, so each
output form escapes it (``plain_text``, ``html_text``).
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, ClassVar, NamedTuple, NoReturn, Protocol

from .._api.vocabulary import MemoryState
from .._capture.identity import CELL_DOCUMENT, CellDocument, cell_document
from .._capture.redact import redact
from .._capture.transcript import own_text
from .._errors import PUBLIC, HindsightError, InputError
from .._settings import MINE
from .._text import encodable, html_text, one_line, plain_text, plural, utc_minute_text
from .history import cell_history, cell_label, document_lines, memory_lines
from .layers import layer_refusal
from .paging import ScopeReader
from .provenance import age
from .versions import (
    FACT_TYPES,
    SUPERSEDED,
    redundant,
    supersede_others,
)

if TYPE_CHECKING:
    from .._api.client import Connection
    from .._api.replies import Memory, MemoryUnit
    from .scope import BankScope

# the retain ids made here: a memory's own, or a text retained from a cell (``.0``, and a
# ``%retain`` line's, ``.1``: identity.py)
OWN_ID = re.compile(r"hm-[0-9a-f]{32}-\d+|hm-cell-[0-9a-f]{10}-[0-9a-f]{10}-[0-9a-f]{12}\.[01]")
MEMORY_ID = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
HANDLE = re.compile(r"#(\d+)")
LISTED = 10  # memories named in a preview; the rest are counted
PAGE = 100
PURGE_CAP = 2_000  # memories a purge reads at most (the server scans the bank for each page)
DEDUPE_CAP = 200_000  # memories a dedupe reads at most
DEDUPE_PAGE = 5000  # memories per request (about 0.4 s of the server's on a 50 000 bank)
CURATED_TYPES = FACT_TYPES
SHORT_ID = 8
FORGOTTEN_CAP = 1000  # invalidated memories ``forgotten`` reads to count them
FORGOTTEN_WIDTH = 300  # a forgotten line: its text, id, reason and age


class CurationError(InputError):
    """A curation that cannot be done; the message is one line saying what to do."""

    __module__ = PUBLIC


class Cancelled(Protocol):
    """What the queue's ``cancel`` reports (``_delivery.queue.Cancellation``)."""

    @property
    def cancelled(self) -> tuple[str, ...]: ...
    @property
    def in_flight(self) -> tuple[tuple[str, str], ...]: ...


class ShownMemories(Protocol):
    """What ``#N`` names: the last recall's memories (``results.RecallResult``), in the bank
    they came from. A protocol, so that curation does not import the results it is shown in
    (they import the memories, whose methods curate)."""

    @property
    def bank_id(self) -> str: ...
    def __len__(self) -> int: ...
    def __getitem__(self, index: int) -> Memory: ...


class Target(NamedTuple):
    """A memory or a document, as ``resolve`` read it."""

    memory_id: str | None  # a server memory id
    document_id: str | None  # its document (a retain id is one)
    text: str = ""  # what it says, when known
    type: str | None = None
    shown: str = ""  # how the user named it (``#3``, an id)


@dataclass
class Outcome:
    """What a curation did (or, before ``--yes``, would do): a headline and the memories it
    names, with the ids involved (``.memory_ids``, ``.document_ids``)."""

    _hindsight_result_: ClassVar[bool] = True  # never retained by auto-retain

    headline: str
    items: list[str] = field(default_factory=list)
    memory_ids: tuple[str, ...] = ()
    document_ids: tuple[str, ...] = ()
    done: bool = True  # False: a preview, nothing was changed
    footer: str = ""
    width: int = 160  # how much of each item the text form shows

    def __repr__(self) -> str:
        lines = [self.headline, *(f"  - {one_line(item, self.width)}" for item in self.items)]
        if self.footer:
            lines.append(self.footer)
        return own_text(plain_text("\n".join(lines)))

    __str__ = __repr__

    def _repr_html_(self) -> str:
        esc = html_text
        width = max(self.width, 300)
        rows = "".join(f"<li>{esc(one_line(item, width))}</li>" for item in self.items)
        listed = f"<ul>{rows}</ul>" if rows else ""
        footer = f"<p><i>{esc(self.footer)}</i></p>" if self.footer else ""
        return f"<p>{esc(self.headline)}</p>{listed}{footer}"


def short(memory_id: str) -> str:
    """The first 8 characters of a server id (enough to tell memories apart on screen)."""
    return memory_id[:SHORT_ID] if MEMORY_ID.fullmatch(memory_id) else memory_id


def _quoted(text: str, limit: int = 80) -> str:
    return f"“{one_line(text, limit)}”"


def _compared(memory: MemoryUnit) -> MemoryUnit:
    """What a dedupe keeps of a memory (its id, document, text and date): a bank's worth of
    whole memories would hold every one's metadata and context too."""
    return type(memory).model_construct(
        id=memory.id,
        document_id=memory.document_id,
        text=memory.text,
        mentioned_at=memory.mentioned_at,
    )


class Curator:
    """The session's curation: resolves what the user named, changes it on the server (or
    cancels it in the queue), and counts what this session curated."""

    def __init__(
        self,
        connection: Connection,
        scope: Callable[[], BankScope],
        last_recall: Callable[[], ShownMemories | None],
        cancel: Callable[[Iterable[str]], Cancelled],
        settle: Callable[[str], object],
        secrets: Callable[[], Sequence[str]],
        versions_changed: Callable[[str], object] = lambda bank_id: None,
        changed: Callable[[], object] = lambda: None,
    ) -> None:
        """``versions_changed(bank)``: a cell's versions were changed here (a restore, a
        dedupe), so what the session knows of them must be read again; ``changed()``: any
        memory was (what mental models list without an LLM follows it)."""
        self._versions_changed = versions_changed
        self._changed = changed
        self._connection = connection
        self._scope = scope
        self._last_recall = last_recall
        self._cancel = cancel
        self._settle = settle  # sends what is queued for a bank, waits (bounded) until indexed
        self._secrets = secrets
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()

    # -- naming -------------------------------------------------------------------------------

    def resolve(self, ref: str) -> Target:
        """``#3``, a retain id or a memory id, as a ``Target``; ``CurationError`` when it names
        nothing that can be curated here."""
        ref = ref.strip()
        handle = HANDLE.fullmatch(ref)
        if handle:
            return self._from_handle(int(handle.group(1)), ref)
        if not ref:
            raise CurationError("Name a memory: #N from the last %recall, its id or a retain id.")
        if MEMORY_ID.fullmatch(ref):
            self._refuse_a_layers(ref.lower(), ref)
            return Target(ref.lower(), None, shown=ref)
        return Target(None, encodable(ref), shown=ref)

    def _from_handle(self, number: int, shown: str) -> Target:
        last = self._last_recall()
        if last is None:
            raise CurationError(
                f"{shown} names a memory of the last %recall, and there is none yet in this "
                "session: run %recall first, or give the memory's id."
            )
        if not 1 <= number <= len(last):
            found = plural(len(last), "memory", "memories")
            span = f" (#1–#{len(last)})" if len(last) > 1 else " (#1)" if last else ""
            raise CurationError(f"{shown} is out of range: the last %recall found {found}{span}.")
        memory = last[number - 1]
        layer = getattr(memory, "layer", MINE)
        if layer != MINE:
            raise CurationError(layer_refusal(layer, shown))
        if memory.id is None:
            raise CurationError(f"{shown} has no id from the server, so it cannot be curated.")
        if last.bank_id != self._scope().bank_id:
            raise CurationError(
                f"{shown} is a memory of bank {last.bank_id!r}, and this session now uses "
                f"{self._scope().bank_id!r}: switch back with %hindsight scope, or %recall again."
            )
        return Target(memory.id, memory.document_id, memory.text, memory.type, shown)

    def _refuse_a_layers(self, memory_id: str, shown: str) -> None:
        """A memory id the last recall read from a layer is refused (layers are read only)."""
        last = self._last_recall()
        if last is None:
            return
        for n in range(len(last)):
            memory = last[n]
            layer = getattr(memory, "layer", MINE)
            if layer != MINE and (memory.id or "").lower() == memory_id:
                raise CurationError(layer_refusal(layer, shown))

    def _bank(self) -> str:
        return self._scope().bank_id

    def _count(self, action: str, n: int = 1) -> None:
        """Count what was done (every change to memory is counted, so it is told here)."""
        with self._lock:
            self.counts[action] += n
        self._changed()

    def summary(self) -> str:
        """``2 forgotten, 1 deleted`` (what this session curated; '' when nothing)."""
        with self._lock:
            counts = dict(self.counts)
        order = ("cancelled", "forgotten", "restored", "corrected", "deleted", "superseded")
        return ", ".join(f"{counts[a]} {a}" for a in order if counts.get(a))

    # -- the server's answers, as lines -------------------------------------------------------

    def _memory(self, memory_id: str, shown: str) -> MemoryUnit:
        found = self._connection.client.get_memory(self._bank(), memory_id)
        if found is None:
            raise self._unknown(shown)
        return found

    def _unknown(self, shown: str) -> CurationError:
        return CurationError(
            f"No memory {shown} in bank {self._bank()!r}: check the id (a memory of another "
            "bank or scope is not found here; %hindsight scope shows this one)."
        )

    def _patch(self, target: Target, **changes: str) -> MemoryUnit:
        assert target.memory_id is not None
        try:
            return self._connection.client.update_memory(self._bank(), target.memory_id, **changes)
        except HindsightError as error:
            raise self._refusal(error, target) from None

    def _refusal(self, error: HindsightError, target: Target) -> Exception:
        detail = str(error.details or "")
        if error.status_code == 404:
            return self._unknown(target.shown)
        if "observation" in detail:
            return _observation(target)
        if "invalidated" in detail:
            return CurationError(
                f"{target.shown} is forgotten: %hindsight restore {target.shown} first, "
                "then correct it."
            )
        return error

    def _of_document(self, document_id: str, state: MemoryState | None = None) -> list[MemoryUnit]:
        reply = self._connection.client.list_memories(
            self._bank(), document_id=document_id, state=state, limit=PAGE
        )
        return reply.items

    def _queued(self, target: Target) -> Outcome | None:
        """A retain id still in this kernel's queue is cancelled there; None when it was not
        queued any more (or is not a retain id of this extension). One in flight (or sent and
        not indexed yet) is waited for, bounded, so the server has it before it is changed."""
        assert target.document_id is not None
        if not OWN_ID.fullmatch(target.document_id):
            return None  # someone else's document id: nothing of it waits here
        found = self._cancel([target.document_id])
        if found.cancelled:
            self._count("cancelled")
            return Outcome(
                f"Cancelled {target.shown}: it was still queued in this kernel, so it was never "
                "sent (removed from the journal too).",
                document_ids=found.cancelled,
            )
        self._settle(self._bank())
        return None

    # -- operations ---------------------------------------------------------------------------

    def forget(self, ref: str, reason: str = "") -> Outcome:
        """Leave a memory out of recall and reflect (reversible with ``restore``). A retain
        id forgets every memory made from that retain; one still queued is cancelled."""
        target = self.resolve(ref)
        reason = one_line(redact(encodable(reason), self._secrets()), 500) if reason else ""
        if target.memory_id is None:
            assert target.document_id is not None
            queued = self._queued(target)
            if queued is not None:
                return queued
            facts = self._of_document(target.document_id)
            if not facts:
                return self._none_left(target, "forget")
            changed = []
            for fact in facts:
                fid = fact.id
                self._patch(
                    Target(fid, target.document_id, shown=short(fid)),
                    state="invalidated",
                    **({"reason": reason} if reason else {}),
                )
                changed.append(fid)
            self._count("forgotten", len(changed))
            return Outcome(
                f"Forgot {plural(len(changed), 'memory', 'memories')} of {target.shown} "
                f"(reversible: %hindsight restore {target.shown}).",
                [f.text for f in facts[:LISTED]],
                tuple(changed),
                (target.document_id,),
            )
        changes = {"state": "invalidated", **({"reason": reason} if reason else {})}
        memory = self._patch(target, **changes)
        self._count("forgotten")
        text = memory.text or target.text
        return Outcome(
            f"Forgot {target.shown}: {_quoted(text)} — the next %recall and %%reflect leave it "
            f"out (reversible: %hindsight restore {target.memory_id}).",
            memory_ids=(str(target.memory_id),),
        )

    def _none_left(self, target: Target, verb: str) -> NoReturn:
        raise CurationError(
            f"No memory of {target.shown} in bank {self._bank()!r} to {verb}: check the id "
            "(%hindsight forgotten lists forgotten ones)."
        )

    def restore(self, ref: str) -> Outcome:
        """Bring a forgotten memory back into recall (a retain id: every memory of it)."""
        target = self.resolve(ref)
        if target.memory_id is None:
            assert target.document_id is not None
            facts = self._restore_all(target.document_id)
            if not facts:
                return self._none_left(target, "restore")
            return Outcome(
                f"Restored {plural(len(facts), 'memory', 'memories')} of {target.shown}: "
                f"back in recall{self._made_current(target.document_id)}.",
                [f.text for f in facts[:LISTED]],
                tuple(f.id for f in facts),
                (target.document_id,),
            )
        memory = self._patch(target, state="valid")
        self._count("restored")
        document_id = memory.document_id or ""
        if cell_document(document_id) is None:
            return Outcome(
                f"Restored {target.shown}: {_quoted(memory.text)} is back in recall.",
                memory_ids=(str(target.memory_id),),
            )
        # a cell's version: the rest of it too (maybe nothing more), as the current one
        rest = self._restore_all(document_id)
        return Outcome(
            f"Restored {target.shown}: {_quoted(memory.text)} is back in recall"
            f"{self._made_current(document_id)}.",
            [f.text for f in rest[:LISTED]],
            (str(target.memory_id), *(f.id for f in rest)),
            (document_id,),
        )

    def _restore_all(self, document_id: str) -> list[MemoryUnit]:
        """Make every invalidated memory of ``document_id`` valid again; returns them."""
        facts = self._of_document(document_id, state=MemoryState.INVALIDATED)
        for fact in facts:
            self._patch(Target(fact.id, document_id, shown=short(fact.id)), state="valid")
        if facts:
            self._count("restored", len(facts))
        return facts

    def _made_current(self, document_id: str) -> str:
        """After a version of a cell was restored: every other valid version superseded, so
        it is the cell's current one; the words that say so ('' for any other document)."""
        cell = cell_document(document_id)
        if cell is None:
            return ""
        client, bank = self._connection.client, self._bank()
        prefix = f"{CELL_DOCUMENT}{cell.key}-"
        reason = f"{SUPERSEDED} a restored version ({_now_minute()})"
        done = supersede_others(client, bank, prefix, cell.version, reason)
        self._versions_changed(bank)
        if not done:
            return ", as the cell's current version"
        self._count("superseded", len(done))
        return (
            ", as the cell's current version (the version of "
            f"{utc_minute_text(done[0].stored_at, ' UTC')} is superseded, and kept)"
        )

    def correct(self, ref: str, text: str) -> Outcome:
        """Make a memory say ``text`` instead (re-embedded: recall finds the new words, not
        the old); secrets in ``text`` are redacted as for ``%retain``."""
        new = redact(encodable(text.strip()), self._secrets())
        if not new:
            raise CurationError("Nothing to correct to: give the new text after the memory.")
        target = self.resolve(ref)
        if target.memory_id is None:
            raise CurationError(
                f"{target.shown} names a retained document, which may hold several memories: "
                "%recall it and correct one by #N or its id."
            )
        before = self._memory(target.memory_id, target.shown)
        if before.kind not in (None, *CURATED_TYPES):
            raise _observation(target)
        memory = self._patch(target, text=new)
        self._count("corrected")
        return Outcome(
            f"Corrected {target.shown}: it now says {_quoted(memory.text or new)} "
            f"(it said {_quoted(before.text)}).",
            memory_ids=(str(target.memory_id),),
        )

    def history(self, ref: str) -> Outcome:
        """What a memory said and when it changed, from the server (``history.py``): for a
        fact, the text it was retained with, what it says now and its document's edits,
        forgets and restores; for an observation, its earlier texts; for a cell's memory or
        document, the cell's versions."""
        target = self.resolve(ref)
        client, bank = self._connection.client, self._bank()
        if target.memory_id is None:
            assert target.document_id is not None
            cell = cell_document(target.document_id)
            if cell is not None:
                return self._cell_history(cell, target.shown, "")
            document = client.document(bank, target.document_id)
            if document is None:
                raise CurationError(
                    f"No document {target.shown} in bank {bank!r}: it may still be queued "
                    "(%hindsight flush) or belong to another scope."
                )
            lines = document_lines(client, bank, target.document_id, document)
            return Outcome(f"History of {target.shown} (newest change first):", lines)
        memory = self._memory(target.memory_id, target.shown)
        cell = cell_document(memory.document_id or "")
        if cell is not None:
            return self._cell_history(cell, target.shown, cell_label(memory))
        lines = memory_lines(client, bank, memory, target.memory_id)
        return Outcome(f"History of {target.shown} (newest first):", lines)

    def _cell_history(self, cell: CellDocument, shown: str, label: str) -> Outcome:
        """The versions of a notebook cell, newest first (``history.cell_history``)."""
        bank = self._bank()
        told = cell_history(self._connection.client, bank, cell)
        if told is None:
            raise CurationError(f"No versions of {shown} in bank {bank!r}: it may still be queued.")
        name = f" ({label})" if label else ""
        return Outcome(
            f"History of {shown}{name}: {told.count}, newest first (%hindsight restore ID brings "
            "one back as the current version):",
            told.lines,
            document_ids=told.document_ids,
        )

    def dedupe(
        self, yes: bool = False, read: Callable[[int, int], object] = lambda done, total: None
    ) -> Outcome:
        """Tidy what a bank holds twice: the copies of one text left before versions were kept
        (re-runs, a ``%retain`` line retained twice) are deleted for good, the newest of each
        kept; a cell's older versions still valid are superseded (kept, reversible). Without
        ``yes`` it lists what it would do and changes nothing.

        Whether a text is a copy depends on every newer memory, so the scope is read whole
        (the facts, by time: ``paging.ScopeReader``), at most ``DEDUPE_CAP``; ``read(done,
        total)`` follows it (a bar, where it is long), and the outcome says how many were read.
        """
        scope, client = self._scope(), self._connection.client
        reader = ScopeReader(self._connection, scope)
        totals = {fact_type: reader.count(fact_type) for fact_type in CURATED_TYPES}
        total = sum(totals.values())
        read(0, total)
        memories: list[MemoryUnit] = []
        for fact_type in (t for t in CURATED_TYPES if totals[t]):
            for page in reader.pages(fact_type, page=DEDUPE_PAGE):
                memories += [_compared(memory) for memory in page]
                read(len(memories), max(total, len(memories)))
                if len(memories) >= DEDUPE_CAP:
                    break
            if len(memories) >= DEDUPE_CAP:
                break
        complete = len(memories) < DEDUPE_CAP
        partly = (
            f" ({plural(len(memories), 'memory', 'memories')} read)"
            if complete
            else f" (the newest {len(memories)} of {total} memories read)"
        )
        found = redundant(memories, complete)
        if not found.documents and not found.stale:
            return Outcome(f"Nothing to tidy in bank {scope.bank_id!r}{partly}: no copies.")
        copies = sum(len(texts) for texts in found.documents.values())
        parts = []
        if found.documents:
            parts.append(
                f"delete {plural(len(found.documents), 'document', 'documents')} holding "
                f"{plural(copies, 'copy', 'copies')} of memories kept elsewhere"
            )
        if found.stale:
            parts.append(
                f"supersede {plural(len(found.stale), 'memory', 'memories')} of cells' "
                "earlier versions (kept, reversible)"
            )
        listed = [t for texts in found.documents.values() for t in texts] + list(
            found.stale.values()
        )
        if not yes:
            more = f"… and {len(listed) - LISTED} more. " if len(listed) > LISTED else ""
            return Outcome(
                f"Would {' and '.join(parts)} in bank {scope.bank_id!r}{partly}:",
                listed[:LISTED],
                tuple(found.stale),
                tuple(found.documents),
                done=False,
                footer=f"{more}Nothing was changed: run again with --yes (yes=True in "
                "Python) to tidy them.",
            )
        deleted = 0
        for document_id in found.documents:
            if client.delete_document(scope.bank_id, document_id) is not None:
                deleted += 1
        reason = f"{SUPERSEDED} a newer version of the same cell ({_now_minute()})"
        for memory_id in found.stale:
            client.update_memory(scope.bank_id, memory_id, state="invalidated", reason=reason)
        self._count("deleted", deleted)
        self._count("superseded", len(found.stale))
        self._versions_changed(scope.bank_id)
        done = []
        if deleted:
            done.append(f"deleted {plural(deleted, 'document', 'documents')} of copies")
        if found.stale:
            done.append(f"superseded {plural(len(found.stale), 'memory', 'memories')}")
        return Outcome(
            f"Tidied bank {scope.bank_id!r}{partly}: {' and '.join(done) or 'nothing left to do'}.",
            document_ids=tuple(found.documents),
            memory_ids=tuple(found.stale),
        )

    def forgotten(self) -> Outcome:
        """The forgotten (invalidated) memories of this scope, newest first, with reasons and
        ids: the ones the user forgot first, then the earlier versions of cells that newer ones
        superseded (kept for history, not forgotten), each counted apart."""
        scope = self._scope()
        client, found, offset, total = self._connection.client, [], 0, 0
        while offset < FORGOTTEN_CAP:
            listing = scope.listing(MemoryState.INVALIDATED, PAGE)
            reply = client.list_memories(scope.bank_id, **listing, offset=offset)
            found += reply.items
            offset += len(reply.items)
            total = max(reply.total, offset)
            if len(reply.items) < PAGE or offset >= reply.total:
                break
        if not found:
            return Outcome(f"No forgotten memories in bank {scope.bank_id!r}.")
        found.sort(key=lambda m: m.invalidated_at or "", reverse=True)
        superseded = [m for m in found if _superseded(m)]
        forgot = [m for m in found if not _superseded(m)]
        counts = [plural(len(forgot), "forgotten memory", "forgotten memories")]
        if superseded:
            versions = plural(len(superseded), "earlier version", "earlier versions")
            counts.append(f"{versions} of cells superseded (kept for history)")
        read = f" (the newest {len(found)} of {total} read)" if total > len(found) else ""
        now = datetime.now(timezone.utc)
        shown = (forgot + superseded)[:PAGE]
        more = f"… and {len(found) - len(shown)} more." if len(found) > len(shown) else ""
        return Outcome(
            f"{' and '.join(counts)} in bank {scope.bank_id!r}{read} (newest first; "
            "%hindsight restore ID brings one back):",
            [_forgotten_line(memory, now) for memory in shown],
            tuple(m.id for m in shown),
            footer=more,
            width=FORGOTTEN_WIDTH,
        )

    def delete(self, ref: str, yes: bool = False) -> Outcome:
        """Delete a whole document and every memory made from it (irreversible). Without
        ``yes`` it lists what would go and deletes nothing."""
        target = self.resolve(ref)
        if target.memory_id is not None and target.document_id is None:
            memory = self._memory(target.memory_id, target.shown)
            if not memory.document_id:
                raise CurationError(
                    f"{target.shown} has no source document (an observation): delete the "
                    "documents of the facts it is based on."
                )
            target = target._replace(document_id=memory.document_id)
        assert target.document_id is not None
        document_id = target.document_id
        shown = target.shown if target.memory_id is None else f"the document of {target.shown}"
        if target.memory_id is None and OWN_ID.fullmatch(document_id):
            if not yes:
                cancel = self._preview_queued(document_id, shown)
                if cancel is not None:
                    return cancel
            else:
                queued = self._queued(target)
                if queued is not None:
                    return queued
        return self._delete_documents([document_id], shown, yes)

    def _preview_queued(self, document_id: str, shown: str) -> Outcome | None:
        client = self._connection.client
        if client.document(self._bank(), document_id) is not None:
            return None
        return Outcome(
            f"{shown} is not on the server (it may still be queued in this kernel): run again "
            "with --yes to cancel or delete it.",
            document_ids=(document_id,),
            done=False,
        )

    def _delete_documents(self, document_ids: list[str], shown: str, yes: bool) -> Outcome:
        client, bank = self._connection.client, self._bank()
        if not yes:
            facts: list[MemoryUnit] = []
            known = []
            for document_id in document_ids:
                document = client.document(bank, document_id)
                if document is None:
                    continue
                known.append(document_id)
                facts += self._of_document(document_id) + self._of_document(
                    document_id, MemoryState.INVALIDATED
                )
            if not known:
                raise CurationError(f"No document {shown} in bank {bank!r}: check the id.")
            count = plural(len(facts), "memory", "memories")
            docs = plural(len(known), "document", "documents")
            headline = f"Would delete {docs} ({shown}) and the {count} made from it, for good:"
            return _preview(headline, facts, known, "delete them")
        deleted, units = [], 0
        for document_id in document_ids:
            reply = client.delete_document(bank, document_id)
            if reply is not None:
                deleted.append(document_id)
                units += reply.memory_units_deleted
        if not deleted:
            raise CurationError(f"No document {shown} in bank {bank!r}: check the id.")
        self._count("deleted", len(deleted))
        return Outcome(
            f"Deleted {plural(len(deleted), 'document', 'documents')} ({shown}) and "
            f"{plural(units, 'memory', 'memories')} made from it, for good.",
            document_ids=tuple(deleted),
        )

    def purge_matching(self, text: str, yes: bool = False) -> Outcome:
        """Every memory whose text contains ``text`` exactly (a leaked key; case counts), and
        the documents they came from: listed, and deleted with ``yes``. Observations are
        followed to the facts (and so documents) they were made from that hold the text too.

        The server's text search is SQL ``ILIKE`` over a memory's text *and its context*, with
        ``%`` and ``_`` as wildcards: it only narrows the search here. Its wildcards are
        escaped, and every memory it returns is checked again, so that a document is deleted
        only when one of its memories really says ``text`` (``upyt`` must not match the
        ``jupyter`` context of every memory the extension writes)."""
        needle = encodable(text.strip())
        if not needle:
            raise CurationError("Nothing to match: give the text to purge (a leaked key …).")
        client, bank = self._connection.client, self._bank()
        pattern = like_literal(needle)
        found: list[MemoryUnit] = []
        for state in (None, MemoryState.INVALIDATED):
            offset, read = 0, 0
            while read < PURGE_CAP:
                reply = client.list_memories(
                    bank, q=pattern, state=state, limit=PAGE, offset=offset
                )
                page = reply.items
                read += len(page)
                found += [memory for memory in page if needle in memory.text]
                offset += len(page)
                if len(page) < PAGE or offset >= reply.total:
                    break
        documents: dict[str, None] = {}
        for memory in found:
            if memory.document_id:
                documents[memory.document_id] = None
            for source in memory.source_memory_ids or []:
                origin = client.get_memory(bank, source)
                if origin and origin.document_id and needle in origin.text:
                    documents[origin.document_id] = None
        if not found:
            return Outcome(f"No memory in bank {bank!r} contains {_quoted(needle, 40)}.")
        shown = f"matching {_quoted(needle, 40)}"
        if not yes:
            count = plural(len(found), "memory", "memories")
            docs = plural(len(documents), "document", "documents")
            headline = f"{count} {shown}, from {docs}:"
            return _preview(headline, found, list(documents), "delete those documents")
        return self._delete_documents(list(documents), shown, yes=True)


def _now_minute() -> str:
    """``2026-12-04 09:12``, now, in the kernel's local time."""
    return datetime.now().astimezone().strftime("%Y-%m-%d %H:%M")


def _superseded(memory: MemoryUnit) -> bool:
    """Whether an invalidated memory is an earlier version a newer one replaced (the
    extension's reason says so), not one the user forgot."""
    return (memory.invalidation_reason or "").startswith(SUPERSEDED)


def _forgotten_line(memory: MemoryUnit, now: datetime) -> str:
    """``text — id · reason: … · forgotten 2 hours ago`` (a superseded version: its reason
    and ``superseded 2 hours ago``), every part kept in the text form's width."""
    line = f"{one_line(memory.text, 120)} — {memory.id}"
    reason = memory.invalidation_reason
    when = age(memory.invalidated_at, now)
    if _superseded(memory):
        return f"{line} · {one_line(reason or '', 80)} · superseded {when}"
    if reason:
        line += f" · reason: {one_line(reason, 80)}"
    return f"{line} · forgotten {when}"


def like_literal(text: str) -> str:
    """``text`` for a SQL ``LIKE`` pattern that matches it literally: its ``\\``, ``%`` and
    ``_`` escaped with the default escape character, the backslash."""
    return re.sub(r"([\\%_])", r"\\\1", text)


def _preview(
    headline: str, memories: list[MemoryUnit], documents: list[str], action: str
) -> Outcome:
    """What a delete would remove: the first memories listed, the rest counted, nothing done."""
    more = f"… and {len(memories) - LISTED} more. " if len(memories) > LISTED else ""
    return Outcome(
        headline,
        [m.text for m in memories[:LISTED]],
        tuple(m.id for m in memories),
        tuple(documents),
        done=False,
        footer=f"{more}Nothing was deleted: run again with --yes (yes=True in Python) to {action}.",
    )


def _observation(target: Target) -> CurationError:
    return CurationError(
        f"{target.shown} is an observation, which the server derives from facts: forget or "
        "correct the facts it is based on (%hindsight history shows them)."
    )
