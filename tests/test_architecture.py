"""``docs/architecture.md`` and the module docstrings say what the code has.

Both are written by hand; these keep them in step where a test can read the claim: the public
face against ``hindsight_magic.__all__`` (it once listed "the five functions" beside 21 of
them), the modules it names and the names it puts in each (it once put ``HindsightError`` in
``_api/errors.py``), and the docstrings that list a session's parts (7 of 17 once), the journal's
kinds of failure (6 of 9) and the kinds of bad input.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path
from typing import get_args

import hindsight_magic as hm

ARCHITECTURE = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text()


def test_every_public_name_is_in_the_architecture_document() -> None:
    face = ARCHITECTURE.split("## The public face", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([A-Za-z_][\w]*)`", face))
    missing = sorted(set(hm.__all__) - named)
    assert not missing, f"docs/architecture.md's public face lacks {missing}"


def test_every_module_the_document_names_exists() -> None:
    package = Path(hm.__file__).parent
    named = set(re.findall(r"`(_[a-z_]+(?:/[a-z_]+)*\.py)`", ARCHITECTURE))
    assert named, "no module named"
    missing = sorted(path for path in named if not (package / path).exists())
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def defined_names(path: Path) -> set[str]:
    """The names a module defines at its top level (classes, functions, assigned names)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def module_descriptions() -> dict[str, str]:
    """What the package listing says of each module: ``_api/errors.py`` → the words in the
    parentheses after ``errors.py`` in the ``_api/`` entry, a top-level file's whole line."""
    listing = ARCHITECTURE.split("## Packages, and what each may import", 1)[1]
    listing = listing.split("```", 2)[1]
    entries = re.split(r"\n  (?=\S)", listing)  # an entry starts two spaces in
    described = {}
    for entry in entries[1:]:
        name, _, text = entry.partition(" ")
        text = " ".join(text.split())
        if name.endswith(".py"):
            described[name] = text
            continue
        for found in re.finditer(r"([a-z_]+\.py) \(", text):
            depth, start = 1, found.end()
            end = start
            while depth and end < len(text):
                depth += {"(": 1, ")": -1}.get(text[end], 0)
                end += 1
            described[f"{name}{found.group(1)}"] = text[start : end - 1]
    return described


def test_every_name_the_document_puts_in_a_module_is_defined_there() -> None:
    package = Path(hm.__file__).parent
    defined = {
        path.relative_to(package).as_posix(): defined_names(path) for path in package.rglob("*.py")
    }
    anywhere = set().union(*defined.values())
    described = module_descriptions()
    assert "_api/errors.py" in described
    assert "_functions.py" in described
    misplaced = []
    for module, text in described.items():
        for name in re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", text):
            code_like = "_" in name.strip("_") or (name[0].isupper() and not name.isupper())
            constant = name.isupper() and len(name) > 3
            if (code_like or constant) and name in anywhere and name not in defined[module]:
                misplaced.append(f"{name} (said to be in {module})")
    assert not misplaced, f"docs/architecture.md puts names where they are not: {misplaced}"


def test_the_sessions_docstring_lists_every_part() -> None:
    from hindsight_magic import _session
    from hindsight_magic._session.parts import Parts

    listed = re.findall(r"^- ``(\w+)`` \(", _session.__doc__ or "", re.MULTILINE)
    assert sorted(listed) == sorted(field.name for field in dataclasses.fields(Parts))


def test_the_journal_files_docstring_names_every_kind_of_failure() -> None:
    from hindsight_magic._delivery import journal_file

    doc = " ".join((journal_file.__doc__ or "").split())
    said = doc.split("``kind`` says why:", 1)[1].split(". A damaged file", 1)[0]
    named = re.findall(r"``(\w+)`` \(", said)
    assert sorted(set(named)) == sorted(get_args(journal_file.JournalKind))


def test_the_errors_docstring_names_every_kind_of_bad_input() -> None:
    from hindsight_magic import _errors

    doc = " ".join((_errors.__doc__ or "").split())
    said = doc.split("subclass it (", 1)[1].split(")", 1)[0]
    named = set(re.findall(r"``(\w+)``", said))
    kinds = {
        name
        for name in hm.__all__
        if isinstance(getattr(hm, name), type)
        and issubclass(getattr(hm, name), hm.InputError)
        and getattr(hm, name) is not hm.InputError
    }
    assert named == kinds


# Words the package compares with that are no vocabulary of its own, and why. Every other
# `x == "word"`, `x != "word"` or `x in ("a", "b")` in the package fails the test below: a
# state or a choice is a StrEnum member (or a name typed by a Literal alias) instead.
NOT_VOCABULARIES: dict[str, tuple[set[str], str]] = {
    "_text.py": (
        {
            "autolink",
            "fence",
            "html_block",
            "html_inline",
            "image",
            "link_close",
            "link_open",
            "text",
        },
        "markdown-it's token types",
    ),
    "_ipython/parsing.py": (
        {"'", '"', "--", "?", "*", "expected one argument", "store_true"} | {"flag", "text"},
        "the user's quoting and argparse's own words; Kind (a Literal, as below)",
    ),
    "_ipython/extension.py": ({"execute_result", "out_stream"}, "IPython's output types"),
    "_ipython/subcommands.py": (
        {"api_key", "api_url", "journal_path", "cli"},
        "setting names (the key is no trait); Front (a Literal, as below)",
    ),
    "_settings.py": (
        {"api_key", "Cc", "Cs", "http", "https"},
        "the key is no trait; Unicode categories; URL schemes",
    ),
    "_capture/identity.py": ({"code"}, "nbformat's cell type"),
    "_localserver/demo.py": ({"code", "error", "stream", "hindsight-magic"}, "nbformat; argv[0]"),
    "_ui/display.py": ({"equal"}, "difflib's opcode"),
    "_ui/doctor.py": ({"ZMQInteractiveShell"}, "IPython's kernel shell class"),
    "_ui/pictures.py": ({"png"}, "an image format"),
    "_ui/panel/state.py": ({"Server", "state"}, "a Report's heading and row label, as shown"),
    "_ui/panel/widgets.py": ({"forget"}, "a PanelHub method's name (act dispatches by name)"),
    "_agents/server.py": ({"tools/call"}, "an MCP method"),
    "_api/errors.py": (
        {"body", "error", "health", "http"},
        "pydantic's error location; /health's reply; ErrorKind (a Literal, as below)",
    ),
    "_machine.py": ({"posix", "https", ".git", "papermill"}, "os.name, a scheme, file names"),
    "_localserver/launcher.py": ({"posix"}, "os.name"),
    "_localserver/postgres.py": ({"initdb", "pg_ctl", "1"}, "PostgreSQL's programs and output"),
    "_localserver/storage.py": ({"B", "GB", "PostgreSQL data"}, "size units; a location's label"),
    "_memory/archive.py": ({"GB", "int"}, "size units; a dataclass field's annotation"),
    "_memory/timewindow.py": ({"now", "today", "yesterday"}, "parsing the user's WHEN"),
    "_delivery/journal_file.py": (
        {"ok", "off", "cantopen", "corrupt"},
        "SQLite's integrity check; the setting's off; JournalKind (a Literal, as below)",
    ),
    "_cli.py": (
        {"y", "yes", "__main__", "magic", "path"},
        "the user's answer; the script guard; Front, Kind (Literals, as below)",
    ),
    # typed by a Literal alias (ErrorKind, JournalKind, JournalOp.kind): mypy's strict
    # equality refuses a word that is not one of the alias's
    "_diagnosis.py": ({"connect", "http", "not_hindsight", "timeout"}, "ErrorKind"),
    "_memory/llm.py": ({"http"}, "ErrorKind"),
    "_memory/mental_models.py": ({"http"}, "ErrorKind"),
    "_session/__init__.py": ({"connect", "not_hindsight"}, "ErrorKind"),
    "_delivery/journal.py": ({"batched", "failed", "corrupt"}, "JournalOp.kind, JournalKind"),
    "_operations.py": ({"flag", "variable"}, "Kind"),
    "_agents/declared.py": ({"count"}, "Kind"),
}


def raw_word_comparisons() -> dict[str, set[str]]:
    """module → the non-empty string literals it compares with (``==``, ``!=``) or tests
    membership in a literal tuple, list or set of (``in``, ``not in``)."""
    package = Path(hm.__file__).parent
    found: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        module = path.relative_to(package).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, operands, operands[1:], strict=False):
                if isinstance(op, ast.Eq | ast.NotEq):
                    candidates = [left, right]
                elif isinstance(op, ast.In | ast.NotIn) and isinstance(
                    right, ast.Tuple | ast.List | ast.Set
                ):
                    candidates = list(right.elts)
                else:
                    continue
                words = {
                    c.value
                    for c in candidates
                    if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value
                }
                found.setdefault(module, set()).update(words)
    return {module: words for module, words in found.items() if words}


def test_no_state_or_choice_is_compared_as_a_raw_string() -> None:
    """A misspelt member is an error mypy reports; a misspelt word is silently never equal."""
    allowed: dict[str, set[str]] = {}
    for module, (words, _why) in NOT_VOCABULARIES.items():
        allowed[module] = words
    found = raw_word_comparisons()
    raw = sorted(
        f"{module}: {word!r}"
        for module, words in found.items()
        for word in words - allowed.get(module, set())
    )
    assert not raw, f"compare with a vocabulary's member, not a raw string: {raw}"
    stale = sorted(
        f"{module}: {word!r}"
        for module, words in allowed.items()
        for word in words - found.get(module, set())
    )
    assert not stale, f"NOT_VOCABULARIES allows words no longer compared: {stale}"


MOST_LINES = 800  # a module longer than this does more than one job (issue 54)
BEING_SPLIT = {"_api/client.py", "_memory/curation.py", "_session/__init__.py"}  # issue 54


def test_no_module_is_over_800_lines() -> None:
    """A newcomer reads a module whole: past 800 lines it holds more than one job (the public
    functions once held their flush result's display too)."""
    package = Path(hm.__file__).parent
    long = sorted(
        f"{path.relative_to(package)}: {lines} lines"
        for path in package.rglob("*.py")
        if (lines := len(path.read_text().splitlines())) > MOST_LINES
        and path.relative_to(package).as_posix() not in BEING_SPLIT
    )
    assert not long, long
