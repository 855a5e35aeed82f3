"""Pydantic models of Hindsight's replies (lenient: extra fields are ignored, pydantic's
default): the items of recall and reflect replies, whose replies themselves are parsed in
``_memory/parsed_replies.py`` (its memories also know where they came from), and the replies
of the client's other methods, which parse them here (``parsed``), so that nothing above
``_api`` reads the server's JSON by key.

Imported on first use (the first reply read), not at extension load."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .._errors import HindsightError
from .errors import reply_line

Model = TypeVar("Model", bound=BaseModel)


class Scores(BaseModel):
    """Ranking scores of one recalled memory."""

    final: float | None = None
    semantic: float | None = None
    keyword: float | None = None
    reranker: float | None = None


class Memory(BaseModel):
    """One recalled memory (also a reflect's evidence, which has the same fields but scores)."""

    id: str | None = None
    text: str = ""
    type: str | None = None
    context: str | None = None
    mentioned_at: str | None = None
    document_id: str | None = None
    chunk_id: str | None = None
    metadata: dict[str, Any] | None = None
    tags: list[str] | None = None
    scores: Scores | None = None
    # what a listing says of a memory's curation (a recall returns valid memories only)
    state: str | None = None
    invalidated_at: str | None = None
    invalidation_reason: str | None = None


class ReflectMentalModel(BaseModel):
    """A mental model a reflect drew on; the server sends ``text`` as ``"<name>: <content>"``."""

    id: str = ""
    text: str = ""
    context: str | None = None


class ReflectDirective(BaseModel):
    """A directive a reflect applied."""

    id: str = ""
    name: str = ""
    content: str = ""


# -- the replies the client's other methods return, parsed at its edge (``parsed``) ---------
# Field names are the server's (hindsight-api 1.1.0, its OpenAPI schemas). Only what makes a
# reply what it claims to be is required (a version's ``api_version``, a bank's ``bank_id``, a
# listed model's or document's ``id``); every other field has a default, so a server that
# leaves one out still parses, and the fields the extension does not read are ignored.


def parsed(operation: str, model: type[Model], data: Any) -> Model:
    """``data`` (a reply's JSON) as ``model``; a reply that does not fit, as the one-line
    ``HindsightError`` of any other reply that is not Hindsight's."""
    try:
        return model.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the reply"
        message = f"{operation} failed: unexpected reply ({where}: {first['msg']})"
        raise HindsightError(operation, message, 200, reply_line(data), "not_hindsight") from None


class Features(BaseModel):
    """What ``GET /version`` says the server has on (only what the extension reads)."""

    bank_llm_health: bool = False


class Version(BaseModel):
    """``GET /version``: the API's version and its features."""

    api_version: str
    features: Features = Features()


class BankListItem(BaseModel):
    """One bank of ``GET /banks``."""

    bank_id: str
    name: str | None = None
    fact_count: int = 0


class BankStats(BaseModel):
    """``GET …/banks/{bank}/stats`` (cached by the server for a minute)."""

    bank_id: str = ""
    total_nodes: int = 0
    total_documents: int = 0
    failed_operations: int = 0
    last_memory_write_at: str | None = None


class BankConfig(BaseModel):
    """``GET …/banks/{bank}/config``: the settings in force, the bank's own over the server's
    (``config``: the server's setting names, free-form)."""

    config: dict[str, Any] = {}

    @property
    def extraction_mode(self) -> str | None:
        """``retain_extraction_mode`` in force (``concise``, ``chunks`` …), if the server says."""
        mode = self.config.get("retain_extraction_mode")
        return str(mode) if mode else None


class OperationResult(BaseModel):
    """What a finished transfer operation reports (``result_metadata``): an export's archive,
    an import's or a clone's counts (zero where its kind says nothing)."""

    download_url: str = ""
    byte_size: int | None = None
    facts_imported: int = 0
    documents_imported: int = 0
    observations_imported: int = 0
    mental_models_imported: int = 0


class OperationReply(BaseModel):
    """``GET …/operations/{id}``: an asynchronous operation's progress (``pending``,
    ``processing``, ``completed``, ``failed``, ``cancelled``; ``not_found`` when the server
    forgot it)."""

    operation_id: str = ""
    status: str = ""
    error_message: str | None = None
    result_metadata: OperationResult | None = None

    @property
    def result(self) -> OperationResult:
        """What the operation reports it did (all empty when it says nothing)."""
        return self.result_metadata or OperationResult()


class MemoryUnit(BaseModel):
    """One memory as ``GET …/memories/list`` lists it, or ``GET …/memories/{id}`` gives it
    (which names its kind ``type`` where the list says ``fact_type``: ``kind`` is either).
    ``entities``: the list joins their names with ``, ``."""

    id: str = ""
    text: str = ""
    context: str | None = None
    fact_type: str | None = None
    type: str | None = None
    document_id: str | None = None
    chunk_id: str | None = None
    mentioned_at: str | None = None
    entities: str | list[Any] | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    state: str | None = None
    invalidation_reason: str | None = None
    invalidated_at: str | None = None
    source_memory_ids: list[str] | None = None

    @property
    def kind(self) -> str | None:
        """``world``, ``experience`` or ``observation``, whichever field the server used."""
        return self.fact_type or self.type


class MemoryPage(BaseModel):
    """``GET …/memories/list``: a page of memories and how many the filter holds."""

    items: list[MemoryUnit] = []
    total: int = 0


class DocumentItem(BaseModel):
    """One document as ``GET …/documents`` lists it, or ``GET …/documents/{id}`` gives it
    (only the latter has ``original_text``). ``memory_unit_count`` counts valid memories."""

    id: str
    created_at: str | None = None
    updated_at: str | None = None
    memory_unit_count: int = 0
    original_text: str | None = None
    document_metadata: dict[str, Any] | None = None
    tags: list[str] | None = None


class DocumentPage(BaseModel):
    """``GET …/documents``: a page of documents, the last written first."""

    items: list[DocumentItem] = []
    total: int = 0


class DocumentEvent(BaseModel):
    """One event of ``GET …/documents/{id}/history`` (``kind``: ``retain``, ``fact_edited``,
    ``fact_invalidated``, ``consolidation`` …; ``fact_id``: the memory it touched, if one)."""

    kind: str = ""
    created_at: str | None = None
    fact_id: str | None = None


class ObservationChange(BaseModel):
    """One earlier text of an observation (``GET …/memories/{id}/history``)."""

    previous_text: str | None = None
    changed_at: str | None = None


class DeletedDocument(BaseModel):
    """``DELETE …/documents/{id}``: how many memories went with it."""

    memory_units_deleted: int = 0


class ModelTrigger(BaseModel):
    """When the server refreshes a mental model by itself (only what the extension reads)."""

    refresh_after_consolidation: bool = False


class MentalModelReply(BaseModel):
    """One mental model, as ``GET …/mental-models`` lists it or ``GET …/mental-models/{id}``
    gives it (``content`` and ``trigger`` with ``detail=content``)."""

    id: str
    name: str = ""
    tags: list[str] | None = None
    content: str | None = None
    source_query: str | None = None
    last_refreshed_at: str | None = None
    trigger: ModelTrigger | None = None


class ModelHistoryItem(BaseModel):
    """One earlier content of a mental model (``GET …/mental-models/{id}/history``)."""

    previous_content: str | None = None
    changed_at: str | None = None


class Reflection(BaseModel):
    """``POST …/reflect``: the answer (its sources, ``based_on``, are read by a subclass that
    knows what the extension makes of them: ``_memory.parsed_replies``)."""

    text: str | None = None


class Retained(BaseModel):
    """``POST …/memories``: whether the server took the batch, and its operation when it
    indexes it in the background."""

    success: bool = True
    operation_id: str | None = None
