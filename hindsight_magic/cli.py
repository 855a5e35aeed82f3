"""The ``hindsight-magic`` command line: ``hindsight-magic server start|stop|status|logs``.

Each top-level subcommand is registered in ``SUBCOMMANDS``: a function that adds its parser
to the subparsers and sets ``handler`` (``args -> exit code``) as a default. Others (``demo``,
``doctor``) plug in there.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ._version import __version__
from .localserver import demo
from .localserver import launcher as server
from .ui import doctor

Handler = Callable[[argparse.Namespace], int]
Registrar = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

MOCK_NOTE = (
    "mock — reflect answers are placeholders; "
    "set HINDSIGHT_API_LLM_PROVIDER/HINDSIGHT_API_LLM_API_KEY for real answers"
)


def _describe(info: server.ServerInfo) -> str:
    llm = MOCK_NOTE if info.llm_provider == "mock" else info.llm_provider
    auth = ", API key required" if info.auth else ""
    return f"{info.url} (pid {info.pid}, LLM: {llm}{auth})"


def _server_start(args: argparse.Namespace) -> int:
    before = server.status(args.data_dir)
    t0 = time.monotonic()
    info = server.start(port=args.port, data_dir=args.data_dir, wait_s=args.wait)
    if before is not None and before.pid == info.pid:
        print(f"Hindsight server already running at {_describe(info)}")
    else:
        print(f"Hindsight server running at {_describe(info)}")
        print(f"Started in {time.monotonic() - t0:.1f} s; log: {info.log_path}")
    return 0


def _server_stop(args: argparse.Namespace) -> int:
    stopped = server.stop(args.data_dir)
    print("Hindsight server stopped." if stopped else "No Hindsight server was running.")
    return 0


def _server_status(args: argparse.Namespace) -> int:
    info = server.running_server(args.data_dir)
    if info is None:
        print(f"No Hindsight server running (data dir {server.server_home(args.data_dir).parent}).")
        return 1
    if server.status(args.data_dir) is None:
        print(
            f"Hindsight server pid {info.pid} is running but not answering at {info.url} "
            "(still starting, or stuck: see `hindsight-magic server logs`)."
        )
        return 1
    print(f"Hindsight server running at {_describe(info)}")
    print(f"Started {info.started_at}; data dir {info.data_dir}; log {info.log_path}")
    return 0


def _server_logs(args: argparse.Namespace) -> int:
    text = server.log_tail(args.data_dir, lines=args.lines)
    print(text if text else "(no server log yet)")
    return 0


def _add_server(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("server", help="run a local Hindsight server")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--data-dir", type=Path, default=None, help="data directory (default: the user's)"
    )
    start = actions.add_parser("start", parents=[common], help="start (or reuse) the server")
    start.add_argument("--port", type=int, default=server.DEFAULT_PORT, help="default: 8899")
    start.add_argument("--wait", type=float, default=180, help="seconds to wait for health")
    start.set_defaults(handler=_server_start)
    actions.add_parser("stop", parents=[common], help="stop the server").set_defaults(
        handler=_server_stop
    )
    actions.add_parser("status", parents=[common], help="is it running?").set_defaults(
        handler=_server_status
    )
    logs = actions.add_parser("logs", parents=[common], help="show the end of the server log")
    logs.add_argument("-n", "--lines", type=int, default=40, help="how many lines (default 40)")
    logs.set_defaults(handler=_server_logs)


# Top-level subcommands: name -> function adding its parser (and a `handler` default).
# `demo` and `doctor` are added here by their own modules.
SUBCOMMANDS: dict[str, Registrar] = {
    "server": _add_server,
    "demo": demo.add_parser,
    "doctor": doctor.add_parser,
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
    except (server.ServerError, OSError) as exc:
        print(f"hindsight-magic: error: {exc}", file=sys.stderr)
    except KeyboardInterrupt:
        print("hindsight-magic: interrupted", file=sys.stderr)
        return 130
    return 1


if __name__ == "__main__":
    sys.exit(main())
