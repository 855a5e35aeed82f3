"""A mental model as the server lists it, and which of them a scope shows."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MentalModel:
    """One model as the server lists it (unknown fields ignored)."""

    id: str
    name: str
    tags: tuple[str, ...] = ()
    content: str | None = None
    source_query: str | None = None
    last_refreshed_at: str | None = None
    trigger: dict[str, Any] | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MentalModel:
        """Build from a server reply item."""
        trigger = data.get("trigger")
        return cls(
            id=str(data.get("id", "")),
            name=str(data.get("name") or data.get("id") or ""),
            tags=tuple(str(t) for t in data.get("tags") or ()),
            content=data.get("content"),
            source_query=data.get("source_query"),
            last_refreshed_at=data.get("last_refreshed_at"),
            trigger=trigger if isinstance(trigger, dict) else None,
        )

    @property
    def auto_refresh(self) -> bool:
        """Opted into auto-refresh (``trigger.refresh_after_consolidation`` is true)."""
        return self.trigger is not None and self.trigger.get("refresh_after_consolidation") is True


def visible(model: MentalModel, recall_tags: Sequence[str] | None) -> bool:
    """Untagged models and unfiltered scopes see everything; else one shared tag is enough."""
    return not model.tags or not recall_tags or bool(set(model.tags) & set(recall_tags))


def sort_by_name(models: Iterable[MentalModel]) -> list[MentalModel]:
    """Models in name order (case-insensitive, then by id)."""
    return sorted(models, key=lambda m: (m.name.casefold(), m.name, m.id))
