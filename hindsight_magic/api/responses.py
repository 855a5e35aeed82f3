"""Pydantic models of the Hindsight replies we read (lenient: extra fields are ignored).

Imported on first use (a recall or reflect), not at extension load.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Scores(_Lenient):
    """Ranking scores of one recalled memory."""

    final: float | None = None
    semantic: float | None = None
    keyword: float | None = None
    reranker: float | None = None


class Memory(_Lenient):
    """One recalled memory."""

    id: str | None = None
    text: str = ""
    type: str | None = None
    context: str | None = None
    mentioned_at: str | None = None
    document_id: str | None = None
    metadata: dict[str, Any] | None = None
    tags: list[str] | None = None
    scores: Scores | None = None


class RecallResponse(_Lenient):
    """The body of ``POST …/memories/recall``."""

    results: list[Memory] = []


class ReflectResponse(_Lenient):
    """The body of ``POST …/reflect``."""

    text: str | None = None
    based_on: Any = None
