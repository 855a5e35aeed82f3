"""Reading a failed reply: its details, a bank that does not exist yet, a server without its
database (``HindsightError`` itself, and whether a failure is worth retrying, are in
``_errors``).

This layer knows no notebook: what an error means for the user, in words and with the commands
to run, is ``_diagnosis``.
"""

from __future__ import annotations

import json
from typing import Any

from .._errors import HindsightError
from .._text import one_line, plain_text


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
