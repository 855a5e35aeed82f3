"""``StrEnum``, the base of every vocabulary in the package (scoping modes, budgets, fact types,
curation states …): a member equals its word, prints as it and formats as it, so settings,
the journal on disk and the server's JSON keep their plain words while mypy checks each
comparison against the members.

Python 3.11's ``enum.StrEnum``; on 3.10, which the package supports, the same behaviour from
a ``str`` mix-in (a plain ``(str, Enum)`` would print ``Budget.LOW`` in an f-string)."""

from __future__ import annotations

import sys
from enum import Enum

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # pragma: no cover - exercised by ``make oldest`` on Python 3.10

    class StrEnum(str, Enum):
        """``enum.StrEnum`` of Python 3.11: members are strings, shown as their value."""

        __str__ = str.__str__
        __format__ = str.__format__


__all__ = ["StrEnum"]
