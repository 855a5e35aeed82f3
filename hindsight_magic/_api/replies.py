"""Pydantic models of the items in Hindsight's recall and reflect replies (lenient: extra fields
are ignored, pydantic's default). The replies themselves are parsed in
``_memory/parsed_replies.py``, whose memories also know where they came from.

Imported on first use (a recall or reflect), not at extension load."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


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
