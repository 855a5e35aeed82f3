"""``HindsightClient``: a synchronous httpx client, one method per Hindsight endpoint we use.

Plumbing first (one httpx client per thread, a per-operation timeout, ``Authorization: Bearer``
when a key is set, every failure mapped to ``HindsightError`` with one of three message shapes:
``"<op> failed: <detail>"``, ``"<op> request timed out after Ns"``, ``"<op> request failed:
<reason>"``), then the endpoints: server, banks, memories, mental models. Every path segment
that comes from the user or the server is encoded. Each endpoint method hands out its reply
parsed into a model of ``replies.py`` (a reply that does not fit is a ``HindsightError`` like
any reply that is not Hindsight's), so nothing above ``_api`` reads the server's JSON by key.
httpx and pydantic are imported on first use, not at extension load.

``Connection`` holds the session's current client (replaced whole when the URL, key or timeouts
change), and ``ensure_bank`` creates a bank once per process before its first write.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast
from urllib.parse import quote
from uuid import uuid4

from .._errors import HindsightError
from .._machine import EMBEDDED_CHARS
from .._settings import Budget, Extraction
from .._text import encodable
from .._version import __version__
from .errors import bank_missing, detail_of, readable, reply_line
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


USER_AGENT = f"hindsight-magic/{__version__}"
BANKS = "/v1/default/banks"
CONNECT_TIMEOUT_CAP_S = 10.0
log = logging.getLogger("hindsight_magic")


def path_segment(value: str) -> str:
    """``value`` as one URL path segment: every reserved character percent-encoded (``/`` too),
    and a segment of only dots spelled out (``%2E``), so it can never climb the path."""
    encoded = quote(encodable(value), safe="")
    return encoded.replace(".", "%2E") if set(value) <= {"."} else encoded


def bank_path(bank_id: str) -> str:
    """The path of a bank, ``/v1/default/banks/{bank_id}``, its id encoded."""
    return f"{BANKS}/{path_segment(bank_id)}"


def failure(operation: str, error: httpx.HTTPError, timeout_s: float) -> HindsightError:
    """A request that got no reply, as a ``HindsightError``: timed out, or failed (no
    connection, a reset, a protocol error)."""
    import httpx

    if isinstance(error, httpx.TimeoutException):
        message = f"{operation} request timed out after {int(timeout_s + 0.5)}s"
        return HindsightError(operation, message, details=error, kind="timeout")
    message = f"{operation} request failed: {str(error) or type(error).__name__}"
    return HindsightError(operation, message, details=error, kind="connect")


@dataclass(frozen=True)
class Reply:
    """A reply read once: its status, body text and content type, and the body as JSON
    (``parsed``: None for an empty body; ``is_json``: False when the body is not JSON)."""

    status: int
    reason: str
    text: str
    ctype: str
    parsed: Any
    is_json: bool

    @classmethod
    def read(cls, response: httpx.Response) -> Reply:
        text = response.text
        try:
            parsed = json.loads(text) if text.strip() else None
            is_json = True
        except ValueError:
            parsed, is_json = None, False
        ctype = response.headers.get("content-type", "no content type")
        return cls(response.status_code, response.reason_phrase, text, ctype, parsed, is_json)

    def foreign(self, need_json: bool = True) -> str | None:
        """Why this is not a reply of Hindsight's, in the words after ``<op> failed:``: an
        error reply that is not JSON, or (``need_json``) a success whose body is not a JSON
        object or array; None for a reply of Hindsight's."""
        if self.status >= 400:
            if self.is_json:
                return None
            if self.status == 413:
                return "HTTP 413, too large for the server (or a proxy in front of it)"
            if "html" in self.ctype or self.text.lstrip().startswith("<") or not self.text.strip():
                return f"HTTP {self.status} with a non-JSON reply ({self.ctype})"
            return reply_line(self.text)
        if need_json and not isinstance(self.parsed, dict | list):
            return f"the reply was not Hindsight JSON (HTTP {self.status}, {self.ctype})"
        return None


def json_reply(operation: str, reply: Reply, need_json: bool = True) -> Any:
    """A read reply's JSON (``{}`` for an empty one); an error reply, or one that is not
    Hindsight's JSON when ``need_json``, as a ``HindsightError`` in one line."""
    why = reply.foreign(need_json)
    if why is not None:
        message = f"{operation} failed: {why}"
        raise HindsightError(operation, message, reply.status, reply.text[:500], "not_hindsight")
    if reply.status >= 400:
        details = detail_of(reply.parsed, reply.text)
        shown = reply_line(readable(details)) or reply.reason
        raise HindsightError(operation, f"{operation} failed: {shown}", reply.status, details)
    return reply.parsed if reply.parsed is not None else {}


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
        self._transport = transport
        self._local = threading.local()
        self._all: list[httpx.Client] = []
        self._lock = threading.Lock()
        self._identity: Version | None = None
        # when a request first found nobody answering at the URL (no connection could be made;
        # wall time), since the last reply: None while it answers, or before any request
        self.unreachable_since: float | None = None

    def __repr__(self) -> str:
        auth = "with key" if self._api_key else "no key"
        return f"HindsightClient({self.base_url!r}, {auth})"

    @property
    def has_key(self) -> bool:
        """Whether requests carry an Authorization header."""
        return bool(self._api_key)

    # -- plumbing ---------------------------------------------------------------------------

    def _http(self) -> httpx.Client:
        client = getattr(self._local, "client", None)
        if client is None:
            import httpx

            headers = {"User-Agent": USER_AGENT, "Content-Type": "application/json"}
            if self._api_key:
                headers["Authorization"] = f"Bearer {self._api_key}"
            client = httpx.Client(
                base_url=self.base_url, headers=headers, transport=self._transport
            )
            self._local.client = client
            with self._lock:
                self._all.append(client)
        return client

    def warm_up(self) -> None:
        """Import httpx and make this thread's connection pool now, without a request."""
        self._http()

    def close(self) -> None:
        """Close every connection pool this client opened."""
        with self._lock:
            clients, self._all = self._all, []
        for client in clients:
            client.close()
        self._local = threading.local()

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
        """The request nearly every endpoint goes through: its reply as JSON (``{}`` for an
        empty one), None for a 404 when ``allow_404``; every failure a ``HindsightError`` named
        after ``operation``. ``files`` sends a multipart upload (read from its file objects as
        httpx encodes them)."""
        reply = self.send(
            operation, method, path, timeout_s=timeout_s, body=body, params=params, files=files
        )
        if allow_404 and reply.status == 404:
            return None
        return json_reply(operation, reply, need_json)

    def send(
        self,
        operation: str,
        method: str,
        path: str,
        *,
        timeout_s: float,
        body: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        files: dict[str, Any] | None = None,
    ) -> Reply:
        """One request and its reply, whatever its status: for an endpoint that reads a reply
        its own way before ``json_reply`` (``call`` is this and ``json_reply``); a request that
        got no reply is a ``HindsightError``."""
        import httpx

        timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, CONNECT_TIMEOUT_CAP_S))
        # an upload's own Content-Type, over the client's JSON one (httpx takes its boundary)
        headers = (
            {"Content-Type": f"multipart/form-data; boundary={uuid4().hex}"} if files else None
        )
        try:
            response = self._http().request(
                method,
                path,
                json=body,
                params=params,
                files=files,
                headers=headers,
                timeout=timeout,
            )
        except httpx.HTTPError as error:
            self._no_reply(error)
            raise failure(operation, error, timeout_s) from None
        self.unreachable_since = None
        return Reply.read(response)

    @contextmanager
    def stream(self, operation: str, path: str, *, timeout_s: float) -> Iterator[httpx.Response]:
        """``GET path`` as a stream: the response, to read in chunks inside the ``with``; a
        refusal, and every transport failure while reading, a ``HindsightError``."""
        import httpx

        timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, CONNECT_TIMEOUT_CAP_S))
        try:
            with self._http().stream("GET", path, timeout=timeout) as response:
                self.unreachable_since = None
                if response.status_code >= 400:
                    response.read()
                    json_reply(operation, Reply.read(response), need_json=False)
                yield response
        except httpx.HTTPError as error:
            self._no_reply(error)
            raise failure(operation, error, timeout_s) from None

    def _no_reply(self, error: httpx.HTTPError) -> None:
        """Note a request that got no reply: when no connection could be made, nobody answers
        at the URL (from now, unless that was already so). A reply cut off or too slow says
        neither that it answers nor that it does not."""
        import httpx

        refused = isinstance(error, httpx.ConnectError | httpx.ConnectTimeout)
        if refused and self.unreachable_since is None:
            self.unreachable_since = time.time()

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

            answer = self.send("version", "GET", "/version", timeout_s=self.timeouts.request)
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
        answer = self.send(
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


# Ensure-bank: ``PUT …/banks/{bank}`` (with the missions) once per bank per process, before the
# first write and before seeding the mental models of a bank that exists (reads never create
# one). Failures are logged and tried again next time; the set is capped and drops the
# lexicographically first half when full (the reference system's rule).
MISSION_SET_CAP = 10_000


class EnsuredBanks:
    """Banks already PUT in this process; capped, dropping the sorted first half when full."""

    def __init__(self, cap: int = MISSION_SET_CAP) -> None:
        self._cap = cap
        self._ids: set[str] = set()
        self._lock = threading.Lock()

    def __contains__(self, key: object) -> bool:
        return key in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, key: str) -> None:
        """Remember ``key``; past the cap, forget the lexicographically first half."""
        with self._lock:
            self._ids.add(key)
            if len(self._ids) > self._cap:
                for old in sorted(self._ids)[: len(self._ids) >> 1]:
                    self._ids.discard(old)


ENSURED_BANKS = EnsuredBanks()


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


class _BankSettings(Protocol):
    bank_mission: str
    retain_mission: str
    retain_extraction: Extraction


def bank_settings(settings: _BankSettings) -> tuple[str, str, Extraction]:
    """What ``ensure_bank`` writes, from the session's settings: the missions, the extraction."""
    return settings.bank_mission, settings.retain_mission, settings.retain_extraction


def ensure_bank(
    client: HindsightClient,
    bank_id: str,
    bank_mission: str = "",
    retain_mission: str = "",
    extraction: Extraction = Extraction.SERVER,
) -> bool:
    """Create or update ``bank_id`` once per process (per server and extraction setting), with
    the missions and the extraction mode the settings ask for; False if that failed."""
    key = f"{client.base_url}#{bank_id}#{extraction}"
    if key in ENSURED_BANKS:
        return True
    try:
        client.create_bank(bank_id, bank_mission, retain_mission, BankExtraction.of(extraction))
    except HindsightError as error:
        log.debug("Hindsight: ensureBankExists failed: %s", error)
        return False
    ENSURED_BANKS.add(key)
    log.debug("Hindsight: ensured bank %s", bank_id)
    return True
