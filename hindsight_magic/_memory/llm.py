"""Whether the session's server has an LLM that writes: answers, mental models' summaries.

Hindsight without a real LLM runs its ``mock`` provider (the local server's default) or ``none``.
The mock answers every reflect and fills every mental model with ``mock response``; ``none``
refuses a reflect with HTTP 400. Neither is text to show as an answer or as what a model says,
so the reader and the mental models ask this first, and show the memories themselves instead.

What is known: the local server's state file (the launcher records the provider it started the
server with), looked up at most every ``RECHECK_S`` (a server restarted with ``--llm`` from a
terminal, under a running kernel, is seen within that); and what each reply shows (the mock's
text, the 400), for a server elsewhere too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from .._errors import HindsightError
from .._machine import LLM_PROVIDERS, NO_LLM_PROVIDERS, OPENAI, local_server

PLACEHOLDER = "mock response"  # what Hindsight's mock LLM writes for every answer and model
RECHECK_S = 30.0
ONE_COMMAND = f"hindsight-magic server start --llm {OPENAI}"  # the step to a real LLM (README)
PROVIDERS_NAMED = ", ".join(name for name in LLM_PROVIDERS if name != OPENAI)  # the others


def placeholder(text: str | None) -> bool:
    """Whether ``text`` is what the mock LLM writes (an answer, a model's content)."""
    return (text or "").strip() == PLACEHOLDER


@dataclass(frozen=True)
class NoLlm:
    """Why the server writes no text: its ``provider`` (``mock``, ``none``; "" when a reply
    showed it), ``local``: the local server the launcher started (a restart gives it one)."""

    provider: str
    local: bool

    def why(self) -> str:
        """``the local Hindsight server runs without an LLM (mock)``."""
        which = "the local Hindsight server runs" if self.local else "the Hindsight server runs"
        named = f" ({self.provider})" if self.provider else ""
        return f"{which} without an LLM{named}"

    def how(self) -> str:
        """How to get written text: the one command for the local server, else the server's
        own setting."""
        if self.local:
            return f"for written answers, restart it with one: {ONE_COMMAND} (or {PROVIDERS_NAMED})"
        return "for written answers, the server needs an LLM (HINDSIGHT_API_LLM_PROVIDER)"


def llm_failure(error: HindsightError) -> str | None:
    """What a failed reflect says of the server's LLM, or None when it is another failure (the
    server cannot be reached, refuses the key, has no such bank …): HTTP 400 from a server whose
    provider is ``none``; 500, 502 or 504 from a provider that failed (a refused key, a model
    that is not there, a timeout)."""
    if error.kind != "http" or error.status_code is None:
        return None
    said = f"{error.details or ''} {error}".lower()
    if error.status_code == 400 and "llm" in said:
        return "HTTP 400: no LLM"
    if error.status_code in (500, 502, 504):  # its words may quote the provider's, key and all
        return f"HTTP {error.status_code}"
    return None


class Addressed(Protocol):
    """What the LLM's owner is asked: the server of the moment (the session's ``Connection``)."""

    @property
    def url(self) -> str: ...


class ServerLlm:
    """What this machine knows of the session's server's LLM: the local server's state file
    records the provider it was started with (safe from any thread). A server elsewhere is
    known by its replies alone (``shown``)."""

    def __init__(self, server: Addressed, clock: Callable[[], float] = time.monotonic) -> None:
        self._server = server
        self._clock = clock
        self._lock = threading.Lock()
        self._known: dict[str, tuple[float, NoLlm | None, bool]] = {}

    def _look(self) -> tuple[NoLlm | None, bool]:
        """(why the local server has no LLM or None, whether the URL is a local server's),
        looked up at most every ``RECHECK_S``."""
        url, now = self._server.url, self._clock()
        with self._lock:
            known = self._known.get(url)
        if known is not None and now - known[0] < RECHECK_S:
            return known[1], known[2]
        local = local_server(url)
        running = local is not None and local.running
        provider = local.llm_provider if local is not None and running else ""
        found = NoLlm(provider, True) if provider in NO_LLM_PROVIDERS else None
        with self._lock:
            self._known[url] = (now, found, running)
        return found, running

    def missing(self) -> NoLlm | None:
        """Why the server writes no text, when this machine knows it (the local server's
        provider is ``mock`` or ``none``); None otherwise."""
        return self._look()[0]

    def shown(self, provider: str = "") -> NoLlm:
        """What a reply showed: the server has no LLM (the mock's text; ``none``'s 400)."""
        return NoLlm(provider, self._look()[1])

    def forget(self) -> None:
        """Look again next time (the session's server changed)."""
        with self._lock:
            self._known.clear()
