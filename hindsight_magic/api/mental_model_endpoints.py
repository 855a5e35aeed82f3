"""The mental-model endpoints of ``HindsightClient`` (a mixin; one method per endpoint)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from .errors import HindsightError, bank_missing
from .requester import Requester


class MentalModelEndpoints(Requester):
    """``GET/POST/DELETE …/mental-models…``; mixed into ``HindsightClient``."""

    def _model(self, bank_id: str, model_id: str) -> str:
        return f"{self._bank(bank_id)}/mental-models/{quote(model_id, safe='')}"

    def list_mental_models(self, bank_id: str, detail: str = "content") -> list[dict[str, Any]]:
        """``GET …/mental-models?detail=…`` (``content`` includes content and trigger).

        A bank that does not exist yet has no models: ``[]``, not an error.
        """
        try:
            reply = self._request(
                "listMentalModels",
                "GET",
                f"{self._bank(bank_id)}/mental-models",
                timeout_s=self.timeouts.request,
                params={"detail": detail},
            )
        except HindsightError as error:
            if bank_missing(error):
                return []
            raise
        items = reply.get("items", []) if isinstance(reply, dict) else reply
        return [item for item in items if isinstance(item, dict)]

    def get_mental_model(
        self, bank_id: str, model_id: str, detail: str = "content"
    ) -> dict[str, Any] | None:
        """``GET …/mental-models/{id}?detail=…``; None when there is no such model."""
        reply: dict[str, Any] | None = self._request(
            "getMentalModel",
            "GET",
            self._model(bank_id, model_id),
            timeout_s=self.timeouts.request,
            params={"detail": detail},
            allow_404=True,
        )
        return reply

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
    ) -> dict[str, Any]:
        """``POST …/mental-models``; returns ``{mental_model_id, operation_id}``.

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
        reply: dict[str, Any] = self._request(
            "createMentalModel",
            "POST",
            f"{self._bank(bank_id)}/mental-models",
            timeout_s=self.timeouts.request,
            body=body,
        )
        return reply

    def refresh_mental_model(self, bank_id: str, model_id: str) -> dict[str, Any]:
        """``POST …/mental-models/{id}/refresh`` (no body); returns ``{operation_id, status}``."""
        reply: dict[str, Any] = self._request(
            "refreshMentalModel",
            "POST",
            f"{self._model(bank_id, model_id)}/refresh",
            timeout_s=self.timeouts.request,
        )
        return reply

    def delete_mental_model(self, bank_id: str, model_id: str) -> bool:
        """``DELETE …/mental-models/{id}``; False when there was no such model."""
        reply = self._request(
            "deleteMentalModel",
            "DELETE",
            self._model(bank_id, model_id),
            timeout_s=self.timeouts.request,
            allow_404=True,
            need_json=False,
        )
        return reply is not None

    def mental_model_history(self, bank_id: str, model_id: str) -> list[dict[str, Any]]:
        """``GET …/mental-models/{id}/history``: ``{previous_content, changed_at}`` newest first."""
        reply = self._request(
            "getMentalModelHistory",
            "GET",
            f"{self._model(bank_id, model_id)}/history",
            timeout_s=self.timeouts.request,
        )
        items = reply.get("items", []) if isinstance(reply, dict) else reply
        return [item for item in items if isinstance(item, dict)]
