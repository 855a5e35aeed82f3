"""``HindsightClient``: one method per Hindsight endpoint we use, on one ``transport.Wire``.

The endpoints by area: server and banks, memories, curation, mental models. Each hands out its
reply parsed into a model of ``replies.py`` (a reply that does not fit is a ``HindsightError``
like any reply that is not Hindsight's), so nothing above ``_api`` reads the server's JSON by
key; every path segment from the user or the server goes through ``bank_path`` /
``path_segment``. How a request is made and how its failures read is the wire's
(``transport.py``). httpx and pydantic are imported on first use, not at extension load.

``Connection`` holds the session's current client (replaced whole when the URL, key or timeouts
change); ``banks.ensure_bank`` creates a bank once per process before its first write.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from .._errors import HindsightError
from .._machine import EMBEDDED_CHARS
from .._settings import Budget, Extraction
from .._text import encodable
from .errors import bank_missing, reply_line
from .transport import BANKS, Wire, bank_path, json_reply, path_segment
from .vocabulary import MemoryState

if TYPE_CHECKING:
    import httpx
    from typing_extensions import TypeVar

    from .replies import (
        BankConfig,
        BankListItem,
        BankStats,
        DeletedDocument,
        DocumentEvent,
        DocumentItem,
        DocumentPage,
        Memory,
        MemoryPage,
        MemoryUnit,
        MentalModelReply,
        ModelHistoryItem,
        ObservationChange,
        OperationReply,
        Reflection,
        Retained,
        Version,
    )

    # what a recall's memories, and a reflect's reply, are parsed as: the caller's subclass
    MemoryT = TypeVar("MemoryT", bound=Memory, default=Memory)
    ReflectionT = TypeVar("ReflectionT", bound=Reflection, default=Reflection)


@dataclass(frozen=True)
class Timeouts:
    """Per-operation deadlines in seconds."""

    request: float = 30.0
    retain: float = 60.0
    recall: float = 30.0
    reflect: float = 120.0


class HindsightClient:
    """Synchronous Hindsight REST client; safe to share between threads (one httpx pool each)."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeouts: Timeouts | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.timeouts = timeouts or Timeouts()
        self._wire = Wire(self.base_url, api_key, transport)
        self._identity: Version | None = None

    def __repr__(self) -> str:
        auth = "with key" if self._api_key else "no key"
        return f"HindsightClient({self.base_url!r}, {auth})"

    @property
    def has_key(self) -> bool:
        """Whether requests carry an Authorization header."""
        return bool(self._api_key)

    # -- the wire: an endpoint's request goes through ``call`` (``stream``, ``_wire.send``) -----

    @property
    def unreachable_since(self) -> float | None:
        """When a request first found nobody answering at the URL (no connection could be made;
        wall time), since the last reply: None while it answers, or before any request."""
        return self._wire.unreachable_since

    def warm_up(self) -> None:
        """Import httpx and make this thread's connection pool now, without a request."""
        self._wire.warm_up()

    def close(self) -> None:
        """Close every connection pool this client opened."""
        self._wire.close()

    def call(
        self,
        operation: str,
        method: str,
        path: str,
        *,
        timeout_s: float,
        body: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        files: dict[str, Any] | None = None,
        allow_404: bool = False,
        need_json: bool = True,
    ) -> Any:
        """The request nearly every endpoint goes through (``Wire.call``): its reply as JSON,
        None for a 404 when ``allow_404``; every failure a ``HindsightError``."""
        return self._wire.call(
            operation,
            method,
            path,
            timeout_s=timeout_s,
            body=body,
            params=params,
            files=files,
            allow_404=allow_404,
            need_json=need_json,
        )

    def stream(
        self, operation: str, path: str, *, timeout_s: float
    ) -> AbstractContextManager[httpx.Response]:
        """``GET path`` as a stream (``Wire.stream``)."""
        return self._wire.stream(operation, path, timeout_s=timeout_s)

    @staticmethod
    def _model(bank_id: str, model_id: str) -> str:
        return f"{bank_path(bank_id)}/mental-models/{path_segment(model_id)}"

    # -- server and banks -------------------------------------------------------------------

    def health(self) -> None:
        """``GET /health``: a ``HindsightError`` when the server cannot serve (its database
        down: ``errors.database_down``)."""
        self.call("health", "GET", "/health", timeout_s=min(self.timeouts.request, 5))

    def identity(self) -> Version:
        """``GET /version``, checked to be Hindsight's; cached after the first success."""
        if self._identity is None:
            from .replies import Version, parsed

            answer = self._wire.send("version", "GET", "/version", timeout_s=self.timeouts.request)
            if answer.status < 500 and answer.foreign() is not None:  # not a failing Hindsight
                message = (
                    f"{self.base_url} answered but is not a Hindsight server "
                    f"(HTTP {answer.status} for /version)"
                )
                raise HindsightError("version", message, answer.status, None, "not_hindsight")
            reply = json_reply("version", answer)
            if not isinstance(reply, dict) or "api_version" not in reply:
                message = f"{self.base_url} answered but is not a Hindsight server"
                raise HindsightError("version", message, 200, reply, "not_hindsight")
            self._identity = parsed("version", Version, reply)
        return self._identity

    def create_bank(
        self,
        bank_id: str,
        reflect_mission: str = "",
        retain_mission: str = "",
        extraction: BankExtraction | None = None,
        name: str | None = None,
    ) -> None:
        """``PUT /v1/default/banks/{bank}`` (idempotent); missions are left out when empty, and
        so is the extraction mode unless one is given (with its chunk size), and the bank's
        display ``name`` unless given."""
        body: dict[str, Any] = {}
        if name is not None:
            body["name"] = encodable(name)
        if reflect_mission.strip():
            body["reflect_mission"] = reflect_mission.strip()
        if retain_mission.strip():
            body["retain_mission"] = retain_mission.strip()
        if extraction is not None:
            body["retain_extraction_mode"] = extraction.mode
            if extraction.chunk_size:
                body["retain_chunk_size"] = extraction.chunk_size
        self.call(
            "createBank", "PUT", bank_path(bank_id), timeout_s=self.timeouts.request, body=body
        )

    def list_banks(self, limit: int | None = None) -> list[BankListItem]:
        """``GET /v1/default/banks``: the first ``limit`` (default: the server's, 100)."""
        from .replies import BankListItem, parsed

        params = {"limit": limit} if limit is not None else None
        reply = self.call("listBanks", "GET", BANKS, timeout_s=self.timeouts.request, params=params)
        banks = reply.get("banks", []) if isinstance(reply, dict) else reply
        return [parsed("listBanks", BankListItem, bank) for bank in banks]

    def bank_stats(self, bank_id: str) -> BankStats | None:
        """``GET …/banks/{bank}/stats``; None when the bank does not exist yet."""
        from .replies import BankStats, parsed

        reply = self.call(
            "bankStats",
            "GET",
            f"{bank_path(bank_id)}/stats",
            timeout_s=self.timeouts.request,
            allow_404=True,
        )
        return None if reply is None else parsed("bankStats", BankStats, reply)

    def holds_memories(self, bank_id: str) -> bool | None:
        """Whether a bank holds any document or memory, read now (one row of ``GET
        …/documents`` and of ``…/memories/list``): the server caches a bank's stats for a
        minute, so they may still say "empty" after a retain. None: there is no such bank."""
        try:
            documents = self.call(
                "listDocuments",
                "GET",
                f"{bank_path(bank_id)}/documents",
                timeout_s=self.timeouts.request,
                params={"limit": 1},
            )
        except HindsightError as error:
            if bank_missing(error):
                return None
            raise
        if documents.get("items") or documents.get("total"):
            return True
        memories = self.list_memories(bank_id, limit=1)
        return bool(memories.items or memories.total)

    def memory_count(self, bank_id: str) -> int | None:
        """How many memories a bank holds (the ``total`` of one row of ``GET …/memories/list``,
        read now, not the cached stats); None: there is no such bank."""
        path = f"{bank_path(bank_id)}/memories/list"
        reply = self._listing("listMemories", path, {"limit": 1}, None, None)
        if reply is None:
            return None
        total = reply.get("total") if isinstance(reply, dict) else None
        return total if isinstance(total, int) else 0

    def bank_config(self, bank_id: str) -> BankConfig | None:
        """``GET …/banks/{bank}/config``: the settings in force for the bank (its own over the
        server's); None when the bank does not exist yet."""
        from .replies import BankConfig, parsed

        reply = self.call(
            "getBankConfig",
            "GET",
            f"{bank_path(bank_id)}/config",
            timeout_s=self.timeouts.request,
            allow_404=True,
        )
        return None if reply is None else parsed("getBankConfig", BankConfig, reply)

    def dry_run_extract(self, bank_id: str, content: str, mode: str | None = None) -> list[str]:
        """``POST …/memories/dry-run-extract``: the memories retaining ``content`` would make in
        the bank now (with ``mode``: in that extraction mode), stored nowhere. Extraction by an
        LLM is one real call of the server's LLM."""
        body: dict[str, Any] = {"content": content}
        if mode:
            body["retain_extraction_mode"] = mode
        reply = self.call(
            "dryRunExtract",
            "POST",
            f"{bank_path(bank_id)}/memories/dry-run-extract",
            timeout_s=self.timeouts.request,
            body=body,
        )
        return [
            str(fact.get("text", "")) for fact in reply.get("facts") or [] if isinstance(fact, dict)
        ]

    def bank_llm_health(self, bank_id: str) -> dict[str, str]:
        """``POST …/health/llm``: one minimal call of each LLM the bank uses, operation →
        status (``retain``, ``consolidation``, ``reflect`` → ``connected``, ``auth_failed``,
        ``unreachable``, ``timeout``, ``not_configured``); the server says nothing of the
        provider, model or key. A 404 when the server has the probe off
        (``HINDSIGHT_API_ENABLE_BANK_LLM_HEALTH``; ``GET /version``'s ``bank_llm_health``)."""
        reply = self.call(
            "bankLlmHealth",
            "POST",
            f"{bank_path(bank_id)}/health/llm",
            timeout_s=self.timeouts.reflect,
        )
        return {
            str(item.get("operation")): str(item.get("status"))
            for item in reply.get("operations") or ()
            if isinstance(item, dict)
        }

    # -- memories ---------------------------------------------------------------------------

    def retain_batch(
        self,
        bank_id: str,
        items: Sequence[dict[str, Any]],
        *,
        operation_id: str | None = None,
        async_: bool = True,
    ) -> Retained:
        """``POST …/memories`` with ``async`` and a client ``operation_id`` (safe to re-send)."""
        from .replies import Retained, parsed

        body: dict[str, Any] = {"items": list(items), "async": async_}
        if operation_id:
            body["operation_id"] = operation_id
        answer = self._wire.send(
            "retainBatch",
            "POST",
            f"{bank_path(bank_id)}/memories",
            timeout_s=self.timeouts.retain,
            body=body,
        )
        unreadable = answer.foreign()
        if unreadable is not None and 200 <= answer.status < 300:
            # A 2xx whose body cannot be read: the server may well have accepted the batch, so
            # re-send it under the same operation_id (idempotent) instead of failing it.
            message = (
                f"retainBatch failed: {unreadable} — delivery unconfirmed; re-sending the same "
                "operation"
            )
            raise HindsightError(
                "retainBatch", message, answer.status, answer.text[:500], "unconfirmed"
            )
        reply = json_reply("retainBatch", answer)
        retained = parsed("retainBatch", Retained, reply) if isinstance(reply, dict) else None
        if retained is None or not retained.success:
            message = f"retainBatch failed: unexpected reply {reply_line(reply, 120)}"
            raise HindsightError("retainBatch", message, 200, reply, "not_hindsight")
        return retained

    def recall(
        self,
        bank_id: str,
        query: str,
        *,
        budget: Budget = Budget.MID,
        max_tokens: int | None = None,
        types: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        tags_match: str | None = None,
        temporal_window: tuple[str, str] | None = None,
        query_timestamp: str | None = None,
        min_semantic: float | None = None,
        memory: type[MemoryT] | None = None,
    ) -> list[MemoryT] | None:
        """``POST …/memories/recall``: the memories, each a ``memory``; None when the bank
        does not exist yet.

        ``temporal_window`` (start, end; ISO) ranks memories dated inside it higher — the
        server does not filter on it; ``query_timestamp`` is the "now" recency is measured
        from; ``min_semantic`` replaces the server's floor (0.3) under which its semantic
        search leaves a memory out."""
        # the entities' observations are not shown here: leaving them out saves the server
        # a query per recall and a third of the reply
        body: dict[str, Any] = {"query": query, "budget": budget, "include": {"entities": None}}
        if min_semantic is not None:
            body["min_scores"] = {"semantic": min_semantic}
        if max_tokens:
            body["max_tokens"] = max_tokens
        if types:
            body["types"] = list(types)
        if tags:
            body["tags"] = list(tags)
            if tags_match:
                body["tags_match"] = tags_match
        if temporal_window is not None:
            body["temporal_window"] = {"start": temporal_window[0], "end": temporal_window[1]}
        if query_timestamp:
            body["query_timestamp"] = query_timestamp
        try:
            reply = self.call(
                "recall",
                "POST",
                f"{bank_path(bank_id)}/memories/recall",
                timeout_s=self.timeouts.recall,
                body=body,
            )
        except HindsightError as error:
            if bank_missing(error):
                return None
            raise
        from .replies import Memory, parsed

        kind = cast("type[MemoryT]", memory or Memory)  # None: MemoryT's default
        results = reply.get("results") if isinstance(reply, dict) else None
        return [parsed("recall", kind, item) for item in results or ()]

    def reflect(
        self,
        bank_id: str,
        query: str,
        *,
        budget: Budget = Budget.MID,
        context: str | None = None,
        tags: Sequence[str] | None = None,
        tags_match: str | None = None,
        include_facts: bool = False,
        reflection: type[ReflectionT] | None = None,
    ) -> ReflectionT:
        """``POST …/reflect``, its reply a ``reflection``; ``include_facts`` asks for the
        evidence (``based_on``)."""
        from .replies import Reflection, parsed

        body: dict[str, Any] = {"query": query, "budget": budget}
        if include_facts:
            body["include"] = {"facts": {}}
        if context:
            body["context"] = context
        if tags:
            body["tags"] = list(tags)
            if tags_match:
                body["tags_match"] = tags_match
        reply = self.call(
            "reflect",
            "POST",
            f"{bank_path(bank_id)}/reflect",
            timeout_s=self.timeouts.reflect,
            body=body,
        )
        kind = cast("type[ReflectionT]", reflection or Reflection)  # None: its default
        return parsed("reflect", kind, reply)

    def operation(self, bank_id: str, operation_id: str) -> OperationReply | None:
        """``GET …/operations/{id}``: an async retain's progress (None when unknown)."""
        from .replies import OperationReply, parsed

        reply = self._get_one("getOperation", bank_id, "operations", operation_id)
        return None if reply is None else parsed("getOperation", OperationReply, reply)

    def cancel_operation(self, bank_id: str, operation_id: str) -> None:
        """``DELETE …/operations/{id}``: stop an operation (a transfer) on the server."""
        path = f"{bank_path(bank_id)}/operations/{path_segment(operation_id)}"
        self.call("cancelOperation", "DELETE", path, timeout_s=5, need_json=False)

    def document(self, bank_id: str, document_id: str) -> DocumentItem | None:
        """``GET …/documents/{id}``: a document as stored (``original_text`` …); None if none."""
        from .replies import DocumentItem, parsed

        reply = self._get_one("getDocument", bank_id, "documents", document_id)
        return None if reply is None else parsed("getDocument", DocumentItem, reply)

    def list_documents(
        self, bank_id: str, *, q: str | None = None, limit: int = 100, offset: int = 0
    ) -> DocumentPage:
        """``GET …/documents``: ``{items, total}``, the last written first, each with its
        ``memory_unit_count`` (valid memories only: a document whose memories were all
        invalidated counts 0) and ``document_metadata``; ``q`` matches the id or the text (at
        most the server's first 1 000 matches); a bank that does not exist yet has none."""
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        if q is not None:
            params["q"] = encodable(q)
        from .replies import DocumentPage, parsed

        path = f"{bank_path(bank_id)}/documents"
        reply = self._listing("listDocuments", path, params, None, None)
        return parsed("listDocuments", DocumentPage, reply or {})

    # -- curation ---------------------------------------------------------------------------

    def get_memory(self, bank_id: str, memory_id: str) -> MemoryUnit | None:
        """``GET …/memories/{id}``: one memory (invalidated ones too); None if none."""
        from .replies import MemoryUnit, parsed

        reply = self._get_one("getMemory", bank_id, "memories", memory_id)
        return None if reply is None else parsed("getMemory", MemoryUnit, reply)

    def update_memory(self, bank_id: str, memory_id: str, **changes: str) -> MemoryUnit:
        """``PATCH …/memories/{id}``: ``text=`` (re-embedded), ``state=`` (``invalidated`` or
        ``valid``) and ``reason=``; the memory as it now is. Observations are refused (400)."""
        from .replies import MemoryUnit, parsed

        reply = self.call(
            "updateMemory",
            "PATCH",
            f"{bank_path(bank_id)}/memories/{path_segment(memory_id)}",
            timeout_s=self.timeouts.request,
            body=dict(changes),
        )
        return parsed("updateMemory", MemoryUnit, reply)

    def list_memories(
        self,
        bank_id: str,
        *,
        q: str | None = None,
        state: MemoryState | None = None,
        document_id: str | None = None,
        tags: Sequence[str] | None = None,
        tags_match: str | None = None,
        limit: int = 100,
        offset: int = 0,
        entity_id: str | None = None,
        time_field: str | None = None,
        start_date: str | None = None,
        end_date: str | None = None,
        fact_type: str | None = None,
    ) -> MemoryPage:
        """``GET …/memories/list``: ``{items, total}``, newest first (on ``time_field`` when
        given, inside ``start_date``…``end_date``, ISO, end exclusive; of one ``fact_type``
        when given); a bank that does not exist yet has none."""
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        for name, value in (
            ("type", fact_type),
            ("q", q),
            ("state", state),
            ("document_id", document_id),
            ("entity_id", entity_id),
            ("time_field", time_field),
            ("start_date", start_date),
            ("end_date", end_date),
        ):
            if value is not None:
                params[name] = encodable(value)
        from .replies import MemoryPage, parsed

        path = f"{bank_path(bank_id)}/memories/list"
        reply = self._listing("listMemories", path, params, tags, tags_match)
        return parsed("listMemories", MemoryPage, reply or {})

    def _listing(
        self,
        operation: str,
        path: str,
        params: dict[str, Any],
        tags: Sequence[str] | None,
        tags_match: str | None,
    ) -> Any:
        """A listing GET's JSON, with ``params`` and the scope's tags; None for a bank that
        does not exist yet."""
        if tags:
            params["tags"] = list(tags)
            if tags_match:
                params["tags_match"] = tags_match
        try:
            return self.call(operation, "GET", path, timeout_s=self.timeouts.request, params=params)
        except HindsightError as error:
            if bank_missing(error):
                return None
            raise

    def delete_document(self, bank_id: str, document_id: str) -> DeletedDocument | None:
        """``DELETE …/documents/{id}`` with every memory made from it (irreversible);
        how many memories went, or None when there is no such document."""
        from .replies import DeletedDocument, parsed

        reply = self.call(
            "deleteDocument",
            "DELETE",
            f"{bank_path(bank_id)}/documents/{path_segment(document_id)}",
            timeout_s=self.timeouts.request,
            allow_404=True,
        )
        return None if reply is None else parsed("deleteDocument", DeletedDocument, reply)

    def document_history(self, bank_id: str, document_id: str) -> list[DocumentEvent]:
        """``GET …/documents/{id}/history``: its events (edits, invalidations …), newest
        first; [] when there is no such document."""
        from .replies import DocumentEvent, parsed

        reply = self.call(
            "getDocumentHistory",
            "GET",
            f"{bank_path(bank_id)}/documents/{path_segment(document_id)}/history",
            timeout_s=self.timeouts.request,
            allow_404=True,
        )
        items = reply.get("items", []) if isinstance(reply, dict) else []
        return [parsed("getDocumentHistory", DocumentEvent, item) for item in items]

    def observation_history(self, bank_id: str, memory_id: str) -> list[ObservationChange]:
        """``GET …/memories/{id}/history``: an observation's earlier texts (``previous_text``,
        ``changed_at``); [] for a fact, whose changes are its document's events."""
        from .replies import ObservationChange, parsed

        reply = self.call(
            "getMemoryHistory",
            "GET",
            f"{bank_path(bank_id)}/memories/{path_segment(memory_id)}/history",
            timeout_s=self.timeouts.request,
            allow_404=True,
        )
        items = reply.get("items", []) if isinstance(reply, dict) else reply
        return [parsed("getMemoryHistory", ObservationChange, item) for item in items or []]

    def _get_one(
        self, operation: str, bank_id: str, collection: str, item_id: str
    ) -> dict[str, Any] | None:
        """``GET …/{collection}/{id}`` of a bank; None when the server has no such item."""
        reply: dict[str, Any] | None = self.call(
            operation,
            "GET",
            f"{bank_path(bank_id)}/{collection}/{path_segment(item_id)}",
            timeout_s=self.timeouts.request,
            allow_404=True,
        )
        return reply

    # -- mental models ----------------------------------------------------------------------

    def list_mental_models(self, bank_id: str, detail: str = "content") -> list[MentalModelReply]:
        """``GET …/mental-models?detail=…`` (``content`` includes content and trigger).

        A bank that does not exist yet has no models: ``[]``, not an error.
        """
        from .replies import MentalModelReply, parsed

        try:
            reply = self.call(
                "listMentalModels",
                "GET",
                f"{bank_path(bank_id)}/mental-models",
                timeout_s=self.timeouts.request,
                params={"detail": detail},
            )
        except HindsightError as error:
            if bank_missing(error):
                return []
            raise
        items = reply.get("items", []) if isinstance(reply, dict) else reply
        return [parsed("listMentalModels", MentalModelReply, item) for item in items]

    def get_mental_model(
        self, bank_id: str, model_id: str, detail: str = "content"
    ) -> MentalModelReply | None:
        """``GET …/mental-models/{id}?detail=…``; None when there is no such model."""
        from .replies import MentalModelReply, parsed

        reply = self.call(
            "getMentalModel",
            "GET",
            self._model(bank_id, model_id),
            timeout_s=self.timeouts.request,
            params={"detail": detail},
            allow_404=True,
        )
        return None if reply is None else parsed("getMentalModel", MentalModelReply, reply)

    def create_mental_model(
        self,
        bank_id: str,
        name: str,
        source_query: str,
        *,
        model_id: str | None = None,
        tags: Sequence[str] | None = None,
        max_tokens: int | None = None,
        trigger: dict[str, Any] | None = None,
    ) -> None:
        """``POST …/mental-models``.

        The server fills the content in the background; empty tags are left out.
        """
        body: dict[str, Any] = {"name": name, "source_query": source_query}
        if model_id:
            body["id"] = model_id
        if tags:
            body["tags"] = list(tags)
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if trigger is not None:
            body["trigger"] = dict(trigger)
        self.call(
            "createMentalModel",
            "POST",
            f"{bank_path(bank_id)}/mental-models",
            timeout_s=self.timeouts.request,
            body=body,
        )

    def refresh_mental_model(self, bank_id: str, model_id: str) -> OperationReply:
        """``POST …/mental-models/{id}/refresh`` (no body): the refresh's operation (its id,
        ``queued``)."""
        from .replies import OperationReply, parsed

        reply = self.call(
            "refreshMentalModel",
            "POST",
            f"{self._model(bank_id, model_id)}/refresh",
            timeout_s=self.timeouts.request,
        )
        return parsed("refreshMentalModel", OperationReply, reply)

    def delete_mental_model(self, bank_id: str, model_id: str) -> bool:
        """``DELETE …/mental-models/{id}``; False when there was no such model."""
        reply = self.call(
            "deleteMentalModel",
            "DELETE",
            self._model(bank_id, model_id),
            timeout_s=self.timeouts.request,
            allow_404=True,
            need_json=False,
        )
        return reply is not None

    def mental_model_history(self, bank_id: str, model_id: str) -> list[ModelHistoryItem]:
        """``GET …/mental-models/{id}/history``: its earlier contents, newest first."""
        from .replies import ModelHistoryItem, parsed

        reply = self.call(
            "getMentalModelHistory",
            "GET",
            f"{self._model(bank_id, model_id)}/history",
            timeout_s=self.timeouts.request,
        )
        items = reply.get("items", []) if isinstance(reply, dict) else reply
        return [parsed("getMentalModelHistory", ModelHistoryItem, item) for item in items]


class Connection:
    """Holds the current client (one from the start); every part that talks to the server
    asks it for ``client``."""

    def __init__(
        self,
        url: str,
        api_key: str | None,
        timeouts: Timeouts,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._transport = transport
        self._lock = threading.Lock()
        self._client = HindsightClient(url, api_key, timeouts, transport=transport)
        self._clients: list[HindsightClient] = [self._client]

    def open(self, url: str, api_key: str | None, timeouts: Timeouts) -> HindsightClient:
        """Make a client for ``url`` the current one."""
        return self.use(HindsightClient(url, api_key, timeouts, transport=self._transport))

    def use(self, client: HindsightClient) -> HindsightClient:
        """Make ``client`` the current one (tests inject clients with a fault transport)."""
        with self._lock:
            self._clients.append(client)
            self._client = client
        return client

    @property
    def client(self) -> HindsightClient:
        """The current client."""
        return self._client

    @property
    def url(self) -> str:
        """The current server URL."""
        return self.client.base_url

    def close(self) -> None:
        """Close every client this connection made."""
        with self._lock:
            clients, self._clients = self._clients, []
        for client in clients:
            client.close()


@dataclass(frozen=True)
class BankExtraction:
    """How the server turns what is retained into memories: Hindsight's ``retain_extraction_mode``
    (``chunks`` stores the text as it is; ``concise``, ``verbose``, ``verbatim`` ask its LLM) and,
    for ``chunks``, the size of a stored chunk."""

    mode: str
    chunk_size: int | None = None

    @classmethod
    def of(cls, setting: Extraction) -> BankExtraction | None:
        """The extraction the ``retain_extraction`` setting asks for (None: ``server``, the
        bank's own). Chunks are sized for the embedding model (``_machine.EMBEDDED_CHARS``)."""
        if setting == Extraction.SERVER:
            return None
        return cls(setting, EMBEDDED_CHARS if setting == Extraction.CHUNKS else None)
