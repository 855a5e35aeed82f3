"""How ``HindsightClient`` talks HTTP: per-thread httpx clients and one ``_request``.

A per-operation timeout, ``Authorization: Bearer`` when a key is set, and every failure mapped
to ``HindsightError`` with one of three message shapes: ``"<op> failed: <detail>"``,
``"<op> request timed out after Ns"``, ``"<op> request failed: <reason>"``. httpx is imported
on first use, not at extension load. The endpoint mixins build on ``Requester``.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .._version import __version__
from .errors import HindsightError, detail_of, one_line, readable

if TYPE_CHECKING:
    import httpx

USER_AGENT = f"hindsight-magic/{__version__}"
BANKS = "/v1/default/banks"
CONNECT_TIMEOUT_CAP_S = 10.0


@dataclass(frozen=True)
class Timeouts:
    """Per-operation deadlines in seconds."""

    request: float = 30.0
    retain: float = 60.0
    recall: float = 30.0
    reflect: float = 120.0


class Requester:
    """The plumbing every endpoint uses: one httpx client per thread, and ``_request``."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeouts: Timeouts | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.timeouts = timeouts or Timeouts()
        self._transport = transport
        self._local = threading.local()
        self._all: list[httpx.Client] = []
        self._lock = threading.Lock()
        self._identity: dict[str, Any] | None = None

    def __repr__(self) -> str:
        auth = "with key" if self._api_key else "no key"
        return f"HindsightClient({self.base_url!r}, {auth})"

    @property
    def has_key(self) -> bool:
        """Whether requests carry an Authorization header."""
        return bool(self._api_key)

    # -- plumbing ---------------------------------------------------------------------------

    def _http(self) -> httpx.Client:
        client = getattr(self._local, "client", None)
        if client is None:
            import httpx

            headers = {"User-Agent": USER_AGENT, "Content-Type": "application/json"}
            if self._api_key:
                headers["Authorization"] = f"Bearer {self._api_key}"
            client = httpx.Client(
                base_url=self.base_url, headers=headers, transport=self._transport
            )
            self._local.client = client
            with self._lock:
                self._all.append(client)
        return client

    def warm_up(self) -> None:
        """Import httpx and make this thread's connection pool now, without a request."""
        self._http()

    def close(self) -> None:
        """Close every connection pool this client opened."""
        with self._lock:
            clients, self._all = self._all, []
        for client in clients:
            client.close()
        self._local = threading.local()

    def _request(
        self,
        operation: str,
        method: str,
        path: str,
        *,
        timeout_s: float,
        body: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        allow_404: bool = False,
        need_json: bool = True,
    ) -> Any:
        import httpx

        timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, CONNECT_TIMEOUT_CAP_S))
        try:
            response = self._http().request(method, path, json=body, params=params, timeout=timeout)
        except httpx.TimeoutException as error:
            message = f"{operation} request timed out after {int(timeout_s + 0.5)}s"
            raise HindsightError(operation, message, details=error, kind="timeout") from None
        except httpx.HTTPError as error:
            reason = str(error) or type(error).__name__
            message = f"{operation} request failed: {reason}"
            raise HindsightError(operation, message, details=error, kind="connect") from None
        if allow_404 and response.status_code == 404:
            return None
        text = response.text
        try:
            parsed = json.loads(text) if text.strip() else None
            is_json = True
        except ValueError:
            parsed, is_json = None, False
        ctype = response.headers.get("content-type", "no content type")
        if response.status_code >= 400:
            details = detail_of(parsed, text)
            if is_json:
                shown = one_line(readable(details)) or response.reason_phrase
                raise HindsightError(
                    operation, f"{operation} failed: {shown}", response.status_code, details
                )
            if response.status_code == 413:
                shown = "HTTP 413, too large for the server (or a proxy in front of it)"
            elif "html" in ctype or text.lstrip().startswith("<") or not text.strip():
                shown = f"HTTP {response.status_code} with a non-JSON reply ({ctype})"
            else:
                shown = one_line(text)
            message = f"{operation} failed: {shown}"
            raise HindsightError(
                operation, message, response.status_code, text[:500], "not_hindsight"
            )
        if need_json and not isinstance(parsed, dict | list):
            message = (
                f"{operation} failed: the reply was not Hindsight JSON "
                f"(HTTP {response.status_code}, {ctype})"
            )
            raise HindsightError(
                operation, message, response.status_code, text[:500], "not_hindsight"
            )
        return parsed if parsed is not None else {}

    @staticmethod
    def _bank(bank_id: str) -> str:
        return f"{BANKS}/{quote(bank_id, safe='')}"
