"""The server's JSON is read in ``_api`` only: the client hands out models, not dicts.

Every method of ``HindsightClient`` that reads a reply returns a pydantic model of
``_api/replies.py`` (or a plain value made from one), so ``mypy --strict`` refuses a
``reply.get("key")`` anywhere above ``_api``. What is left of ``.get("…")`` and ``["…"]`` there is
listed below, each module with what it reads instead: a new one fails here until it is read
through a model, or said why it is not a server reply.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import hindsight_magic
from hindsight_magic._api.client import HindsightClient

PACKAGE = Path(hindsight_magic.__file__).parent

# the plumbing every endpoint method goes through: their JSON is read in ``_api`` alone
PLUMBING = {"call", "send", "stream"}

# modules above ``_api`` that read a dict by a literal key, and whose dict it is
NOT_SERVER_REPLIES = {
    "_agents/server.py": "an MCP tool call's result, the SDK's protocol dict",
    "_agents/wiring.py": "os.environ",
    "_capture/identity.py": "a regex match's groups; the notebook file's own JSON",
    "_delivery/items.py": "the retain body the extension builds, and its spool records",
    "_delivery/journal_file.py": "a retain body the extension stored in its SQLite journal",
    "_delivery/spool.py": "the spool's own records",
    "_ipython/extension.py": "IPython's event callbacks and a cell's output bundles",
    "_ipython/magics.py": "the magic's parsed options, the user's namespace, IPython's config",
    "_ipython/parsing.py": "argparse keywords of the magic's own option table",
    "_localserver/demo.py": "the demo notebook's cells and outputs (nbformat)",
    "_localserver/launcher.py": "the environment the local server is started with",
    "_localserver/llm.py": "an Ollama server's model list, not Hindsight's",
    "_machine.py": "process environments and command lines (psutil)",
    "_memory/archive.py": "the snapshot's manifest file and the extension's own counts",
    "_memory/reading.py": "the time window's own query parameters",
    "_memory/results.py": "the module's own lazy-import table",
    "_session/__init__.py": "the settings' values and traitlets' change events",
    "_settings.py": "traitlets metadata, the environment, IPython's config",
    "_text.py": "markdown-it's token attributes",
    "_ui/doctor.py": "the journal file's counts by state",
    "_ui/panel/widgets.py": "traitlets' change events and the MIME bundle it builds",
    "_ui/pictures.py": "pandas columns and networkx edge attributes the module set",
}


def keyed_reads(path: Path) -> list[str]:
    """Where a module reads a dict by a literal key: ``x.get("key", …)`` and ``x["key"]``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append(f"line {node.lineno}: .get({node.args[0].value!r})")
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            found.append(f"line {node.lineno}: [{node.slice.value!r}]")
    return found


def test_the_clients_methods_return_models_not_json() -> None:
    untyped = {
        name: str(inspect.signature(method).return_annotation)
        for name, method in inspect.getmembers(HindsightClient, inspect.isfunction)
        if not name.startswith("_") and name not in PLUMBING
    }
    loose = {name: shown for name, shown in untyped.items() if "Any" in shown}
    assert not loose, f"client methods that hand out the server's JSON: {loose}"
    assert len(untyped) > 25  # every endpoint method was looked at


def test_above_api_only_the_listed_modules_read_a_dict_by_key() -> None:
    reading = {
        path.relative_to(PACKAGE).as_posix(): reads
        for path in sorted(PACKAGE.rglob("*.py"))
        if not path.relative_to(PACKAGE).as_posix().startswith("_api/")
        and (reads := keyed_reads(path))
    }
    unlisted = {
        module: reads for module, reads in reading.items() if module not in NOT_SERVER_REPLIES
    }
    assert not unlisted, (
        f"read a dict by key above _api: {unlisted} — read the server's replies through the "
        "client's models, or list the module in NOT_SERVER_REPLIES with whose dict it is"
    )
    stale = sorted(set(NOT_SERVER_REPLIES) - set(reading))
    assert not stale, f"listed but reading no dict by key any more: {stale}"
