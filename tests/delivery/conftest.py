"""Fixtures of the delivery tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hindsight_magic._session import HindsightSession
from hindsight_magic._settings import HindsightSettings


@pytest.fixture
def sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dead_url: str) -> Iterator[Any]:
    """``sessions(**options)``: sessions on one journal (as kernels of one user), closed after."""
    monkeypatch.setenv("HINDSIGHT_JOURNAL_PATH", str(tmp_path / "journal.sqlite3"))
    monkeypatch.setenv("HINDSIGHT_AUTO_RETAIN", "false")
    monkeypatch.setenv("HINDSIGHT_MENTAL_MODELS", "false")
    monkeypatch.setenv("HINDSIGHT_SCOPING", "global")
    monkeypatch.setenv("HINDSIGHT_API_URL", dead_url)
    made: list[HindsightSession] = []

    def make(**options: Any) -> HindsightSession:
        session = HindsightSession(HindsightSettings(), cwd=str(tmp_path), **options)
        made.append(session)
        return session

    yield make
    for session in reversed(made):
        session.close(0.5)
