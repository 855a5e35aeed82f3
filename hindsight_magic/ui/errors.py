"""User-facing failures: one clear line with a hint, and no traceback unless debug is on."""

from __future__ import annotations

from ..api.client import HindsightClient, HindsightError


class HindsightMagicError(Exception):
    """An expected failure shown as one line (IPython calls ``_render_traceback_``)."""

    def _render_traceback_(self) -> list[str]:
        return [f"HindsightError: {self}"]


def explain(error: HindsightError, url: str, is_hindsight: bool | None = None) -> str:
    """The error's message plus what the user can do about it.

    ``is_hindsight`` is the outcome of an identity probe (``GET /version``) made after a reply
    that was not Hindsight JSON; None when no probe was made.
    """
    message = str(error)
    if error.kind == "connect":
        return (
            f"{message} — no Hindsight server at {url}: start one with "
            "`%hindsight server start` or set HINDSIGHT_API_URL."
        )
    if error.kind == "timeout":
        return f"{message} — the server at {url} is slow or unreachable; try again or check it."
    if error.kind == "not_hindsight" and is_hindsight is False:
        return (
            f"{url} answered but is not a Hindsight server ({message}) — point HINDSIGHT_API_URL "
            "at Hindsight, or run a local one with `%hindsight server start`."
        )
    if error.status_code in (401, 403):  # also a proxy's HTML login page
        return f"{message} — check HINDSIGHT_API_KEY (the server at {url} refused the request)."
    if error.kind == "not_hindsight":
        return f"{message} — the server at {url} (or a proxy in front of it) is failing; try again."
    if error.status_code == 429:
        return f"{message} — the server at {url} is busy; try again in a moment."
    if (error.status_code or 0) >= 500:
        return (
            f"{message} — the server at {url} failed; try again, or read its log "
            "(`%hindsight server logs` for the local one)."
        )
    return message


def probe_identity(client: HindsightClient) -> bool | None:
    """True if ``client`` reaches Hindsight, False if something else answers, None if unknown."""
    try:
        client.identity()
    except HindsightError as error:
        if error.kind == "not_hindsight" and (error.status_code or 0) < 500:
            return False
        return None
    return True


class ServerError(Exception):
    """A local-server failure. ``str()`` is one line saying what to do; ``log_tail`` holds the
    last lines of the server log (start failures) for callers to show separately."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        super().__init__(" ".join(message.split()))
        self.log_tail = log_tail
