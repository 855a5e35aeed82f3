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
