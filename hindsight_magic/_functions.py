"""The public Python API: ``retain``, ``recall``, ``reflect``, ``flush``, ``status``, and the
curation functions ``forget``, ``restore``, ``correct``, ``history``, ``forgotten``, ``delete``,
``purge_matching``, and the transfers ``snapshot``, ``restore`` (of an archive) and ``clone``.

The magics are a thin layer over these functions (as ``%timeit`` is over ``timeit``): they turn
a line of text into a call and display what it returns. Each function uses, unless given a
``session``:

- inside IPython, the kernel's session (the extension is loaded first if it was not);
- elsewhere (a script, a worker process), one session for the whole process, without the cell
  hook, closed (and its queue flushed, bounded) at interpreter exit.

``SESSIONS`` is the one registry of those sessions (a shell's, the process's); the extension
registers into it, and everything that needs "the current session" asks ``current_session``.

Bad input raises ``InputError`` (a ``ValueError``) with one line saying what to do; server
trouble raises ``hindsight_magic.HindsightError``.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from . import _operations
from ._errors import Error, InputError
from ._text import one_line

if TYPE_CHECKING:
    from ._capture.autoretain import Source
    from ._memory.archive import Progress
    from ._memory.curation import Outcome
    from ._memory.layers import LayerList
    from ._memory.results import RecallResult, ReflectResult
    from ._operations import Operation
    from ._session import HindsightSession
    from ._timewindow import TimeWindow, When
    from ._ui.display import FlushResult, Report, RetainResult
    from ._ui.pictures import MemoryMap, Timeline

MAX_MEMORY_CHARS = 1_000_000  # one memory; bigger is refused before anything is queued


class ShellSession(Protocol):
    """What the extension registers for a shell: something that holds its session."""

    @property
    def session(self) -> HindsightSession: ...


class SessionRegistry:
    """The one place that maps where code runs to its memory session: each IPython shell
    where the extension is loaded (``_ipython.extension`` registers what it attached there on
    ``%load_ext`` and removes it on unload), and the process (scripts: made on first use,
    without the cell hook, closed at interpreter exit)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._shells: dict[int, ShellSession] = {}
        self._process: HindsightSession | None = None

    def register(self, shell: Any, attached: ShellSession) -> None:
        """``attached`` holds ``shell``'s session from now on."""
        with self._lock:
            self._shells[id(shell)] = attached

    def unregister(self, shell: Any) -> ShellSession | None:
        """Forget ``shell``'s session; returns what was registered for it, if anything."""
        with self._lock:
            return self._shells.pop(id(shell), None)

    def registered(self, shell: Any) -> ShellSession | None:
        """What was registered for ``shell`` (None: the extension is not loaded there)."""
        return self._shells.get(id(shell))

    def process(self) -> HindsightSession:
        """The process's session, made on first use (and again after it was closed)."""
        with self._lock:
            if self._process is None or self._process.closed:
                from ._session import HindsightSession
                from ._settings import HindsightSettings

                self._process = HindsightSession(HindsightSettings())
            return self._process


SESSIONS = SessionRegistry()


def current_session() -> HindsightSession:
    """The kernel's session inside IPython (loading the extension if needed), else this
    process's session (made on first use, without the cell hook)."""
    shell = _running_shell()
    if shell is None:
        return SESSIONS.process()
    attached = SESSIONS.registered(shell)
    if attached is None:
        shell.extension_manager.load_extension("hindsight_magic")
        attached = SESSIONS.registered(shell)
    if attached is None:  # IPython thinks it loaded, yet it was unloaded behind its back
        raise Error("hindsight_magic is not loaded here: run %reload_ext hindsight_magic")
    return attached.session


def _running_shell() -> Any:
    if "IPython" not in sys.modules:  # never import IPython just to find out
        return None
    from IPython.core.getipython import get_ipython  # not the package's lazy ``__getattr__``

    return get_ipython()


def _running_cell() -> tuple[int, ...]:
    """The number of the cell running now (or that ran last), inside IPython; else ``()``.

    Read from the input history, which holds the cell before it runs: ``execution_count`` is
    the running cell's number in IPython 8 but already the next one's in IPython 9.
    """
    shell = _running_shell()
    inputs = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    if isinstance(inputs, list) and len(inputs) > 1:
        return (len(inputs) - 1,)
    return ()


def _running_cell_id() -> tuple[str | None, str | None]:
    """Jupyter's id of the cell running now (the one the front end sent with it, nbformat
    4.5; None from plain IPython and a headless run) and its source, inside IPython; else
    ``(None, None)``."""
    shell = _running_shell()
    running = getattr(getattr(shell, "displayhook", None), "exec_result", None)
    info = getattr(running, "info", None)
    cell_id, source = getattr(info, "cell_id", None), getattr(info, "raw_cell", None)
    return (
        cell_id if isinstance(cell_id, str) and cell_id else None,
        source if isinstance(source, str) else None,
    )


def retain(
    text: str,
    *,
    tags: str | Sequence[str] | None = None,
    context: str | None = None,
    split: bool = False,
    timestamp: When | None = None,
    agent: str | None = None,
    agent_version: str | None = None,
    wait: bool | float = False,
    session: HindsightSession | None = None,
) -> RetainResult:
    """Queue ``text`` as one durable memory and return at once (no network on this thread).

    ``tags`` (names, or one comma-separated string) are added to the scope's tags;
    ``context`` says where the fact comes from (default: the ``retain_context`` setting);
    ``split=True`` makes each blank-line-separated paragraph its own memory. One memory holds
    at most 1,000,000 characters. A background worker sends the queue in batches (16 memories
    or 5 s), and before any recall or reflect. Each memory records where it came from (the
    notebook and cell, when known: ``.provenance`` of a recalled memory).

    ``timestamp`` dates it when its fact was written or true (default: now), so last year's
    notes keep last year's dates: a ``datetime`` (naive: your local time) or a WHEN as
    ``recall(since=…)`` takes it (``"2025-03-14"``, ``"14 Mar 2025 09:30"``, ``"3d"``); a day
    is its start. Recall's ``since``/``until`` and ``as_of`` go by it; a date in the future
    raises ``WhenError``.

    ``agent`` (and ``agent_version``) name the AI agent writing it: the memory is then
    ``source: agent`` with that name, version and the project, and recall shows
    ``agent (NAME)``. ``wait=True`` sends it now and returns once the server can find it (at
    most 15 s, or ``wait`` seconds when it is a number); ``.searchable`` then says whether the
    server had indexed it by then (False: sent, still being indexed on a busy server). If the
    server cannot be reached it stays queued and ``HindsightError`` says why.
    """
    from ._memory.provenance import AGENT, PYTHON_API

    writer = None
    if agent is not None or agent_version is not None:
        name = one_line(agent or "", 100)
        if not name:
            raise InputError("Invalid agent: give the agent's name (say, claude-code).")
        writer = (name, one_line(agent_version or "", 50))
    source = PYTHON_API if writer is None else AGENT
    result = queue_text(
        text,
        session,
        source,
        tags=tags,
        context=context,
        split=split,
        timestamp=timestamp,
        agent=writer,
    )
    if wait is not False:
        seconds = None if wait is True else float(wait)
        from ._session.wiring import deliver

        result.searchable = deliver(session or current_session(), result.ids, seconds)
    return result


def project_session(project: str | os.PathLike[str] | None = None) -> HindsightSession:
    """A memory session for the project at folder ``project`` (default: the working folder),
    with the bank, tags and settings a kernel started there would use: the ``HINDSIGHT_*``
    environment and ``c.HindsightMagics.*`` in the IPython profile's config files.

    Give it to any function as ``session=``; ``close()`` it when done (it flushes its queue,
    bounded). Its recall and reflect first send what this machine's kernels queued for the
    bank and have not delivered yet, under each memory's own id, so an agent finds what a
    notebook retained a second ago (the MCP server, ``hindsight-magic mcp``, runs on one).
    Bad settings raise ``InputError``; a folder that does not exist too.
    """
    from ._session import HindsightSession
    from ._settings import settings_like_a_kernel

    folder = os.path.abspath(os.fspath(project if project is not None else os.getcwd()))
    if not os.path.isdir(folder):
        raise InputError(f"No such project folder {one_line(folder, 200)!r}: give a folder.")
    settings = settings_like_a_kernel(warn=lambda line: print(line, file=sys.stderr))
    return HindsightSession(settings, cwd=folder, reads_others=True)


def queue_text(
    text: str,
    session: HindsightSession | None,
    source: Source,
    *,
    tags: str | Sequence[str] | None = None,
    context: str | None = None,
    split: bool = False,
    timestamp: When | None = None,
    agent: tuple[str, str] | None = None,
) -> RetainResult:
    """``retain`` for a given ``source`` (``%retain``, the Python API, an agent: its name and
    version)."""
    stamp, dated = None, ""
    if timestamp is not None:
        from ._memory.provenance import RETAIN_MAGIC
        from ._timewindow import dated as dated_at

        name = "--at" if source == RETAIN_MAGIC else "timestamp"
        stamp = dated_at(timestamp, name=name).isoformat()
        dated = timestamp if isinstance(timestamp, str) else stamp  # as written: "3d" stays
    pieces = [p.strip() for p in text.split("\n\n")] if split else [text.strip()]
    pieces = [piece for piece in pieces if piece]
    if not pieces:
        raise InputError("Nothing to retain: give the fact to remember.")
    largest = max(len(piece) for piece in pieces)
    if largest > MAX_MEMORY_CHARS:
        raise InputError(
            f"Too large to retain: {largest:,} characters in one memory (the limit is "
            f"{MAX_MEMORY_CHARS:,}). Retain a summary, or paragraphs with %%retain --split."
        )
    tag_list = _operations.names(tags)
    session = session or current_session()
    origin = None
    if agent is not None:
        from ._memory.provenance import AgentOrigin

        origin = AgentOrigin(agent[0], agent[1], session.label)
    from ._session.wiring import cell_evidence, queue_memory

    cells = _running_cell()
    cell_id, cell_source = _running_cell_id()
    # the data files the cell reads: its memory rests on them (``_capture/evidence.py``)
    evidence = cell_evidence(session, cell_source or "") if cells and origin is None else ((), "")
    ids = [
        queue_memory(session)(
            piece,
            context=context,
            tags=tag_list,
            timestamp=stamp,
            source=source,
            cells=cells,
            agent=origin,
            cell_id=cell_id,
            cell_source=cell_source,
            dated=dated,
            evidence=evidence,
        )
        for piece in pieces
    ]
    from ._ui.display import RetainResult

    # the server's state as last seen (no request here): the line says when it is not answering
    return RetainResult(len(pieces), tuple(i for i in ids if i), session.not_answering())


def recall(
    query: str,
    *,
    budget: str | None = None,
    max_tokens: int | None = None,
    limit: int | None = None,
    types: str | Sequence[str] | None = None,
    tags: str | Sequence[str] | None = None,
    since: When | None = None,
    until: When | None = None,
    as_of: When | None = None,
    layer: str | None = None,
    session: HindsightSession | None = None,
) -> RecallResult:
    """The memories most relevant to ``query``, best first, in the current scope.

    {keywords}

    A keyword left ``None`` is its ``recall_*`` setting's; names (``types``, ``tags``) are a
    list or one string ``"a,b"``. The memories you queued are sent first and waited for (at
    most 15 s), so what was just retained is found; auto-retain's transcripts are not waited
    for (``.still_indexing`` says how many cells). The result is a sequence of memories with
    ``.texts``, ``.as_context()`` (a ``<memories>`` block for an LLM prompt) and ``.matched``:
    how many of the memories ranked match the query (share a word with it or are close to it
    in meaning), which may be more than were returned (the headline says both: ``5 memories
    shown; 14 match the query``).

    ``since``/``until`` keep only memories recorded in that window (``%recall --since WHEN
    --until WHEN``): a WHEN is as said above, or a ``datetime``/``date``; without a time zone
    it is your local time, and a day as ``until`` includes that whole day.
    "Recorded" is each memory's ``mentioned_at``: the retain item's ``timestamp``, else when
    it was retained; a memory without one is outside every window. The headline says the
    window back (``… between 3 Nov and today``); ``.window`` keeps it.

    When the session reads layers (``layers()``, ``add_layer``), every layer is asked at once
    and the memories are ranked together, each with its ``.layer`` (``mine`` for your own
    bank); ``layer`` narrows the recall to one of them. A layer that cannot be read is left
    out, and ``.skipped`` says why.

    ``as_of`` (a WHEN, read as ``until`` reads it) answers with memory as it was then: what
    was recorded before it and valid at it. A notebook cell that was changed since shows the
    version it had then (marked ``superseded on …``), never the one that replaced it; a
    memory forgotten since is back, one retained since is not there.

    Each notebook cell shows once: the versions a re-run left, and copies of one text, are
    folded into its newest (``.copies`` counts them); a cell's new version says which one it
    replaces, and when.
    """
    # every keyword but session is a field of the request (tests/test_public_api.py checks)
    request = _operations.RecallRequest.from_arguments(locals())
    return (session or current_session()).recall(request)


def keywords_help(request: type[_operations.Request]) -> str:
    """One line per option (each field but the subject) from its ``Param``'s help and bounds:
    what ``hm.recall?`` lists, so a field added is said without a word here."""
    import textwrap

    said = (
        f"- ``{name}`` ({param.value_name}): {param.description}"
        for name, param in list(request.params.items())[1:]
    )
    return "\n".join(
        textwrap.fill(line, 92, initial_indent="    ", subsequent_indent="      ") for line in said
    ).lstrip()


recall.__doc__ = (recall.__doc__ or "").replace(
    "{keywords}", keywords_help(_operations.RecallRequest)
)


def reflect(
    question: str,
    *,
    context: str | None = None,
    budget: str | None = None,
    sources: bool = True,
    session: HindsightSession | None = None,
) -> ReflectResult:
    """The server's answer to ``question``, synthesized from the memories in the current scope.

    ``context`` adds guidance for the answer; ``budget`` as for ``recall``. The result is a
    ``str`` (Markdown) that also keeps ``.query`` and ``.based_on``: the memories (with their
    ``.provenance``), mental models and directives the answer drew on, listed under it as
    **Based on**. ``sources=False`` does not ask for them (``.based_on`` is None).

    When the server cannot write an answer (it has no LLM, or its LLM failed), ``.answered``
    is False and the ``str`` is one line saying so and how to get one; the memories that bear
    on the question follow, best first, as a recall shows them (``.recalled``; ``#N`` names
    them), and ``.based_on.memories`` holds them.

    When the session reads layers, the answer comes from your own bank with the layers' best
    memories for the question given to the server as context; **Based on** lists them with
    their layer.
    """
    request = _operations.ReflectRequest.from_arguments(locals())  # as recall's
    return (session or current_session()).reflect(request)


def latest(
    limit: int = _operations.DEFAULT_LATEST, *, session: HindsightSession | None = None
) -> RecallResult:
    """The newest ``limit`` memories of the current scope, newest first (forgotten ones left
    out), as a ``RecallResult``: what happened lately, without a query. What you queued is sent
    first, as for ``recall``; ``#N`` then names the Nth of them."""
    checked = _operations.LATEST_LIMIT.check(limit)  # refused before a session is made
    return (session or current_session()).latest(checked)


def timeline(
    by: str | None = None,
    *,
    since: When | None = None,
    until: When | None = None,
    session: HindsightSession | None = None,
) -> Timeline:
    """How many memories the current scope gained per ``by`` period (``day``, ``week``,
    ``month``; default: chosen from the span), by fact type and by the notebook they came from.

    ``since``/``until`` bound it as for ``recall`` (``"3d"``, ``"2026-11-03"``, ``"yesterday"``
    — local time). In a notebook it shows as a figure; in a terminal as a table. ``.rows`` are
    the numbers, ``.dataframe()`` the same in pandas. Counted from the server's list of
    memories on their ``mentioned_at`` date, so other notebooks and agents show up too. What
    you queued is sent first, as for ``recall``. A period holding memories whose data changed
    since their cell read it is marked, with the files named under the table (``verify``
    lists those memories).
    """
    from ._memory.overview import check_period
    from ._ui.pictures import Timeline

    period = check_period(by)
    window = _window(since, until)
    counts = (session or current_session()).timeline(period, window)
    return Timeline(counts)


def memory_map(
    entity: str | None = None,
    *,
    top: int = _operations.DEFAULT_TOP,
    session: HindsightSession | None = None,
) -> MemoryMap:
    """The entities of the current scope's memories (what cells define, the files they read,
    the terms their notes capitalise; with an LLM, also the people, places and tools it found)
    and how often they occur together: a graph of the ``top`` most mentioned, a node's
    size its mentions. With ``entity`` (a name, any case): that entity, the ``top`` entities it
    occurs with most, and the memories that mention it (``.memories``, with provenance).
    Which entities occur together is in each memory only, so the scope's facts are read
    whole: a bar shows while a long read runs. Needs the ``pictures`` extra to draw; the text
    list shows without it.
    """
    from ._ui.progress import ReadProgress

    if entity is not None and not entity.strip():
        raise InputError("Give an entity's name, or none for the whole map.")
    top = _operations.TOP.check(top)
    progress = ReadProgress(_running_shell(), "reading the bank's memories for the map")
    try:
        found = (session or current_session()).entity_map(
            entity.strip() if entity else None, top, progress
        )
    except BaseException:
        progress.close(f"Stopped after {progress.done} memories.")
        raise
    progress.close(f"Read {progress.done} memories.")
    from ._ui.pictures import MemoryMap

    return MemoryMap(found)


def context(*, session: HindsightSession | None = None) -> str:
    """The ``<mental_models>`` block and the last ``<memories>`` block as one string, for an
    LLM prompt (``%hindsight context``); '' when there is neither. Waits at most 1.5 s for the
    first load of the mental models."""
    return (session or current_session()).prompt_context()


def flush(timeout: float | None = None, *, session: HindsightSession | None = None) -> FlushResult:
    """Send everything queued now and wait until each batch was tried (at most ``timeout``
    seconds; default the ``retain_timeout_ms`` setting)."""
    if timeout is not None and timeout <= 0:
        raise InputError("The flush timeout must be greater than 0 seconds.")
    session = session or current_session()
    before = session.queue_stats().accepted
    outcome = session.flush(timeout)
    after = session.queue_stats()
    stored = outcome.already_stored  # counted as accepted by the queue, but never sent
    from ._ui.display import FlushResult

    return FlushResult(
        max(after.accepted - before - stored, 0),
        outcome.pending,
        outcome.retrying,
        outcome.failed,
        after.last_error,
        stored,
    )


def status(*, check_server: bool = True, session: HindsightSession | None = None) -> Report:
    """Server, bank and tags, the queue's counters, auto-retain and mental models, as a report
    (text, or a table in a notebook). ``check_server=False`` skips the server round trip."""
    from ._ui.display import Report
    from ._version import __version__

    sections = (session or current_session()).status(check_server).sections()
    return Report(f"hindsight_magic {__version__}", sections)


# -- layers: banks read beside the session's own ----------------------------------------------


def layers(*, session: HindsightSession | None = None) -> LayerList:
    """The banks this session reads: its own (``mine``, the only one written) and its layers
    (a course's or a team's bank), each with how many memories it holds now or why it cannot be
    read. ``%recall`` and ``recall`` ask them all at once and label every memory with its
    layer; nothing here writes to a layer. This is a rule of this client, not a permission on
    the server: anyone with the server's key can write any bank."""
    return (session or current_session()).layers()


def add_layer(
    bank: str | os.PathLike[str],
    *,
    name: str | None = None,
    session: HindsightSession | None = None,
) -> LayerList:
    """Read the bank ``bank`` beside your own, labelled ``name`` (default: the bank's id) in
    every result: ``add_layer("intro-ml-2026", name="course")``. The bank must be on the
    server. For the session only; to keep it, set ``HINDSIGHT_LAYERS="course=intro-ml-2026"``
    (NAME=BANK pairs, comma-separated) before starting the kernel.

    ``bank`` may be a snapshot (a path ending in ``.zip``, with its manifest beside it, as
    ``snapshot`` makes it): it is restored into the bank its manifest names, once (a bank of
    that name that already holds memories is read as it is), then read as a layer."""
    if _is_archive(bank):
        from ._ui.progress import progress_for

        path = Path(os.fspath(bank)).expanduser()
        progress = progress_for(_running_shell())
        try:
            return (session or current_session()).add_layer_archive(path, name, progress)
        except InputError as error:
            progress.close(str(error))
            raise
    if not isinstance(bank, str) or not bank.strip():
        raise InputError("Name the bank to read as a layer: add_layer('intro-ml-2026').")
    return (session or current_session()).add_layer(_bank_name(bank.strip()), name)


def remove_layer(name: str, *, session: HindsightSession | None = None) -> LayerList:
    """Stop reading the layer ``name``; its bank and memories are untouched."""
    return (session or current_session()).remove_layer(str(name).strip())


# -- tending memory: the same operations as ``%hindsight forget`` and the others --------------


MemoryRef = Any  # "#3", a memory id, a retain id, or a recalled memory (its ``.id``)


def _ref(memory: MemoryRef) -> str:
    ref = getattr(memory, "id", memory)
    if not isinstance(ref, str):
        raise InputError(
            f"Cannot name a memory by {one_line(repr(memory), 40)}: give #N, its id, a retain "
            "id, or a recalled memory."
        )
    return ref


def forget(
    memory: MemoryRef, *, reason: str = "", session: HindsightSession | None = None
) -> Outcome:
    """Leave a memory out of every later recall and reflect, reversibly (``restore``).

    ``memory`` is ``"#3"`` (the third of the last recall), a recalled memory or its ``.id``, or a
    retain id (``RetainResult.ids``): a memory still queued in this kernel is cancelled (it never
    reaches the server, its journal entry goes too); one already sent is forgotten on the server
    once it is there. ``reason`` is kept with it (``%hindsight forgotten`` shows it).
    """
    return (session or current_session()).forget(_ref(memory), reason)


def restore(
    what: MemoryRef | os.PathLike[str],
    *,
    into: str | None = None,
    replace: bool = False,
    session: HindsightSession | None = None,
) -> Outcome:
    """Bring something back: a forgotten memory (``"#3"``, its id, a retain id: back into
    recall), or a snapshot archive (a path ending in ``.zip``).

    An archive is checked against the manifest beside it (size and SHA-256) before anything is
    sent, then imported as the current bank, or as bank ``into``; a bank that already holds
    memories is refused unless ``replace=True`` (its memories are deleted first). Afterwards
    the imported counts are checked against the manifest. A progress bar shows meanwhile; an
    interrupt cancels the import on the server.
    """
    if _is_archive(what):
        path = Path(os.fspath(what)).expanduser()
        target = _bank_name(into) if into is not None else None
        return _carry(session, lambda s, p: s.restore_archive(path, target, replace, p))
    if into is not None or replace:
        raise InputError("into= and replace= are for restoring a snapshot archive (a .zip).")
    return (session or current_session()).restore_memory(_ref(what))


def _is_archive(what: object) -> bool:
    """Whether ``restore`` was given an archive rather than a memory: a path object, or a text
    ending in ``.zip`` — decided by what was written, never by which files exist (a memory id
    that is also a file's name is still a memory, and the answer tells nobody the file is
    there)."""
    if isinstance(what, os.PathLike):
        return True
    return isinstance(what, str) and what.lower().endswith(".zip")


def _bank_name(name: str) -> str:
    from ._settings import bank_id_problem

    problem = bank_id_problem(name)
    if problem:
        raise InputError(f"Invalid bank {one_line(name, 60)!r}: {problem}.")
    return name


def _carry(
    session: HindsightSession | None, call: Callable[[HindsightSession, Progress], Outcome]
) -> Outcome:
    """Run one transfer with a progress bar fit for where it runs; refusals are one line."""
    from ._ui.progress import progress_for

    session = session or current_session()
    progress = progress_for(_running_shell())
    try:
        return call(session, progress)
    except InputError as error:
        progress.close(str(error))
        raise
    except KeyboardInterrupt:  # before the server started anything: nothing to cancel there
        progress.close("Cancelled.")
        raise InputError("Cancelled before the server started; nothing was changed.") from None


def snapshot(
    path: str | os.PathLike[str] | None = None,
    *,
    replace: bool = False,
    session: HindsightSession | None = None,
) -> Outcome:
    """Save the current bank to a file: the server's transfer archive (memories, documents,
    observations, mental models, configuration) and a manifest beside it (counts, server
    version, UTC time, SHA-256). The queue is sent first, so the snapshot holds everything
    retained so far. ``path`` is the archive (default: a dated file next to the notebook, or
    in the working folder); a file already there (or its manifest) is replaced only with
    ``replace=True``. The download streams to disk, never whole in memory. A progress bar
    shows meanwhile; an interrupt cancels it and leaves no partial file.
    """
    target = Path(os.fspath(path)).expanduser() if path is not None else None
    return _carry(session, lambda s, p: s.snapshot(target, p, replace))


def clone(
    *,
    to: str | None = None,
    switch: bool = False,
    replace: bool = False,
    session: HindsightSession | None = None,
) -> Outcome:
    """Copy the current bank on the server into a new one, to experiment on: ``to`` is its
    base name (as for ``%hindsight bank``; default ``<bank>-clone-<time>``), ``replace=True``
    deletes an existing bank of that name first, and ``switch=True`` points this session at the
    copy (the queue is sent first, as on any change of bank). Later memories of either bank
    stay out of the other."""
    from datetime import datetime, timezone

    from ._memory.scope import compute_scope

    session = session or current_session()
    s = session.settings
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    base = _bank_name(to or f"{s.bank_id}-clone-{stamp}")
    target = compute_scope(s.scoping, base, s.bank_prefix, session.label).bank_id
    outcome = _carry(session, lambda s, p: s.clone(target, replace, p))
    if switch:
        s.set_setting("bank_id", base)
        outcome.headline += f" This session now uses {target!r}."
    return outcome


class Transfer(NamedTuple):
    """A transfer of a whole bank for ``%hindsight NAME`` and ``hindsight-magic NAME``: its
    declaration (``_operations``: the summary, the words each front end takes) and ``run``
    (the parsed words, the session or None for the process's) → the outcome."""

    operation: Operation
    run: Callable[[Any, HindsightSession | None], Outcome]


TRANSFERS: dict[str, Transfer] = {
    "restore": Transfer(
        _operations.RESTORE,
        lambda args, session: restore(
            args.what, into=args.into, replace=args.replace, session=session
        ),
    ),
    "snapshot": Transfer(
        _operations.SNAPSHOT,
        lambda args, session: snapshot(args.path, replace=args.replace, session=session),
    ),
    "clone": Transfer(
        _operations.CLONE,
        lambda args, session: clone(
            to=args.to,
            switch=getattr(args, "switch", False),
            replace=args.replace,
            session=session,
        ),
    ),
}


def correct(memory: MemoryRef, text: str, *, session: HindsightSession | None = None) -> Outcome:
    """Make a memory say ``text`` instead: the server re-embeds it, so recall finds the new
    words and not the old. Secrets in ``text`` are redacted as for ``retain``."""
    return (session or current_session()).correct(_ref(memory), text)


def history(memory: MemoryRef, *, session: HindsightSession | None = None) -> Outcome:
    """What a memory said and when it was changed (edited, forgotten, restored), as the
    server recorded it."""
    return (session or current_session()).history(_ref(memory))


def forgotten(*, session: HindsightSession | None = None) -> Outcome:
    """The forgotten memories of the current scope, newest first, with their reasons."""
    return (session or current_session()).forgotten()


def verify(*, session: HindsightSession | None = None) -> Outcome:
    """The memories whose data files changed since their cell read them (re-written, gone, or
    not checkable on this machine), grouped by file, with what to do about each (re-run the
    cell, forget it, or keep it); their ids in ``.memory_ids``. Every memory of the scope is
    read (whether its data changed is checked here): a bar shows while a long read runs."""
    from ._ui.progress import ReadProgress

    progress = ReadProgress(_running_shell(), "reading the bank's memories to check their data")
    try:
        outcome = (session or current_session()).verify(progress)
    except BaseException:
        progress.close(f"Stopped after {progress.done} memories.")
        raise
    progress.close(f"Read {progress.done} memories.")
    return outcome


def delete(
    document: MemoryRef, *, yes: bool = False, session: HindsightSession | None = None
) -> Outcome:
    """Delete a source document and every memory made from it, for good. ``document`` is a
    document id, a retain id (one still queued is cancelled), ``"#3"`` or a recalled memory
    (its document). Without ``yes=True`` nothing is deleted: the result lists what would go."""
    return (session or current_session()).delete(_ref(document), yes)


def purge_matching(
    text: str, *, yes: bool = False, session: HindsightSession | None = None
) -> Outcome:
    """Every memory whose text contains ``text`` (say, a leaked key), forgotten ones too, and
    the documents they came from: listed, and deleted for good with ``yes=True``."""
    return (session or current_session()).purge_matching(text, yes)


def dedupe(*, yes: bool = False, session: HindsightSession | None = None) -> Outcome:
    """Tidy what the current scope holds twice. Recall already shows each cell and each text
    once; this cleans the bank for good: the copies of one text kept before cell versions
    were (every re-run of a notebook, a ``%retain`` line retained twice) are deleted, the
    newest of each kept, and a cell's older versions that are still valid (two kernels
    racing) are superseded (kept, reversible). Without ``yes=True`` nothing is changed: the
    result lists what would be, and says how many memories were read (all of the scope's
    facts: a bar shows while a long read runs)."""
    from ._ui.progress import ReadProgress

    progress = ReadProgress(_running_shell(), "reading the bank's memories to find copies")
    try:
        outcome = (session or current_session()).dedupe(yes, progress)
    except BaseException:
        progress.close(f"Stopped after {progress.done} memories.")
        raise
    progress.close(f"Read {progress.done} memories.")
    return outcome


def _window(since: When | None, until: When | None) -> TimeWindow | None:
    """The window ``since``…``until`` name (None when neither is given); a bad WHEN is an
    ``InputError`` saying what to write."""
    from ._timewindow import TimeWindow

    return TimeWindow.parse(since, until)
