"""The built-in seed models, and create-only seeding: a model that exists is never modified."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...api.client import HindsightClient, HindsightError
from ..scope import BankScope
from .model import MentalModel

log = logging.getLogger("hindsight_magic")

ALL_SCOPES = ("global", "per-project", "per-project-tagged")
PROJECT_SCOPES = ("per-project", "per-project-tagged")
AUTO_REFRESH = {"mode": "delta", "refresh_after_consolidation": True}


@dataclass(frozen=True)
class Seed:
    """A built-in mental model definition."""

    id: str
    name: str
    source_query: str
    scopes: tuple[str, ...]
    project_tagged: bool
    max_tokens: int
    extra_tags: tuple[str, ...] = ()


SEEDS: tuple[Seed, ...] = (
    Seed(
        "user-preferences",
        "User Preferences",
        "What lasting preferences has this user stated or shown repeatedly across notebook "
        "sessions: preferred libraries and tools (for example pandas or polars, plotting "
        "libraries), coding and notebook style, how results, tables and figures should be "
        "presented, and how they like explanations? Leave out one-off requests.",
        ALL_SCOPES,
        False,
        600,
    ),
    Seed(
        "project-conventions",
        "Project Conventions",
        "What conventions does this project follow in its notebooks and analyses: where data "
        "comes from and how datasets are loaded, named, versioned and cleaned; naming of files, "
        "columns and variables; standard methods, metrics, validation splits and random seeds; "
        "how results, figures and reports are produced and checked? Include conventions stated "
        "explicitly or enforced repeatedly.",
        PROJECT_SCOPES,
        True,
        800,
    ),
    Seed(
        "project-decisions",
        "Project Decisions",
        "What lasting decisions has this project made about its data and methods (dataset "
        "choices and filters, cleaning and feature rules, models, evaluation metrics, thresholds "
        "and parameters), and what were the rationale and trade-offs of each? Leave out "
        "transient plans, open ideas, exploratory dead ends and task status.",
        PROJECT_SCOPES,
        True,
        800,
    ),
)


@dataclass(frozen=True)
class ResolvedSeed:
    """A seed as it applies to one scope: final id, tags and the legacy ids it may exist under."""

    id: str
    name: str
    source_query: str
    tags: tuple[str, ...]
    max_tokens: int
    legacy_ids: tuple[str, ...] = ()
    trigger: dict[str, Any] = field(default_factory=lambda: dict(AUTO_REFRESH))


def tag_suffix(tag: str) -> str:
    """The id suffix for a project tag: ``project:My Repo.v2`` → ``My-Repo.v2``."""
    text = tag.removeprefix("project:").strip()
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")
    return text or "project"


def resolve_seeds(scope: BankScope, seeds: Iterable[Seed] = SEEDS) -> list[ResolvedSeed]:
    """The seeds that apply to ``scope``, with their ids, tags and legacy ids."""
    resolved = []
    for seed in seeds:
        if scope.mode not in seed.scopes:
            continue
        base = (scope.retain_tags or ()) if seed.project_tagged else ()
        tags = tuple(dict.fromkeys((*base, *seed.extra_tags)))
        model_id, legacy = seed.id, tuple[str, ...]()
        if scope.mode == "per-project-tagged" and seed.project_tagged and tags:
            model_id, legacy = f"{seed.id}-{tag_suffix(tags[0])}", (seed.id,)
        resolved.append(
            ResolvedSeed(model_id, seed.name, seed.source_query, tags, seed.max_tokens, legacy)
        )
    return resolved


def seed_exists(seed: ResolvedSeed, models: Iterable[MentalModel]) -> bool:
    """Present under its id, or under a legacy id with exactly the seed's tags."""
    for model in models:
        if model.id == seed.id:
            return True
        if model.id in seed.legacy_ids and set(model.tags) == set(seed.tags):
            return True
    return False


@dataclass
class SeedOutcome:
    """What one create-only seeding pass did."""

    created: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)


def ensure_seeds(
    client: HindsightClient, bank_id: str, seeds: Sequence[ResolvedSeed]
) -> SeedOutcome:
    """Create the missing seeds; never touch a model that exists. A failed list raises."""
    outcome = SeedOutcome()
    if not seeds:
        return outcome
    models = [MentalModel.from_json(m) for m in client.list_mental_models(bank_id, "metadata")]
    for seed in seeds:
        if seed_exists(seed, models):
            outcome.present.append(seed.id)
            continue
        try:
            client.create_mental_model(
                bank_id,
                seed.name,
                seed.source_query,
                model_id=seed.id,
                tags=seed.tags or None,
                max_tokens=seed.max_tokens,
                trigger=seed.trigger,
            )
        except HindsightError as error:
            log.debug("Hindsight: createMentalModel failed for %s: %s", seed.id, error)
            outcome.failed.append((seed.id, str(error)))
        else:
            log.debug("Hindsight: seeded mental model %s", seed.id)
            outcome.created.append(seed.id)
    return outcome
