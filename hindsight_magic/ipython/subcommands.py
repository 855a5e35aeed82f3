"""The ``%hindsight`` subcommands: one small function each, routed by name."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ..memory.scope import project_label
from ..settings import (
    CONFIGURABLE_NAMES,
    ENV_ALIASES,
    SCOPE_MODES,
    SECRET_FIELDS,
    env_name,
    unknown_setting_message,
)
from ..ui.display import Message, Report, plural
from ..ui.doctor import cmd_doctor
from ..ui.panel import cmd_panel
from .model_commands import cmd_context, cmd_models
from .options import FLAG, parse_words, positive_float
from .server_command import cmd_server

if TYPE_CHECKING:
    from .magics import HindsightMagics

Handler = Callable[["HindsightMagics", str], Any]

HELP = {
    "help": "this list",
    "status": "server, bank, tags, queue",
    "config": "show or change settings: config [NAME[=VALUE]] (NAME= resets)",
    "scope": "show or change scoping: scope [global|per-project|per-project-tagged] [--project L]",
    "bank": "show or change the base bank: bank [NAME] [--prefix P]",
    "flush": "send queued memories now and wait (bounded): flush [--timeout S]",
    "retry": "re-send memories the server refused earlier (--drop discards them)",
    "clear": "forget the local recall cache and notices (server memory stays)",
    "autoretain": "retain recent cells automatically: autoretain [on|off|every N|now|status]",
    "server": "the local Hindsight server: start [--port N] | stop | status | logs [--lines N]",
    "models": "mental models: models [list|show ID|refresh [ID]|seed|delete ID|history ID]",
    "context": "the <mental_models> + last <memories> block for a prompt: p = %hindsight context",
    "panel": "a live panel: queue, auto-retain, mental models, buttons (text without widgets)",
    "doctor": "check packages, server, key, bank, journal and widgets; each ok or what to fix",
}


def cmd_help(magics: HindsightMagics, args: str) -> Report:
    """List the subcommands."""
    report = Report("%hindsight SUBCOMMAND — manage this notebook's memory session")
    report.add("", list(HELP.items()))
    report.footer = "Magics: %retain, %recall, %%reflect (add ? for help, e.g. %retain?)."
    return report


def cmd_status(magics: HindsightMagics, args: str) -> Report:
    """Server, scope, queue and session."""
    return magics.session.status()


def _source(magics: HindsightMagics, name: str) -> str:
    if getattr(magics, name, None) is not None:
        return "config"
    if os.environ.get(env_name(name), "").strip():
        return "env"
    if name in ENV_ALIASES and os.environ.get(ENV_ALIASES[name], "").strip():
        return "env"
    return "default"


def cmd_config(magics: HindsightMagics, args: str) -> Any:
    """Show all settings, one, or set ``NAME=VALUE`` (``NAME=`` resets to env/default)."""
    args = args.strip()
    settings = magics.session.settings
    if not args:
        report = Report("Settings (config > env > default)")
        rows = [
            (name, f"{value}   [{_source(magics, name)}]")
            for name, value in settings.public_items()
        ]
        report.add("", rows)
        report.footer = "Change: %hindsight config NAME=VALUE   Reset: %hindsight config NAME="
        return report
    name, sep, value = args.partition("=")
    name = name.strip()
    if name in SECRET_FIELDS:
        raise UsageError(
            "Set the API key in the environment (HINDSIGHT_API_KEY) before starting the kernel: "
            "a key typed into a cell is saved in the notebook."
        )
    if name not in CONFIGURABLE_NAMES:
        raise UsageError(unknown_setting_message(name))
    if not sep:
        shown = dict(settings.public_items())[name]
        return Message(f"{name} = {shown}   [{_source(magics, name)}]")
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    magics.set_setting(name, value if value else None)
    shown = dict(magics.session.settings.public_items())[name]
    return Message(f"{name} = {shown}")


def cmd_scope(magics: HindsightMagics, args: str) -> Message:
    """Show or change the scoping mode (re-reads the project from the working directory)."""
    usage = "%hindsight scope [global|per-project|per-project-tagged] [--project LABEL]"
    options, words = parse_words(args, {"project": str}, usage)
    session = magics.session
    if not words and not options:
        return Message(f"Scope: {session.scope.describe()}; project {session.scope.label!r}.")
    mode = " ".join(words)
    if len(words) > 1 or (mode and mode not in SCOPE_MODES):
        raise UsageError(f"Invalid scope {mode!r}: use {', '.join(SCOPE_MODES)}.")
    if mode:
        magics.set_setting("scoping", mode)
    label = options.get("project", "").strip().lower() or project_label(os.getcwd())
    session.apply(magics.current_settings(), label=label)
    return Message(f"Scope: {session.scope.describe()}.")


def cmd_bank(magics: HindsightMagics, args: str) -> Message:
    """Show or change the base bank id (and prefix)."""
    options, words = parse_words(args, {"prefix": str}, "%hindsight bank [NAME] [--prefix P]")
    if len(words) > 1:
        raise UsageError("A bank id is one word, e.g. %hindsight bank analytics")
    if "prefix" in options:
        magics.set_setting("bank_prefix", options["prefix"])
    if words:
        magics.set_setting("bank_id", words[0])
    return Message(f"Scope: {magics.session.scope.describe()}.")


def cmd_flush(magics: HindsightMagics, args: str) -> Message:
    """Send everything queued now and report what happened."""
    options, words = parse_words(
        args, {"timeout": positive_float}, "%hindsight flush [--timeout S]"
    )
    if words:
        raise UsageError("Usage: %hindsight flush [--timeout S]")
    session = magics.session
    before = session.queue.stats()
    outcome = session.flush(options.get("timeout"))
    after = session.queue.stats()
    sent = after.accepted - before.accepted
    parts = [f"Flushed: {plural(sent, 'memory', 'memories')} accepted by the server."]
    if outcome.retrying:
        parts.append(
            f"{plural(outcome.retrying, 'memory is', 'memories are')} waiting to retry "
            f"({after.last_error}); they stay queued."
        )
    if outcome.pending and outcome.retrying:
        parts.append(f"{plural(outcome.pending, 'more waits', 'more wait')} behind them.")
    elif outcome.pending:
        parts.append(f"{plural(outcome.pending, 'memory is', 'memories are')} still being sent.")
    if outcome.failed:
        parts.append(f"{plural(outcome.failed, 'memory', 'memories')} failed: %hindsight retry.")
    return Message(" ".join(parts))


def cmd_retry(magics: HindsightMagics, args: str) -> Message:
    """Re-send the memories the server refused (``--drop`` discards them instead)."""
    options, words = parse_words(args, {"drop": FLAG}, "%hindsight retry [--drop]")
    if words:
        raise UsageError("Usage: %hindsight retry [--drop]")
    if options.get("drop"):
        dropped = magics.session.queue.drop_failed()
        return Message(f"Dropped {plural(dropped, 'failed memory', 'failed memories')}.")
    count = magics.session.retry_failed()
    if not count:
        return Message("Nothing to retry: no failed memories.")
    magics.session.flush()
    return Message(f"Re-sent {plural(count, 'memory', 'memories')}. See %hindsight status.")


def cmd_clear(magics: HindsightMagics, args: str) -> Message:
    """Forget local caches; memory on the server is untouched."""
    magics.session.last_recall = None
    magics.session.take_notices()
    return Message(
        "Hindsight memory is server-side; only the local recall cache was cleared. "
        "Delete the Hindsight bank on the server to wipe upstream state."
    )


def cmd_autoretain(magics: HindsightMagics, args: str) -> Any:
    """Turn auto-retain on/off, set its interval, retain now, or show its counters."""
    usage = "%hindsight autoretain [on|off|every N|now|status]"
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
        raise UsageError(f"Usage: {usage}")
    auto = session.autoretain.status()
    state = "on" if auto.enabled else "off"
    return Message(
        f"Auto-retain {state}: {auto.mode}, every {auto.every} cells; "
        f"{plural(auto.counted, 'cell', 'cells')} counted, next retain in {auto.until_next}, "
        f"{plural(auto.retained, 'transcript', 'transcripts')} queued."
    )


SUBCOMMANDS: dict[str, Handler] = {
    "help": cmd_help,
    "status": cmd_status,
    "config": cmd_config,
    "scope": cmd_scope,
    "bank": cmd_bank,
    "flush": cmd_flush,
    "retry": cmd_retry,
    "clear": cmd_clear,
    "autoretain": cmd_autoretain,
    "server": cmd_server,
    "models": cmd_models,
    "context": cmd_context,
    "panel": cmd_panel,
    "doctor": cmd_doctor,
}


def run_subcommand(magics: HindsightMagics, line: str) -> Any:
    """Route ``%hindsight NAME ARGS`` to its handler; unknown names list the valid ones."""
    name, _, args = line.strip().partition(" ")
    name = name or "status"
    handler = SUBCOMMANDS.get(name)
    if handler is None:
        raise UsageError(
            f"Unknown subcommand {name!r}. Valid subcommands: {', '.join(SUBCOMMANDS)}."
        )
    return handler(magics, args)
