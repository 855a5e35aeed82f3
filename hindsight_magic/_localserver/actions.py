"""The server actions, declared once, and what each says: ``hindsight-magic server …``,
``%hindsight server …`` and ``hindsight-magic demo``.

``ACTIONS`` lists each action with its help and options. ``add_cli_parser`` builds the command
line's argparse subcommands from it; ``%hindsight server`` declares its words from the same table
(each option's ``keywords``). Then one wording for the server's state: each function (``start``,
``stop``, ``status``, ``logs``, ``purge``) does the launcher call and returns what the user
reads; the caller prints it (command line) or shows it (notebook). ``command`` is how the user
runs server actions where they are: ``"hindsight-magic server"`` or ``"%hindsight server"``."""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._api.client import HindsightClient
from .._diagnosis import local_diagnosis
from .._enums import StrEnum
from .._errors import HindsightError
from .._machine import (
    LOCAL_PORT,
    NO_LLM_PROVIDERS,
    OPENAI,
    PROJECT_DATA_DIR,
    ServerInfo,
    api_process,
    local_server,
    project_folder,
    running_server,
    server_home,
    user_data_dir,
)
from .._settings import HindsightSettings
from .._text import one_line, plain_text, plural
from . import ServerError, launcher, llm, storage
from .postgres import PG_USER

DEFAULT_PORT = LOCAL_PORT  # here too, so that parsing never imports the launcher


class ServerAction(StrEnum):
    """What the command line's ``server`` and ``%hindsight server`` do (``ACTIONS`` has each
    one's help and options)."""

    START = "start"
    STOP = "stop"
    STATUS = "status"
    LOGS = "logs"
    PURGE = "purge"


DEFAULT_ACTION = ServerAction.STATUS  # what a bare `%hindsight server` does


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
    choices: tuple[str, ...] | None = None

    def keywords(self) -> dict[str, Any]:
        """The ``add_argument`` keywords of this option (the command line's parser and
        ``%hindsight server``'s are built from them)."""
        if self.type is bool:
            return {"action": "store_true", "help": self.help}
        keywords = {
            "type": self.type,
            "default": self.default,
            "metavar": self.metavar,
            "help": self.help,
        }
        return {**keywords, "choices": self.choices} if self.choices else keywords

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        """Add this option to ``parser``."""
        parser.add_argument(*self.flags, **self.keywords())


@dataclass(frozen=True)
class Action:
    """One server action: its name, one-line help and its own options."""

    name: ServerAction
    help: str
    options: tuple[Option, ...] = ()

    def usage(self) -> str:
        """``name [--opt M] …`` (own options only)."""
        words = [
            f"[{o.flags[-1]}]" if o.type is bool else f"[{o.flags[-1]} {o.metavar}]"
            for o in self.options
        ]
        return " ".join([self.name, *words])


DATA_DIR = Option(
    ("--data-dir",),
    Path,
    None,
    "D",
    f"data directory (default: the project's {PROJECT_DATA_DIR} when it has one, else the user's)",
)
ACTIONS: tuple[Action, ...] = (
    Action(
        ServerAction.START,
        "start (or reuse) the server",
        (
            Option(
                ("--port",), positive_int, None, "N", f"default: {DEFAULT_PORT}, else a free one"
            ),
            Option(("--wait",), float, 180.0, "S", "seconds to wait for health (default 180)"),
            Option(
                ("--project",),
                bool,
                False,
                "",
                f"the project's own data dir: {PROJECT_DATA_DIR} at its top, made if needed",
            ),
            Option(
                ("--llm",),
                str,
                None,
                "PROVIDER",
                f"run it with a real LLM: {', '.join(llm.NAMES)} (key from the provider's usual "
                "variable, e.g. OPENAI_API_KEY; ollama found on its default port)",
                llm.NAMES,
            ),
            Option(("--model",), str, None, "NAME", "the LLM's model (default: the provider's)"),
            Option(
                ("--base-url",),
                str,
                None,
                "URL",
                "an OpenAI-compatible endpoint (vLLM, llama.cpp, LM Studio) or the provider's",
            ),
        ),
    ),
    Action(ServerAction.STOP, "stop the server"),
    Action(ServerAction.STATUS, "is it running? where is its data?"),
    Action(
        ServerAction.LOGS,
        "show the end of the server log",
        (Option(("-n", "--lines"), positive_int, 40, "N", "how many lines (default 40)"),),
    ),
    Action(
        ServerAction.PURGE,
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


NO_LLM_NOTE = (
    "reflect and mental models show the memories themselves; for written answers: "
    f"hindsight-magic server start --llm {OPENAI} (or "
    + ", ".join(name for name in llm.NAMES if name != OPENAI)
    + ")"
)


def llm_name(info: ServerInfo) -> str:
    """``openai (gpt-4o-mini)``, or ``mock (no LLM)``."""
    if info.llm_provider in NO_LLM_PROVIDERS:
        return f"{info.llm_provider} (no LLM)"
    return llm.LlmChoice(info.llm_provider, info.llm_model).words()


def llm_words(info: ServerInfo) -> str:
    """``openai (gpt-4o-mini)``, or what running without an LLM means."""
    name = llm_name(info)
    return f"{name}: {NO_LLM_NOTE}" if info.llm_provider in NO_LLM_PROVIDERS else name


def describe(info: ServerInfo) -> str:
    """``URL (pid N, LLM: provider[, API key required])``."""
    auth = ", API key required" if info.auth else ""
    return f"{info.url} (pid {info.pid}, LLM: {llm_words(info)}{auth})"


def start(
    *,
    port: int | None = None,
    data_dir: Path | None = None,
    wait_s: float = 180,
    project: bool = False,
    llm_provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[ServerInfo, str]:
    """Start (or reuse) the server; return it and the lines saying which, and how long it took.
    ``project``: the server of the working folder's project, in its own data dir.
    ``llm_provider``, ``model``, ``base_url``: the LLM it runs (``_localserver/llm.py``; by
    default Hindsight's own settings in ``environ``); a server running with another is
    restarted with this one, on its port.

    Raises ``ServerError`` as ``launcher.start`` does, and for an LLM it cannot be given.
    """
    if project:
        if data_dir is not None:
            raise ServerError("give --project or --data-dir, not both")
        folder = project_folder()
        if folder is None:
            raise ServerError("the working folder cannot be read; cd into the project first")
        data_dir = folder / PROJECT_DATA_DIR
    environ = os.environ if environ is None else environ
    choice = llm.chosen(llm_provider, model, base_url, environ)
    extra: dict[str, str] = {}
    if choice is not None:
        choice, extra = llm.server_env(choice, environ)
    before = launcher.status(data_dir)
    restarted = ""
    if before is not None and choice is not None and not _runs(before, choice):
        restarted = llm_name(before)
        launcher.stop(data_dir)
        port = port or before.port  # the kernels that use it find it where it was
    t0 = time.monotonic()
    info = launcher.start(port=port, data_dir=data_dir, wait_s=wait_s, extra_env=extra)
    if before is not None and before.pid == info.pid:
        return info, f"Hindsight server already running at {describe(info)}"
    took = time.monotonic() - t0
    head = "Hindsight server running at"
    if restarted:
        head = f"Hindsight server restarted with another LLM (it ran with {restarted}) at"
    text = (
        f"{head} {describe(info)}\nStarted in {took:.1f} s; log: {info.log_path}\n{users(data_dir)}"
    )
    home = server_home(data_dir)
    if info.pg_data and not Path(info.pg_data).is_relative_to(home):
        text += (
            f"\nPostgreSQL's data is in {info.pg_data}: PostgreSQL runs as the "
            f"{PG_USER!r} user, which cannot reach {home} (see the README, 'Where data lives')."
        )
    return info, text


def _runs(info: ServerInfo, choice: llm.LlmChoice) -> bool:
    """Whether the running server already has the LLM ``choice`` names."""
    asked = (choice.provider, choice.model, launcher.without_credentials(choice.base_url))
    return (info.llm_provider, info.llm_model, info.llm_base_url) == asked


def data_lines(data_dir: Path | None, command: str) -> str:
    """Where this server's data lives and how big it is (every directory), or that there is none."""
    found = storage.locations(data_dir)
    if not found:
        return f"No server data in {server_home(data_dir)}."
    total = storage.human_size(sum(location.size for location in found))
    lines = [f"Data ({total}; `{command} purge` deletes it):"]
    return "\n".join([*lines, *(f"  {location}" for location in found)])


def _not_running(data_dir: Path | None, command: str) -> str:
    """No server recorded as running: none at all, or one whose state file is gone."""
    home = server_home(data_dir)
    orphan = api_process(home=home)
    if orphan is None:
        where = f"data dir {home.parent}"
        return f"No Hindsight server running ({where}); start one with `{command} start`."
    return (
        f"A Hindsight server (pid {orphan[0]}, port {orphan[1]}) from this data dir runs, but its "
        f"state file is gone; run `{command} stop` (with the same --data-dir), then "
        f"`{command} start`."
    )


def status(data_dir: Path | None, command: str) -> tuple[bool, str]:
    """Whether the server runs and answers, and the lines that say so (or what is wrong), and
    where its data lives."""
    info = running_server(data_dir)
    if info is None:
        return False, f"{_not_running(data_dir, command)}\n{data_lines(data_dir, command)}"
    if launcher.status(data_dir) is None:
        local = local_server(info.url)
        fault = local_diagnosis(local, command) if local is not None else None
        running, text = (
            False,
            (
                f"{fault.summary}."
                if fault is not None
                else f"Hindsight server pid {info.pid} is running but not answering at {info.url} "
                f"(still starting, or stuck: see `{command} logs`)."
            ),
        )
    else:
        running, text = (
            True,
            (
                f"Hindsight server running at {describe(info)}\n"
                f"Started {info.started_at}; log {info.log_path}"
            ),
        )
    return running, f"{text}\n{data_lines(data_dir, command)}"


def users(data_dir: Path | None) -> str:
    """Who uses the server of ``data_dir``: one project's notebooks (its own data dir), or
    every project on this machine that has none (the user's)."""
    where = server_home(data_dir).parent.resolve()
    if where.name == PROJECT_DATA_DIR:
        return (
            f"Notebooks in {where.parent} use it (the project's own data dir); other projects "
            "and clones have theirs."
        )
    if where == user_data_dir().resolve():
        return (
            f"Every notebook on this machine without a data dir of its own uses it (data dir "
            f"{where}): each project and clone, unless it has a {PROJECT_DATA_DIR} folder or "
            "sets HINDSIGHT_MAGIC_DATA_DIR."
        )
    return (
        f"Every notebook started with HINDSIGHT_MAGIC_DATA_DIR={where} uses it, whatever its "
        "project or clone."
    )


SHOWN_BANKS = 10  # banks named by name in purge's question; the rest counted


def banks_lines(data_dir: Path | None) -> list[str]:
    """The banks the running server of ``data_dir`` holds, with their memories, most first;
    when it is stopped (or does not answer), that every project that used it loses its own."""
    info = launcher.status(data_dir)
    if info is None:
        return [
            "The server is stopped, so its banks cannot be listed: every project that used this "
            "data dir loses its memories."
        ]
    client = HindsightClient(info.url, HindsightSettings.from_environment().key())
    try:
        banks = client.list_banks(limit=1000)
    except HindsightError as error:
        return [f"Its banks could not be listed ({one_line(str(error), 120)}): every project "
                "that used this data dir loses its memories."]  # fmt: skip
    finally:
        client.close()
    counted = sorted(
        ((bank.bank_id, bank.fact_count) for bank in banks),
        key=lambda bank: (-bank[1], bank[0]),
    )
    if not counted:
        return ["It holds no bank yet."]
    total = sum(memories for _, memories in counted)
    lines = [f"Its {plural(len(counted), 'bank', 'banks')}, {plural(total, 'memory', 'memories')}:"]
    lines += [f"  {plain_text(one_line(bank, 80))}: {plural(n, 'memory', 'memories')}"
              for bank, n in counted[:SHOWN_BANKS]]  # fmt: skip
    rest = counted[SHOWN_BANKS:]
    if rest:
        more = plural(sum(n for _, n in rest), "memory", "memories")
        lines.append(f"  and {plural(len(rest), 'more bank', 'more banks')} ({more})")
    return lines


def purge_plan(data_dir: Path | None) -> tuple[bool, str]:
    """Whether there is data to delete, and the lines saying what ``purge`` would delete: its
    folders, its banks and their memories, and who else loses them."""
    found = storage.locations(data_dir)
    if not found:
        return (
            False,
            f"No Hindsight server data in {server_home(data_dir)}; nothing to delete.",
        )
    total = storage.human_size(sum(location.size for location in found))
    head = f"This stops the local Hindsight server and deletes all its data ({total}, every bank):"
    return True, "\n".join(
        [head, *(f"  {location}" for location in found), *banks_lines(data_dir), users(data_dir)]
    )


def purge(data_dir: Path | None = None) -> str:
    """Stop the server and delete its data; say what was freed."""
    was_running = running_server(data_dir) is not None
    found = launcher.purge(data_dir)
    if not found:
        return "No Hindsight server data; nothing deleted."
    freed = storage.human_size(sum(location.size for location in found))
    stopped = "Stopped the Hindsight server and deleted" if was_running else "Deleted"
    folders = sum(not location.file for location in found)
    where = [plural(folders, "directory", "directories")] if folders else []
    where += [f"the {location.what}" for location in found if location.file]
    return f"{stopped} its data: {freed} in {' and '.join(where)}."


def stop(data_dir: Path | None = None) -> str:
    """Stop the server; say whether one was running."""
    if launcher.stop(data_dir):
        return "Hindsight server stopped."
    return "No Hindsight server was running."


def logs(data_dir: Path | None = None, lines: int = 40) -> str:
    """The end of the server log, or a note that there is none yet."""
    return launcher.log_tail(data_dir, lines=lines) or "(no server log yet)"
