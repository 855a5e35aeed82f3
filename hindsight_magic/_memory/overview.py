"""The bank seen whole: how many memories arrived per day, week or month (by fact type and by
the notebook they came from), and which entities occur together.

Both read the server's own records rather than anything kept in the kernel, so a teammate's
notebook and an agent show up too:

- the timeline pages through ``GET …/memories/list`` on the ``mentioned_at`` axis (the same
  axis ``--since``/``--until`` filter recall on; see ``timewindow``), valid memories only, in
  the scope's tags. The list and not ``…/stats/memories-timeseries``: only the list carries
  each memory's provenance (which notebook), and it takes any window, where the time series
  stops at 90 days. Periods are the user's local days, ISO weeks (from Monday) or months;
- the map reads ``GET …/entities`` (the bank's entities, most mentioned first) for the top N,
  ``GET …/entities/graph`` for how often two co-occur, and ``GET …/memories/list?entity_id=``
  for one entity's memories with their provenance.

No drawing here: ``_ui.pictures`` turns these numbers into figures and tables.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

from .._capture.identity import cell_document
from .._errors import InputError
from .._text import encodable, one_line, plain_text, plural
from .provenance import AGENT, AGENT_NAME, NOTEBOOK, REPLACES, SOURCE
from .timewindow import TIME_FIELD, TimeWindow, WhenError, local_zone, server_time

if TYPE_CHECKING:
    from .._api.client import Connection
    from .curation import Curator
    from .parsed_replies import RecalledMemory
    from .scope import BankScope

PERIODS = ("day", "week", "month")
FACT_TYPES = ("world", "experience", "observation")
CONSOLIDATED = "(consolidated)"  # an observation: the server's, from many memories
NO_NOTEBOOK = "(no notebook)"  # a script's memory, or one written before provenance
PAGE = 2000  # memories per list request: 10 000 memories are five requests
MAX_PAGES = 100  # 200 000 memories; past that the timeline says it stopped
MAP_EDGES = 5000  # co-occurrence edges read for a map (the server's strongest first)
ENTITY_MEMORIES = 20  # memories listed under one entity
MAX_TOP = 200


class OverviewError(InputError):
    """A period, top N or entity that does not fit; the message is one line."""


class TimelineRow(NamedTuple):
    """One count: memories of ``fact_type`` from ``notebook`` recorded in ``period``."""

    period: date  # the period's first day
    fact_type: str
    notebook: str
    memories: int


def period_start(day: date, by: str) -> date:
    """The first day of the day, ISO week (Monday) or month ``day`` falls in."""
    if by == "week":
        return day - timedelta(days=day.weekday())
    if by == "month":
        return day.replace(day=1)
    return day


def next_period(start: date, by: str) -> date:
    """The first day of the period after the one starting on ``start``."""
    if by == "week":
        return start + timedelta(days=7)
    if by == "month":
        return (start.replace(day=28) + timedelta(days=4)).replace(day=1)
    return start + timedelta(days=1)


def choose_period(first: date, last: date) -> str:
    """Days for up to two months, weeks for up to a year and a half, months beyond."""
    span = (last - first).days
    return "day" if span <= 62 else "week" if span <= 550 else "month"


@dataclass(frozen=True)
class TimelineCounts:
    """Memories per period, by fact type and by notebook: what ``hm.timeline()`` draws."""

    bank_id: str
    by: str
    rows: tuple[TimelineRow, ...]
    periods: tuple[date, ...]  # every period from the first to the last, empty ones too
    window: TimeWindow | None = None
    truncated: bool = False  # stopped after MAX_PAGES pages
    counted: str = ""  # which memories of the bank: ``tagged project:churn, or untagged``
    revised: tuple[tuple[date, int], ...] = ()  # period → cells revised in it (a new version)

    def revisions(self) -> dict[date, int]:
        """period → how many notebook cells were revised in it: a new version replaced an
        earlier one (every period present)."""
        table = dict.fromkeys(self.periods, 0)
        for period, count in self.revised:
            table[period] = table.get(period, 0) + count
        return table

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
        return f"{counted} in bank {self.bank_id}{which}, per {self.by}{when}"


@dataclass(frozen=True)
class MapNode:
    entity_id: str
    name: str
    mentions: int


@dataclass(frozen=True)
class MapEdge:
    source: str  # entity ids
    target: str
    weight: int  # how many memories mention both


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


def _items(reply: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    items = (reply or {}).get("items") or ()
    return [item for item in items if isinstance(item, dict)]


def _envelopes(reply: Mapping[str, Any], key: str) -> Iterator[Mapping[str, Any]]:
    """The ``data`` of each Cytoscape ``{"data": {...}}`` envelope under ``key``."""
    for entry in reply.get(key) or ():
        data = entry.get("data") if isinstance(entry, dict) else None
        if isinstance(data, dict):
            yield data


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def check_period(by: str | None) -> str | None:
    if by is not None and by not in PERIODS:
        raise OverviewError(f"Unknown period {one_line(str(by), 20)!r}: use day, week or month.")
    return by


def check_top(top: int) -> int:
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= MAX_TOP:
        raise OverviewError(f"Invalid top {top!r}: use a whole number from 1 to {MAX_TOP}.")
    return top


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
        before_read: Callable[[str], int],
        curator: Curator | None = None,
    ) -> None:
        self._connection = connection
        self._scope = scope
        self._before_read = before_read
        self._curator = curator  # an entity's memories curate through it

    def timeline(
        self, by: str | None = None, window: TimeWindow | None = None, *, settle: bool = True
    ) -> TimelineCounts:
        """Memories per ``by`` period (``None``: chosen from the span) inside ``window``.

        ``settle`` first sends what is queued for the bank and waits (bounded) until the
        server has it, as a recall does; the panel's refresh on the worker does not wait.
        """
        check_period(by)
        scope = self._scope()
        if settle:
            self._before_read(scope.bank_id)
        zone = local_zone()
        per_day: Counter[tuple[date, str, str]] = Counter()
        revised: Counter[date] = Counter()
        truncated = True
        listing = scope.listing("valid", PAGE)
        span = window.server_range() if window else {}
        for page in range(MAX_PAGES):
            reply = self._connection.client.list_memories(
                scope.bank_id, **listing, offset=page * PAGE, time_field=TIME_FIELD, **span
            )
            items = _items(reply)
            for item in items:
                moment = server_time(item.get(TIME_FIELD)) or server_time(item.get("date"))
                if moment is None or (window is not None and not window.contains(moment)):
                    continue
                day = moment.astimezone(zone).date()
                per_day[(day, _fact_type(item), _notebook(item))] += 1
                if _revises(item):
                    revised[day] += 1
            if len(items) < PAGE:
                truncated = False
                break
        counts = self._counted(scope.bank_id, per_day, by, window, truncated)
        in_periods: Counter[date] = Counter()
        for day, count in revised.items():
            in_periods[period_start(day, counts.by)] += count
        return replace(counts, counted=scope_phrase(scope), revised=tuple(in_periods.items()))

    @staticmethod
    def _counted(
        bank_id: str,
        per_day: Counter[tuple[date, str, str]],
        by: str | None,
        window: TimeWindow | None,
        truncated: bool,
    ) -> TimelineCounts:
        # the periods run from the window's start (else the first memory) to today, or to
        # the window's end when that is earlier; every counted day lies inside them
        zone = local_zone()
        days = [day for day, _, _ in per_day]
        latest = max([datetime.now(zone).date(), *days])
        first = window.start.astimezone(zone).date() if window and window.start else None
        first = first or min(days, default=latest)
        last = latest
        if window and window.end:
            last = min(latest, (window.end - timedelta(microseconds=1)).astimezone(zone).date())
        by = by or choose_period(first, last)
        rows: Counter[tuple[date, str, str]] = Counter()
        for (day, fact_type, notebook), count in per_day.items():
            rows[(period_start(day, by), fact_type, notebook)] += count
        periods = []
        start = period_start(first, by)
        while start <= last:
            periods.append(start)
            start = next_period(start, by)
        ordered = sorted(
            (TimelineRow(p, t, n, c) for (p, t, n), c in rows.items()),
            key=lambda row: (row.period, FACT_TYPES.index(row.fact_type), row.notebook),
        )
        return TimelineCounts(bank_id, by, tuple(ordered), tuple(periods), window, truncated)

    def entity_map(self, entity: str | None = None, top: int = 20) -> EntityMap:
        """The ``top`` most mentioned entities and how often each pair occurs together; with
        ``entity`` (a name, any case), that entity and the ``top`` entities it occurs with most,
        and the memories that mention it."""
        check_top(top)
        scope = self._scope()
        client = self._connection.client
        tags, match = scope.recall_tags, scope.tags_match
        limit = top if entity is None else 1000
        listed = client.entities(scope.bank_id, limit=limit, tags=tags, tags_match=match)
        entities = [
            MapNode(
                str(item.get("id")),
                str(item.get("canonical_name") or "?"),
                _count(item.get("mention_count")),
            )
            for item in _items(listed)
            if item.get("id")
        ]
        total = _count((listed or {}).get("total")) or len(entities)
        graph = client.entity_graph(scope.bank_id, limit=MAP_EDGES, tags=tags, tags_match=match)
        edges = [
            MapEdge(str(data.get("source")), str(data.get("target")), _count(data.get("weight")))
            for data in _envelopes(graph, "edges")
        ]
        if entity is None:
            chosen = {node.entity_id for node in entities[:top]}
            kept = tuple(e for e in edges if e.source in chosen and e.target in chosen)
            return EntityMap(scope.bank_id, tuple(entities[:top]), kept, total)
        focus = self._find(entity, entities, total)
        known = {node.entity_id: node for node in entities}
        for data in _envelopes(graph, "nodes"):  # graph nodes past the first 1000 listed
            entity_id = str(data.get("id"))
            known.setdefault(
                entity_id,
                MapNode(entity_id, str(data.get("label") or "?"), _count(data.get("mentionCount"))),
            )
        touching = sorted(
            (e for e in edges if focus.entity_id in (e.source, e.target)),
            key=lambda e: -e.weight,
        )[:top]
        others = [e.target if e.source == focus.entity_id else e.source for e in touching]
        nodes = (focus, *(known[o] for o in others if o in known))
        memories = self._entity_memories(scope, focus.entity_id)
        return EntityMap(scope.bank_id, nodes, tuple(touching), total, focus, memories)

    @staticmethod
    def _find(name: str, entities: Sequence[MapNode], total: int) -> MapNode:
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

    def _entity_memories(self, scope: BankScope, entity_id: str) -> list[RecalledMemory]:
        reply = self._connection.client.list_memories(
            scope.bank_id, **scope.listing("valid", ENTITY_MEMORIES), entity_id=entity_id
        )
        from .reading import listed_memories

        return listed_memories(reply, self._curator)


def _fact_type(item: Mapping[str, Any]) -> str:
    kind = item.get("fact_type") or item.get("type")
    return kind if kind in FACT_TYPES else "world"


def _revises(item: Mapping[str, Any]) -> bool:
    """Whether a listed memory is a cell's new version (its first piece: a cell cut in parts
    is revised once)."""
    meta = item.get("metadata")
    if not isinstance(meta, dict) or not meta.get(REPLACES):
        return False
    cell = cell_document(str(item.get("document_id") or ""))
    return cell is None or cell.piece == 1


def _notebook(item: Mapping[str, Any]) -> str:
    """The notebook a listed memory came from (its file name), or what stands in for one."""
    if (item.get("fact_type") or item.get("type")) == "observation":
        return CONSOLIDATED
    meta = item.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
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
    "TimelineCounts",
    "TimelineRow",
    "WhenError",
]
