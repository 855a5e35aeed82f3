"""Small wording helpers shared by every part that talks to the user."""

from __future__ import annotations


def plural(count: int, one: str, many: str) -> str:
    """``1 memory`` / ``3 memories``."""
    return f"{count} {one if count == 1 else many}"
