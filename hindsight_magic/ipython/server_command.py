"""``%hindsight server start|stop|status|logs|purge``: the local Hindsight server from a notebook.

The actions and their options come from ``localserver.actions`` (the same table as the
``hindsight-magic server`` command line) and the wording from ``localserver.messages``.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ..ui.display import Message
from .errors import HindsightMagicError
from .subcommand_parser import SubcommandParser

if TYPE_CHECKING:
    from .magics import HindsightMagics

COMMAND = "%hindsight server"


def parse_server_line(line: str) -> tuple[str, argparse.Namespace]:
    """``ACTION [options]`` → (action, options) by the actions table; bare means ``status``."""
    from ..localserver import actions

    name, _, rest = line.strip().partition(" ")
    name = name or actions.DEFAULT_ACTION
    if name not in actions.NAMES:
        raise UsageError(
            f"Unknown server action {name!r}; actions: {', '.join(actions.NAMES)}. "
            f"Usage: {actions.usage(COMMAND)}"
        )
    action = actions.ACTIONS[actions.NAMES.index(name)]
    data_dir = actions.DATA_DIR
    usage = f"{COMMAND} {action.usage()} [{data_dir.flags[0]} {data_dir.metavar}]"
    parser = SubcommandParser(f"server {name}", usage)
    actions.add_options(parser, action)
    return name, parser.parse_line(rest)


def cmd_server(magics: HindsightMagics, args: str) -> Any:
    """Start, stop or inspect the local Hindsight server on this machine."""
    from ..localserver import messages
    from ..localserver.errors import ServerError

    action, options = parse_server_line(args)
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
    if action == "purge":
        found, plan = messages.purge_plan(options.data_dir)
        if found and not options.yes:
            return Message(
                f"{plan}\nNothing deleted yet: run `{COMMAND} purge --yes` to delete it."
            )
        return Message(messages.purge(options.data_dir) if found else plan)
    return Message(messages.logs(options.data_dir, lines=options.lines))
