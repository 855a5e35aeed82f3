"""``HindsightSession``: one kernel's memory, built of parts (``parts.build_parts`` builds them
and says who gets what) that it hands out to no one.

The parts are private (``Parts``): the front ends (the public functions, the magics, the
extension's cell hook) call the session's use-case methods — ``retain``, ``recall``,
``reflect``, ``forget``, ``snapshot``, ``list_models`` … — and never reach a part. What only
the extension's own front ends ask (a memory's origin, the wait after it, the notices, the
shell's hook) are functions of ``wiring``, not methods: ``hm.Session`` is what a user calls.

The UI (status, the panel) and the agents get none of these either: they call the same
methods as the public functions, and read one typed ``SessionStatus`` (``status``).

The session also follows the settings: when one changes, the part its ``affects`` tag names is
rebuilt (a new connection or scope flushes the queue first, so queued memories keep their route).
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from .._api.client import Connection, Timeouts
from .._capture import redact
from .._capture.autoretain import Source
from .._delivery.indexing import operation_ended
from .._delivery.items import (
    FlushOutcome,
    NotAnswering,
    Route,
    UpdateMode,
    new_item,
    own_document_id,
)
from .._delivery.queue import SentOperation
from .._diagnosis import NOTEBOOK_COMMAND, explain_for
from .._errors import HindsightError
from .._machine import (
    HeadlessNotebook,
    configure_logging,
    headless_notebook,
    in_kernel,
    kernel_id,
    notebook_from_env,
    resolve_api_url,
)
from .._memory.archive import Manifest, layer_snapshot, manifest_path
from .._memory.layers import (
    Layer,
    LayerError,
    LayerList,
    layer_states,
    layers_of,
    pairs_of,
    with_layer,
    without_layer,
)
from .._memory.provenance import (
    BEFORE,
    BEFORE_CHARS,
    PYTHON_API,
    AgentOrigin,
    provenance_metadata,
)
from .._memory.scope import BankScope, close_banks, compute_scope, project_label
from .._operations import RecallRequest, ReflectRequest
from .._settings import (
    MINE,
    Affects,
    ScopeMode,
    SettingsError,
    bank_id_problem,
    tag_problem,
)
from .._text import local_timestamp, one_line
from .parts import Parts, build_parts
from .status import ServerState, SessionStatus, read_status, server_check

if TYPE_CHECKING:
    from pathlib import Path

    import httpx

    from .._capture.autoretain import AutoRetainStatus
    from .._capture.evidence import Evidence
    from .._delivery.items import QueueStats
    from .._memory.archive import Progress
    from .._memory.curation import Outcome
    from .._memory.mental_models import MentalModel, ModelChange, RefreshOutcome, SeedOutcome
    from .._memory.overview import EntityMap, Period, TimelineCounts
    from .._memory.results import RecallResult, ReflectResult
    from .._settings import HindsightSettings
    from .._timewindow import TimeWindow


log = logging.getLogger("hindsight_magic")
FLUSH_BEFORE_READ_S = 5.0
IN_SEQUENCE = (Source.PYTHON_API, Source.RETAIN_MAGIC)  # what a loop or a cell retains in a row
EXIT_FLUSH_S = 3.0
SETTLE_S = 20.0  # a flush or an exit waits at most this for changed cells' new versions
STARTUP_DELAY_S = 0.3
BANKS_READ = 1000  # the banks a new bank's name is compared with (the server's first ones)


def scope_problem(scope: BankScope) -> str | None:
    """Why the bank or tags of ``scope`` cannot be used (each setting was fine alone: a prefix,
    a bank and a project label together can be too long), or None."""
    problem = bank_id_problem(scope.bank_id)
    if problem:
        return f"Invalid bank {one_line(scope.bank_id, 60)!r}: {problem}."
    for tag in scope.retain_tags or ():
        problem = tag_problem(tag)
        if problem:
            return f"Invalid project tag {one_line(tag, 60)!r}: {problem}."
    return None


class HindsightSession:
    """Everything one kernel (or one script) needs to remember.

    ``Session(Settings(bank_id="nb"))``: the settings are ``hindsight_magic.Settings`` (a
    traitlets ``Configurable`` the magics subclass, so ``%hindsight config`` and a session
    share one object); ``transport`` routes its requests through an ``httpx`` transport."""

    def __init__(
        self,
        settings: HindsightSettings,
        *,
        cwd: str | None = None,
        session_id: str | None = None,
        notebook: Callable[[], str | None] = notebook_from_env,
        transport: httpx.BaseTransport | None = None,
        start_worker: bool = True,
        queue_options: dict[str, Any] | None = None,
        reads_others: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.reads_others = reads_others
        configure_logging(settings.debug)
        self.session_id = session_id or kernel_id() or str(uuid.uuid4())
        self.started_at = datetime.now(timezone.utc)
        self._notebook = notebook
        self._headless_notebook, self.run_id = self._headless()
        self._lock = threading.RLock()
        self._folder = cwd  # the project's folder (None: the working folder)
        self.label = project_label(cwd)
        self.scope = self._compute_scope()
        self._parts = build_parts(
            settings,
            owner=self,
            connection=Connection(*self._server(), transport=transport),
            cwd=cwd,
            clock=clock,
            queue_options=queue_options or {},
            reads_others=reads_others,
            retain=self._queue,
            headless=self._headless_notebook,
            sent=self._sent_async,
            flush=self.flush,
        )
        PARTS[id(self)] = self._parts
        self._closed = False
        self._told_unreachable: float | None = None  # the outage a %retain line told of
        # each bank's last memory retained in a sequence: where (bank, cell) and its end
        self._retained_last: dict[str, tuple[tuple[str, tuple[int, ...]], str]] = {}
        self._server_state: ServerState | None = None  # what ``check_server`` read last
        settings.observe(self._setting_changed, names=list(settings.setting_names()))
        settings.scope_check = self._scope_with
        atexit.register(self._at_exit)
        if start_worker:
            self._parts.worker.start()
            self._parts.worker.submit(self._warm_up, STARTUP_DELAY_S)
        # after %load_ext has returned: the warm-up and the first model load import httpx,
        # which would compete with the rest of the load for the interpreter
        self._parts.mental_models.start(delay_s=STARTUP_DELAY_S if start_worker else 0.0)

    # -- where it runs -------------------------------------------------------------------------

    @property
    def api_url(self) -> str:
        """The server URL in use (the setting, a running local server, or the fallback)."""
        return self._parts.connection.url

    @property
    def notebook(self) -> str | None:
        """The notebook's path: as Jupyter tells it, else the ``notebook`` setting, else the
        notebook a headless runner executes (papermill, nbconvert), else None."""
        headless = self._headless_notebook.name if self._headless_notebook else None
        return self._notebook() or self.settings.notebook or headless

    def _headless(self) -> tuple[HeadlessNotebook | None, str | None]:
        """(the notebook a headless runner executes, this run's id) in a kernel Jupyter Server
        did not start — papermill, nbconvert, ``jupyter execute``, nbclient — where many runs of
        one notebook must be told apart; (None, None) elsewhere. Read once: a ``%retain`` must
        stay cheap."""
        if self._notebook() or not in_kernel():
            return None, None
        return headless_notebook(), self.started_at.strftime("%Y-%m-%dT%H:%M:%SZ")

    def _server(self) -> tuple[str, str | None, Timeouts]:
        """The server the settings name: its URL, the API key, the timeouts."""
        s = self.settings
        timeouts = Timeouts(
            request=s.request_timeout_ms / 1000,
            retain=s.retain_timeout_ms / 1000,
            recall=s.recall_timeout_ms / 1000,
            reflect=s.reflect_timeout_ms / 1000,
        )
        return resolve_api_url(s, self._folder), s.key(), timeouts

    def _compute_scope(self) -> BankScope:
        s = self.settings
        return compute_scope(s.scoping, s.bank_id, s.bank_prefix, self.label)

    def _scope_with(self, name: str, value: Any) -> str | None:
        """Why setting ``name`` to ``value`` would make a scope that cannot be used, or None
        (the settings ask before they take a new bank, prefix or scoping)."""
        s = self.settings
        values = {"scoping": s.scoping, "bank_id": s.bank_id, "bank_prefix": s.bank_prefix}
        values[name] = value
        scope = compute_scope(
            ScopeMode(values["scoping"]), values["bank_id"], values["bank_prefix"], self.label
        )
        return scope_problem(scope)

    def _setting_changed(self, change: Any) -> None:
        """Rebuild what the changed setting's ``affects`` tag names (``_settings.Affects``)."""
        affects: Affects | None = self.settings.affects(change["name"])
        rebuild: dict[Affects, Callable[[], object]] = {
            "connection": lambda: self._reroute(connection=True),
            "scope": lambda: self._reroute(connection=False),
            "autoretain": self._parts.autoretain.configure,
            "mental_models": self._parts.mental_models.reload,
            "logging": lambda: configure_logging(self.settings.debug),
        }
        if affects is not None:
            with self._lock:
                rebuild[affects]()

    def set_project(self, label: str) -> None:
        """Use ``label`` as the project (``%hindsight scope --project``, or a new folder);
        ``SettingsError`` (one line) when the bank or tag it makes cannot be used."""
        with self._lock:
            if label != self.label:
                s = self.settings
                problem = scope_problem(compute_scope(s.scoping, s.bank_id, s.bank_prefix, label))
                if problem:
                    raise SettingsError(problem)
                self.label = label
                self._reroute(connection=False)

    def _reroute(self, *, connection: bool) -> None:
        """A new connection or scope: what was queued goes first, under its own route."""
        scope = self._compute_scope()
        if scope != self.scope:  # cells that ran under the old scope are retained under it
            self._parts.autoretain.process(force=True)
        self._parts.worker.flush(FLUSH_BEFORE_READ_S)
        if connection:
            self._parts.connection.open(*self._server())
            self._parts.llm.forget()
        self.scope = scope
        self._parts.mental_models.reload()

    def _warm_up(self) -> None:
        """The worker's first job, while the kernel is usually idle: first what a ``%retain``
        on the kernel thread may need (redaction's plugins: a ``%retain`` that came half a
        second after the load paid their import, 110-140 ms, racing this job's other imports;
        the spool's first page, whose first write took it 0.3-14 ms), then what sending and
        reading need (httpx, the reply models), so a busy cell or the
        first ``%recall`` does not; then ask the server who it is, so a ``%retain`` can say at
        once that it is not answering."""
        redact.warm_up()
        self._parts.queue.journal.warm_up()
        self._parts.sender.warm_up()
        self._parts.reader.warm_up()
        self._parts.sender.probe()

    # -- writing ----------------------------------------------------------------------------

    def retain(
        self,
        content: str,
        *,
        context: str | None = None,
        tags: Sequence[str] = (),
        timestamp: str | None = None,
        document_id: str | None = None,
    ) -> str | None:
        """Queue one memory on the current route; returns its retain (document) id, by which
        it can be forgotten or deleted before and after it is sent. No I/O. Its time is
        ``timestamp`` (ISO 8601) if given, else now; ``document_id``: an id of one's own (a
        memory retained again under it replaces the one before)."""
        return self._queue(
            content, context=context, tags=tags, timestamp=timestamp, document_id=document_id
        )

    def _queue(
        self,
        content: str,
        *,
        context: str | None = None,
        tags: Sequence[str] = (),
        document_id: str | None = None,
        update_mode: UpdateMode | None = None,
        ran_at: datetime | float | None = None,
        timestamp: str | None = None,
        source: Source = PYTHON_API,
        cells: Sequence[int] = (),
        agent: AgentOrigin | None = None,
        entities: Sequence[str] = (),
        replaces: str | None = None,
        cell_id: str | None = None,
        cell_source: str | None = None,
        dated: str = "",
        evidence: tuple[Sequence[Evidence], str] = ((), ""),
    ) -> str | None:
        """``retain`` with what only the extension's own callers know (``wiring.queue_memory``:
        a magic, the cell hook, an agent); none for an append.

        Its time is ``timestamp`` (ISO 8601) if given, else when it ran (``ran_at``), else now;
        its metadata say where it came from (``_memory/provenance.py``: ``source``, ``cells``,
        the ``agent`` that wrote it); ``entities``: what it names, when known (a cell's);
        ``replaces``: a cell's new version says when the version it replaces ran;
        ``cell_id``: Jupyter's id of the cell a ``%retain`` line runs in (its n-th text is a
        decision a changed text supersedes: ``identity.retained_line``); in a headless run,
        which sends none, the id its notebook file gives ``cell_source``; ``dated``: the
        ``timestamp`` as the user wrote it (a retained text's identity holds it);
        ``evidence``: the data files the cell read (``_capture/evidence.py``) and its project.
        A memory retained in a sequence (``hm.retain`` or ``%retain`` again in the same cell
        run, or in a script) carries the end of the one before it (``before``): a turn of
        a transcript or a line of notes often answers a question only with the one before
        it, and recall's keyword score reads both (LoCoMo R@5 0.56 → 0.64). Memories made
        apart (in other cells, by an agent, an auto-retained cell with its own code and
        output) are separate thoughts: lent a neighbour's words they pushed memories found
        by meaning alone out of the top 5 (recall-quality benchmark: strict paraphrases
        0.71 → 0.64 with cells, 0.67 with every hand-made memory).
        """
        scope = self.scope
        meta = provenance_metadata(
            source, self.session_id, self.notebook, cells, self.run_id, agent, replaces, evidence
        )
        sequence = (scope.bank_id, tuple(cells)) if source in IN_SEQUENCE else None
        with self._lock:
            last = self._retained_last.get(scope.bank_id)
        if sequence is not None and last is not None and last[0] == sequence:
            meta[BEFORE] = last[1]
        if document_id is None and update_mode is None:
            document_id = self._parts.cells.retained(
                content,
                source=source,
                cells=cells,
                cell_id=cell_id,
                cell_source=cell_source,
                dated=dated,
                when=timestamp or local_timestamp(ran_at),
            )
        item = new_item(
            content,
            timestamp=timestamp or local_timestamp(ran_at),
            context=context or self.settings.retain_context,
            metadata=meta,
            tags=tuple(dict.fromkeys((*(scope.retain_tags or ()), *tags))),
            secrets=self._parts.secrets(),
            document_id=document_id or own_document_id(update_mode),  # re-sends replace it
            update_mode=update_mode,
            entities=entities,
        )
        self._parts.queue.enqueue(Route(scope.bank_id, item.tags), item)
        if sequence is not None:
            with self._lock:
                self._retained_last[scope.bank_id] = (sequence, item.content[-BEFORE_CHARS:])
        return item.document_id

    def not_answering(self) -> NotAnswering | None:
        """Whether the server is not answering, as the last request to it found (the worker's
        sends and its first probe, a read, a status check: no request is made here, so a
        ``%retain`` says it at once), with what waits for it; None while it answers or before
        anything was asked. ``first``: the first time this is asked since it stopped answering
        (the line says it in full once, then short)."""
        since = self._parts.connection.client.unreachable_since
        if since is None:
            return None
        first, self._told_unreachable = since != self._told_unreachable, since
        stats = self._parts.queue.stats()
        waiting = stats.pending + stats.in_flight + stats.retrying
        in_journal = stats.journal is not None and stats.journal_problem is None
        return NotAnswering(self.api_url, first, waiting, in_journal, stats.journal is None)

    def flush(self, timeout_s: float | None = None) -> FlushOutcome:
        """Queue due transcripts, send everything now, wait until each batch was tried."""
        timeout = self.settings.retain_timeout_ms / 1000 if timeout_s is None else timeout_s
        self._parts.autoretain.process()
        started = time.monotonic()
        stored = self._parts.versions.already_stored
        outcome = self._parts.worker.flush(timeout)
        if self._parts.versions.pending():  # changed cells: their earlier versions superseded
            spare = min(SETTLE_S, timeout - (time.monotonic() - started))
            self._parts.versions.settle_until(max(spare, 0.0))
        return replace(outcome, already_stored=self._parts.versions.already_stored - stored)

    def retry_failed(self) -> int:
        """Re-send permanently failed memories through the current connection."""
        count = self._parts.queue.retry_failed()
        self._parts.queue.request_flush()
        return count

    # -- reading ----------------------------------------------------------------------------

    def _sent_async(self, sent: SentOperation) -> None:
        """A batch went out asynchronously (under the queue's lock, on the worker): follow a
        transcript until the server has indexed it, so reads can say what is not searchable."""
        if not sent.memories:
            self._parts.transcripts.start()
        self._parts.mental_models.memory_changed()

    def recall(self, request: RecallRequest | str) -> RecallResult:
        """The memories of the current scope and the layers that answer ``request`` (a query
        alone: every option its setting's), best first, after what was queued is sent and
        indexed (``hm.recall``, which makes the request from its keywords)."""
        return self._parts.reader.recall(RecallRequest.given(request))

    def reflect(self, request: ReflectRequest | str) -> ReflectResult:
        """The server's answer to ``request`` (a question alone: every option its
        default) from the current scope (``hm.reflect``)."""
        return self._parts.reader.reflect(ReflectRequest.given(request))

    def new_bank(self) -> list[str] | None:
        """When the scope's bank is not on the server yet (the first retain creates it): the
        existing banks with a close name, maybe none. None: the bank exists, or the server
        cannot say (one bounded request, ``GET /banks``)."""
        bank = self.scope.bank_id
        try:
            banks = [b.bank_id for b in self._parts.connection.client.list_banks(limit=BANKS_READ)]
        except HindsightError as error:
            log.debug("Hindsight: could not list the banks: %s", error)
            return None
        return None if bank in banks else close_banks(bank, banks)

    def layers(self) -> LayerList:
        """The banks this session reads, its own (``mine``) first, with their memory counts
        now (``hm.layers``)."""
        mine = Layer(MINE, self.scope.bank_id)
        parts = self._parts
        states = layer_states(parts.connection.client, [mine, *self._layers()], parts.layer_asking)
        return LayerList(states)

    def add_layer(self, bank_id: str, name: str | None = None) -> LayerList:
        """Read ``bank_id`` beside this session's own bank, as ``name`` (``hm.add_layer``);
        the bank must be on the server."""
        layers = with_layer(self._layers(), bank_id, name, self.scope.bank_id)
        client = self._parts.connection.client
        if client.memory_count(bank_id) is None:
            raise LayerError(
                f"There is no bank {bank_id!r} on the server at {client.base_url}: check the "
                "name (a course's bank is made by restoring its snapshot, "
                "%hindsight layer add COURSE.zip)."
            )
        self.settings.set_setting("layers", pairs_of(layers))
        return self.layers()

    def add_layer_archive(self, archive: Path, name: str | None, progress: Progress) -> LayerList:
        """Read a snapshot as a layer: restored once into the bank its manifest names (left as
        it is when that bank already holds memories), then read like any layer."""
        manifest = Manifest.read(manifest_path(archive))  # names the bank; checked first
        bank = manifest.bank
        layers = with_layer(self._layers(), bank, name, self.scope.bank_id)
        client = self._parts.connection.client
        held = layer_snapshot(client.list_banks(), bank)
        if client.memory_count(bank) and not held.older_than(manifest):
            note = f"Bank {bank!r} is already on the server: read as it is, not restored again."
            progress.close(note)
        else:  # not there yet, or a newer snapshot of the course (re-published): it replaces
            note = self._parts.archiver.restore(archive, bank, held.replaced, progress).headline
            if held.replaced:
                note += f" It replaces the snapshot of {held.created_at} for everyone reading it."
            client.create_bank(bank, name=held.name_for(manifest))
        self.settings.set_setting("layers", pairs_of(layers))
        listed = self.layers()
        listed.note = note
        return listed

    def remove_layer(self, name: str) -> LayerList:
        """Stop reading the layer ``name`` (``hm.remove_layer``); its bank is untouched."""
        self.settings.set_setting("layers", pairs_of(without_layer(self._layers(), name)))
        return self.layers()

    def _layers(self) -> tuple[Layer, ...]:
        return layers_of(self.settings.layers)

    def latest(self, limit: int) -> RecallResult:
        """The newest ``limit`` memories of the current scope (``hm.latest``)."""
        return self._parts.reader.latest(limit)

    def timeline(self, by: Period | None, window: TimeWindow | None) -> TimelineCounts:
        """Memories per period of the current scope, after the queue is sent (``hm.timeline``)."""
        return self._parts.overview.timeline(by, window)

    def entity_map(
        self,
        entity: str | None,
        top: int,
        read: Callable[[int, int], object] = lambda done, total: None,
    ) -> EntityMap:
        """The entities of the current scope and their neighbours (``hm.memory_map``);
        ``read`` follows the read of the scope (memories read, to read)."""
        return self._parts.overview.entity_map(entity, top, read)

    def prompt_context(self) -> str:
        """The ``<mental_models>`` block and the last recall's ``<memories>`` block, for an LLM
        prompt; '' when there is neither. Waits at most 1.5 s for the first model load."""
        models, last_recall = self._parts.mental_models, self._parts.reader.last_recall
        models.wait_first_load()
        blocks = [models.block(), last_recall.as_context() if last_recall is not None else ""]
        return "\n\n".join(block for block in blocks if block)

    def clear_local(self) -> None:
        """Forget what this session keeps locally (the last recall, the notices not shown);
        memory on the server is untouched."""
        self._parts.reader.last_recall = None
        self._parts.notices.take()

    # -- curation and transfers: one line (``InputError``) when they cannot be done ------------

    def forget(self, memory: str, reason: str = "") -> Outcome:
        """Leave a memory (``#N``, an id, a retain id) out of recall and reflect."""
        return self._parts.curator.forget(memory, reason)

    def restore_memory(self, memory: str) -> Outcome:
        """Bring a forgotten memory back."""
        return self._parts.curator.restore(memory)

    def correct(self, memory: str, text: str) -> Outcome:
        """Replace a memory's text, keeping its history."""
        return self._parts.curator.correct(memory, text)

    def history(self, memory: str) -> Outcome:
        """How a memory (or its document) changed."""
        return self._parts.curator.history(memory)

    def forgotten(self) -> Outcome:
        """The forgotten memories of the scope, newest first."""
        return self._parts.curator.forgotten()

    def verify(self, read: Callable[[int, int], object] = lambda done, total: None) -> Outcome:
        """The scope's memories whose data files changed since their cell read them, by file,
        after what is queued is sent (``_memory/verify.py``); ``read`` follows the read of the
        scope (memories read, to read)."""
        from .._memory.verify import verify

        scope = self.scope
        ready = self._parts.ready(scope.bank_id)
        waiting = (ready.transcript_cells, not ready.indexed)
        return verify(self._parts.connection, scope, read, waiting)

    def delete(self, document: str, yes: bool = False) -> Outcome:
        """Delete a document and its memories with ``yes``; without, list what would go."""
        return self._parts.curator.delete(document, yes)

    def dedupe(
        self, yes: bool = False, read: Callable[[int, int], object] = lambda done, total: None
    ) -> Outcome:
        """Copies and cells' older versions still valid: listed, tidied with ``yes``; ``read``
        follows the read of the scope (memories read, to read)."""
        return self._parts.curator.dedupe(yes, read)

    def purge_matching(self, text: str, yes: bool = False) -> Outcome:
        """Delete every document with a memory whose text contains ``text`` (``yes``), or
        list them."""
        return self._parts.curator.purge_matching(text, yes)

    def snapshot(self, path: Path | None, progress: Progress, replace: bool = False) -> Outcome:
        """Write the current bank to an archive (default: a dated file next to the notebook)
        and its manifest."""
        return self._parts.archiver.snapshot(path, self.notebook, progress, replace)

    def restore_archive(
        self, archive: Path, into: str | None, replace: bool, progress: Progress
    ) -> Outcome:
        """Import a snapshot archive as bank ``into`` (default: the current bank)."""
        return self._parts.archiver.restore(archive, into, replace, progress)

    def clone(self, target: str, replace: bool, progress: Progress) -> Outcome:
        """Copy the current bank into the new bank ``target`` on the server."""
        return self._parts.archiver.clone(target, replace, progress)

    # -- mental models -------------------------------------------------------------------------

    @property
    def models_enabled(self) -> bool:
        """Whether mental models are on (the ``mental_models`` setting)."""
        return self._parts.mental_models.enabled

    def list_models(self) -> list[MentalModel]:
        """Every mental model on the current bank (asks the server)."""
        return self._parts.mental_models.list_bank()

    def model(self, model_id: str) -> MentalModel | None:
        """One mental model with its content (asks the server); None when there is none."""
        return self._parts.mental_models.get(model_id)

    def refresh_model(self, model_id: str) -> str | None:
        """Ask the server to refresh a model; its operation id ('' if none), None if no model."""
        return self._parts.mental_models.refresh(model_id)

    def refresh_auto_models(self) -> RefreshOutcome:
        """Refresh the models that opted into auto-refresh, leaving curated ones alone."""
        return self._parts.mental_models.refresh_auto()

    def seed_models(self) -> SeedOutcome | None:
        """Create the built-in seed models of the scoping mode; None when none apply."""
        return self._parts.mental_models.seed()

    def model_history(self, model_id: str) -> list[ModelChange] | None:
        """How a model's content changed, newest first; None when there is no such model."""
        return self._parts.mental_models.history(model_id)

    def reload_models(self, *, wait: bool = True) -> str | None:
        """List the mental models again and wait (returns the problem, or None); without
        ``wait``, on the worker, the old ones shown meanwhile."""
        if wait:
            return self._parts.mental_models.reload_now()
        self._parts.mental_models.reload(clear=False)
        return None

    def delete_model(self, model_id: str) -> bool:
        """Delete a model from the current bank; False when there was none."""
        return self._parts.mental_models.delete(model_id)

    # -- auto-retain and the queue -------------------------------------------------------------

    def pause_autoretain(self, paused: bool = True) -> None:
        """Pause (or resume) auto-retain without changing its setting (the panel's button)."""
        self._parts.autoretain.pause(paused)

    def retain_cells_now(self) -> None:
        """Queue the cells auto-retain has not retained yet, due or not."""
        self._parts.autoretain.process(force=True)

    def autoretain_status(self) -> AutoRetainStatus:
        """Auto-retain's setting, mode and counters."""
        return self._parts.autoretain.status()

    def queue_stats(self) -> QueueStats:
        """A consistent snapshot of the queue's counters."""
        return self._parts.queue.stats()

    def send_now(self) -> None:
        """Ask the worker to send everything queued now, without waiting (``flush`` waits)."""
        self._parts.queue.request_flush()

    def in_background(self, job: Callable[[], object], delay_s: float = 0.0) -> bool:
        """Run ``job`` once on the worker after ``delay_s`` (False once it stopped); a read in
        it does not wait for delivery, which the worker does between jobs."""
        return self._parts.worker.submit(job, delay_s)

    def drop_failed(self) -> int:
        """Discard the memories the server refused for good; their count."""
        return self._parts.queue.drop_failed()

    # -- status and lifecycle ---------------------------------------------------------------

    def status(
        self, check_server: bool = True, *, wait_models: bool | None = None
    ) -> SessionStatus:
        """What every status form shows (``read_status``); ``check_server`` asks the server
        now, else its state is the one last read; ``wait_models`` (by default as
        ``check_server``) waits at most 1.5 s for the first list of mental models."""
        if check_server:
            self.check_server()
        return read_status(
            self._parts,
            check_server,
            wait_models=check_server if wait_models is None else wait_models,
            url=self.api_url,
            server=self._server_state,
            scope=self.scope,
            layers=self._layers(),
            auto_retain_setting=bool(self.settings.auto_retain),
            session_id=self.session_id,
            notebook=self.notebook,
        )

    def check_server(self) -> bool:
        """Whether the server answers and takes the key now (``server_check``), kept for
        ``status`` until the next check."""
        self._server_state = server_check(self._parts.connection.client)
        return self._server_state.ok

    def memories_indexing(self, *, send: bool = True) -> bool:
        """Whether memories queued for the bank are not findable yet; never waits."""
        return self._parts.ready.indexing(self.scope.bank_id, send=send)

    def operation_ended(self, bank_id: str, operation_id: str) -> str | None:
        """How a server operation (a model's refresh) ended (``operation_ended``)."""
        return operation_ended(self._parts.connection.client, bank_id, operation_id)

    def document(self, document_id: str) -> str | None:
        """A document's text (a retain id's) as the bank stores it; None when there is none."""
        found = self._parts.connection.client.document(self.scope.bank_id, document_id)
        return None if found is None else found.original_text or ""

    def explain(self, error: HindsightError) -> str:
        """``error`` as the one line the user reads: its message, what it means for this
        session's server and what to do (``explain_for``)."""
        return explain_for(self._parts.connection.client, error, NOTEBOOK_COMMAND)

    @property
    def closed(self) -> bool:
        """Whether ``close`` ran (the extension was unloaded or the kernel exits)."""
        return self._closed

    def __enter__(self) -> HindsightSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        """``with Session(...) as session:`` closes it at the end (``close``: what is queued is
        sent, bounded; what is not stays in the journal), as a script or a test wants."""
        self.close()

    def close(self, timeout_s: float = EXIT_FLUSH_S) -> int:
        """Flush (bounded), stop the worker, close connections; returns items left undelivered."""
        with self._lock:
            if self._closed:
                return 0
            self._closed = True
        atexit.unregister(self._at_exit)
        self.settings.unobserve(self._setting_changed, names=list(self.settings.setting_names()))
        self.settings.scope_check = None
        try:
            self._parts.autoretain.process(force=True)  # the cells not yet retained
        except Exception:
            log.debug("Hindsight: final auto-retain failed", exc_info=True)
        left = self._parts.worker.close(timeout_s)
        if left:
            log.warning("Hindsight: %d memories were not delivered before unload", left)
        elif self._parts.versions.pending():  # a headless run ends right after its last cell
            self._parts.versions.settle_until(SETTLE_S)
        self._parts.layer_asking.close()
        self._parts.connection.close()
        return left

    def _at_exit(self) -> None:
        try:
            self.close(EXIT_FLUSH_S)
        except Exception:  # never raise at interpreter exit
            log.debug("Hindsight: exit flush failed", exc_info=True)


Session = HindsightSession  # its public name: what ``project_session`` returns

# Each session's parts by the session's id, for what may drive them: ``hindsight_magic.testing``
# (a worker pumped by hand, a fault transport swapped in) and ``wiring`` (what the extension's
# own front ends call, off the public face). Weak: the parts live as long as their session
# (they refer to it, so an entry keyed by the session itself would keep it alive), and the
# entry goes with them.
PARTS: weakref.WeakValueDictionary[int, Parts] = weakref.WeakValueDictionary()
