"""The session's current connection: one ``HindsightClient`` for the URL, key and timeouts now
in force, replaced whole when one of them changes (clients already in use finish their calls)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from .client import HindsightClient, Timeouts

if TYPE_CHECKING:
    import httpx


class Connection:
    """Holds the current client; every part that talks to the server asks it for ``client``."""

    def __init__(self, transport: httpx.BaseTransport | None = None) -> None:
        self._transport = transport
        self._lock = threading.Lock()
        self._clients: list[HindsightClient] = []
        self._client: HindsightClient | None = None

    def open(self, url: str, api_key: str | None, timeouts: Timeouts) -> HindsightClient:
        """Make a client for ``url`` the current one."""
        return self.use(HindsightClient(url, api_key, timeouts, transport=self._transport))

    def use(self, client: HindsightClient) -> HindsightClient:
        """Make ``client`` the current one (tests inject clients with a fault transport)."""
        with self._lock:
            self._clients.append(client)
            self._client = client
        return client

    @property
    def client(self) -> HindsightClient:
        """The current client."""
        client = self._client
        if client is None:
            raise RuntimeError("the connection was never opened")
        return client

    @property
    def url(self) -> str:
        """The current server URL."""
        return self.client.base_url

    def close(self) -> None:
        """Close every client this connection made."""
        with self._lock:
            clients, self._clients = self._clients, []
        for client in clients:
            client.close()
