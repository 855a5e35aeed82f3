"""``HindsightClient``: a thin synchronous httpx client for the Hindsight endpoints we use.

One method per endpoint: the bank endpoints here, the memory and mental-model ones in their
mixins; the HTTP plumbing (timeouts, auth, error mapping) is ``requester.Requester``.
"""

from __future__ import annotations

from typing import Any

from .errors import HindsightError
from .memory_endpoints import MemoryEndpoints
from .mental_model_endpoints import MentalModelEndpoints
from .requester import BANKS, Timeouts

__all__ = ["HindsightClient", "HindsightError", "Timeouts"]


class HindsightClient(MemoryEndpoints, MentalModelEndpoints):
    """Synchronous Hindsight REST client; safe to share between threads (one httpx pool each)."""

    # -- endpoints --------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        """``GET /health``."""
        reply: dict[str, Any] = self._request(
            "health", "GET", "/health", timeout_s=min(self.timeouts.request, 5)
        )
        return reply

    def identity(self) -> dict[str, Any]:
        """``GET /version``, checked to be Hindsight's; cached after the first success."""
        if self._identity is None:
            try:
                reply = self._request("version", "GET", "/version", timeout_s=self.timeouts.request)
            except HindsightError as error:
                if error.kind == "not_hindsight" and (error.status_code or 0) < 500:
                    message = (
                        f"{self.base_url} answered but is not a Hindsight server "
                        f"(HTTP {error.status_code} for /version)"
                    )
                    raise HindsightError(
                        "version", message, error.status_code, None, error.kind
                    ) from None
                raise
            if not isinstance(reply, dict) or "api_version" not in reply:
                message = f"{self.base_url} answered but is not a Hindsight server"
                raise HindsightError("version", message, 200, reply, "not_hindsight")
            self._identity = reply
        return self._identity

    def create_bank(
        self, bank_id: str, reflect_mission: str = "", retain_mission: str = ""
    ) -> dict[str, Any]:
        """``PUT /v1/default/banks/{bank}`` (idempotent); missions are left out when empty."""
        body: dict[str, Any] = {}
        if reflect_mission.strip():
            body["reflect_mission"] = reflect_mission.strip()
        if retain_mission.strip():
            body["retain_mission"] = retain_mission.strip()
        reply: dict[str, Any] = self._request(
            "createBank", "PUT", self._bank(bank_id), timeout_s=self.timeouts.request, body=body
        )
        return reply

    def list_banks(self) -> list[dict[str, Any]]:
        """``GET /v1/default/banks``."""
        reply = self._request("listBanks", "GET", BANKS, timeout_s=self.timeouts.request)
        return list(reply.get("banks", [])) if isinstance(reply, dict) else list(reply)

    def bank_stats(self, bank_id: str) -> dict[str, Any] | None:
        """``GET …/banks/{bank}/stats``; None when the bank does not exist yet."""
        reply: dict[str, Any] | None = self._request(
            "bankStats",
            "GET",
            f"{self._bank(bank_id)}/stats",
            timeout_s=self.timeouts.request,
            allow_404=True,
        )
        return reply
