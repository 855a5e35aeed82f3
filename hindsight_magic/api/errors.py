"""``HindsightError`` and how a failed reply becomes one readable line."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import HindsightClient


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


def one_line(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class Diagnosis:
    """What a failure means for the user: a short ``state``, the ``problem`` naming the server,
    and the ``hint`` saying what to do. The one mapping from errors to words: the magics'
    one-line errors, ``%hindsight status`` and ``doctor`` all use it."""

    state: str
    problem: str
    hint: str


def diagnose(error: HindsightError, url: str, is_hindsight: bool | None = None) -> Diagnosis | None:
    """The meaning of ``error`` for a server at ``url``; None when its own message says it all.

    ``is_hindsight`` is the outcome of an identity probe (``GET /version``) made after a reply
    that was not Hindsight JSON; None when no probe was made.
    """
    code = error.status_code or 0
    if error.kind == "connect":
        hint = (
            "start one with `%hindsight server start` (`hindsight-magic server start` in a "
            "terminal) or set HINDSIGHT_API_URL"
        )
        return Diagnosis("unreachable", f"no Hindsight server at {url}", hint)
    if error.kind == "timeout":
        return Diagnosis(
            "slow or unreachable",
            f"the server at {url} is slow or unreachable",
            "try again or check it",
        )
    if error.kind == "not_hindsight" and is_hindsight is False:
        hint = (
            "point HINDSIGHT_API_URL at Hindsight (the local server listens on port 8899), "
            "or run a local one with `%hindsight server start`"
        )
        return Diagnosis(
            "answers, but is not a Hindsight server",
            f"{url} answered but is not a Hindsight server",
            hint,
        )
    if code in (401, 403):  # also a proxy's HTML login page
        return Diagnosis(
            "refuses the API key",
            f"the server at {url} refused the request",
            "check HINDSIGHT_API_KEY",
        )
    if error.kind == "not_hindsight":
        return Diagnosis(
            "failing", f"the server at {url} (or a proxy in front of it) is failing", "try again"
        )
    if code == 429:
        return Diagnosis("busy", f"the server at {url} is busy", "try again in a moment")
    if code >= 500:
        hint = "try again, or read its log (`%hindsight server logs` for the local one)"
        return Diagnosis("failing", f"the server at {url} failed", hint)
    return None


def explain(error: HindsightError, url: str, is_hindsight: bool | None = None) -> str:
    """The error's message plus what it means and what the user can do, as one line."""
    diagnosis = diagnose(error, url, is_hindsight)
    if diagnosis is None:
        return str(error)
    return f"{error} — {diagnosis.problem}; {diagnosis.hint}."


def probe_identity(client: HindsightClient) -> bool | None:
    """True if ``client`` reaches Hindsight, False if something else answers, None if unknown."""
    try:
        client.identity()
    except HindsightError as error:
        if error.kind == "not_hindsight" and (error.status_code or 0) < 500:
            return False
        return None
    return True
