"""A session's parts in one record, and the notices part: what the session builds and
uses, and the lines background work leaves for the user."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._text import plural

if TYPE_CHECKING:
    from .._api.client import Connection
    from .._capture.autoretain import AutoRetainer
    from .._capture.redact import SecretValues
    from .._delivery.indexing import TranscriptWatch
    from .._delivery.items import Batch
    from .._delivery.journal_file import JournalFile
    from .._delivery.queue import RetainQueue
    from .._delivery.sender import BatchSender
    from .._delivery.worker import Worker
    from .._memory.archive import Archiver
    from .._memory.curation import Curator
    from .._memory.layers import LayerAsking
    from .._memory.llm import ServerLlm
    from .._memory.mental_models import MentalModelCache
    from .._memory.overview import BankOverview
    from .._memory.reading import Reader
    from .._memory.versions import CellVersions


@dataclass(eq=False)
class Parts:
    """One session's parts, built and wired by ``HindsightSession``. The session alone uses
    them (the front ends, the panel and the agents ask the session)."""

    connection: Connection
    notices: Notices
    secrets: SecretValues
    journal_file: JournalFile | None
    sender: BatchSender
    queue: RetainQueue
    worker: Worker
    transcripts: TranscriptWatch
    autoretain: AutoRetainer
    mental_models: MentalModelCache
    llm: ServerLlm
    reader: Reader
    layer_asking: LayerAsking
    curator: Curator
    versions: CellVersions
    overview: BankOverview
    archiver: Archiver


MAX_NOTICES = 50


class Notices:
    """A bounded queue of one-line notices (thread-safe: ``deque`` appends and pops are)."""

    def __init__(self) -> None:
        self._notices: deque[str] = deque(maxlen=MAX_NOTICES)

    def add(self, text: str) -> None:
        """Leave one line for the user."""
        self._notices.append(text)

    def retention_failed(self, batch: Batch, message: str) -> None:
        """The queue's ``on_failure``: the server refused a batch for good."""
        count = plural(batch.count, "memory", "memories")
        self.add(
            f"Memory retention failed for {count}: {message} "
            "(kept: %hindsight retry re-sends, %hindsight retry --drop discards)"
        )

    def pending(self) -> tuple[str, ...]:
        """The notices not yet shown, without taking them."""
        return tuple(self._notices)

    def take(self) -> list[str]:
        """The notices not yet shown, oldest first (each is returned once)."""
        taken = []
        while self._notices:
            taken.append(self._notices.popleft())
        return taken
