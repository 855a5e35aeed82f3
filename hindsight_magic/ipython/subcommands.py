"""The ``%hindsight`` subcommands: one table of name → (summary, handler).

The table is the only list of subcommands: ``%hindsight help``, the ``%hindsight?`` docstring
and the "unknown subcommand" message are all made from it. Handlers of heavier subcommands
(panel, doctor, models, server) import their module when first run.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from IPython.core.error import UsageError

from .. import public_api
from ..memory.scope import project_label
from ..settings import (
    FALLBACK_API_URL,
    KEY_IN_ENVIRONMENT,
    SCOPE_MODES,
    unknown_setting_message,
)
from ..text import plural
from ..ui.display import Message, Report
from .options import positive_float

if TYPE_CHECKING:
    from .magics import HindsightMagics
    from .subcommand_parser import SubcommandParser

Handler = Callable[["HindsightMagics", str], Any]


class Subcommand(NamedTuple):
    """One row of the table."""

    summary: str
    handler: Handler


def _elsewhere(module: str, name: str) -> Handler:
    """A handler defined in ``module`` (relative to this package), imported when first run."""

    def run(magics: HindsightMagics, args: str) -> Any:
        handler: Handler = getattr(importlib.import_module(module, __package__), name)
        return handler(magics, args)

    run.__name__ = name
    return run


def cmd_help(magics: HindsightMagics, args: str) -> Report:
    """List the subcommands."""
    report = Report("%hindsight SUBCOMMAND — manage this notebook's memory session")
    report.add("", [(name, row.summary) for name, row in SUBCOMMANDS.items()])
    report.footer = "Magics: %retain, %recall, %%reflect (add ? for help, e.g. %retain?)."
    return report


def cmd_status(magics: HindsightMagics, args: str) -> Report:
    """Server, scope, queue and session."""
    return public_api.status(session=magics.session)


def effective(magics: HindsightMagics, name: str) -> tuple[str, str]:
    """(value in force, where it came from) of setting ``name``; the key only as set/not set.

    An unset ``api_url`` shows the URL the session uses: a running local server's, or the
    default.
    """
    if name == "api_key":
        return ("(set)" if magics.api_key else "(not set)"), magics.source(name)
    shown, source = magics.shown(name), magics.source(name)
    if name == "api_url" and not magics.api_url:
        shown = magics.session.api_url
        source = "default" if shown == FALLBACK_API_URL else "local server"
    return shown, source


def cmd_config(magics: HindsightMagics, args: str) -> Any:
    """Show all settings, one, or set ``NAME=VALUE`` (``NAME=`` resets to env/default)."""
    args = args.strip()
    if not args:
        report = Report("Settings: value in force [where it came from]")
        rows = []
        for name, _ in magics.public_items():
            shown, source = effective(magics, name)
            rows.append((name, f"{shown}   [{source}]"))
        report.add("", rows)
        report.footer = "Change: %hindsight config NAME=VALUE   Reset: %hindsight config NAME="
        return report
    name, sep, value = args.partition("=")
    name = name.strip()
    if name == "api_key":  # a UsageError even with debug on: a traceback would show the key
        raise UsageError(KEY_IN_ENVIRONMENT)
    if name not in magics.setting_names():
        raise UsageError(unknown_setting_message(name))
    if sep:
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        magics.set_setting(name, value if value else None)
    shown, source = effective(magics, name)
    return Message(f"{name} = {shown}   [{source}]")


SCOPE_USAGE = "%hindsight scope [global|per-project|per-project-tagged] [--project LABEL]"
BANK_USAGE = "%hindsight bank [NAME] [--prefix P]"
# The word-taking subcommands: usage, then (argument, argparse keywords) pairs.
ARGUMENTS: dict[str, tuple[str, tuple[tuple[str, dict[str, Any]], ...]]] = {
    "scope": (SCOPE_USAGE, (("mode", {"nargs": "*"}), ("--project", {}))),
    "bank": (BANK_USAGE, (("name", {"nargs": "*"}), ("--prefix", {}))),
    "flush": ("%hindsight flush [--timeout S]", (("--timeout", {"type": positive_float}),)),
    "retry": ("%hindsight retry [--drop]", (("--drop", {"action": "store_true"}),)),
}


@functools.cache
def _parser(name: str) -> SubcommandParser:
    """The parser of subcommand ``name``, built from ``ARGUMENTS`` when first used."""
    from .subcommand_parser import SubcommandParser, argument_type

    usage, arguments = ARGUMENTS[name]
    parser = SubcommandParser(name, usage)
    for flag, keywords in arguments:
        if "type" in keywords:
            keywords = {**keywords, "type": argument_type(keywords["type"])}
        parser.add_argument(flag, **keywords)
    return parser


def cmd_scope(magics: HindsightMagics, args: str) -> Message:
    """Show or change the scoping mode (re-reads the project from the working directory)."""
    parsed = _parser("scope").parse_line(args)
    session = magics.session
    if not parsed.mode and parsed.project is None:
        return Message(f"Scope: {session.scope.describe()}; project {session.scope.label!r}.")
    mode = " ".join(parsed.mode)
    if len(parsed.mode) > 1 or (mode and mode not in SCOPE_MODES):
        raise UsageError(f"Invalid scope {mode!r}: use {', '.join(SCOPE_MODES)}.")
    if mode:
        magics.set_setting("scoping", mode)
    session.set_project((parsed.project or "").strip().lower() or project_label(os.getcwd()))
    return Message(f"Scope: {session.scope.describe()}.")


def cmd_bank(magics: HindsightMagics, args: str) -> Message:
    """Show or change the base bank id (and prefix)."""
    parsed = _parser("bank").parse_line(args)
    if len(parsed.name) > 1:
        raise UsageError("A bank id is one word, e.g. %hindsight bank analytics")
    if parsed.prefix is not None:
        magics.set_setting("bank_prefix", parsed.prefix)  # "" clears it
    if parsed.name:
        magics.set_setting("bank_id", parsed.name[0])
    return Message(f"Scope: {magics.session.scope.describe()}.")


def cmd_flush(magics: HindsightMagics, args: str) -> Any:
    """Send everything queued now and report what happened."""
    timeout = _parser("flush").parse_line(args).timeout
    return public_api.flush(timeout, session=magics.session)


def cmd_retry(magics: HindsightMagics, args: str) -> Message:
    """Re-send the memories the server refused (``--drop`` discards them instead)."""
    session = magics.session
    if _parser("retry").parse_line(args).drop:
        dropped = session.queue.drop_failed()
        return Message(f"Dropped {plural(dropped, 'failed memory', 'failed memories')}.")
    count = session.retry_failed()
    if not count:
        return Message("Nothing to retry: no failed memories.")
    session.flush()
    return Message(f"Re-sent {plural(count, 'memory', 'memories')}. See %hindsight status.")


def cmd_clear(magics: HindsightMagics, args: str) -> Message:
    """Forget local caches; memory on the server is untouched."""
    magics.session.reader.last_recall = None
    magics.session.take_notices()
    return Message(
        "Hindsight memory is server-side; only the local recall cache was cleared. "
        "Delete the Hindsight bank on the server to wipe upstream state."
    )


AUTORETAIN_USAGE = "%hindsight autoretain [on|off|every N|now|status]"


def cmd_autoretain(magics: HindsightMagics, args: str) -> Message:
    """Turn auto-retain on/off, set its interval, retain now, or show its counters."""
    words = args.split()
    action = words[0] if words else "status"
    session = magics.session
    if action in ("on", "off") and len(words) == 1:
        magics.set_setting("auto_retain", action == "on")
    elif action == "every" and len(words) == 2:
        magics.set_setting("retain_every_n_cells", words[1])
    elif action == "now" and len(words) == 1:
        session.autoretain.process(force=True)
        session.flush()
    elif action != "status" or len(words) > 1:
        raise UsageError(f"Usage: {AUTORETAIN_USAGE}")
    auto = session.autoretain.status()
    state = "on" if auto.enabled else "off"
    return Message(
        f"Auto-retain {state}: {auto.mode}, every {auto.every} cells; "
        f"{plural(auto.counted, 'cell', 'cells')} counted, next retain in {auto.until_next}, "
        f"{plural(auto.retained, 'transcript', 'transcripts')} queued."
    )


SUBCOMMANDS: dict[str, Subcommand] = {
    "help": Subcommand("this list", cmd_help),
    "status": Subcommand("server, bank, tags, queue, auto-retain, mental models", cmd_status),
    "config": Subcommand(
        "settings in force and where each came from; config [NAME[=VALUE]] (NAME= resets)",
        cmd_config,
    ),
    "scope": Subcommand(
        "show or change scoping: scope [global|per-project|per-project-tagged] [--project L]",
        cmd_scope,
    ),
    "bank": Subcommand("show or change the base bank: bank [NAME] [--prefix P]", cmd_bank),
    "flush": Subcommand(
        "send queued memories now and wait (bounded): flush [--timeout S]", cmd_flush
    ),
    "retry": Subcommand(
        "re-send memories the server refused earlier (--drop discards them)", cmd_retry
    ),
    "clear": Subcommand(
        "forget the local recall cache and notices (server memory stays)", cmd_clear
    ),
    "autoretain": Subcommand(
        "retain recent cells automatically: autoretain [on|off|every N|now|status]", cmd_autoretain
    ),
    "server": Subcommand(
        "the local Hindsight server on this machine: start | stop | status | logs",
        _elsewhere(".server_command", "cmd_server"),
    ),
    "models": Subcommand(
        "mental models: models [list | show ID | refresh [ID] | seed | delete ID | history ID "
        "| reload]",
        _elsewhere(".model_commands", "cmd_models"),
    ),
    "context": Subcommand(
        "the <mental_models> + last <memories> block for a prompt: prompt = %hindsight context",
        _elsewhere(".model_commands", "cmd_context"),
    ),
    "panel": Subcommand(
        "a live panel: queue, auto-retain, mental models, buttons (text without widgets)",
        _elsewhere("..ui.panel", "cmd_panel"),
    ),
    "doctor": Subcommand(
        "check packages, server, key, bank, journal and widgets; each ok or what to fix",
        _elsewhere("..ui.doctor", "cmd_doctor"),
    ),
}


def help_text(indent: str = "        ") -> str:
    """The subcommand list as reStructuredText bullets (for the ``%hindsight?`` docstring)."""
    return "\n".join(f"{indent}- ``{name}`` — {row.summary};" for name, row in SUBCOMMANDS.items())


def run_subcommand(magics: HindsightMagics, line: str) -> Any:
    """Route ``%hindsight NAME ARGS`` to its handler; unknown names list the valid ones."""
    name, _, args = line.strip().partition(" ")
    row = SUBCOMMANDS.get(name or "status")
    if row is None:
        raise UsageError(
            f"Unknown subcommand {name!r}. Valid subcommands: {', '.join(SUBCOMMANDS)}."
        )
    return row.handler(magics, args)
