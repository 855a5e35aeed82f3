"""The HTTP under every endpoint (``Wire``): how a request is made and how each failure reads.

One httpx client per thread (a pool each) for one server URL, ``Authorization: Bearer`` when a
key is set, a per-request timeout, every failure mapped to ``HindsightError`` with one of
three message shapes: ``"<op> failed: <detail>"``, ``"<op> request timed out after Ns"``,
``"<op> request failed: <reason>"``; a reply that is not Hindsight's JSON is said to be so.
Every path segment that comes from the user or the server is encoded (``path_segment``). httpx
is imported on first use, not at extension load. ``client.HindsightClient`` has one ``Wire``
and builds its endpoints on it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote
from uuid import uuid4

from .._errors import HindsightError
from .._text import encodable
from .._version import __version__
from .errors import detail_of, readable, reply_line

if TYPE_CHECKING:
    import httpx


USER_AGENT = f"hindsight-magic/{__version__}"
BANKS = "/v1/default/banks"
CONNECT_TIMEOUT_CAP_S = 10.0


def path_segment(value: str) -> str:
    """``value`` as one URL path segment: every reserved character percent-encoded (``/`` too),
    and a segment of only dots spelled out (``%2E``), so it can never climb the path."""
    encoded = quote(encodable(value), safe="")
    return encoded.replace(".", "%2E") if set(value) <= {"."} else encoded


def bank_path(bank_id: str) -> str:
    """The path of a bank, ``/v1/default/banks/{bank_id}``, its id encoded."""
    return f"{BANKS}/{path_segment(bank_id)}"


def failure(operation: str, error: httpx.HTTPError, timeout_s: float) -> HindsightError:
    """A request that got no reply, as a ``HindsightError``: timed out, or failed (no
    connection, a reset, a protocol error)."""
    import httpx

    if isinstance(error, httpx.TimeoutException):
        message = f"{operation} request timed out after {int(timeout_s + 0.5)}s"
        return HindsightError(operation, message, details=error, kind="timeout")
    message = f"{operation} request failed: {str(error) or type(error).__name__}"
    return HindsightError(operation, message, details=error, kind="connect")


@dataclass(frozen=True)
class Reply:
    """A reply read once: its status, body text and content type, and the body as JSON
    (``parsed``: None for an empty body; ``is_json``: False when the body is not JSON)."""

    status: int
    reason: str
    text: str
    ctype: str
    parsed: Any
    is_json: bool

    @classmethod
    def read(cls, response: httpx.Response) -> Reply:
        text = response.text
        try:
            parsed = json.loads(text) if text.strip() else None
            is_json = True
        except ValueError:
            parsed, is_json = None, False
        ctype = response.headers.get("content-type", "no content type")
        return cls(response.status_code, response.reason_phrase, text, ctype, parsed, is_json)

    def foreign(self, need_json: bool = True) -> str | None:
        """Why this is not a reply of Hindsight's, in the words after ``<op> failed:``: an
        error reply that is not JSON, or (``need_json``) a success whose body is not a JSON
        object or array; None for a reply of Hindsight's."""
        if self.status >= 400:
            if self.is_json:
                return None
            if self.status == 413:
                return "HTTP 413, too large for the server (or a proxy in front of it)"
            if "html" in self.ctype or self.text.lstrip().startswith("<") or not self.text.strip():
                return f"HTTP {self.status} with a non-JSON reply ({self.ctype})"
            return reply_line(self.text)
        if need_json and not isinstance(self.parsed, dict | list):
            return f"the reply was not Hindsight JSON (HTTP {self.status}, {self.ctype})"
        return None


def json_reply(operation: str, reply: Reply, need_json: bool = True) -> Any:
    """A read reply's JSON (``{}`` for an empty one); an error reply, or one that is not
    Hindsight's JSON when ``need_json``, as a ``HindsightError`` in one line."""
    why = reply.foreign(need_json)
    if why is not None:
        message = f"{operation} failed: {why}"
        raise HindsightError(operation, message, reply.status, reply.text[:500], "not_hindsight")
    if reply.status >= 400:
        details = detail_of(reply.parsed, reply.text)
        shown = reply_line(readable(details)) or reply.reason
        raise HindsightError(operation, f"{operation} failed: {shown}", reply.status, details)
    return reply.parsed if reply.parsed is not None else {}


class Wire:
    """Requests to one server with one key; safe to share between threads (one httpx pool
    each). ``unreachable_since``: when a request first found nobody answering at the URL (no
    connection could be made; wall time), since the last reply: None while it answers, or
    before any request."""

    def __init__(
        self, base_url: str, api_key: str | None, transport: httpx.BaseTransport | None
    ) -> None:
        self.base_url = base_url
        self._api_key = api_key
        self._transport = transport
        self._local = threading.local()
        self._all: list[httpx.Client] = []
        self._lock = threading.Lock()
        self.unreachable_since: float | None = None

    def _http(self) -> httpx.Client:
        """This thread's httpx client (made on first use: httpx is imported then)."""
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
        """Close every connection pool this wire opened."""
        with self._lock:
            clients, self._all = self._all, []
        for client in clients:
            client.close()
        self._local = threading.local()

    def call(
        self,
        operation: str,
        method: str,
        path: str,
        *,
        timeout_s: float,
        body: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        files: dict[str, Any] | None = None,
        allow_404: bool = False,
        need_json: bool = True,
    ) -> Any:
        """The request nearly every endpoint goes through: its reply as JSON (``{}`` for an
        empty one), None for a 404 when ``allow_404``; every failure a ``HindsightError`` named
        after ``operation``. ``files`` sends a multipart upload (read from its file objects as
        httpx encodes them)."""
        reply = self.send(
            operation, method, path, timeout_s=timeout_s, body=body, params=params, files=files
        )
        if allow_404 and reply.status == 404:
            return None
        return json_reply(operation, reply, need_json)

    def send(
        self,
        operation: str,
        method: str,
        path: str,
        *,
        timeout_s: float,
        body: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        files: dict[str, Any] | None = None,
    ) -> Reply:
        """One request and its reply, whatever its status: for an endpoint that reads a reply
        its own way before ``json_reply`` (``call`` is this and ``json_reply``); a request that
        got no reply is a ``HindsightError``."""
        import httpx

        timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, CONNECT_TIMEOUT_CAP_S))
        # an upload's own Content-Type, over the client's JSON one (httpx takes its boundary)
        headers = (
            {"Content-Type": f"multipart/form-data; boundary={uuid4().hex}"} if files else None
        )
        try:
            response = self._http().request(
                method,
                path,
                json=body,
                params=params,
                files=files,
                headers=headers,
                timeout=timeout,
            )
        except httpx.HTTPError as error:
            self._no_reply(error)
            raise failure(operation, error, timeout_s) from None
        self.unreachable_since = None
        return Reply.read(response)

    @contextmanager
    def stream(self, operation: str, path: str, *, timeout_s: float) -> Iterator[httpx.Response]:
        """``GET path`` as a stream: the response, to read in chunks inside the ``with``; a
        refusal, and every transport failure while reading, a ``HindsightError``."""
        import httpx

        timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, CONNECT_TIMEOUT_CAP_S))
        try:
            with self._http().stream("GET", path, timeout=timeout) as response:
                self.unreachable_since = None
                if response.status_code >= 400:
                    response.read()
                    json_reply(operation, Reply.read(response), need_json=False)
                yield response
        except httpx.HTTPError as error:
            self._no_reply(error)
            raise failure(operation, error, timeout_s) from None

    def _no_reply(self, error: httpx.HTTPError) -> None:
        """Note a request that got no reply: when no connection could be made, nobody answers
        at the URL (from now, unless that was already so). A reply cut off or too slow says
        neither that it answers nor that it does not."""
        import httpx

        refused = isinstance(error, httpx.ConnectError | httpx.ConnectTimeout)
        if refused and self.unreachable_since is None:
            self.unreachable_since = time.time()
