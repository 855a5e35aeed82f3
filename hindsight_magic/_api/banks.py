"""Ensure-bank: ``PUT …/banks/{bank}`` (with the missions and the extraction the settings ask
for) once per bank per process, before the first write and before seeding the mental models of
a bank that exists (reads never create one). Failures are logged and tried again next time; the
set of banks ensured is capped and drops the lexicographically first half when full (the
reference system's rule).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Protocol

from .._errors import HindsightError
from .._settings import Extraction
from .client import BankExtraction

if TYPE_CHECKING:
    from .client import HindsightClient

log = logging.getLogger("hindsight_magic")
MISSION_SET_CAP = 10_000


class EnsuredBanks:
    """Banks already PUT in this process; capped, dropping the sorted first half when full."""

    def __init__(self, cap: int = MISSION_SET_CAP) -> None:
        self._cap = cap
        self._ids: set[str] = set()
        self._lock = threading.Lock()

    def __contains__(self, key: object) -> bool:
        return key in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, key: str) -> None:
        """Remember ``key``; past the cap, forget the lexicographically first half."""
        with self._lock:
            self._ids.add(key)
            if len(self._ids) > self._cap:
                for old in sorted(self._ids)[: len(self._ids) >> 1]:
                    self._ids.discard(old)


ENSURED_BANKS = EnsuredBanks()


class _BankSettings(Protocol):
    bank_mission: str
    retain_mission: str
    retain_extraction: Extraction


def bank_settings(settings: _BankSettings) -> tuple[str, str, Extraction]:
    """What ``ensure_bank`` writes, from the session's settings: the missions, the extraction."""
    return settings.bank_mission, settings.retain_mission, settings.retain_extraction


def ensure_bank(
    client: HindsightClient,
    bank_id: str,
    bank_mission: str = "",
    retain_mission: str = "",
    extraction: Extraction = Extraction.SERVER,
) -> bool:
    """Create or update ``bank_id`` once per process (per server and extraction setting), with
    the missions and the extraction mode the settings ask for; False if that failed."""
    key = f"{client.base_url}#{bank_id}#{extraction}"
    if key in ENSURED_BANKS:
        return True
    try:
        client.create_bank(bank_id, bank_mission, retain_mission, BankExtraction.of(extraction))
    except HindsightError as error:
        log.debug("Hindsight: ensureBankExists failed: %s", error)
        return False
    ENSURED_BANKS.add(key)
    log.debug("Hindsight: ensured bank %s", bank_id)
    return True
