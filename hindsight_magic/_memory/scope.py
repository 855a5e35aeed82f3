"""Bank scope: the project label, and which bank and tags a memory goes to."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypedDict

from .._api.vocabulary import MemoryState
from .._machine import project_folder
from .._settings import ScopeMode, bank_id_part
from .._text import encodable


def project_label(cwd: str | os.PathLike[str] | None = None) -> str:
    """Lowercased basename of the git main-checkout root containing ``cwd`` (else of ``cwd``)."""
    root = project_folder(cwd)
    if root is None:
        return "unknown"
    return encodable(root.name.strip().lower()) or "unknown"  # a name that is not UTF-8 too


class Listing(TypedDict):
    """The scope's part of a ``list_memories`` call."""

    state: MemoryState
    tags: tuple[str, ...] | None
    tags_match: str | None
    limit: int


@dataclass(frozen=True)
class BankScope:
    """Where memories go and which tags filter recall, for one scoping mode."""

    mode: ScopeMode
    bank_id: str
    label: str
    retain_tags: tuple[str, ...] | None = None
    recall_tags: tuple[str, ...] | None = None
    tags_match: str | None = None

    def listing(self, state: MemoryState, limit: int) -> Listing:
        """The ``list_memories`` arguments for this scope's memories in ``state``, at most
        ``limit`` (the recall tags: untagged memories show as in recall)."""
        return {
            "state": state,
            "tags": self.recall_tags,
            "tags_match": self.tags_match,
            "limit": limit,
        }

    def describe(self) -> str:
        """One line for status output."""
        tags = f", tags {', '.join(self.retain_tags)}" if self.retain_tags else ""
        return f"bank {self.bank_id} ({self.mode}{tags})"


CLOSE_NAME = 0.75  # difflib's ratio: churn-tem / churn-team 0.95; unrelated test banks < 0.5


def close_banks(bank_id: str, existing: Iterable[str], count: int = 3) -> list[str]:
    """The existing banks whose names are close to ``bank_id`` (a typo's likely meaning),
    closest first."""
    others = [name for name in existing if name != bank_id]
    return difflib.get_close_matches(bank_id, others, n=count, cutoff=CLOSE_NAME)


def base_bank(bank_id: str, prefix: str = "") -> str:
    """``<prefix>-<bank>`` when a prefix is set."""
    base = bank_id.strip() or "jupyter"
    prefix = prefix.strip()
    return f"{prefix}-{base}" if prefix else base


PROJECT_TAG = "project:"  # per-project-tagged: a project's memories carry ``project:<label>``


def project_of(tags: Iterable[str] | None) -> str | None:
    """The project a memory's ``project:<label>`` tag names (the first), or None."""
    for tag in tags or ():
        label = tag.removeprefix(PROJECT_TAG).strip() if tag.startswith(PROJECT_TAG) else ""
        if label:
            return label
    return None


def compute_scope(mode: ScopeMode, bank_id: str, prefix: str, label: str) -> BankScope:
    """The scope for ``mode``: global, per-project or per-project-tagged."""
    base = base_bank(bank_id, prefix)
    if mode == ScopeMode.GLOBAL:
        return BankScope(mode, base, label)
    if mode == ScopeMode.PER_PROJECT:
        return BankScope(mode, f"{base}-{bank_id_part(label)}", label)
    tags = (f"{PROJECT_TAG}{label}",)
    return BankScope(mode, base, label, tags, tags, "any")
