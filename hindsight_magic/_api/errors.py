"""``HindsightError`` and the classification of a failed reply: transient or not, refused for
what a batch carries, a bank that does not exist yet, a server without its database.

This layer knows no notebook: what an error means for the user, in words and with the commands
to run, is ``_diagnosis``.
"""

from __future__ import annotations

import json
from typing import Any

from .._text import one_line, plain_text


class HindsightError(Exception):
    """A failed Hindsight call: ``operation``, ``status_code`` (None without a reply), ``details``.

    ``kind`` is ``"http"`` (the server answered with an error), ``"timeout"``, ``"connect"`` (no
    reply at all), ``"not_hindsight"`` (something answered that does not speak Hindsight) or
    ``"unconfirmed"`` (a retain got a 2xx whose body was unreadable: it may have been accepted).
    """

    def __init__(
        self,
        operation: str,
        message: str,
        status_code: int | None = None,
        details: Any = None,
        kind: str = "http",
    ) -> None:
        super().__init__(message)
        self.operation = operation
        self.status_code = status_code
        self.details = details
        self.kind = kind

    @property
    def transient(self) -> bool:
        """Worth retrying later: no reply, a timeout, an unreadable 2xx, 408, 429 or a 5xx."""
        if self.kind in ("timeout", "connect", "unconfirmed"):
            return True
        code = self.status_code or 0
        return code in (408, 429) or code >= 500

    @property
    def refuses_items(self) -> bool:
        """Refused for what a batch carries (400, 413, 422), not for the connection or key."""
        return not self.transient and self.status_code in (400, 413, 422)


def detail_of(parsed: Any, text: str) -> Any:
    if isinstance(parsed, dict):
        if parsed.get("detail") is not None:
            return parsed["detail"]
        if parsed.get("message") is not None:
            return parsed["message"]
    return parsed if parsed is not None else text


def readable(details: Any) -> Any:
    """FastAPI's validation errors (a list of ``{loc, msg}``) as ``items.0.timestamp: msg``."""
    if not isinstance(details, list) or not details:
        return details
    if not all(isinstance(d, dict) and "msg" in d for d in details):
        return details
    parts = []
    for entry in details:
        loc = ".".join(str(part) for part in entry.get("loc") or () if part != "body")
        msg = str(entry["msg"]).removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)


def bank_missing(error: HindsightError) -> bool:
    """The server's JSON 404 for a bank that does not exist yet (not any 404 page)."""
    return (
        error.kind == "http"
        and error.status_code == 404
        and "not found" in str(error.details).lower()
    )


def reply_line(value: Any, limit: int = 300) -> str:
    """A reply's text or JSON ``value`` as one line of at most ``limit`` characters, with the
    control and bidirectional characters a server or proxy may send shown as ``U+FFFD``."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return one_line(plain_text(text), limit)


def database_down(error: HindsightError) -> bool:
    """A ``GET /health`` that says the server cannot reach its database (503, ``database``)."""
    details = error.details
    return (
        error.operation == "health"
        and error.status_code == 503
        and isinstance(details, dict)
        and details.get("database") == "error"
    )
