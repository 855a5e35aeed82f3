"""The bank seen whole: how many memories arrived per day, week or month (by fact type and by
the notebook they came from), and which entities occur together.

Both read the server's own records rather than anything kept in the kernel, so a teammate's
notebook and an agent show up too:

- the timeline counts the scope's valid memories on the ``mentioned_at`` axis (the same axis
  ``--since``/``--until`` filter recall on; see ``_timewindow``), in the scope's tags. A scope of
  at most ``READ_WHOLE`` memories is read whole: every count exact. A larger one is counted by
  the server, per period and fact type (``paging.ScopeReader.count``: the list's ``total``
  with no memory sent), so its cost follows the number of periods, not of memories. Which
  notebook a memory came from is only in its metadata, which the server does not count, and
  a sample cannot tell it (a notebook's memories come in one run of time, so a few slices of a
  period miss most notebooks): the newest ``READ_WHOLE`` memories are read for the split by
  notebook, exactly, and the older rest of each period shows as ``NOT_READ``, said under the
  table (``TimelineCounts.notebooks_read``); ``--since`` narrows the timeline to read all. Not
  ``…/stats/memories-timeseries``: it takes no tags (a shared bank's other projects would
  count), buckets UTC days, counts memories without a ``mentioned_at`` on their arrival, and
  stops at 90 days. Periods are the user's local days, ISO weeks (from Monday) or months.
  Cells revised are counted from the superseded versions (the invalidated archive, which holds
  only what was superseded or forgotten): one per superseded cell version, in the period it
  was superseded. The memories read are also judged, here, as ``%hindsight verify`` judges them
  (``ChangedData``): those whose data changed since their cell read it mark their period, at
  no request more (past ``READ_WHOLE``, among the newest read). On a server without an LLM
  (``llm.ServerLlm``) observations are left out: what consolidation made there is the mock
  LLM's copy of a fact (its first line, dated), not a consolidation;
- the map counts, over the same pages of the list, the entities each fact (``world`` and
  ``experience``) names: how many facts mention each, how many mention two together, and which
  are one entity's newest. Observations are left out: the server's consolidation makes them
  from the facts, each naming its facts' entities again, so the server's own counts
  (``GET …/entities`` and ``…/entities/graph`` under a tag filter, which every scope but
  ``global`` uses) gave an entity mentioned once a count of 2 wherever consolidation runs.

No drawing here: ``_ui.pictures`` turns these numbers into figures and tables.
"""

from __future__ import annotations

import difflib
import itertools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time, timedelta, tzinfo
from typing import TYPE_CHECKING, NamedTuple

from .._api.vocabulary import FactType, MemoryState
from .._capture.evidence import State
from .._capture.identity import cell_document
from .._enums import StrEnum
from .._errors import PUBLIC, InputError
from .._operations import TOP
from .._text import encodable, one_line, plain_text, plural
from .._timewindow import EARLIEST, TimeWindow, WhenError, local_zone, server_time
from .paging import TICK, ScopeReader
from .provenance import AGENT, AGENT_NAME, NOTEBOOK, SOURCE
from .verify import DataCheck
from .versions import SUPERSEDED

if TYPE_CHECKING:
    from .._api.client import Connection
    from .._api.replies import MemoryUnit
    from .curation import Curator
    from .llm import ServerLlm
    from .parsed_replies import RecalledMemory
    from .scope import BankScope

FACT_TYPES: tuple[FactType, ...] = tuple(FactType)
FACTS = (FactType.WORLD, FactType.EXPERIENCE)  # what was retained; an observation is made of them
CONSOLIDATED = "(consolidated)"  # an observation: the server's, from many memories
NO_NOTEBOOK = "(no notebook)"  # a script's memory, or one written before provenance
NOT_READ = "(older, not read)"  # memories counted but not read for the split by notebook
MAP_CAP = 200_000  # memories the map reads at most (the newest of each fact type)
READ_PAGE = 5000  # memories per request where the timeline and the map read them
READ_WHOLE = 2 * READ_PAGE  # memories a timeline reads at most: all of a scope this size or less
MAX_FILES_NAMED = 3  # changed files named under the timeline
FIRST_SPAN = timedelta(days=32)  # the first window searched back for the oldest memory
ENTITY_MEMORIES = 20  # memories listed under one entity


class Period(StrEnum):
    """What the timeline counts memories per (``hm.timeline(by=...)``, ``--by``)."""

    DAY = "day"
    WEEK = "week"
    MONTH = "month"


PERIODS: tuple[str, ...] = tuple(Period)


class OverviewError(InputError):
    """A period or entity that does not fit; the message is one line (a top N out of range
    is its declaration's ``InputError``)."""

    __module__ = PUBLIC


class TimelineRow(NamedTuple):
    """One count: memories of ``fact_type`` from ``notebook`` recorded in ``period``."""

    period: date  # the period's first day
    fact_type: FactType
    notebook: str
    memories: int


def period_start(day: date, by: Period) -> date:
    """The first day of the day, ISO week (Monday) or month ``day`` falls in."""
    if by == Period.WEEK:
        return day - timedelta(days=day.weekday())
    if by == Period.MONTH:
        return day.replace(day=1)
    return day


def next_period(start: date, by: Period) -> date:
    """The first day of the period after the one starting on ``start``."""
    if by == Period.WEEK:
        return start + timedelta(days=7)
    if by == Period.MONTH:
        return (start.replace(day=28) + timedelta(days=4)).replace(day=1)
    return start + timedelta(days=1)


def choose_period(first: date, last: date) -> Period:
    """Days for up to two months, weeks for up to a year and a half, months beyond."""
    span = (last - first).days
    return Period.DAY if span <= 62 else Period.WEEK if span <= 550 else Period.MONTH


@dataclass(frozen=True)
class TimelineCounts:
    """Memories per period, by fact type and by notebook: what ``hm.timeline()`` draws."""

    bank_id: str
    by: Period
    rows: tuple[TimelineRow, ...]
    periods: tuple[date, ...]  # every period from the first to the last, empty ones too
    window: TimeWindow | None = None
    counted: str = ""  # which memories of the bank: ``tagged project:churn, or untagged``
    revised: tuple[tuple[date, int], ...] = ()  # period → cells revised in it (a new version)
    notebooks_read: int = 0  # the newest memories read for the split by notebook (0: all)
    data_changed: tuple[tuple[date, int], ...] = ()  # period → memories whose data changed
    changed_files: tuple[str, ...] = ()  # the files they rest on (paths from the server)

    def revisions(self) -> dict[date, int]:
        """period → how many notebook cells were revised in it: a new version replaced an
        earlier one (every period present)."""
        table = dict.fromkeys(self.periods, 0)
        for period, count in self.revised:
            table[period] = table.get(period, 0) + count
        return table

    def data_changes(self) -> dict[date, int]:
        """period → how many memories in it rest on data that changed (or is gone) since their
        cell read it, as ``%hindsight verify`` judges them (every period present)."""
        table = dict.fromkeys(self.periods, 0)
        for period, count in self.data_changed:
            table[period] = table.get(period, 0) + count
        return table

    @property
    def changed_data(self) -> int:
        """The memories counted that rest on data that changed (or is gone)."""
        return sum(count for _, count in self.data_changed)

    @property
    def total(self) -> int:
        return sum(row.memories for row in self.rows)

    def _per_period(self, column: str) -> dict[date, Counter[str]]:
        table: dict[date, Counter[str]] = {p: Counter() for p in self.periods}
        for row in self.rows:
            table[row.period][getattr(row, column)] += row.memories
        return table

    def per_type(self) -> dict[date, Counter[str]]:
        """period → fact type → count (every period present)."""
        return self._per_period("fact_type")

    def per_notebook(self) -> dict[date, Counter[str]]:
        """period → notebook → count (every period present)."""
        return self._per_period("notebook")

    def notebooks(self) -> list[tuple[str, int]]:
        """Each notebook with its memories, most first."""
        totals = sum(self.per_notebook().values(), Counter[str]())
        return sorted(totals.items(), key=lambda item: (-item[1], item[0]))

    def describe(self) -> str:
        """``412 memories in bank b (tagged project:churn, or untagged), per week, since 3 Nov``:
        what was counted, the scope's memories, not the whole bank's."""
        when = f", {self.window.label}" if self.window else ""
        counted = plural(self.total, "memory", "memories")
        which = f" ({self.counted})" if self.counted else ""
        changed = f"; {self.changed_data} with changed data" if self.changed_data else ""
        return f"{counted} in bank {self.bank_id}{which}, per {self.by}{when}{changed}"

    def data_note(self) -> str:
        """'' when no memory's data changed, else which files changed and what lists them
        (the paths are the server's: the caller escapes them for its form)."""
        if not self.changed_data:
            return ""
        files = ", ".join(one_line(path, 80) for path in self.changed_files[:MAX_FILES_NAMED])
        more = len(self.changed_files) - MAX_FILES_NAMED
        files += f" and {plural(more, 'more file', 'more files')}" if more > 0 else ""
        lead = "Of the memories read, " if self.notebooks_read else ""
        rest = plural(self.changed_data, "memory rests", "memories rest")
        return (
            f"{lead}{rest} on data that changed since the cell read it ({files}): "
            "%hindsight verify lists them, with what to do."
        )

    def notebook_note(self) -> str:
        """'' when every memory was read, else which were read for the split by notebook."""
        if not self.notebooks_read:
            return ""
        return (
            f"By notebook: only the newest {self.notebooks_read:,} of the {self.total:,} "
            f"memories were read (the server counts memories per period and type, not per "
            f"notebook); the older ones show as {NOT_READ}. A narrower window (--since, "
            "since=) reads them all."
        )


@dataclass(frozen=True)
class MapNode:
    entity_id: str  # its name: a key within one map
    name: str
    mentions: int  # facts that name it


@dataclass(frozen=True)
class MapEdge:
    source: str  # entity ids
    target: str
    weight: int  # how many facts mention both


@dataclass(frozen=True)
class EntityMap:
    """The top entities and their co-occurrences; with ``focus``, one entity's neighbourhood
    and the memories that mention it."""

    bank_id: str
    nodes: tuple[MapNode, ...]
    edges: tuple[MapEdge, ...]
    total_entities: int
    focus: MapNode | None = None
    memories: Sequence[RecalledMemory] = field(default=())

    def name_of(self, entity_id: str) -> str:
        for node in self.nodes:
            if node.entity_id == entity_id:
                return node.name
        return entity_id

    def neighbours(self, entity_id: str) -> list[tuple[MapNode, int]]:
        """The entities that co-occur with ``entity_id``, strongest first."""
        nodes = {node.entity_id: node for node in self.nodes}
        found = []
        for edge in self.edges:
            other = (
                edge.target
                if edge.source == entity_id
                else edge.source
                if edge.target == entity_id
                else None
            )
            if other in nodes:
                found.append((nodes[other], edge.weight))
        return sorted(found, key=lambda pair: (-pair[1], pair[0].name.lower()))

    def describe(self) -> str:
        if self.focus is not None:
            mentions = plural(self.focus.mentions, "mention", "mentions")
            alongside = plural(len(self.nodes) - 1, "entity", "entities")
            return f"{self.focus.name}: {mentions}, {alongside} alongside, in bank {self.bank_id}"
        shown = f"the top {len(self.nodes)} of " if len(self.nodes) < self.total_entities else ""
        return f"{shown}{plural(self.total_entities, 'entity', 'entities')} in bank {self.bank_id}"


def check_period(by: str | None) -> Period | None:
    """The period the user named (a word of ``Period``), or None: chosen from the span."""
    if by is not None and by not in PERIODS:
        raise OverviewError(f"Unknown period {one_line(str(by), 20)!r}: use day, week or month.")
    return None if by is None else Period(by)


def scope_phrase(scope: BankScope) -> str:
    """Which of a bank's memories the scope reads: ``tagged project:churn, or untagged`` ('' for
    all of them)."""
    tags = scope.recall_tags or ()
    if not tags:
        return ""
    either = " or ".join(tags)
    strict = (scope.tags_match or "").endswith("strict")
    return f"tagged {either}" if strict else f"tagged {either}, or untagged"


class BankOverview:
    """Reads the timeline and the entity map of the session's current scope."""

    def __init__(
        self,
        connection: Connection,
        scope: Callable[[], BankScope],
        before_read: Callable[[str], object],
        curator: Curator | None = None,
        llm: ServerLlm | None = None,
    ) -> None:
        """``llm``: whether the server has an LLM (without one, observations are the mock's
        copies and the timeline leaves them out)."""
        self._connection = connection
        self._scope = scope
        self._before_read = before_read
        self._curator = curator  # an entity's memories curate through it
        self._llm = llm

    def timeline(
        self, by: Period | None = None, window: TimeWindow | None = None, *, settle: bool = True
    ) -> TimelineCounts:
        """Memories per ``by`` period (``None``: chosen from the span) inside ``window``.

        ``settle`` first sends what is queued for the bank and waits (bounded) until the
        server has it, as a recall does; the panel's refresh on the worker does not wait.
        """
        check_period(by)
        scope = self._scope()
        if settle:
            self._before_read(scope.bank_id)
        reader = ScopeReader(self._connection, scope)
        copies = self._llm is not None and self._llm.missing() is not None
        types = FACTS if copies else FACT_TYPES  # the mock's observations are not counted
        start, end = (window.start, window.end) if window else (None, None)
        totals = {fact_type: reader.count(fact_type, start, end) for fact_type in types}
        marks = ChangedData()
        if sum(totals.values()) <= READ_WHOLE:
            counts = self._read_whole(scope.bank_id, reader, types, by, window, marks)
        else:
            counts = self._count_on_server(scope.bank_id, reader, totals, by, window, marks)
        revised = self._revisions(scope, window, counts)
        return replace(
            counts,
            counted=scope_phrase(scope),
            revised=revised,
            data_changed=marks.per_period(counts.by, counts.periods),
            changed_files=tuple(sorted(marks.files)),
        )

    def _read_whole(
        self,
        bank_id: str,
        reader: ScopeReader,
        types: Sequence[FactType],
        by: Period | None,
        window: TimeWindow | None,
        marks: ChangedData,
    ) -> TimelineCounts:
        """Every memory read and counted by its local day, type and notebook; those whose
        data changed noted in ``marks``."""
        zone = local_zone()
        per_day: Counter[tuple[date, FactType, str]] = Counter()
        start, end = (window.start, window.end) if window else (None, None)
        for page in reader.pages(None, start, end, READ_PAGE):
            for item in page:
                moment = server_time(item.mentioned_at)
                if _fact_type(item) not in types or moment is None:
                    continue
                if window is not None and not window.contains(moment):
                    continue
                day = moment.astimezone(zone).date()
                per_day[(day, _fact_type(item), _notebook(item))] += 1
                marks.see(item, day)
        return counted_by_day(bank_id, per_day, by, window)

    def _count_on_server(
        self,
        bank_id: str,
        reader: ScopeReader,
        totals: Mapping[FactType, int],
        by: Period | None,
        window: TimeWindow | None,
        marks: ChangedData,
    ) -> TimelineCounts:
        """Counted by the server per period and type, and the newest ``READ_WHOLE`` read for
        their notebooks (and, in ``marks``, whether their data changed): a few requests per
        period, whatever the bank holds."""
        zone = local_zone()
        start, end = (window.start, window.end) if window else (None, None)
        present = [fact_type for fact_type, count in totals.items() if count]
        today = datetime.now(zone).date()
        after_today = _midnight(today + timedelta(days=1), zone)
        latest = today
        if end is None or end > after_today:  # memories dated ahead (a clock set wrong)
            ahead, _ = reader.slice(0, 1, None, max(after_today, start or after_today), end)
            moment = server_time(ahead[0].mentioned_at) if ahead else None
            latest = max(today, moment.astimezone(zone).date()) if moment else today
        oldest = None
        if start is None:
            walked = present[0] if len(present) == 1 else None
            held = totals[walked] if walked else reader.count(None, None, end)
            oldest = self._first_day(reader, walked, held, end or _midnight(latest, zone, 1))
        first, last = _span(window, zone, oldest, latest)
        by = by or choose_period(first, last)
        periods = _periods(first, last, by)
        bounds = {p: _clamp(p, by, zone, start, end) for p in periods}
        per_type: dict[tuple[date, FactType], int] = {}
        for period in periods:
            for fact_type in present:
                count = reader.count(fact_type, *bounds[period])
                if count:
                    per_type[(period, fact_type)] = count
        rows: Counter[tuple[date, FactType, str]] = Counter()
        read = looked = 0
        for page in reader.pages(None, start, end, READ_PAGE):  # the newest, for notebooks
            for item in page:
                moment = server_time(item.mentioned_at)
                fact_type = _fact_type(item)
                if moment is None or fact_type not in totals:
                    continue
                day = moment.astimezone(zone).date()
                period = period_start(day, by)
                if (period, fact_type) in per_type:
                    rows[(period, fact_type, _notebook(item))] += 1
                    marks.see(item, day)
                    read += 1
            looked += len(page)
            if looked + READ_PAGE > READ_WHOLE:  # another page would pass it
                break
        for (period, fact_type), count in per_type.items():
            seen = sum(n for (p, t, _), n in rows.items() if (p, t) == (period, fact_type))
            rows[(period, fact_type, NOT_READ)] += max(0, count - seen)
        unread = any(notebook == NOT_READ and n for (_, _, notebook), n in rows.items())
        return replace(
            _table(bank_id, by, rows, periods, window), notebooks_read=read if unread else 0
        )

    @staticmethod
    def _first_day(reader: ScopeReader, fact_type: str | None, held: int, before: datetime) -> date:
        """The local day of the oldest of the ``held`` memories dated before ``before``:
        windows doubling backwards until they hold them all, then the last halved by days
        (counts only: a few cheap requests, no sort of the bank)."""
        zone = local_zone()
        high, span, seen = before, FIRST_SPAN, 0
        while True:
            low = max(high - span, EARLIEST)
            seen += reader.count(fact_type, low, high)
            if seen >= held or low <= EARLIEST:
                break
            high, span = low, span * 2
        first = low.astimezone(zone).date()
        beyond = (high - TICK).astimezone(zone).date() + timedelta(days=1)
        while (beyond - first).days > 1:
            middle = first + (beyond - first) // 2
            if reader.count(fact_type, _midnight(first, zone), _midnight(middle, zone)):
                beyond = middle
            else:
                first = middle
        return first

    def _revisions(
        self, scope: BankScope, window: TimeWindow | None, counts: TimelineCounts
    ) -> tuple[tuple[date, int], ...]:
        """Cells revised per period: the cell versions a newer one superseded (the
        invalidated archive holds only the superseded and the forgotten), each in the period
        it was superseded."""
        zone = local_zone()
        when: dict[tuple[str, str], datetime] = {}
        for page in ScopeReader(self._connection, scope, MemoryState.INVALIDATED).pages():
            for item in page:
                cell = cell_document(item.document_id or "")
                moment = server_time(item.invalidated_at)
                reason = item.invalidation_reason or ""
                if cell is None or moment is None or not reason.startswith(SUPERSEDED):
                    continue
                if window is None or window.contains(moment):
                    version = (cell.key, cell.version)  # its pieces are one revision
                    when[version] = min(moment, when.get(version, moment))
        shown = set(counts.periods)
        revised = Counter(period_start(m.astimezone(zone).date(), counts.by) for m in when.values())
        return tuple((period, n) for period, n in sorted(revised.items()) if period in shown)

    def entity_map(
        self,
        entity: str | None = None,
        top: int = 20,
        read: Callable[[int, int], object] = lambda done, total: None,
    ) -> EntityMap:
        """The ``top`` entities the most facts mention and how many mention each pair; with
        ``entity`` (a name, any case), that entity, the ``top`` entities it occurs with most,
        and the newest facts that mention it.

        Which entities occur together is in each memory only (no server query counts pairs
        in a scope's tags), so the scope's facts are read whole, by time
        (``paging.ScopeReader``: a page costs the same at the bank's end as at its start), at
        most ``MAP_CAP``; ``read(done, total)`` follows the read (a bar, where it is long)."""
        top = TOP.check(top)  # a bad one is said by its declaration
        scope = self._scope()
        reader = ScopeReader(self._connection, scope)
        totals = {fact_type: reader.count(fact_type) for fact_type in FACTS}
        total = sum(totals.values())
        read(0, total)
        facts: list[tuple[MemoryUnit, list[str]]] = []  # those naming an entity: kept
        done = 0
        for fact_type in (t for t in FACTS if totals[t]):
            for page in reader.pages(fact_type, page=READ_PAGE):
                facts += [(item, names) for item in page if (names := _entity_names(item))]
                done += len(page)
                read(done, max(total, done))
                if done >= MAP_CAP:
                    break
            if done >= MAP_CAP:
                break
        mentions = Counter(name for _, names in facts for name in names)
        nodes = [MapNode(name, name, count) for name, count in mentions.most_common()]
        if entity is None:
            chosen = nodes[:top]
            kept = {node.entity_id for node in chosen}
            together = Counter(
                pair
                for _, names in facts
                for pair in itertools.combinations(sorted(n for n in names if n in kept), 2)
            )
            return EntityMap(scope.bank_id, tuple(chosen), _edges(together), len(nodes))
        focus = self.find_entity(entity, nodes, len(nodes))
        mentioning = sorted(
            ((item, names) for item, names in facts if focus.name in names),
            key=lambda pair: server_time(pair[0].mentioned_at) or EARLIEST,
            reverse=True,
        )
        alongside = Counter(name for _, names in mentioning for name in names if name != focus.name)
        near = [MapNode(name, name, mentions[name]) for name, _ in alongside.most_common(top)]
        edges = _edges(Counter({(focus.name, node.name): alongside[node.name] for node in near}))
        from .reading import listed_memories

        newest = [item for item, _ in mentioning[:ENTITY_MEMORIES]]
        memories = listed_memories(newest, self._curator)
        return EntityMap(scope.bank_id, (focus, *near), edges, len(nodes), focus, memories)

    @staticmethod
    def find_entity(name: str, entities: Sequence[MapNode], total: int) -> MapNode:
        """The entity called ``name`` (case and spacing aside), else an ``OverviewError``
        naming the closest few, each name as plain text (an entity's name is the server's)."""
        wanted = " ".join(name.split()).casefold()
        for node in entities:
            if node.name.casefold() == wanted:
                return node
        if not entities:
            raise OverviewError("This bank has no entities yet: retain some facts first.")
        names = [node.name for node in entities]
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
        shown = ", ".join(plain_text(one_line(found, 40)) for found in close)
        hint = f" (did you mean {shown}?)" if close else ""
        raise OverviewError(
            f"No entity named {one_line(name, 40)!r} in this bank{hint}: "
            f"%hindsight map lists the {min(total, 20)} most mentioned."
        )


class ChangedData:
    """The timeline's marks: of the memories it reads (newest first), those whose data changed
    or is gone since their cell read it, judged as ``%hindsight verify`` judges them
    (``verify.DataCheck``), a cell once (its memories share its files), by local day. A memory
    recorded in another project or on another machine whose file is not here is not marked: it
    is not known to have changed (verify lists it as not checkable here)."""

    def __init__(self) -> None:
        self._check = DataCheck()
        self._cells: set[str] = set()
        self.days: Counter[date] = Counter()
        self.files: set[str] = set()

    def see(self, item: MemoryUnit, day: date) -> None:
        cell = item.document_id or item.id
        if cell in self._cells:
            return
        self._cells.add(cell)
        found = [c for c in self._check.changed(item) if c.state in (State.CHANGED, State.GONE)]
        if found:
            self.days[day] += 1
            self.files.update(c.evidence.path for c in found)

    def per_period(self, by: Period, periods: Sequence[date]) -> tuple[tuple[date, int], ...]:
        """The marks per ``by`` period, of the ``periods`` shown."""
        shown = set(periods)
        marked = Counter[date]()
        for day, count in self.days.items():
            marked[period_start(day, by)] += count
        return tuple((period, n) for period, n in sorted(marked.items()) if period in shown)


def counted_by_day(
    bank_id: str,
    per_day: Counter[tuple[date, FactType, str]],
    by: Period | None,
    window: TimeWindow | None,
) -> TimelineCounts:
    """Memories counted per local day, type and notebook, as counts per ``by`` period (chosen
    from the span when ``None``) from the window's start (else the first day) to today."""
    zone = local_zone()
    days = [day for day, _, _ in per_day]
    today = datetime.now(zone).date()
    first, last = _span(window, zone, min(days, default=None), max([today, *days]))
    by = by or choose_period(first, last)
    rows: Counter[tuple[date, FactType, str]] = Counter()
    for (day, fact_type, notebook), count in per_day.items():
        rows[(period_start(day, by), fact_type, notebook)] += count
    return _table(bank_id, by, rows, _periods(first, last, by), window)


def _midnight(day: date, zone: tzinfo, days: int = 0) -> datetime:
    """The moment ``day`` (plus ``days``) begins in ``zone``."""
    return datetime.combine(day + timedelta(days=days), time(), tzinfo=zone)


def _span(
    window: TimeWindow | None, zone: tzinfo, oldest: date | None, latest: date
) -> tuple[date, date]:
    """The first and last day the periods cover: from the window's start (else the oldest
    memory's day) to today or the newest memory's day, or to the window's end when earlier."""
    first = window.start.astimezone(zone).date() if window and window.start else None
    first = first or oldest or latest
    last = latest
    if window and window.end:
        last = min(latest, (window.end - TICK).astimezone(zone).date())
    return first, last


def _periods(first: date, last: date, by: Period) -> tuple[date, ...]:
    """Every period from the one holding ``first`` to the one holding ``last``."""
    periods = []
    start = period_start(first, by)
    while start <= last:
        periods.append(start)
        start = next_period(start, by)
    return tuple(periods)


def _clamp(
    period: date, by: Period, zone: tzinfo, start: datetime | None, end: datetime | None
) -> tuple[datetime, datetime]:
    """``[from, to)`` of ``period`` in ``zone``, inside the window ``[start, end)``."""
    low, high = _midnight(period, zone), _midnight(next_period(period, by), zone)
    return max(low, start) if start else low, min(high, end) if end else high


def _table(
    bank_id: str,
    by: Period,
    rows: Counter[tuple[date, FactType, str]],
    periods: tuple[date, ...],
    window: TimeWindow | None,
) -> TimelineCounts:
    ordered = sorted(
        (TimelineRow(p, t, n, c) for (p, t, n), c in rows.items() if c),
        key=lambda row: (row.period, FACT_TYPES.index(row.fact_type), row.notebook),
    )
    return TimelineCounts(bank_id, by, tuple(ordered), periods, window)


def _entity_names(item: MemoryUnit) -> list[str]:
    """The entities a listed memory names: the list joins their names with ``, ``, so a
    name holding one (an LLM's ``Paris, France``; the extension's never do) reads as two."""
    names = item.entities
    if not isinstance(names, str):
        return []
    return list(dict.fromkeys(name.strip() for name in names.split(", ") if name.strip()))


def _edges(together: Counter[tuple[str, str]]) -> tuple[MapEdge, ...]:
    """Co-occurrence counts as edges, the strongest first."""
    return tuple(MapEdge(a, b, weight) for (a, b), weight in together.most_common() if weight)


def _fact_type(item: MemoryUnit) -> FactType:
    kind = item.kind
    return FactType(kind) if kind in FACT_TYPES else FactType.WORLD


def _notebook(item: MemoryUnit) -> str:
    """The notebook a listed memory came from (its file name), or what stands in for one."""
    if item.kind == FactType.OBSERVATION:
        return CONSOLIDATED
    meta = item.metadata or {}
    notebook = str(meta.get(NOTEBOOK) or "").strip()
    if notebook:
        return encodable(notebook.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or notebook)
    if meta.get(SOURCE) == AGENT:
        return f"agent ({meta.get(AGENT_NAME) or '?'})"
    return NO_NOTEBOOK


__all__ = [
    "CONSOLIDATED",
    "FACT_TYPES",
    "PERIODS",
    "BankOverview",
    "EntityMap",
    "OverviewError",
    "Period",
    "TimelineCounts",
    "TimelineRow",
    "WhenError",
]
