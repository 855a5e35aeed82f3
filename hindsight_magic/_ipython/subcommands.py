"""The ``%hindsight`` subcommands: every handler, and one table of name → (summary, handler, words).

The table (``SUBCOMMANDS``, at the end) is the only list of subcommands: ``%hindsight help``, the
``%hindsight?`` docstring and the "unknown subcommand" message are all made from it, and each row
declares the words its subcommand takes (``parsing.Words`` or ``parsing.Verbs``), so that every
mistake is one ``UsageError`` line ending in the usage. A handler gets a ``HandlerContext`` and
the parsed words; it asks the session's parts for data and picks the display object
(``_ui.display``). Handlers that need heavier modules (the panel's widgets, the local server)
import them when first run. Expected server trouble is a ``HindsightError`` in the user's words
(``_diagnosis.in_words``): one line, with a hint."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from IPython.core.error import UsageError

from .. import _functions, _operations
from .._diagnosis import NOTEBOOK_COMMAND, in_words
from .._enums import StrEnum
from .._errors import HindsightError, InputError
from .._memory.scope import project_label
from .._settings import FALLBACK_API_URL, KEY_IN_ENVIRONMENT, SCOPE_MODES, unknown_setting_message
from .._text import plain_text, plural, utc_minute_text
from .._ui.display import (
    Message,
    ModelDetail,
    ModelHistory,
    ModelList,
    PromptContext,
    Report,
    line_diff,
)
from .parsing import (
    Argument,
    Declaration,
    Verbs,
    Words,
    arg,
    choice,
    option,
    positive_float,
    positive_int,
    setting_assignment,
)

if TYPE_CHECKING:
    from .._memory.curation import Outcome
    from .._session import HindsightSession
    from .._settings import HindsightSettings
    from .._ui.doctor import DoctorReport


@dataclass(frozen=True)
class HandlerContext:
    """What a handler works with: the kernel's ``session``, the ``settings`` it follows (the
    magics' traits: ``set_setting``, ``source``, ``shown``, ``public_items`` …) and the IPython
    ``shell`` (None outside one). The magics make one for each ``%hindsight`` line."""

    session: HindsightSession
    settings: HindsightSettings
    shell: Any = None


Handler = Callable[[HandlerContext, argparse.Namespace], Any]


class Subcommand(NamedTuple):
    """One row of the table. ``summary``: what it does, in words (never its syntax: ``line``
    adds that, made from the words). ``words``: what the subcommand takes after its name, or
    a function that declares it when first used (the local server's actions must not be
    imported by ``%load_ext``); None: nothing (any words are ignored)."""

    summary: str
    handler: Handler
    words: Declaration | Callable[[], Declaration] | None = None

    def parse(self, name: str, text: str) -> argparse.Namespace:
        """The words in ``text`` (after ``%hindsight name``), as the row declares them."""
        words = self.words() if callable(self.words) else self.words
        return argparse.Namespace() if words is None else words.parse(name, text)

    def syntax(self, name: str, declare: bool = True) -> str:
        """``forget #N|ID [--reason R]``: the name and the words it takes, from their
        declaration. ``declare=False`` leaves words declared when first used undeclared
        (``server ACTION``), for what ``%load_ext`` builds."""
        words = self.words
        if callable(words):
            if not declare:
                return f"{name} ACTION"
            words = words()
        if words is None:
            return name
        return words.usage_line(name).removeprefix("%hindsight ")

    def line(self, name: str, declare: bool = True) -> str:
        """The summary, then the syntax when the subcommand takes words:
        ``leave a memory out of recall, reversibly: forget #N|ID [--reason R]``."""
        syntax = self.syntax(name, declare)
        return self.summary if syntax == name else f"{self.summary}: {syntax}"


def cmd_help(ctx: HandlerContext, args: argparse.Namespace) -> Report:
    """List the subcommands."""
    report = Report("%hindsight SUBCOMMAND — manage this notebook's memory session")
    report.add("", [(name, row.line(name)) for name, row in SUBCOMMANDS.items()])
    report.footer = "Magics: %retain, %recall, %%reflect (add ? for help, e.g. %retain?)."
    return report


def cmd_status(ctx: HandlerContext, args: argparse.Namespace) -> Report:
    """Server, scope, queue and session."""
    return _functions.status(session=ctx.session)


def effective(ctx: HandlerContext, name: str) -> tuple[str, str]:
    """(value in force, where it came from) of setting ``name``; the key only as set/not set.

    An unset ``api_url`` shows the URL the session uses: a running local server's, or the
    default; an unset ``journal_path`` the file the session's queue keeps its memories in.
    """
    settings = ctx.settings
    if name == "api_key":
        return ("(set)" if settings.api_key else "(not set)"), settings.source(name)
    shown, source = settings.shown(name), settings.source(name)
    if name == "api_url" and not settings.api_url:
        shown = ctx.session.api_url
        source = "default" if shown == FALLBACK_API_URL else "local server"
    if name == "journal_path" and not settings.journal_path.strip():
        shown = ctx.session.queue_stats().journal or "off (memory only)"
    return shown, source


def cmd_config(ctx: HandlerContext, args: argparse.Namespace) -> Any:
    """Show all settings, one, or set ``NAME=VALUE`` (``NAME=`` resets to env/default)."""
    settings = ctx.settings
    if args.setting is None:
        report = Report("Settings: value in force [where it came from]")
        rows = []
        for name, _ in settings.public_items():
            shown, source = effective(ctx, name)
            rows.append((name, f"{shown}   [{source}]"))
        report.add("", rows)
        report.footer = "Change: %hindsight config NAME=VALUE   Reset: %hindsight config NAME="
        return report
    name, value = args.setting
    if name == "api_key":  # a UsageError even with debug on: a traceback would show the key
        raise UsageError(KEY_IN_ENVIRONMENT)
    if name not in settings.setting_names():
        raise UsageError(unknown_setting_message(name))
    if value is not None:
        settings.set_setting(name, value or None)
    shown, source = effective(ctx, name)
    return Message(f"{name} = {shown}   [{source}]")


def cmd_scope(ctx: HandlerContext, args: argparse.Namespace) -> Message:
    """Show or change the scoping mode (re-reads the project from the working directory)."""
    session = ctx.session
    if not args.mode and args.project is None:
        return Message(f"Scope: {session.scope.describe()}; project {session.scope.label!r}.")
    mode = " ".join(args.mode)
    if len(args.mode) > 1 or (mode and mode not in SCOPE_MODES):
        raise UsageError(f"Invalid scope {mode!r}: use {', '.join(SCOPE_MODES)}.")
    if mode:
        ctx.settings.set_setting("scoping", mode)
    session.set_project((args.project or "").strip().lower() or project_label(os.getcwd()))
    return Message(f"Scope: {session.scope.describe()}.")


def cmd_bank(ctx: HandlerContext, args: argparse.Namespace) -> Message:
    """Show or change the base bank id (and prefix)."""
    if len(args.name) > 1:
        raise UsageError("A bank id is one word, e.g. %hindsight bank analytics")
    if args.prefix is not None:
        ctx.settings.set_setting("bank_prefix", args.prefix)  # "" clears it
    if args.name:
        ctx.settings.set_setting("bank_id", args.name[0])
    scope = ctx.session.scope
    said = f"Scope: {scope.describe()}."
    close = ctx.session.new_bank() if args.name or args.prefix is not None else None
    if close is not None:  # a typo must not pass for an empty bank
        said += (
            f" Bank {scope.bank_id} is new: the server has no bank of that name, so it is"
            " empty until the first retain creates it."
        )
        if close:
            said += f" Existing banks with a close name: {plain_text(', '.join(close))}."
    return Message(said)


def cmd_flush(ctx: HandlerContext, args: argparse.Namespace) -> Any:
    """Send everything queued now and report what happened."""
    return _functions.flush(args.timeout, session=ctx.session)


def cmd_retry(ctx: HandlerContext, args: argparse.Namespace) -> Message:
    """Re-send the memories the server refused (``--drop`` discards them instead)."""
    session = ctx.session
    if args.drop:
        dropped = session.drop_failed()
        return Message(f"Dropped {plural(dropped, 'failed memory', 'failed memories')}.")
    count = session.retry_failed()
    if not count:
        return Message("Nothing to retry: no failed memories.")
    session.flush()
    return Message(f"Re-sent {plural(count, 'memory', 'memories')}. See %hindsight status.")


def cmd_clear(ctx: HandlerContext, args: argparse.Namespace) -> Message:
    """Forget local caches; memory on the server is untouched."""
    ctx.session.clear_local()
    return Message(
        "Hindsight memory is server-side; only the local recall cache was cleared. "
        "Delete the Hindsight bank on the server to wipe upstream state."
    )


class AutoretainVerb(StrEnum):
    """``%hindsight autoretain VERB``."""

    ON = "on"
    OFF = "off"
    EVERY = "every"
    NOW = "now"
    STATUS = "status"


def cmd_autoretain(ctx: HandlerContext, args: argparse.Namespace) -> Message:
    """Turn auto-retain on/off, set its interval, retain now, or show its counters."""
    session = ctx.session
    if args.verb in (AutoretainVerb.ON, AutoretainVerb.OFF):
        ctx.settings.set_setting("auto_retain", args.verb == AutoretainVerb.ON)
    elif args.verb == AutoretainVerb.EVERY:
        ctx.settings.set_setting("retain_every_n_cells", args.n)
    elif args.verb == AutoretainVerb.NOW:
        session.retain_cells_now()
        session.flush()
    auto = session.autoretain_status()
    state = "on" if auto.enabled else "off"
    return Message(
        f"Auto-retain {state}: {auto.mode}, every {auto.every} cells; "
        f"{plural(auto.counted, 'cell', 'cells')} counted, next retain in {auto.until_next}, "
        f"{plural(auto.retained, 'cell', 'cells')} retained."
    )


class ModelVerb(StrEnum):
    """``%hindsight models VERB``."""

    LIST = "list"
    SHOW = "show"
    REFRESH = "refresh"
    SEED = "seed"
    DELETE = "delete"
    REMOVE = "remove"
    HISTORY = "history"
    RELOAD = "reload"


def cmd_models(ctx: HandlerContext, args: argparse.Namespace) -> object:
    """List, show, refresh, seed, delete or diff the bank's mental session."""
    session, scope = ctx.session, ctx.session.scope
    if not session.models_enabled:
        return Message(
            "Mental models are disabled (mental_models = false); turn them on with "
            "%hindsight config mental_models=true."
        )
    verb, model_id, bank = args.verb, getattr(args, "id", None) or "", scope.bank_id
    missing = Message(f"Mental model not found: {model_id}")
    if verb == ModelVerb.LIST:
        listed = session.list_models()
        return ModelList(bank, listed) if listed else Message(f"No mental models on bank {bank}.")
    if verb == ModelVerb.SHOW:
        model = session.model(model_id)
        return missing if model is None else ModelDetail(model)
    if verb == ModelVerb.REFRESH:
        return _refreshed(session, model_id) if model_id else _refreshed_auto(session)
    if verb == ModelVerb.SEED:
        seeded = session.seed_models()
        if seeded is None:
            return Message(f"No built-in seeds apply to scoping={scope.mode}.")
        created, present = len(seeded.created), len(seeded.present)
        lines = [f"Seeded {created} new mental model(s); {present} already present."]
        lines += [f"Seed failed for {seed_id}: {message}" for seed_id, message in seeded.failed]
        return Message("\n".join(lines))
    if verb == ModelVerb.HISTORY:
        return _history(session, model_id)
    if verb == ModelVerb.RELOAD:
        problem = session.reload_models()
        return Message(f"Reload failed: {problem}" if problem else "Mental-model cache reloaded.")
    if not session.delete_model(model_id):  # delete, remove
        return missing
    return Message(f"Deleted mental model {model_id} from bank {bank}.")


def _refreshed(session: HindsightSession, model_id: str) -> Message:
    if session.refresh_model(model_id) is None:
        return Message(f"Mental model not found: {model_id}")
    return Message(f"Refresh queued for mental model {model_id}.")


def _refreshed_auto(session: HindsightSession) -> Message:
    outcome = session.refresh_auto_models()
    queued, curated = len(outcome.queued), outcome.curated
    if not queued and not outcome.failed:
        return Message(
            f"No mental models opted into auto-refresh; {curated} curated model(s) left "
            "untouched. Pass an explicit id to refresh one of them."
        )
    skipped = f"; skipped {curated} curated model(s)" if curated else ""
    total = queued + len(outcome.failed)
    lines = [f"Refresh queued for {queued}/{total} auto-refresh model(s){skipped}."]
    lines += [f"Refresh failed for {model_id}: {problem}" for model_id, problem in outcome.failed]
    return Message("\n".join(lines))


def _history(session: HindsightSession, model_id: str) -> ModelHistory | Message:
    changes = session.model_history(model_id)
    if changes is None:
        return Message(f"Mental model not found: {model_id}")
    if not changes:
        return Message(f"No history recorded for {model_id}.")
    result = ModelHistory(model_id)
    for change in changes:
        when = utc_minute_text(change.changed_at, " UTC") or "at an unknown time"
        result.entries.append((when, line_diff(change.before, change.after)))
    return result


def cmd_context(ctx: HandlerContext, args: argparse.Namespace) -> PromptContext:
    """The ``<mental_models>`` block and the last ``<memories>`` block, for an LLM prompt."""
    return PromptContext(_functions.context(session=ctx.session))


COMMAND = "%hindsight server"


@functools.cache
def server_words() -> Verbs:
    """``%hindsight server ACTION [options]``, from the local server's table of actions (the
    one the command line uses too), imported when first used."""
    from .._localserver import actions

    data_dir = actions.DATA_DIR
    verbs: dict[str, Words] = {}
    for action in actions.ACTIONS:
        arguments = [Argument(o.flags, o.keywords()) for o in (*action.options, data_dir)]
        usage = f"{COMMAND} {action.usage()} [{data_dir.flags[0]} {data_dir.metavar}]"
        verbs[action.name] = Words(*arguments, usage=usage)  # the actions' usage, made there
    return Verbs(verbs, default=actions.DEFAULT_ACTION, usage=actions.usage(COMMAND))


def cmd_server(ctx: HandlerContext, args: argparse.Namespace) -> Any:
    """Start, stop or inspect the local Hindsight server on this machine."""
    from .._localserver import ServerError, actions

    action, options, verb = args.verb, args, actions.ServerAction
    if action == verb.START:
        print("Starting the local Hindsight server (about 15 s the first time)…", file=sys.stderr)
        try:
            info, text = actions.start(
                port=options.port,
                data_dir=options.data_dir,
                wait_s=options.wait,
                project=options.project,
                llm_provider=options.llm,
                model=options.model,
                base_url=options.base_url,
            )
        except ServerError as error:
            if error.log_tail:
                print(error.log_tail, file=sys.stderr)
            failed = HindsightError("server start", str(error), kind="connect")
            raise in_words(failed, str(error)) from None
        ctx.settings.set_setting("api_url", info.url)
        return Message(f"{text}\nThis session now uses it.")
    if action == verb.STOP:
        return Message(actions.stop(options.data_dir))
    if action == verb.STATUS:
        return Message(actions.status(options.data_dir, COMMAND)[1])
    if action == verb.PURGE:
        found, plan = actions.purge_plan(options.data_dir)
        if found and not options.yes:
            return Message(
                f"{plan}\nNothing deleted yet: run `{COMMAND} purge --yes` to delete it."
            )
        return Message(actions.purge(options.data_dir) if found else plan)
    return Message(actions.logs(options.data_dir, lines=options.lines))


def cmd_panel(ctx: HandlerContext, args: argparse.Namespace) -> Any:
    """``%hindsight panel``: the live panel, or a text snapshot where widgets cannot show."""
    from .._ui.panel import show_panel

    return show_panel(ctx.session, ctx.shell)


def cmd_doctor(ctx: HandlerContext, args: argparse.Namespace) -> DoctorReport:
    """``%hindsight doctor``: the checks for this session's server, key, bank and journal."""
    session = ctx.session
    settings = session.settings
    from .._ui.doctor import run_checks

    return run_checks(
        session.api_url,
        settings.key(),
        session.scope.bank_id,
        settings.journal_path,
        extraction=settings.retain_extraction,
        shell=ctx.shell,
        command=NOTEBOOK_COMMAND,
    )


MODEL_ID = arg("id", metavar="ID")
OPTIONAL_MODEL_ID = arg("id", nargs="?", metavar="ID")


def cmd_forget(ctx: HandlerContext, args: argparse.Namespace) -> Outcome:
    """Leave a memory out of recall and reflect (reversible); a queued one is cancelled."""
    reason = " ".join(args.reason or ())  # ``--reason the Q3 fix landed``: no quotes needed
    return _functions.forget(args.memory, reason=reason, session=ctx.session)


def cmd_correct(ctx: HandlerContext, args: argparse.Namespace) -> Outcome:
    """``correct #3 NEW TEXT``: the text after the memory, kept as typed (not shell-split)."""
    words = (args.words or "").split(maxsplit=1)  # any white space ends the memory's name
    if not words:
        raise InputError("Name the memory to correct, then the new text.")
    return _functions.correct(words[0], words[1] if len(words) > 1 else "", session=ctx.session)


def cmd_history(ctx: HandlerContext, args: argparse.Namespace) -> Outcome:
    """What a memory said and when it changed."""
    return _functions.history(args.memory, session=ctx.session)


def cmd_forgotten(ctx: HandlerContext, args: argparse.Namespace) -> Outcome:
    """The forgotten memories of this scope, newest first."""
    return _functions.forgotten(session=ctx.session)


def cmd_verify(ctx: HandlerContext, args: argparse.Namespace) -> Outcome:
    """The memories whose data files changed since their cell read them."""
    return _functions.verify(session=ctx.session)


def cmd_delete(ctx: HandlerContext, args: argparse.Namespace) -> Outcome:
    """Delete a document and its memories for good (``--yes``); otherwise list them."""
    return _functions.delete(args.document, yes=args.yes, session=ctx.session)


def cmd_purge_matching(ctx: HandlerContext, args: argparse.Namespace) -> Outcome:
    """Every memory containing TEXT and its document: listed, deleted with ``--yes``."""
    return _functions.purge_matching(" ".join(args.text), yes=args.yes, session=ctx.session)


def cmd_dedupe(ctx: HandlerContext, args: argparse.Namespace) -> Outcome:
    """Copies of one memory and cells' older versions still valid: listed, tidied with
    ``--yes``."""
    return _functions.dedupe(yes=args.yes, session=ctx.session)


def cmd_timeline(ctx: HandlerContext, args: argparse.Namespace) -> Any:
    """Memories per day, week or month, by fact type and notebook: a figure (a table in a
    terminal)."""
    return _functions.timeline(args.by, since=args.since, until=args.until, session=ctx.session)


def cmd_map(ctx: HandlerContext, args: argparse.Namespace) -> Any:
    """The entities and how often they occur together; with ENTITY, its neighbourhood and the
    memories that mention it."""
    entity = " ".join(args.entity) or None  # ``map Berkeley Lab``: no quotes needed
    return _functions.memory_map(entity, top=args.top, session=ctx.session)


class LayerVerb(StrEnum):
    """``%hindsight layer VERB``."""

    LIST = "list"
    ADD = "add"
    REMOVE = "remove"


def cmd_layer(ctx: HandlerContext, args: argparse.Namespace) -> Any:
    """List, add or remove the banks this session reads beside its own (a course's, a team's):
    recall and reflect read them all, each memory labelled with its layer; nothing writes to
    them."""
    if args.verb == LayerVerb.ADD:
        return _functions.add_layer(args.bank, name=args.as_name, session=ctx.session)
    if args.verb == LayerVerb.REMOVE:
        return _functions.remove_layer(args.name, session=ctx.session)
    return _functions.layers(session=ctx.session)


def transfer_row(transfer: _functions.Transfer) -> Subcommand:
    """The row of a transfer (restore, snapshot, clone): its declaration's summary and words
    (those the command line alone takes left out) and the call the command line shares
    (``_functions.TRANSFERS``)."""
    params = transfer.operation.params
    words = Words(*(option(param) for param in params if param.front != "cli"))
    operation = transfer.operation
    return Subcommand(operation.summary, lambda ctx, args: transfer.run(args, ctx.session), words)


MEMORY_REF = arg("memory", metavar="#N|ID")
TIMELINE_PERIODS = ("day", "week", "month")  # _memory.overview.PERIODS, not imported at load
YES = arg("--yes", action="store_true")

SUBCOMMANDS: dict[str, Subcommand] = {
    "help": Subcommand("this list", cmd_help),
    "status": Subcommand("server, bank, tags, queue, auto-retain, mental models", cmd_status),
    "config": Subcommand(
        "settings in force and where each came from, or set one (NAME= resets it)",
        cmd_config,
        Words(
            arg("setting", nargs="?", type=setting_assignment, metavar="NAME[=VALUE]"),
            verbatim=True,
        ),
    ),
    "scope": Subcommand(
        "show or change scoping",
        cmd_scope,
        Words(
            arg("mode", nargs="*", metavar="|".join(SCOPE_MODES)),
            arg("--project", metavar="LABEL"),
        ),
    ),
    "bank": Subcommand(
        "show or change the base bank",
        cmd_bank,
        Words(arg("name", nargs="*"), arg("--prefix", metavar="P")),
    ),
    "flush": Subcommand(
        "send queued memories now and wait (bounded)",
        cmd_flush,
        Words(arg("--timeout", type=positive_float, metavar="S")),
    ),
    "retry": Subcommand(
        "re-send memories the server refused earlier, or discard them",
        cmd_retry,
        Words(arg("--drop", action="store_true")),
    ),
    "clear": Subcommand(
        "forget the local recall cache and notices (server memory stays)", cmd_clear
    ),
    "autoretain": Subcommand(
        "retain recent cells automatically",
        cmd_autoretain,
        Verbs(
            {
                AutoretainVerb.ON: Words(),
                AutoretainVerb.OFF: Words(),
                AutoretainVerb.EVERY: Words(arg("n", metavar="N")),
                AutoretainVerb.NOW: Words(),
                AutoretainVerb.STATUS: Words(),
            },
            default=AutoretainVerb.STATUS,
        ),
    ),
    "server": Subcommand(
        "the local Hindsight server on this machine",
        cmd_server,
        server_words,
    ),
    "models": Subcommand(
        "mental models",
        cmd_models,
        Verbs(
            {
                ModelVerb.LIST: Words(),
                ModelVerb.SHOW: Words(MODEL_ID),
                ModelVerb.REFRESH: Words(OPTIONAL_MODEL_ID),
                ModelVerb.SEED: Words(),
                ModelVerb.DELETE: Words(MODEL_ID),
                ModelVerb.REMOVE: Words(MODEL_ID),
                ModelVerb.HISTORY: Words(MODEL_ID),
                ModelVerb.RELOAD: Words(),
            },
            default=ModelVerb.LIST,
            hidden=(ModelVerb.REMOVE,),  # delete's other name
        ),
    ),
    "layer": Subcommand(
        "banks read beside your own",
        cmd_layer,
        Verbs(
            {
                LayerVerb.LIST: Words(),
                LayerVerb.ADD: Words(
                    arg("bank", metavar="BANK|PATH.zip"),
                    arg("--as", dest="as_name", metavar="NAME"),
                ),
                LayerVerb.REMOVE: Words(arg("name", metavar="NAME")),
            },
            default=LayerVerb.LIST,
        ),
    ),
    "forget": Subcommand(
        "leave a memory out of recall, reversibly",
        cmd_forget,
        Words(
            MEMORY_REF,
            arg("--reason", nargs="+", metavar="R"),
        ),
    ),
    **{name: transfer_row(transfer) for name, transfer in _functions.TRANSFERS.items()},
    "correct": Subcommand(
        "make a memory say something else",
        cmd_correct,
        Words(arg("words", metavar="#N|ID NEW TEXT"), verbatim=True),
    ),
    "history": Subcommand(
        "what a memory said and when it changed",
        cmd_history,
        Words(MEMORY_REF),
    ),
    "forgotten": Subcommand(
        "the forgotten memories of this scope, with reasons",
        cmd_forgotten,
        Words(),
    ),
    "verify": Subcommand(
        "the memories whose data files changed since their cell read them, by file",
        cmd_verify,
        Words(),
    ),
    "delete": Subcommand(
        "delete a document and its memories for good",
        cmd_delete,
        Words(
            arg("document", metavar="DOCUMENT_ID|#N"),
            YES,
        ),
    ),
    "purge-matching": Subcommand(
        "delete every memory containing TEXT (a leaked key)",
        cmd_purge_matching,
        Words(arg("text", nargs="+"), YES),
    ),
    "dedupe": Subcommand(
        "tidy copies (re-runs kept before versions were, a text retained twice) and cells' "
        "older versions still valid",
        cmd_dedupe,
        Words(YES),
    ),
    "timeline": Subcommand(
        "memories per day, week or month, by type and notebook, as a figure",
        cmd_timeline,
        Words(
            arg("--by", type=choice(*TIMELINE_PERIODS), metavar="|".join(TIMELINE_PERIODS)),
            option(_operations.SINCE),
            option(_operations.UNTIL),
        ),
    ),
    "map": Subcommand(
        "the entities and how often they occur together, as a graph",
        cmd_map,
        Words(
            arg("entity", nargs="*", metavar="ENTITY"),
            arg("--top", type=positive_int, default=20, metavar="N"),
        ),
    ),
    "context": Subcommand(
        "the <mental_models> + last <memories> block as one string, for your own LLM prompt",
        cmd_context,
        Words(),
    ),
    "panel": Subcommand(
        "a live panel: queue, auto-retain, mental models, buttons (text without widgets)",
        cmd_panel,
        Words(),
    ),
    "doctor": Subcommand(
        "check packages, server, key, bank, journal and widgets; each ok or what to fix",
        cmd_doctor,
        Words(),
    ),
}


def help_text(indent: str = "        ") -> str:
    """The subcommand list as reStructuredText bullets (for the ``%hindsight?`` docstring)."""
    return "\n".join(
        f"{indent}- ``{name}`` — {row.line(name, declare=False)};"
        for name, row in SUBCOMMANDS.items()
    )


def run_subcommand(ctx: HandlerContext, line: str) -> Any:
    """Route ``%hindsight NAME WORDS`` to its handler with the words parsed; unknown names list
    the valid ones."""
    name, *rest = line.split(maxsplit=1) or ["status"]
    row = SUBCOMMANDS.get(name)
    if row is None:
        raise UsageError(
            f"Unknown subcommand {name!r}. Valid subcommands: {', '.join(SUBCOMMANDS)}."
        )
    return row.handler(ctx, row.parse(name, rest[0] if rest else ""))
