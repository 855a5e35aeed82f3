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
import importlib
import inspect
import re
from collections.abc import Sequence
from pathlib import Path
from typing import get_args

import pytest

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


def test_the_parts_docstring_lists_every_part() -> None:
    from hindsight_magic._session import parts
    from hindsight_magic._session.parts import Parts

    listed = re.findall(r"^- ``(\w+)`` \(", parts.__doc__ or "", re.MULTILINE)
    assert sorted(listed) == sorted(field.name for field in dataclasses.fields(Parts))


def test_the_parts_are_built_with_named_arguments_not_anonymous_functions() -> None:
    """What a part needs from another is a named argument, and a bound method, a protocol or a
    named function of the builder: a lambda or a positional argument says nothing of it (the
    session once passed 11 lambdas, and 8 positional arguments to its curator)."""
    from hindsight_magic import _session
    from hindsight_magic._session import parts

    tree = ast.parse(Path(parts.__file__).read_text(encoding="utf-8"))
    builder = next(
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name == "build_parts"
    )
    session = ast.parse(Path(_session.__file__).read_text(encoding="utf-8"))
    init = next(
        node
        for cls in session.body
        if isinstance(cls, ast.ClassDef) and cls.name == "HindsightSession"
        for node in cls.body
        if isinstance(node, ast.FunctionDef) and node.name == "__init__"
    )
    part_types = {field.type.split("|")[0].strip() for field in dataclasses.fields(parts.Parts)} | {
        "build_parts"
    }
    built = []
    for node in [*ast.walk(builder), *ast.walk(init)]:
        assert not isinstance(node, ast.Lambda), f"a lambda in the wiring, line {node.lineno}"
        if isinstance(node, ast.Call) and ast.unparse(node.func) in part_types:
            built.append(ast.unparse(node.func))
            assert len(node.args) <= 1, f"{ast.unparse(node.func)}: positional arguments"
    assert set(built) >= {"Curator", "Reader", "Archiver", "BankOverview", "build_parts"}


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
    "_timewindow.py": ({"now", "today", "yesterday"}, "parsing the user's WHEN"),
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


def test_readiness_reaches_the_reader_as_a_named_type() -> None:
    """What a read learns before it reads is one named, frozen value from the delivery to the
    reader, not a pair whose order each side must remember."""
    from hindsight_magic._delivery.indexing import ReadReady
    from hindsight_magic._memory import reading

    ready = ReadReady(transcript_cells=2, indexed=False)
    assert dataclasses.is_dataclass(ready)
    assert not isinstance(ready, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ready.indexed = True  # type: ignore[misc]
    before_read = inspect.signature(reading.Reader).parameters["before_read"]
    assert before_read.annotation == "Callable[[str], Readiness]"
    assert {"transcript_cells", "indexed"} <= set(dir(reading.Readiness))


MODULE_LINES = 800
LONGER_FOR_NOW: set[str] = set()  # none: _functions.py came under it with its recall value


def test_no_module_is_longer_than_a_reader_holds() -> None:
    """A module over 800 lines held several jobs (the client's wire beside its endpoints, a
    session's wiring beside its use cases): each job gets its own module instead."""
    package = Path(hm.__file__).parent
    long = {
        path.relative_to(package).as_posix(): lines
        for path in package.rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) >= MODULE_LINES
    }
    assert set(long) <= LONGER_FOR_NOW, f"modules of {MODULE_LINES} lines or more: {long}"


def test_no_two_classes_share_a_name() -> None:
    """A name says which class it is wherever it is read (``Transfer`` once named both a
    transfer's declaration and the kind of operation an archive follows, ``ModelChange`` both
    the server's history item and the change the user reads)."""
    package = Path(hm.__file__).parent
    where: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                where.setdefault(node.name, []).append(path.relative_to(package).as_posix())
    shared = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert not shared, f"classes that share a name: {shared}"


def test_bounds_are_checked_where_they_are_declared() -> None:
    """A count's range is said and checked by ``Param.check`` (``_operations``) only, and each
    bound is one number, written once: ``hm.latest``'s limit, the map's top and the panel's
    table once checked theirs by hand, beside the range the help and the MCP schema show.
    ``_converters`` reads a magic's word with the range its declaration gives it."""
    package = Path(hm.__file__).parent
    by_hand, where = [], {}
    for path in sorted(package.rglob("*.py")):
        name, text = path.relative_to(package).as_posix(), path.read_text(encoding="utf-8")
        if "use a whole number" in text and name not in ("_operations.py", "_converters.py"):
            by_hand.append(name)
        for node in ast.parse(text).body:
            numbered = isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            targets = node.targets if numbered else []  # type: ignore[attr-defined]
            for bound in (t.id for t in targets if isinstance(t, ast.Name)):
                if bound.startswith(("MAX_", "DEFAULT_")):
                    where.setdefault(bound, []).append(name)
    assert by_hand == [], "a range refused by hand, not by its declaration's Param.check"
    assert {bound: paths for bound, paths in where.items() if len(paths) > 1} == {}


# -- the recipes ("Where to add…") name only what exists ------------------------------------------

ROOT = Path(hm.__file__).resolve().parents[1]
PACKAGE = ROOT / "hindsight_magic"


@dataclasses.dataclass
class CodeIndex:
    """Every module of the package by dotted name: its top-level names, and each class's
    members (methods, class attributes, and ``self.x`` set in its methods)."""

    top: dict[str, set[str]] = dataclasses.field(default_factory=dict)
    classes: dict[str, dict[str, set[str]]] = dataclasses.field(default_factory=dict)
    imported: set[str] = dataclasses.field(default_factory=set)  # ``StrEnum``, ``Literal``

    @classmethod
    def read(cls) -> CodeIndex:
        index = cls()
        for path in sorted(PACKAGE.rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            tree = ast.parse(path.read_text(encoding="utf-8"))
            index.top[name] = defined_names(path)
            index.classes[name] = {
                node.name: members(node) for node in tree.body if isinstance(node, ast.ClassDef)
            }
            index.imported.update(
                alias.asname or alias.name
                for node in tree.body
                if isinstance(node, ast.ImportFrom)
                for alias in node.names
            )
        return index

    def modules_called(self, head: str) -> list[str]:
        """The modules ``head`` may name: ``_session``, ``reading`` (a module's last part),
        ``hm`` (the package, as the guide writes ``hm.recall``)."""
        if head == "hm":
            return ["hindsight_magic"]
        return [m for m in self.top if m == f"hindsight_magic.{head}" or m.endswith(f".{head}")]

    def member_anywhere(self, name: str) -> bool:
        return any(
            name in names or any(name in found for found in self.classes[module].values())
            for module, names in self.top.items()
        )

    def resolves_in(self, module: str, chain: list[str]) -> bool:
        """Whether ``chain`` (``Class.method``, ``function``, ``Class``) is in ``module``: a
        name it defines or imports, then a class's member; one name may also be a member of
        one of its classes (``view.schedule``: a method of the module's view)."""
        first, rest = chain[0], chain[1:]
        classes = self.classes[module]
        if not rest and any(first in found for found in classes.values()):
            return True
        if first in classes:
            return self.member_chain(classes[first], rest)
        imported = vars(importlib.import_module(module))
        return first in self.top[module] or (first in imported and not rest)

    def member_chain(self, found: set[str], rest: list[str]) -> bool:
        return len(rest) <= 1 and all(name in found for name in rest)

    def class_anywhere(self, name: str) -> set[str] | None:
        for classes in self.classes.values():
            if name in classes:
                return classes[name]
        return None


def members(node: ast.ClassDef) -> set[str]:
    found = set()
    for item in ast.walk(node):
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(item.name)
        elif isinstance(item, ast.Name) and isinstance(item.ctx, ast.Store):
            found.add(item.id)
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            found.add(item.target.id)
        elif (
            isinstance(item, ast.Attribute)
            and isinstance(item.ctx, ast.Store)
            and isinstance(item.value, ast.Name)
            and item.value.id == "self"
        ):
            found.add(item.attr)
    return found


def code_like(token: str) -> bool:
    """Whether a backticked token names code (``_request``, ``Reader.recall``, ``TABS``,
    ``_api/client.py``) rather than a word, a magic line or a template (``cmd_<name>``)."""
    if token[0] in "%-$" or any(c in token for c in "<*= "):
        return False
    name = token.split("(")[0]
    return (
        any(c in token for c in "_./(")
        or (name[:1].isupper() and not name.isupper())
        or (name.isupper() and len(name) > 3)
    )


def unresolved(token: str, index: CodeIndex, beside: Sequence[str] = ()) -> bool:
    """Whether ``token`` names a file, module, class, function or member that is not there;
    ``self.x`` is a member of a class named ``beside`` it (in the same recipe)."""
    if "(" in token:  # a call written out: ``Words(arg(...))``, ``self._bank()``
        called = re.findall(r"([A-Za-z_][\w.]*)\(", token)
        return any(unresolved(name, index, beside) for name in called)
    if token.endswith(("/", ".py")) or token.startswith(("tests/", "bench/", "docs/")):
        beside_its_package = "/" not in token and any(PACKAGE.rglob(token))  # ``spool.py``
        return not ((PACKAGE / token).exists() or (ROOT / token).exists() or beside_its_package)
    if "/" in token:
        module_path, _, attributes = token.partition(".")
        module = "hindsight_magic." + module_path.replace("/", ".")
        return module not in index.top or not index.resolves_in(module, attributes.split("."))
    head, *rest = token.split(".")
    if head == "self":
        classes = [index.class_anywhere(name) for name in beside]
        return not any(found is not None and rest[-1] in found for found in classes)
    if rest:
        modules = index.modules_called(head)
        if modules:
            return not any(index.resolves_in(module, rest) for module in modules)
        found = index.class_anywhere(head)
        if found is not None:
            return not index.member_chain(found, rest)
        try:
            return not hasattr(importlib.import_module(head), rest[0])  # ``httpx.MockTransport``
        except ImportError:
            return True
    known = index.member_anywhere(head) or head in index.imported
    return not known and not index.modules_called(head)


def test_the_recipes_name_only_what_exists() -> None:
    """A newcomer follows "Where to add…" (and "Where each job lives") to the letter: every
    module, class, function and method they name must be there (the endpoint recipe once named
    ``_request`` and ``self._bank()``, both long gone). A ``self.x`` is looked up in the classes
    its recipe or row names."""
    recipes = ARCHITECTURE.split("## Where to add…", 1)[1].split("\n## ", 1)[0]
    jobs = ARCHITECTURE.split("## Where each job lives", 1)[1].split("\n## ", 1)[0]
    index = CodeIndex.read()
    checked, missing = set(), set()
    for recipe in recipes.split("\n\n**")[1:] + jobs.splitlines()[4:]:
        tokens = [t for t in re.findall(r"`([^`]+)`", recipe.replace("\n", " ")) if code_like(t)]
        named = [t.split(".")[-1] for t in tokens if index.class_anywhere(t.split(".")[-1])]
        checked.update(tokens)
        missing.update(token for token in tokens if unresolved(token, index, named))
    assert len(checked) > 120, checked  # the recipes and the table are read, not skipped
    assert not missing, f"docs/architecture.md's recipes name what does not exist: {missing}"


def test_the_recipe_check_catches_a_stale_name() -> None:
    index = CodeIndex.read()
    client = ["HindsightClient"]
    for stale in ("_request", "self._bank()", "HindsightClient._request", "_api/client.Nope"):
        assert unresolved(stale, index, client), stale
    for real in ("self.call()", "HindsightClient.call", "_api/transport.Wire", "hm.recall"):
        assert not unresolved(real, index, client), real


# -- a recipe followed for real: "An option of `%recall`" ------------------------------------------


def test_the_recall_option_recipe_reaches_every_front_end() -> None:
    """The guide's recipe, followed with a throwaway option: one field declared on a copy of
    ``RecallRequest`` reaches the magic's parser, usage and ``%recall?``, ``hm.recall``'s
    keyword list, both MCP servers' schemas (bounds and default) and the request each front
    end makes, with nothing else written for it. The copy is made, not patched in: nothing
    of the package changes for the other tests."""
    from typing import Annotated

    import anyio
    from IPython.core.error import UsageError

    from hindsight_magic._agents.declared import tool_function
    from hindsight_magic._functions import keywords_help
    from hindsight_magic._ipython.parsing import MagicOptions
    from hindsight_magic._operations import (
        AGENT_RECALL,
        RECALL,
        VAR,
        Param,
        RecallRequest,
        declared,
        made_of,
    )

    recipe = ARCHITECTURE.split("**An option of `%recall`", 1)[1].split("\n\n", 1)[0]
    steps = ("RecallRequest", "Param(", "hm.recall", "from_arguments", "AGENT_RECALL", "Reader")
    missing = [step for step in steps if step not in recipe]
    assert not missing, f"the recipe no longer says the steps this test follows: {missing}"
    # 1. one field on the typed value: Annotated[type, Param(kind, value's name, bounds, help)]
    colour = Param("colour", "count", "how many colours", "N", least=1, most=7, default=3)
    field = ("colour", Annotated[int | None, colour], dataclasses.field(default=3))
    tried = declared(
        dataclasses.make_dataclass("Tried", [field], bases=(RecallRequest,), frozen=True)
    )
    assert "colour" not in RecallRequest.params  # the copy's, not the package's
    magic = made_of(tried, "recall", RECALL.summary, more=(VAR,), text=RECALL.text)
    agents = made_of(
        tried, "recall", AGENT_RECALL.summary, [p.name for p in AGENT_RECALL.params] + ["colour"]
    )

    # the magic: parsed by its kind, in its usage and %recall?, refused out of its bounds
    options = MagicOptions("%recall", magic)
    parsed, query = options.parse("--colour 4 churn by region")
    assert (parsed, query) == ({"colour": 4}, "churn by region")
    assert "[--colour N]" in options.usage
    assert "``--colour N`` (how many colours (1-7, default 3))" in " ".join(
        options.paragraph().split()
    )
    with pytest.raises(UsageError, match="Invalid --colour '9': use a whole number from 1 to 7"):
        options.parse("--colour 9 churn")
    with pytest.raises(UsageError, match="--colour"):  # what `%recall --help` answers
        options.parse("--help")
    # … and the request it makes through hm.recall's keywords (from_arguments(locals()))
    made = tried.from_arguments({"query": query, **magic.keywords(parsed), "session": None})
    assert (made.query, made.colour, made.limit) == ("churn by region", 4, None)  # type: ignore[attr-defined]
    assert "- ``colour`` (N): how many colours (1-7, default 3)" in keywords_help(tried)
    with pytest.raises(hm.InputError, match="Invalid colour 0: use a whole number from 1 to 7"):
        tried("x", colour=0)  # type: ignore[call-arg]

    # both MCP servers: the schema carries its bounds and default; a call makes the request
    def answer(**arguments: object) -> str:
        request = agents.requested(arguments)
        return f"colour={request.colour} limit={request.limit}"  # type: ignore[attr-defined]

    # (the MCP servers come with the ``mcp`` extra: without it, the checks above still ran)
    jupyter_server_mcp = pytest.importorskip("jupyter_server_mcp.mcp_server")
    from fastmcp import Client as FastClient
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    standalone = MCPServer("recipe")
    standalone.tool()(tool_function(agents, answer))
    jupyter = jupyter_server_mcp.MCPServer(name="recipe", port=0)
    jupyter.register_tool(tool_function(agents, answer))

    async def listed_and_called(client: object) -> tuple[dict[str, object], str]:
        async with client as connected:  # type: ignore[attr-defined]
            listed = await connected.list_tools()
            [tool] = getattr(listed, "tools", listed)  # the SDK's result, or fastmcp's list
            result = await connected.call_tool("recall", {"query": "churn", "colour": 5})
            return tool.input_schema, result.content[0].text

    for client in (Client(standalone), FastClient(jupyter.mcp)):
        schema, said = anyio.run(listed_and_called, client)
        spec = schema["properties"]["colour"]  # type: ignore[index]
        assert (spec["minimum"], spec["maximum"], spec["default"]) == (1, 7, 3), client
        assert spec["description"] == "How many colours (1-7, default 3)."
        assert said == "colour=5 limit=10", client  # the alias max_results: its own default
