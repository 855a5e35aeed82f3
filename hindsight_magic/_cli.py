"""The ``hindsight-magic`` command line: ``hindsight-magic server start|stop|status|logs|purge``,
``snapshot``, ``restore``, ``clone``, ``demo`` and ``doctor``.

Each top-level subcommand is registered in ``SUBCOMMANDS``: a function that adds its parser
to the subparsers and sets ``handler`` (``args -> exit code``) as a default. Others (``demo``,
``doctor``) plug in there. The server actions, their options and their wording come from
``_localserver.actions`` (shared with ``%hindsight server``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from ._localserver import ServerError, actions, demo
from ._ui import doctor
from ._version import __version__

Handler = Callable[[argparse.Namespace], int]
# argparse has no public name for the type of add_subparsers()'s result
Registrar = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]  # noqa: SLF001
COMMAND = "hindsight-magic server"


def _server_start(args: argparse.Namespace) -> int:
    _, text = actions.start(
        port=args.port,
        data_dir=args.data_dir,
        wait_s=args.wait,
        project=args.project,
        llm_provider=args.llm,
        model=args.model,
        base_url=args.base_url,
    )
    print(text)
    return 0


def _server_stop(args: argparse.Namespace) -> int:
    print(actions.stop(args.data_dir))
    return 0


def _server_status(args: argparse.Namespace) -> int:
    running, text = actions.status(args.data_dir, COMMAND)
    print(text)
    return 0 if running else 1


def _server_logs(args: argparse.Namespace) -> int:
    print(actions.logs(args.data_dir, lines=args.lines))
    return 0


def _server_purge(args: argparse.Namespace) -> int:
    found, text = actions.purge_plan(args.data_dir)
    print(text)
    if not found:
        return 0
    if not args.yes:
        if not sys.stdin.isatty():
            print("hindsight-magic: nothing deleted; add --yes to delete it", file=sys.stderr)
            return 1
        if input("Delete it? [y/N] ").strip().lower() not in ("y", "yes"):
            print("Nothing deleted.")
            return 1
    print(actions.purge(args.data_dir))
    return 0


SERVER_HANDLERS: dict[str, Handler] = {
    "start": _server_start,
    "stop": _server_stop,
    "status": _server_status,
    "logs": _server_logs,
    "purge": _server_purge,
}


def _add_server(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    actions.add_cli_parser(subparsers, SERVER_HANDLERS)


# Top-level subcommands: name -> function adding its parser (and a `handler` default).
def _doctor(args: argparse.Namespace) -> int:
    """``hindsight-magic doctor``: settings from the environment, as a kernel would see them."""
    from ._machine import resolve_api_url
    from ._memory.scope import compute_scope, project_label
    from ._settings import HindsightSettings, SettingsError

    problems: list[doctor.Check] = []
    try:
        HindsightSettings.check_environment()
    except SettingsError as error:
        problems.append(doctor.fix("settings", str(error), "correct or unset that variable"))
    settings = HindsightSettings.from_environment()
    url = args.url or resolve_api_url(settings)
    scope = compute_scope(
        settings.scoping, settings.bank_id, settings.bank_prefix, project_label(os.getcwd())
    )
    report = doctor.run_checks(
        url,
        settings.key(),
        args.bank or scope.bank_id,
        settings.journal_path,
        extraction=settings.retain_extraction,
    )
    report.checks[0:0] = problems
    print(report)
    return 0 if report.ok else 1


def _add_doctor(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``hindsight-magic doctor``: the checks, as a kernel started here would see things."""
    parser = subparsers.add_parser(
        "doctor", help="check Python, packages, server, key, bank, journal and widgets"
    )
    parser.add_argument("--url", default=None, help="server to check (default: as a kernel would)")
    parser.add_argument("--bank", default=None, help="bank to check (default: this folder's)")
    parser.set_defaults(handler=_doctor)


def _mcp(args: argparse.Namespace) -> int:
    """``hindsight-magic mcp``: serve the project's memory to AI agents, or print a client's
    snippet for it."""
    from ._agents import wiring

    project = os.path.abspath(args.project or os.getcwd())
    if not os.path.isdir(project):
        print(f"hindsight-magic: error: no such project folder: {project}", file=sys.stderr)
        return 1
    token = made = None
    if args.transport == wiring.Transport.HTTP:
        token, made = _mcp_token()
    url = f"http://{args.host}:{args.port}/mcp"
    http = (url, token) if token else None
    if args.print_config:
        print(wiring.config_text(args.print_config, project, http))
        print(f"(put it in {wiring.WHERE[args.print_config]})", file=sys.stderr)
        return 0
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        print(
            "hindsight-magic: error: the MCP SDK is not installed: "
            "pip install 'hindsight-magic[mcp]'",
            file=sys.stderr,
        )
        return 1
    from ._agents.server import serve

    if token:
        said = f"Bearer {token}" if made else "Bearer … (as before: --print-config CLIENT shows it)"
        print(
            f"Serving the memory of {project} to AI agents at {url}\n"
            f"Every request must carry the header  Authorization: {said}\n"
            f"A client's snippet: hindsight-magic mcp --transport http --port {args.port} "
            "--print-config claude|vscode|jupyter-ai\n"
            "Stop it with Ctrl-C.",
            file=sys.stderr,
            flush=True,
        )
    serve(project, args.transport, args.host, args.port, token)
    return 0


def _mcp_token() -> tuple[str, bool]:
    """The bearer token of ``mcp --transport http`` (made once, kept in the data dir, readable
    by the user alone), and whether it was made now."""
    import secrets

    from ._machine import mcp_token_path

    path = mcp_token_path()
    try:
        return path.read_text(encoding="utf-8").strip(), False
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(token + "\n")
    return token, True


def _add_mcp(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``hindsight-magic mcp``: the MCP server of a project's memory, for AI agents."""
    from ._agents.wiring import CLIENTS, TRANSPORTS

    parser = subparsers.add_parser(
        "mcp", help="serve the project's memory to AI agents (MCP); --print-config for a client"
    )
    parser.add_argument(
        "--project", default=None, help="the project folder (default: the working folder)"
    )
    parser.add_argument("--transport", choices=TRANSPORTS, default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="http: the address to listen on")
    parser.add_argument("--port", type=int, default=8765, help="http: the port (default 8765)")
    parser.add_argument(
        "--print-config", choices=CLIENTS, default=None, help="print the client's snippet"
    )
    parser.set_defaults(handler=_mcp)


def _transfer(args: argparse.Namespace) -> int:
    """``hindsight-magic snapshot|restore|clone``: the same as ``%hindsight …``, for the bank a
    kernel started in this folder would use (its settings from the environment)."""
    from . import _functions
    from ._errors import HindsightError, InputError

    try:
        outcome = _functions.TRANSFERS[args.command].run(args, None)
    except InputError as error:
        print(f"hindsight-magic: {error}", file=sys.stderr)
        return 1
    except HindsightError as error:
        session = _functions.current_session()
        print(f"hindsight-magic: {session.explain(error)}", file=sys.stderr)
        return 1
    print(outcome)
    return 0 if outcome.done else 1


def _add_transfers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``snapshot``, ``restore`` and ``clone`` of this folder's bank, from the table
    ``%hindsight`` uses too."""
    from ._functions import TRANSFERS

    for name in ("snapshot", "restore", "clone"):
        operation = TRANSFERS[name].operation
        summary = operation.command_line_summary.replace("%", "%%")  # argparse formats help
        parser = subparsers.add_parser(name, help=summary)
        for param in operation.params:
            if param.front != "magic":
                names, keywords = param.argument()
                if param.kind == "path":
                    keywords["type"] = Path
                parser.add_argument(*names, **keywords)
        parser.set_defaults(handler=_transfer)


def _verify(args: argparse.Namespace) -> int:
    """``hindsight-magic verify``: ``%hindsight verify`` for the bank a kernel started in this
    folder would use; exit code 1 when a memory's data changed (a CI job can fail on it)."""
    from ._errors import HindsightError, InputError
    from ._functions import project_session, verify

    session = project_session()
    try:
        outcome = verify(session=session)
    except InputError as error:
        print(f"hindsight-magic: {error}", file=sys.stderr)
        return 1
    except HindsightError as error:
        print(f"hindsight-magic: {session.explain(error)}", file=sys.stderr)
        return 1
    finally:
        session.close()
    print(outcome)
    return 1 if outcome.memory_ids else 0


def _add_verify(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "verify", help="the memories whose data files changed since their cell read them"
    )
    parser.set_defaults(handler=_verify)


# `demo` is added by its own module.
SUBCOMMANDS: dict[str, Registrar] = {
    "server": _add_server,
    "demo": demo.add_parser,
    "doctor": _add_doctor,
    "transfers": _add_transfers,
    "mcp": _add_mcp,
    "verify": _add_verify,
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="hindsight-magic", description="Long-term memory for Jupyter notebooks."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for register in SUBCOMMANDS.values():
        register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit code (errors: one line on stderr, code 1)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors (argparse printed them)
        return exc.code if isinstance(exc.code, int) else 1
    handler: Handler = args.handler
    try:
        return handler(args)
    except (ServerError, OSError) as exc:
        print(f"hindsight-magic: error: {exc}", file=sys.stderr)
    except KeyboardInterrupt:
        print("hindsight-magic: interrupted", file=sys.stderr)
        return 130
    return 1


if __name__ == "__main__":
    sys.exit(main())
