"""The ``%hindsight`` subcommands: every handler, and one table of name → (summary, handler).

The table (``SUBCOMMANDS``, at the end) is the only list of subcommands: ``%hindsight help``, the
``%hindsight?`` docstring and the "unknown subcommand" message are all made from it. Handlers
that need heavier modules (the panel's widgets, the local server) import them when first run.
Expected server trouble is ``HindsightMagicError``: one line, with a hint."""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

from IPython.core.error import UsageError

from .. import _functions
from .._api.client import ensure_bank
from .._api.errors import HindsightError
from .._diagnosis import NOTEBOOK_COMMAND
from .._memory.mental_models import MentalModel, ensure_seeds, resolve_seeds
from .._memory.scope import project_label
from .._settings import FALLBACK_API_URL, KEY_IN_ENVIRONMENT, SCOPE_MODES, unknown_setting_message
from .._text import plural, utc_minute_text
from .._ui.display import (
    Message,
    ModelDetail,
    ModelHistory,
    ModelList,
    PromptContext,
    Report,
    line_diff,
)
from .parsing import SubcommandParser, positive_float

if TYPE_CHECKING:
    from .._ui.doctor import DoctorReport
    from .magics import HindsightMagics


class HindsightMagicError(Exception):
    """An expected failure shown as one line (IPython calls ``_render_traceback_``).

    ``UsageError`` is for bad usage; this is for everything else a user can fix (a dead
    server, a refused key). ``%hindsight config debug=true`` shows the full traceback instead.
    """

    def _render_traceback_(self) -> list[str]:
        return [f"HindsightError: {self}"]


Handler = Callable[["HindsightMagics", str], Any]


class Subcommand(NamedTuple):
    """One row of the table."""

    summary: str
    handler: Handler


def cmd_help(magics: HindsightMagics, args: str) -> Report:
    """List the subcommands."""
    report = Report("%hindsight SUBCOMMAND — manage this notebook's memory session")
    report.add("", [(name, row.summary) for name, row in SUBCOMMANDS.items()])
    report.footer = "Magics: %retain, %recall, %%reflect (add ? for help, e.g. %retain?)."
    return report


def cmd_status(magics: HindsightMagics, args: str) -> Report:
    """Server, scope, queue and session."""
    return _functions.status(session=magics.session)


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
    from .parsing import SubcommandParser, argument_type

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
    return _functions.flush(timeout, session=magics.session)


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


MODELS_USAGE = (
    "Usage: %hindsight models [list | show ID | refresh [ID] | seed | delete ID | history ID "
    "| reload]"
)


REFRESH_SETTLE_S = 0.5
VERB_ARGS = {  # verb: what follows it ("<id>" required, "[<id>]" optional, "" nothing)
    "list": "",
    "show": "<id>",
    "refresh": "[<id>]",
    "seed": "",
    "delete": "<id>",
    "remove": "<id>",
    "history": "<id>",
    "reload": "",
}


class _VerbParser(argparse.ArgumentParser):
    """One verb's arguments; any mistake is a one-line ``UsageError`` (never ``SystemExit``)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"Usage: {self.usage}")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise UsageError(f"Usage: {self.usage}")


def _verb_parser(verb: str, shape: str) -> _VerbParser:
    usage = f"%hindsight models {verb}{' ' + shape if shape else ''}"
    parser = _VerbParser(prog=f"%hindsight models {verb}", usage=usage, add_help=False)
    if shape:
        parser.add_argument("id", nargs="?" if shape.startswith("[") else None)
    return parser


PARSERS = {verb: _verb_parser(verb, shape) for verb, shape in VERB_ARGS.items()}


def parse_models_args(args: str) -> tuple[str, str]:
    """``(verb, id)`` from the text after ``%hindsight models`` (``list``, ``""`` when absent)."""
    verb, *rest = args.split() or ["list"]
    parser = PARSERS.get(verb)
    if parser is None:  # the usage lists the valid verbs
        raise UsageError(MODELS_USAGE)
    parsed = parser.parse_args(["--", *rest] if rest else [])  # "--": ids may start with "-"
    return verb, getattr(parsed, "id", None) or ""


def _history(magics: HindsightMagics, bank: str, model_id: str) -> ModelHistory | Message:
    client = magics.session.client
    raw = client.get_mental_model(bank, model_id)
    if raw is None:
        return Message(f"Mental model not found: {model_id}")
    entries = client.mental_model_history(bank, model_id)
    if not entries:
        return Message(f"No history recorded for {model_id}.")
    newer = str(raw.get("content") or "")
    result = ModelHistory(model_id)
    for entry in entries:
        previous = str(entry.get("previous_content") or "")
        when = utc_minute_text(entry.get("changed_at"), " UTC") or "at an unknown time"
        result.entries.append((when, line_diff(previous, newer)))
        newer = previous
    return result


def _refresh(magics: HindsightMagics, bank: str, model_id: str | None) -> Message:
    session, client = magics.session, magics.session.client
    if model_id:
        try:
            client.refresh_mental_model(bank, model_id)
        except HindsightError as error:
            if error.kind == "http" and error.status_code == 404:
                return Message(f"Mental model not found: {model_id}")
            raise
        lines = [f"Refresh queued for mental model {model_id}."]
    else:
        models = [MentalModel.from_json(m) for m in client.list_mental_models(bank)]
        auto = [m for m in models if m.auto_refresh]
        curated = len(models) - len(auto)
        if not auto:
            return Message(
                f"No mental models opted into auto-refresh; {curated} curated model(s) left "
                "untouched. Pass an explicit id to refresh one of them."
            )
        failures = []
        for model in auto:
            try:
                client.refresh_mental_model(bank, model.id)
            except Exception as error:  # one failure must not stop the others
                failures.append(f"Refresh failed for {model.id}: {error}")
        done = len(auto) - len(failures)
        skipped = f"; skipped {curated} curated model(s)" if curated else ""
        lines = [
            f"Refresh queued for {done}/{len(auto)} auto-refresh model(s){skipped}.",
            *failures,
        ]
    time.sleep(REFRESH_SETTLE_S)
    session.mental_models.reload(clear=False)
    return Message("\n".join(lines))


def _seed(magics: HindsightMagics, bank: str) -> Message:
    session = magics.session
    seeds = resolve_seeds(session.scope)
    if not seeds:
        return Message(f"No built-in seeds apply to scoping={session.scope.mode}.")
    settings = session.settings
    ensure_bank(session.client, bank, settings.bank_mission, settings.retain_mission)
    outcome = ensure_seeds(session.client, bank, seeds)
    session.mental_models.reload(clear=False)
    created, present = len(outcome.created), len(outcome.present)
    lines = [f"Seeded {created} new mental model(s); {present} already present."]
    lines += [f"Seed failed for {seed_id}: {message}" for seed_id, message in outcome.failed]
    return Message("\n".join(lines))


def cmd_models(magics: HindsightMagics, args: str) -> object:
    """List, show, refresh, seed, delete or diff the bank's mental models."""
    session = magics.session
    if not session.settings.mental_models:
        return Message(
            "Mental models are disabled (mental_models = false); turn them on with "
            "%hindsight config mental_models=true."
        )
    verb, model_id = parse_models_args(args)
    bank = session.scope.bank_id
    client = session.client
    if verb == "list":
        models = [MentalModel.from_json(m) for m in client.list_mental_models(bank)]
        if not models:
            return Message(f"No mental models on bank {bank}.")
        return ModelList(bank, sorted(models, key=lambda m: m.id))
    if verb == "show":
        raw = client.get_mental_model(bank, model_id)
        if raw is None:
            return Message(f"Mental model not found: {model_id}")
        return ModelDetail(MentalModel.from_json(raw))
    if verb == "refresh":
        return _refresh(magics, bank, model_id or None)
    if verb == "seed":
        return _seed(magics, bank)
    if verb == "history":
        return _history(magics, bank, model_id)
    if verb == "reload":
        finished = session.mental_models.reload(clear=False).wait(session.client.timeouts.request)
        error = session.mental_models.state.error
        if not finished or error:
            return Message(f"Reload failed: {error or 'the load is still running'}")
        return Message("Mental-model cache reloaded.")
    if not client.delete_mental_model(bank, model_id):
        return Message(f"Mental model not found: {model_id}")
    session.mental_models.reload(clear=False)
    return Message(f"Deleted mental model {model_id} from bank {bank}.")


def cmd_context(magics: HindsightMagics, args: str) -> PromptContext:
    """The ``<mental_models>`` block and the last ``<memories>`` block, for an LLM prompt."""
    if args.strip():
        raise UsageError("Usage: prompt = %hindsight context")
    session = magics.session
    session.mental_models.wait_first_load()
    parts = [session.mental_models.block()]
    last_recall = session.reader.last_recall
    if last_recall is not None:
        parts.append(last_recall.as_context())
    return PromptContext("\n\n".join(part for part in parts if part))


COMMAND = "%hindsight server"


def parse_server_line(line: str) -> tuple[str, argparse.Namespace]:
    """``ACTION [options]`` → (action, options) by the actions table; bare means ``status``."""
    from .._localserver import actions

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
    from .._localserver import ServerError, actions

    action, options = parse_server_line(args)
    if action == "start":
        print("Starting the local Hindsight server (about 15 s the first time)…", file=sys.stderr)
        try:
            info, text = actions.start(
                port=options.port, data_dir=options.data_dir, wait_s=options.wait
            )
        except ServerError as error:
            if error.log_tail:
                print(error.log_tail, file=sys.stderr)
            raise HindsightMagicError(str(error)) from None
        magics.set_setting("api_url", info.url)
        return Message(f"{text}\nThis session now uses it.")
    if action == "stop":
        return Message(actions.stop(options.data_dir))
    if action == "status":
        return Message(actions.status(options.data_dir, COMMAND)[1])
    if action == "purge":
        found, plan = actions.purge_plan(options.data_dir)
        if found and not options.yes:
            return Message(
                f"{plan}\nNothing deleted yet: run `{COMMAND} purge --yes` to delete it."
            )
        return Message(actions.purge(options.data_dir) if found else plan)
    return Message(actions.logs(options.data_dir, lines=options.lines))


def cmd_panel(magics: HindsightMagics, args: str) -> Any:
    """``%hindsight panel``: the live panel, or a text snapshot where widgets cannot show."""
    if args.strip():
        raise UsageError("Usage: %hindsight panel")
    from .._ui.panel import show_panel

    return show_panel(magics.session.view(), magics.shell)


def cmd_doctor(magics: HindsightMagics, args: str) -> DoctorReport:
    """``%hindsight doctor``: the checks for this session's server, key, bank and journal."""
    if args.strip():
        raise UsageError("Usage: %hindsight doctor")
    session = magics.session
    settings = session.settings
    from .._ui.doctor import run_checks

    return run_checks(
        session.api_url,
        settings.key(),
        session.scope.bank_id,
        settings.journal_path,
        shell=magics.shell,
        command=NOTEBOOK_COMMAND,
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
        cmd_server,
    ),
    "models": Subcommand(
        "mental models: models [list | show ID | refresh [ID] | seed | delete ID | history ID "
        "| reload]",
        cmd_models,
    ),
    "context": Subcommand(
        "the <mental_models> + last <memories> block for a prompt: prompt = %hindsight context",
        cmd_context,
    ),
    "panel": Subcommand(
        "a live panel: queue, auto-retain, mental models, buttons (text without widgets)",
        cmd_panel,
    ),
    "doctor": Subcommand(
        "check packages, server, key, bank, journal and widgets; each ok or what to fix",
        cmd_doctor,
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
