"""A session's parts: what each is, who gets what (``build_parts``), the record that holds them
(``Parts``), and the notices part (the lines background work leaves for the user).

Each part is built with keyword arguments; what a part needs from another is a bound method or
a small protocol of the part that uses it (``Readiness``, ``Scheduler``, ``StoredDocuments`` …),
and what the parts need from their session is ``cells.Placed``. Where two parts need each other (the
versions run on the worker, which sends through the sender, which asks the versions what the
server holds), the one built first gets a named function that reaches the other once it exists.

- ``queue_memory`` (session): the session's full retain, with where a memory came from (its
  cells, its agent, its source), for the extension's own callers (``wiring.queue_memory``);
- ``connection`` (api): the client for the URL, key and timeouts in force; every part that
  talks to the server asks it for the client of the moment;
- ``notices`` (session): the lines background work leaves for the user, shown before the next
  magic's output;
- ``secrets`` (capture): the secret values redacted from every memory, cached;
- ``journal_file`` (delivery): the SQLite journal the queue keeps its memories in (None when
  the journal is off); a read also finds there what other kernels queued;
- ``sender`` (delivery): one batch to the server (ensure-bank, identity, the refused-key
  message);
- ``queue`` (delivery): batches, retries, and its journal on disk; it reports refusals to
  ``notices``;
- ``worker`` (delivery): the one background thread; it sends the queue's batches through the
  ``sender`` and runs every other part's background jobs (``submit``);
- ``transcripts`` (delivery): follows the transcripts the server accepted until it has
  indexed them, so a read can say how many cells it cannot find yet;
- ``ready`` (delivery): readies a read of a bank for every part that reads: sends what is
  queued, waits (bounded) until the server can find the memories the user queued, and says
  what it cannot find yet;
- ``autoretain`` (capture): cells → transcripts, queued through ``retain``, each cell a
  document per version that ``versions`` plans;
- ``versions`` (memory): a cell's versions: an unchanged re-run sends nothing, a changed cell
  supersedes its earlier version;
- ``cells`` (session): the document a cell that ran, or a ``%retain`` line in it, becomes
  (its identity, ``versions`` plans it);
- ``mental_models`` (memory): the bank's mental models, loaded on the worker;
- ``llm`` (memory): whether the server has an LLM that writes, which the reader, the models
  and the overview ask before they promise an answer;
- ``reader`` (memory): recall and reflect, after ``ready`` sent and indexed the queue (and,
  in a session that ``reads_others``, what other kernels queued for the bank: an agent's
  read-after-write across processes);
- ``layer_asking`` (memory): the threads the reader asks the layers (banks read beside one's
  own) on, kept for the session;
- ``curator`` (memory): forget, restore, correct, history, delete, purge and dedupe;
- ``overview`` (memory): the bank seen whole, the timeline and the entity map;
- ``archiver`` (memory): snapshot, restore and clone.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .._api.client import Connection
from .._capture.autoretain import AutoRetainer
from .._capture.redact import SecretValues
from .._delivery.indexing import ReadPreparation, TranscriptWatch
from .._delivery.journal import open_journal
from .._delivery.queue import RetainQueue
from .._delivery.sender import BatchSender
from .._delivery.worker import Worker
from .._memory.archive import Archiver
from .._memory.curation import Curator
from .._memory.layers import LayerAsking
from .._memory.llm import ServerLlm
from .._memory.mental_models import MentalModelCache
from .._memory.overview import BankOverview
from .._memory.reading import Reader
from .._memory.versions import CellVersions
from .._operations import RecallRequest
from .._text import plural
from .cells import CellDocuments, Placed

if TYPE_CHECKING:
    from datetime import datetime

    from .._capture.autoretain import Source
    from .._capture.evidence import Evidence
    from .._delivery.items import Batch, UpdateMode
    from .._delivery.journal_file import JournalFile
    from .._delivery.queue import SentOperation
    from .._machine import HeadlessNotebook
    from .._memory.curation import ShownMemories
    from .._memory.provenance import AgentOrigin
    from .._memory.results import RecallResult
    from .._memory.scope import BankScope
    from .._settings import HindsightSettings


class QueueMemory(Protocol):
    """Queues one memory with what only the extension's own callers know (the session's
    ``_queue``; its public ``retain`` takes what a user passes)."""

    def __call__(
        self,
        content: str,
        *,
        context: str | None = ...,
        tags: Sequence[str] = ...,
        document_id: str | None = ...,
        update_mode: UpdateMode | None = ...,
        ran_at: datetime | float | None = ...,
        timestamp: str | None = ...,
        source: Source = ...,
        cells: Sequence[int] = ...,
        agent: AgentOrigin | None = ...,
        entities: Sequence[str] = ...,
        replaces: str | None = ...,
        cell_id: str | None = ...,
        cell_source: str | None = ...,
        dated: str = ...,
        evidence: tuple[Sequence[Evidence], str] = ...,
    ) -> str | None: ...


PREPARED_WAIT_S = 30.0  # a restore waits at most this for the first load to prepare the bank


def build_parts(
    settings: HindsightSettings,
    *,
    owner: Placed,
    connection: Connection,
    cwd: str | None,
    clock: Callable[[], float],
    queue_options: Mapping[str, Any],
    reads_others: bool,
    retain: QueueMemory,
    headless: HeadlessNotebook | None,
    sent: Callable[[SentOperation], None],
    flush: Callable[[], object],
) -> Parts:
    """Build one session's parts and hand each what it needs, nothing else.

    From the session: ``owner``, where it runs (its scope of the moment, which a setting or a
    new project changes, its id, project, notebook and run); ``reads_others``: whether a read
    first sends what other kernels queued for the bank; ``retain`` queues one memory;
    ``headless``: the notebook a headless run executes (its cells are found there by their
    source); ``sent`` hears of each batch that went out asynchronously; ``flush`` sends
    everything now. ``queue_options`` tune the queue (tests)."""

    def scope() -> BankScope:
        """The session's scope of the moment (every part that reads or writes asks it)."""
        return owner.scope

    notices = Notices()
    secrets = SecretValues(settings.key)
    journal, problem = open_journal(settings.journal_path, cwd)
    if problem:
        notices.add(problem)

    def on_worker(job: Callable[[], object], delay_s: float) -> bool:
        """The versions' jobs run on the worker, built after them (it sends through the
        sender, which asks the versions what the server holds)."""
        return worker.submit(job, delay_s)

    def bank_created(bank_id: str) -> None:
        """The first retain creates a bank (reads never do): its mental models are seeded."""
        mental_models.bank_created(bank_id)

    def find(query: str, count: int, tokens: int) -> RecallResult:
        """What a mental model chooses from on a server without an LLM (the reader's)."""
        return reader.find(RecallRequest(query, limit=count, max_tokens=tokens))

    def last_recall() -> ShownMemories | None:
        """``#3``: the third memory of the reader's last recall (the reader curates through
        the curator, so it is built after it)."""
        return reader.last_recall

    def prepared() -> object:
        """A restore waits (bounded) for the first model load to prepare the bank."""
        return mental_models.wait_first_load(PREPARED_WAIT_S)

    versions = CellVersions(connection=connection, submit=on_worker)
    cells = CellDocuments(place=owner, headless=headless, versions=versions)
    sender = BatchSender(
        connection=connection,
        settings=settings,
        secrets=secrets,
        stored=versions,
        on_bank=bank_created,
    )
    queue = RetainQueue(
        journal=journal,
        on_failure=notices.retention_failed,
        on_notice=notices.add,
        on_sent=sent,
        clock=clock,
        **queue_options,
    )
    worker = Worker(queue=queue, send=sender, refusal=sender.refusal, clock=clock)
    recovered = queue.recover()
    if recovered:
        count = plural(recovered, "memory", "memories")
        notices.add(f"Recovered {count} left by an earlier kernel; sending now.")
        queue.request_flush()
    autoretain = AutoRetainer(
        settings,
        session_id=owner.session_id,
        retain=retain,
        worker=worker,
        secrets=secrets,
        plan=cells.plan,
    )

    def working() -> bool:
        """Whether the worker runs (a read waits for the queue only while something sends)."""
        return worker.running

    ready = ReadPreparation(
        sender=sender,
        queue=queue,
        working=working,
        in_worker_job=worker.in_job,
        cells_due=autoretain.process,
        journal_file=journal,
        reads_others=reads_others,
    )
    llm = ServerLlm(server=connection)
    mental_models = MentalModelCache(
        settings=settings, connection=connection, scope=scope, worker=worker, llm=llm, find=find
    )
    curator = Curator(
        connection=connection,
        scope=scope,
        last_recall=last_recall,
        cancel=queue.cancel,
        settle=ready,
        secrets=secrets,
        versions_changed=versions.forget_bank,
        changed=mental_models.memory_changed,
    )
    layer_asking = LayerAsking()
    reader = Reader(
        settings=settings,
        connection=connection,
        scope=scope,
        before_read=ready,
        curator=curator,
        model_names=mental_models.names,
        asking=layer_asking,
        llm=llm,
    )
    return Parts(
        queue_memory=retain,
        connection=connection,
        notices=notices,
        secrets=secrets,
        journal_file=journal,
        sender=sender,
        queue=queue,
        worker=worker,
        transcripts=TranscriptWatch(sender=sender, queue=queue, scheduler=worker.submit),
        autoretain=autoretain,
        ready=ready,
        mental_models=mental_models,
        llm=llm,
        reader=reader,
        layer_asking=layer_asking,
        curator=curator,
        versions=versions,
        cells=cells,
        overview=BankOverview(
            connection=connection, scope=scope, before_read=ready, curator=curator, llm=llm
        ),
        archiver=Archiver(
            connection=connection,
            scope=scope,
            flush=flush,
            indexed=ready,
            changed=mental_models.reload,
            prepared=prepared,
        ),
    )


@dataclass(eq=False)
class Parts:
    """One session's parts, built and wired by ``build_parts``. The session alone uses them
    (the front ends, the panel and the agents ask the session)."""

    queue_memory: QueueMemory  # the session's full retain, for ``wiring.queue_memory``
    connection: Connection
    notices: Notices
    secrets: SecretValues
    journal_file: JournalFile | None
    sender: BatchSender
    queue: RetainQueue
    worker: Worker
    transcripts: TranscriptWatch
    autoretain: AutoRetainer
    ready: ReadPreparation
    mental_models: MentalModelCache
    llm: ServerLlm
    reader: Reader
    layer_asking: LayerAsking
    curator: Curator
    versions: CellVersions
    cells: CellDocuments
    overview: BankOverview
    archiver: Archiver


MAX_NOTICES = 50


class Notices:
    """A bounded queue of one-line notices (thread-safe: ``deque`` appends and pops are)."""

    def __init__(self) -> None:
        self._notices: deque[str] = deque(maxlen=MAX_NOTICES)

    def add(self, text: str) -> None:
        """Leave one line for the user."""
        self._notices.append(text)

    def retention_failed(self, batch: Batch, message: str) -> None:
        """The queue's ``on_failure``: the server refused a batch for good."""
        count = plural(batch.count, "memory", "memories")
        self.add(
            f"Memory retention failed for {count}: {message} "
            "(kept: %hindsight retry re-sends, %hindsight retry --drop discards)"
        )

    def pending(self) -> tuple[str, ...]:
        """The notices not yet shown, without taking them."""
        return tuple(self._notices)

    def take(self) -> list[str]:
        """The notices not yet shown, oldest first (each is returned once)."""
        taken = []
        while self._notices:
            taken.append(self._notices.popleft())
        return taken
