"""``%hindsight server start|stop|status|logs``: the local Hindsight server from a notebook.

The actions and their options come from ``localserver.actions`` (the same table as the
``hindsight-magic server`` command line) and the wording from ``localserver.messages``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ..ui.display import Message
from .errors import HindsightMagicError

if TYPE_CHECKING:
    from .magics import HindsightMagics

COMMAND = "%hindsight server"


def cmd_server(magics: HindsightMagics, args: str) -> Any:
    """Start, stop or inspect the local Hindsight server on this machine."""
    from ..localserver import messages
    from ..localserver.actions import parse_magic
    from ..localserver.errors import ServerError

    action, options = parse_magic(args, COMMAND)
    if action == "start":
        print("Starting the local Hindsight server (about 15 s the first time)…", file=sys.stderr)
        try:
            info, text = messages.start(
                port=options.port, data_dir=options.data_dir, wait_s=options.wait
            )
        except ServerError as error:
            if error.log_tail:
                print(error.log_tail, file=sys.stderr)
            raise HindsightMagicError(str(error)) from None
        magics.set_setting("api_url", info.url)
        return Message(f"{text}\nThis session now uses it.")
    if action == "stop":
        return Message(messages.stop(options.data_dir))
    if action == "status":
        return Message(messages.status(options.data_dir, COMMAND)[1])
    return Message(messages.logs(options.data_dir, lines=options.lines))
