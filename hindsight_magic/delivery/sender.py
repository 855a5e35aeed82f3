"""Sending one batch: the queue's only way to the server.

Checks the server is Hindsight (once per client), ensures the bank (once per process),
redacts every item once more, then ``POST …/memories`` with the batch's ``operation_id``. A
refused key becomes one line that says to check ``HINDSIGHT_API_KEY``; every other failure is
the client's ``HindsightError``, which the queue sorts into retry, split or failed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..api.banks import ensure_bank
from ..api.errors import HindsightError, explain
from ..capture.redact import redact

if TYPE_CHECKING:
    from ..api.connection import Connection
    from ..settings import HindsightSettings
    from .batches import Batch


class BatchSender:
    """Delivers batches through the connection now in force (callable: ``sender(batch)``)."""

    def __init__(
        self,
        connection: Connection,
        settings: HindsightSettings,
        secrets: Callable[[], list[str]],
    ) -> None:
        self._connection = connection
        self._settings = settings
        self._secrets = secrets

    def __call__(self, batch: Batch) -> None:
        client = self._connection.client
        client.identity()
        settings = self._settings
        ensure_bank(client, batch.route.bank_id, settings.bank_mission, settings.retain_mission)
        secrets = self._secrets()
        items = []
        for item in batch.items:
            body = item.to_json()
            body["content"] = redact(body["content"], secrets)
            items.append(body)
        try:
            client.retain_batch(batch.route.bank_id, items, operation_id=batch.operation_id)
        except HindsightError as error:
            if error.status_code not in (401, 403):
                raise
            message = explain(error, client.base_url)  # says to check HINDSIGHT_API_KEY
            raise HindsightError(
                error.operation, message, error.status_code, error.details, error.kind
            ) from None
