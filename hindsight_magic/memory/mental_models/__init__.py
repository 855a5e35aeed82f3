"""Mental models: curated summaries the server keeps of a bank.

- ``model``: a model as listed, and which a scope shows;
- ``seeds``: the three built-in seeds, created once per bank and never modified;
- ``render``: the ``<mental_models>`` block for an LLM prompt;
- ``cache``: the session's cache, loaded on the worker, read from the kernel thread.
"""

from __future__ import annotations

from .model import MentalModel, sort_by_name, visible
from .render import (
    CLEAN_OVERHEAD,
    MIN_CONTENT_ROOM,
    PREAMBLE,
    TRUNCATED_OVERHEAD,
    TRUNCATION_MARKER,
    inventory_line,
    render_block,
)
from .seeds import (
    AUTO_REFRESH,
    SEEDS,
    ResolvedSeed,
    Seed,
    SeedOutcome,
    ensure_seeds,
    resolve_seeds,
    seed_exists,
    tag_suffix,
)

__all__ = [
    "AUTO_REFRESH",
    "CLEAN_OVERHEAD",
    "MIN_CONTENT_ROOM",
    "PREAMBLE",
    "SEEDS",
    "TRUNCATED_OVERHEAD",
    "TRUNCATION_MARKER",
    "MentalModel",
    "ResolvedSeed",
    "Seed",
    "SeedOutcome",
    "ensure_seeds",
    "inventory_line",
    "render_block",
    "resolve_seeds",
    "seed_exists",
    "sort_by_name",
    "tag_suffix",
    "visible",
]
