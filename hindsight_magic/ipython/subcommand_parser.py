"""The parser of ``%hindsight`` subcommands' words: IPython's ``MagicArgumentParser``.

Imported when a subcommand with options first runs (argparse is not needed at ``%load_ext``).
"""

from __future__ import annotations

import argparse
import re
import shlex
from typing import Any, NoReturn

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser

from .options import Converter


class SubcommandParser(MagicArgumentParser):
    """An argparse parser for one ``%hindsight`` subcommand: errors are one ``UsageError`` line
    ending in the usage, never ``SystemExit`` (IPython's ``MagicArgumentParser`` does that part).

    Converters raise ``argparse.ArgumentTypeError`` with the problem; the message then reads
    ``Invalid --timeout 'soon': must be a number.``
    """

    def __init__(self, name: str, usage: str) -> None:
        super().__init__(  # type: ignore[no-untyped-call]
            prog=f"%hindsight {name}", usage=usage, add_help=False
        )

    def parse_line(self, args: str) -> argparse.Namespace:
        """Parse the text after the subcommand's name (shell-like quoting)."""
        try:
            words = shlex.split(args)
        except ValueError as error:
            raise UsageError(f"{error}. Usage: {self.usage}") from None
        return self.parse_intermixed_args(words)  # options may stand anywhere among the words

    def error(self, message: str) -> NoReturn:
        unknown = re.fullmatch(r"unrecognized arguments: (\S+).*", message)
        invalid = re.fullmatch(
            r"argument (?:\S+/)?(\S+): (.+)", message
        )  # -n/--lines: the long one
        if unknown and unknown.group(1).startswith("-"):
            options = [o for action in self._actions for o in action.option_strings]
            valid = ", ".join(o for o in options if o.startswith("--")) or "none"
            message = f"Unknown option {unknown.group(1)}. Options: {valid}"
        elif invalid and invalid.group(2) == "expected one argument":
            message = f"{invalid.group(1)} needs a value"
        elif invalid and invalid.group(1).startswith("-"):
            message = f"Invalid {invalid.group(1)} {invalid.group(2)}"
        raise UsageError(f"{message[:1].upper()}{message[1:]}. Usage: {self.usage}")


def argument_type(convert: Converter) -> Converter:
    """``convert`` for argparse: its ValueError becomes ``'value': problem``."""

    def parse(value: str) -> Any:
        try:
            return convert(value)
        except (TypeError, ValueError) as error:
            raise argparse.ArgumentTypeError(f"{value!r}: {error}") from None

    parse.__name__ = getattr(convert, "__name__", "value")
    return parse
