"""The server actions, declared once: ``hindsight-magic server …`` and ``%hindsight server …``.

``ACTIONS`` lists each action with its help and options. ``add_cli_parser`` builds the command
line's argparse subcommands from it; ``%hindsight server`` (``ipython/server_command.py``) builds
its parser from the same table with ``add_options``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_PORT = 8899  # launcher.DEFAULT_PORT; kept here so parsing never imports the launcher
DEFAULT_ACTION = "status"  # what a bare `%hindsight server` does


def positive_int(text: str) -> int:
    """An integer > 0 (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


@dataclass(frozen=True)
class Option:
    """One ``--option VALUE`` of an action (``type=bool``: a flag without a value)."""

    flags: tuple[str, ...]
    type: Callable[[str], Any]
    default: Any
    metavar: str
    help: str

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        """Add this option to ``parser``."""
        if self.type is bool:
            parser.add_argument(*self.flags, action="store_true", help=self.help)
            return
        parser.add_argument(
            *self.flags, type=self.type, default=self.default, metavar=self.metavar, help=self.help
        )


@dataclass(frozen=True)
class Action:
    """One server action: its name, one-line help and its own options."""

    name: str
    help: str
    options: tuple[Option, ...] = ()

    def usage(self) -> str:
        """``name [--opt M] …`` (own options only)."""
        words = [
            f"[{o.flags[-1]}]" if o.type is bool else f"[{o.flags[-1]} {o.metavar}]"
            for o in self.options
        ]
        return " ".join([self.name, *words])


DATA_DIR = Option(("--data-dir",), Path, None, "D", "data directory (default: the user's)")
ACTIONS: tuple[Action, ...] = (
    Action(
        "start",
        "start (or reuse) the server",
        (
            Option(("--port",), positive_int, DEFAULT_PORT, "N", f"default: {DEFAULT_PORT}"),
            Option(("--wait",), float, 180.0, "S", "seconds to wait for health (default 180)"),
        ),
    ),
    Action("stop", "stop the server"),
    Action("status", "is it running? where is its data?"),
    Action(
        "logs",
        "show the end of the server log",
        (Option(("-n", "--lines"), positive_int, 40, "N", "how many lines (default 40)"),),
    ),
    Action(
        "purge",
        "stop the server and delete all its data",
        (Option(("--yes",), bool, False, "", "do not ask for confirmation"),),
    ),
)
NAMES = tuple(action.name for action in ACTIONS)


def usage(command: str) -> str:
    """One line: every action with its options, e.g. for ``%hindsight server``."""
    actions = " | ".join(action.usage() for action in ACTIONS)
    return f"{command} {actions}  (each also takes {DATA_DIR.flags[0]} {DATA_DIR.metavar})"


def add_options(parser: argparse.ArgumentParser, action: Action) -> None:
    """Add ``action``'s options (and ``--data-dir``) to ``parser``."""
    for option in (*action.options, DATA_DIR):
        option.add_to(parser)


def add_cli_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    handlers: Mapping[str, Callable[[argparse.Namespace], int]],
) -> None:
    """Add ``server`` with one subcommand per action; each sets ``handler`` from ``handlers``."""
    parser = subparsers.add_parser("server", help="run a local Hindsight server")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for action in ACTIONS:
        sub = actions.add_parser(action.name, help=action.help, description=action.help)
        add_options(sub, action)
        sub.set_defaults(handler=handlers[action.name])
