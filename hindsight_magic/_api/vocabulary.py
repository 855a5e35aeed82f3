"""The server's words the extension acts on: a memory's fact type and curation state,
an operation's status and what a probe of its LLM found.

Hindsight's JSON carries them as strings; these ``StrEnum``s equal those strings, so a reply is
compared with a member (mypy refuses a misspelt one) without being converted first.
"""

from __future__ import annotations

from .._enums import StrEnum


class FactType(StrEnum):
    """What kind of memory the server keeps: ``world`` and ``experience`` facts are made of
    what was retained (and can be curated); an ``observation`` is the server's own, made by
    consolidating many of them."""

    WORLD = "world"
    EXPERIENCE = "experience"
    OBSERVATION = "observation"


class MemoryState(StrEnum):
    """A memory's curation state: ``invalidated`` is forgotten (left out of recall, kept for
    audit), ``valid`` is the rest, and what a restore sets again."""

    VALID = "valid"
    INVALIDATED = "invalidated"


class OperationStatus(StrEnum):
    """Where the server is with an asynchronous operation (a retain, an import, a refresh)."""

    PENDING = "pending"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    NOT_FOUND = "not_found"


class DocumentEventKind(StrEnum):
    """What one change of a document's history was (``GET …/documents/{id}/history``): the
    ones the extension tells apart."""

    RETAIN = "retain"
    FACT_EDITED = "fact_edited"
    FACT_RESTORED = "fact_restored"
    CONSOLIDATION = "consolidation"


class LlmStatus(StrEnum):
    """What the server's probe of one of a bank's LLMs found (``POST …/health/llm``)."""

    CONNECTED = "connected"
    AUTH_FAILED = "auth_failed"
    UNREACHABLE = "unreachable"
    TIMEOUT = "timeout"
    NOT_CONFIGURED = "not_configured"


RUNNING = (OperationStatus.PENDING, OperationStatus.PROCESSING)
ENDED_UNDONE = (OperationStatus.FAILED, OperationStatus.CANCELLED, OperationStatus.NOT_FOUND)
