"""Ensure-bank: ``PUT /v1/default/banks/{bank}`` (with the missions) once per bank per process.

Before the first write or reflect to a bank, and before seeding its mental models. Failures are
logged and tried again next time; the set of ensured banks is capped at 10 000 ids and drops
the lexicographically first half when full (the reference system's rule).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from .errors import HindsightError

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


def ensure_bank(
    client: HindsightClient, bank_id: str, bank_mission: str = "", retain_mission: str = ""
) -> bool:
    """Create or update ``bank_id`` once per process (per server); False if that failed."""
    key = f"{client.base_url}#{bank_id}"
    if key in ENSURED_BANKS:
        return True
    try:
        client.create_bank(bank_id, bank_mission, retain_mission)
    except HindsightError as error:
        log.debug("Hindsight: ensureBankExists failed: %s", error)
        return False
    ENSURED_BANKS.add(key)
    log.debug("Hindsight: ensured bank %s", bank_id)
    return True
