"""The memory endpoints of ``HindsightClient``: retain, recall, reflect and operations (a mixin)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from .errors import HindsightError, bank_missing, one_line
from .requester import Requester


class MemoryEndpoints(Requester):
    """``POST …/memories``, ``…/memories/recall``, ``…/reflect``; ``GET …/operations/{id}``."""

    def retain_batch(
        self,
        bank_id: str,
        items: Sequence[dict[str, Any]],
        *,
        operation_id: str | None = None,
        async_: bool = True,
    ) -> dict[str, Any]:
        """``POST …/memories`` with ``async`` and a client ``operation_id`` (safe to re-send)."""
        body: dict[str, Any] = {"items": list(items), "async": async_}
        if operation_id:
            body["operation_id"] = operation_id
        try:
            reply = self._request(
                "retainBatch",
                "POST",
                f"{self._bank(bank_id)}/memories",
                timeout_s=self.timeouts.retain,
                body=body,
            )
        except HindsightError as error:
            if error.kind != "not_hindsight" or not 200 <= (error.status_code or 0) < 300:
                raise
            # A 2xx whose body cannot be read: the server may well have accepted the batch, so
            # re-send it under the same operation_id (idempotent) instead of failing it.
            message = f"{error} — delivery unconfirmed; re-sending the same operation"
            raise HindsightError(
                "retainBatch", message, error.status_code, error.details, "unconfirmed"
            ) from None
        if not isinstance(reply, dict) or reply.get("success") is False:
            message = f"retainBatch failed: unexpected reply {one_line(reply, 120)}"
            raise HindsightError("retainBatch", message, 200, reply, "not_hindsight")
        return reply

    def recall(
        self,
        bank_id: str,
        query: str,
        *,
        budget: str = "mid",
        max_tokens: int | None = None,
        types: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        tags_match: str | None = None,
    ) -> dict[str, Any] | None:
        """``POST …/memories/recall``; None when the bank does not exist yet."""
        body: dict[str, Any] = {"query": query, "budget": budget}
        if max_tokens:
            body["max_tokens"] = max_tokens
        if types:
            body["types"] = list(types)
        if tags:
            body["tags"] = list(tags)
            if tags_match:
                body["tags_match"] = tags_match
        try:
            reply: dict[str, Any] | None = self._request(
                "recall",
                "POST",
                f"{self._bank(bank_id)}/memories/recall",
                timeout_s=self.timeouts.recall,
                body=body,
            )
            return reply
        except HindsightError as error:
            if bank_missing(error):
                return None
            raise

    def reflect(
        self,
        bank_id: str,
        query: str,
        *,
        budget: str = "mid",
        context: str | None = None,
        tags: Sequence[str] | None = None,
        tags_match: str | None = None,
        include_facts: bool = False,
    ) -> dict[str, Any]:
        """``POST …/reflect``; ``include_facts`` asks for the evidence (``based_on``)."""
        body: dict[str, Any] = {"query": query, "budget": budget}
        if include_facts:
            body["include"] = {"facts": {}}
        if context:
            body["context"] = context
        if tags:
            body["tags"] = list(tags)
            if tags_match:
                body["tags_match"] = tags_match
        reply: dict[str, Any] = self._request(
            "reflect",
            "POST",
            f"{self._bank(bank_id)}/reflect",
            timeout_s=self.timeouts.reflect,
            body=body,
        )
        return reply

    def operation(self, bank_id: str, operation_id: str) -> dict[str, Any] | None:
        """``GET …/operations/{id}``: an async retain's progress (None when unknown)."""
        return self._get_one("getOperation", bank_id, "operations", operation_id)

    def document(self, bank_id: str, document_id: str) -> dict[str, Any] | None:
        """``GET …/documents/{id}``: a document as stored (``original_text`` …); None if none."""
        return self._get_one("getDocument", bank_id, "documents", document_id)

    def _get_one(
        self, operation: str, bank_id: str, collection: str, item_id: str
    ) -> dict[str, Any] | None:
        """``GET …/{collection}/{id}`` of a bank; None when the server has no such item."""
        reply: dict[str, Any] | None = self._request(
            operation,
            "GET",
            f"{self._bank(bank_id)}/{collection}/{quote(item_id, safe='')}",
            timeout_s=self.timeouts.request,
            allow_404=True,
        )
        return reply
