"""Recall and reflect over the current scope.

Before each read, the session's ``before_read`` sends what is still queued for the bank and
waits (bounded) until the server has indexed the memories the user queued, so a memory just
retained can be found; it returns how many auto-retained cells the server cannot search yet
(never waited for), which the result reports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._api.client import ensure_bank
from .._text import encodable
from .results import RecallResult, ReflectResult
from .timewindow import server_time

if TYPE_CHECKING:
    from .._api.client import Connection
    from .._settings import HindsightSettings
    from .curation import Curator
    from .parsed_replies import RecalledMemory
    from .scope import BankScope
    from .timewindow import TimeWindow


LATEST_QUERY = "(the newest memories)"
WINDOW_WIDENING = 4  # a window asks the server for this many times the tokens, then filters
WINDOW_MAX_TOKENS = 16384  # … but never more than this (unless the user asked for more)
CHARS_PER_TOKEN = 4  # the server counts tokens exactly; the filter's cut needs only an estimate


def widened(max_tokens: int) -> int:
    """The ``max_tokens`` a windowed recall asks for, so that the filter leaves enough."""
    return max(max_tokens, min(max_tokens * WINDOW_WIDENING, WINDOW_MAX_TOKENS))


def within(
    memories: Sequence[RecalledMemory], window: TimeWindow, max_tokens: int
) -> list[RecalledMemory]:
    """The ``memories`` recorded inside ``window`` (on ``mentioned_at``; an undated one is
    outside every window), best first, as many as ``max_tokens`` holds — the server's own rule
    for its results, with tokens estimated: a memory that does not fit is skipped, and the
    best one is kept even when it alone is too long."""
    inside = [m for m in memories if window.contains(server_time(m.mentioned_at))]
    kept, spent = [], 0
    for memory in inside:
        cost = -(-len(memory.text) // CHARS_PER_TOKEN)
        if spent + cost <= max_tokens:
            kept.append(memory)
            spent += cost
    return kept or inside[:1]


def listed_memories(
    reply: Mapping[str, Any] | None, curator: Curator | None
) -> list[RecalledMemory]:
    """The memories of a ``GET …/memories/list`` reply as recall gives them (provenance and
    curation methods), so a listing reads like a recall."""
    from .parsed_replies import parse_recall

    items = [
        {**item, "type": item.get("type") or item.get("fact_type")}
        for item in (reply or {}).get("items") or ()
        if isinstance(item, dict)
    ]
    memories = parse_recall({"results": items})
    if curator is not None:
        memories = [memory.tended_by(curator) for memory in memories]
    return memories


class Reader:
    """Turns a query into the server's ranked memories, or a question into its answer."""

    def __init__(
        self,
        settings: HindsightSettings,
        connection: Connection,
        scope: Callable[[], BankScope],
        before_read: Callable[[str], int],
    ) -> None:
        self._settings = settings
        self._connection = connection
        self._scope = scope
        self._before_read = before_read
        self.model_names: Callable[[], Mapping[str, str]] = dict  # mental model id → name
        self.last_recall: RecallResult | None = None  # what ``#3`` refers to
        self.curator: Curator | None = None  # recalled memories curate through it

    def warm_up(self) -> None:
        """Import what reading a reply needs (the reply models, pydantic): the worker does it
        soon after a load, so the first ``%recall`` does not."""
        from . import parsed_replies  # noqa: F401

    def recall(
        self,
        query: str,
        *,
        budget: str | None = None,
        max_tokens: int | None = None,
        types: Sequence[str] | None = None,
        window: TimeWindow | None = None,
    ) -> RecallResult:
        """Ranked memories for ``query`` (a bank that does not exist yet has none).

        With a ``window``, only memories recorded inside it: the server's ``temporal_window``
        ranks them higher but returns the others too, so the reply (asked ``widened`` tokens
        of it) is filtered here and cut back to ``max_tokens``."""
        s, scope = self._settings, self._scope()
        still_indexing = self._before_read(scope.bank_id)
        max_tokens = max_tokens or s.recall_max_tokens
        reply = self._connection.client.recall(
            scope.bank_id,
            encodable(query),
            budget=budget or s.recall_budget,
            max_tokens=widened(max_tokens) if window is not None else max_tokens,
            types=[encodable(t) for t in (types if types is not None else s.recall_types)],
            tags=scope.recall_tags,
            tags_match=scope.tags_match,
            temporal_window=window.temporal_window() if window is not None else None,
            query_timestamp=window.query_timestamp() if window is not None else None,
        )
        from .parsed_replies import parse_recall

        memories = parse_recall(reply)
        if window is not None:
            memories = within(memories, window, max_tokens)
        if self.curator is not None:
            memories = [memory.tended_by(self.curator) for memory in memories]
        result = RecallResult(
            query, memories, scope.bank_id, still_indexing=still_indexing, window=window
        )
        self.last_recall = result
        return result

    def latest(self, limit: int) -> RecallResult:
        """The scope's newest memories (``GET …/memories/list``), newest first, forgotten ones
        left out, after ``before_read`` sent what was queued: what an agent reads to catch up."""
        scope = self._scope()
        still_indexing = self._before_read(scope.bank_id)
        reply = self._connection.client.list_memories(
            scope.bank_id, **scope.listing("valid", limit)
        )
        memories = listed_memories(reply, self.curator)
        result = RecallResult(LATEST_QUERY, memories, scope.bank_id, still_indexing=still_indexing)
        self.last_recall = result  # ``#3`` names the third of them
        return result

    def reflect(
        self,
        question: str,
        *,
        context: str | None = None,
        budget: str | None = None,
        sources: bool = True,
    ) -> ReflectResult:
        """The server's synthesized answer to ``question`` (with what it is based on)."""
        s, scope = self._settings, self._scope()
        still_indexing = self._before_read(scope.bank_id)
        client = self._connection.client
        ensure_bank(client, scope.bank_id, s.bank_mission, s.retain_mission)
        reply = client.reflect(
            scope.bank_id,
            encodable(question),
            budget=budget or s.recall_budget,
            context=encodable(context) if context else None,
            tags=scope.recall_tags,
            tags_match=scope.tags_match,
            include_facts=sources,
        )
        from .parsed_replies import Sources, parse_reflect

        text, based_on = parse_reflect(reply)
        if not sources:
            return ReflectResult(text, question, still_indexing=still_indexing)
        # the server names a mental model only inside its text; the cache knows the names
        based_on = (based_on or Sources()).named(self.model_names())
        if self.curator is not None:  # answer.based_on.memories[0].forget() works too
            for memory in based_on.memories:
                memory.tended_by(self.curator)
        return ReflectResult(text, question, based_on, still_indexing=still_indexing)
