"""``hindsight-magic demo``: run the quickstart notebook headless against the local server.

Starts (or reuses) the local Hindsight server, executes the notebook with ``nbclient`` in a fresh
``python3`` kernel whose ``HINDSIGHT_API_URL`` points at that server, and writes the executed
notebook and an HTML copy. The kernel runs in a temporary folder named ``hindsight-<notebook>``,
so the project label (and hence where the demo's memories go) is the same on every run.

nbclient/nbconvert come from the ``demo`` extra and are imported only when the demo runs.
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import shutil
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

from .._machine import ServerInfo
from .._text import one_line
from . import ServerError, actions
from . import launcher as server

MISSING_DEMO_EXTRA = "the demo needs the 'demo' extra: pip install 'hindsight-magic[demo]'"
NOTEBOOK_NAME = "quickstart.ipynb"
SUMMARY_PREFIXES = ("Memories retained:", "Recalled:", "Reflect:")
KERNEL = "python3"
DEFAULT_OUT = "hindsight-demo"


def _fail(message: str) -> int:
    print(f"hindsight-magic demo: {message}", file=sys.stderr)
    return 1


def find_notebook() -> Path | None:
    """The quickstart: the installed wheel's copy first, then a source checkout's."""
    try:
        packaged = Path(str(resources.files("hindsight_magic") / "_notebooks" / NOTEBOOK_NAME))
    except (ModuleNotFoundError, TypeError):
        packaged = None
    checkout = Path(__file__).resolve().parents[2] / "notebooks" / NOTEBOOK_NAME
    for candidate in (packaged, checkout):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def _start_server(args: argparse.Namespace) -> ServerInfo:
    """Start or reuse the local server; print which, and how long it took."""
    info, text = actions.start(port=args.port, data_dir=args.data_dir)
    print(text)
    return info


def _first_line(text: str, limit: int = 160) -> str:
    line = next((part for part in str(text).splitlines() if part.strip()), "")
    return one_line(line, limit)


def _error_of(cell: Any) -> tuple[str, str] | None:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return output.get("ename", "Error"), output.get("evalue", "")
    return None


def _summary(nb: Any) -> list[str]:
    """The summary lines printed by the last code cell."""
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    if not code:
        return []
    text = "".join(
        o.get("text", "") for o in code[-1].get("outputs", []) if o.get("output_type") == "stream"
    )
    return [line for line in text.splitlines() if line.startswith(SUMMARY_PREFIXES)]


def _write(nb: Any, out_dir: Path, stem: str) -> tuple[Path, Path | None]:
    """Write the executed notebook and its HTML copy; the HTML is None if it cannot be made."""
    import nbformat
    from nbconvert import HTMLExporter

    out_dir.mkdir(parents=True, exist_ok=True)
    ipynb = out_dir / f"{stem}.ipynb"
    nbformat.write(nb, ipynb)  # type: ignore[no-untyped-call]
    html_path = out_dir / f"{stem}.html"
    try:
        body, _ = HTMLExporter().from_notebook_node(nb)  # type: ignore[no-untyped-call]
        html_path.write_text(body, encoding="utf-8")
    except Exception as exc:  # a broken template must not hide the notebook itself
        print(f"hindsight-magic demo: could not write the HTML copy: {exc}", file=sys.stderr)
        return ipynb, None
    return ipynb, html_path


def run(args: argparse.Namespace) -> int:
    """Run the demo; return the exit code (failures: one line on stderr, code 1)."""
    try:
        import nbclient
        import nbconvert  # noqa: F401 - checked here, used in _write
        import nbformat
        from jupyter_client.kernelspec import NoSuchKernel
        from nbclient.exceptions import CellControlSignal
    except ImportError:
        return _fail(MISSING_DEMO_EXTRA)

    source = args.notebook or find_notebook()
    if source is None or not Path(source).is_file():
        return _fail(f"notebook not found: {source or NOTEBOOK_NAME}")
    source = Path(source).resolve()
    out_dir = Path(args.out).resolve()
    t_all = time.monotonic()
    try:
        info = _start_server(args)
    except ServerError as exc:
        return _fail(f"the local Hindsight server did not start: {exc}")

    nb = nbformat.read(source, as_version=4)  # type: ignore[no-untyped-call]
    current: dict[str, int] = {}

    def started(cell: Any, cell_index: int, **_: Any) -> None:
        current["index"] = cell_index

    env = dict(os.environ, HINDSIGHT_API_URL=info.url)
    env["JPY_SESSION_NAME"] = str(out_dir / source.name)
    if args.data_dir is not None:  # `%hindsight server …` in the notebook sees the same server
        env["HINDSIGHT_MAGIC_DATA_DIR"] = str(Path(args.data_dir).resolve())
    client = nbclient.NotebookClient(  # nbclient before 0.6 takes whole seconds only
        nb, kernel_name=KERNEL, timeout=math.ceil(args.timeout), on_cell_execute=started
    )
    failure: str | None = None
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hindsight-demo-") as tmp:
        workdir = Path(tmp) / f"hindsight-{source.stem}"  # the project label the notebook sees
        workdir.mkdir()
        shutil.copy2(source, workdir / source.name)
        out_dir.mkdir(parents=True, exist_ok=True)
        kernel_log = out_dir / f"{source.stem}.kernel.log"  # kept only when something fails
        with kernel_log.open("wb") as log:
            try:
                client.execute(cwd=str(workdir), env=env, stdout=log, stderr=log)
            except NoSuchKernel:
                failure = f"no {KERNEL!r} Jupyter kernel: {MISSING_DEMO_EXTRA}"
            except (CellControlSignal, RuntimeError) as exc:  # RuntimeError: kernel died
                failure = _describe_failure(nb, current.get("index"), exc)
    ran = time.monotonic() - t0
    ipynb, html_path = _write(nb, out_dir, source.stem)
    if failure is not None:
        print(f"Partial notebook: {ipynb} (kernel log: {kernel_log})")
        return _fail(failure)
    kernel_log.unlink(missing_ok=True)
    cells = sum(1 for cell in nb.cells if cell.cell_type == "code")
    print(f"Ran {cells} cells of {source.name} in {ran:.1f} s")
    print(f"Executed notebook: {ipynb}")
    if html_path is not None:
        print(f"HTML copy:         {html_path}")
    for line in _summary(nb):
        print(line)
    print(f"Demo finished in {time.monotonic() - t_all:.1f} s")
    print(_server_left_running(info, args.data_dir))
    return 0


def _server_left_running(info: ServerInfo, data_dir: Path | None) -> str:
    """The server keeps running for the user's own notebooks: where, and how to stop or purge it
    (with the command as it was typed, e.g. ``.venv/bin/hindsight-magic``)."""
    typed = sys.argv[0] if Path(sys.argv[0]).name == "hindsight-magic" else "hindsight-magic"
    options = f" --data-dir {shlex.quote(str(data_dir))}" if data_dir is not None else ""
    command = f"{shlex.quote(typed)} server"
    return (
        f"The local Hindsight server is still running at {info.url}, for your own notebooks.\n"
        f"Stop it: {command} stop{options}   "
        f"Stop it and delete all its memories: {command} purge{options}"
    )


def _describe_failure(nb: Any, index: int | None, exc: BaseException) -> str:
    """``cell N (`first line`) failed: ename: evalue`` — one line."""
    if index is None:
        return f"the notebook could not run: {type(exc).__name__}: {_first_line(str(exc))}"
    cell = nb.cells[index]
    error = _error_of(cell)
    if error is None:
        ename = getattr(exc, "ename", None) or type(exc).__name__
        evalue = getattr(exc, "evalue", None) or str(exc)
    else:
        ename, evalue = error
    code = _first_line(cell.source, 60)
    return f"cell {index + 1} (`{code}`) failed: {ename}: {_first_line(evalue)}"


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``hindsight-magic demo`` (see ``cli.SUBCOMMANDS``)."""
    parser = subparsers.add_parser(
        "demo", help="run the quickstart notebook headless against the local server"
    )
    parser.add_argument(
        "--notebook",
        type=Path,
        default=None,
        metavar="PATH",
        help="notebook to run (default: the quickstart)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        default=Path(DEFAULT_OUT),
        help=f"where to write the executed notebook and HTML (default: ./{DEFAULT_OUT}/)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=server.DEFAULT_PORT,
        metavar="N",
        help="server port (default: 8899)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="server data directory (default: the user's)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=300,
        metavar="S",
        help="seconds allowed per cell (default: 300)",
    )
    parser.set_defaults(handler=run)
