"""``%hindsight server start|stop|status|logs``: the local Hindsight server from a notebook."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ..ui.display import Message
from .errors import HindsightMagicError
from .options import parse_words, positive_int

if TYPE_CHECKING:
    from .magics import HindsightMagics


def cmd_server(magics: HindsightMagics, args: str) -> Any:
    """Start, stop or inspect the local Hindsight server on this machine."""
    from ..localserver import launcher as server

    usage = "%hindsight server start [--port N] | stop | status | logs [--lines N]"
    options, words = parse_words(args, {"port": positive_int, "lines": positive_int}, usage)
    action = words[0] if words else "status"
    if action == "start":
        print("Starting the local Hindsight server (about 15 s the first time)…", file=sys.stderr)
        try:
            info = server.start(port=options.get("port", server.DEFAULT_PORT))
        except server.ServerError as error:
            tail = getattr(error, "log_tail", "")
            if tail:
                print(tail, file=sys.stderr)
            raise HindsightMagicError(str(error)) from None
        magics.set_setting("api_url", info.url)
        llm = info.llm_provider
        note = " — reflect answers are placeholders (mock LLM)" if llm == "mock" else ""
        return Message(
            f"Hindsight server running at {info.url} (LLM: {llm}{note}); session uses it."
        )
    if action == "stop":
        stopped = server.stop()
        return Message("Local Hindsight server stopped." if stopped else "No local server running.")
    if action == "status":
        info = server.status()
        if info is None:
            return Message("No local Hindsight server running (start: %hindsight server start).")
        return Message(
            f"Local Hindsight server at {info.url} (pid {info.pid}, LLM {info.llm_provider})."
        )
    if action == "logs":
        return Message(server.log_tail(lines=options.get("lines", 40)) or "(no server log yet)")
    raise UsageError(f"Unknown server action {action!r}. Usage: {usage}")
