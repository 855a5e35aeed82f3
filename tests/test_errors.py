"""The package raises one family of errors, and a user can name every one of them.

Read from the code itself, so that a new error class or a new ``raise`` is checked the day it
is written: every exception class the package defines is an ``hindsight_magic.Error``; each is
exported from ``hindsight_magic`` unless it never leaves the package (then some module catches
it by name); no ``raise`` names a built-in exception except where a protocol asks for that one;
and no handler of a family error raises a second error of its own class in its place.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import hindsight_magic as hm

PACKAGE = Path(hm.__file__).parent

# Errors that never leave the package: raised and caught inside it (the test checks each has a
# handler that names it).
INTERNAL = {
    "JournalError": "the journal's file trouble: the journal carries on without it",
    "ServerError": "the local server's: `%hindsight server` and the command line say it",
    "ToolFailure": "an agent tool's one line: both MCP front ends turn it into a tool error",
}

# The built-in exceptions a protocol asks for, and the only modules that raise them.
BUILTIN_RAISES = {
    ("__init__.py", "AttributeError"): "a module's __getattr__ (PEP 562)",
    ("_settings.py", "ValueError"): "a trait's validation: the settings make it a SettingsError",
    ("_ipython/parsing.py", "ValueError"): "an option converter: the parser makes it InputError",
    ("_converters.py", "ValueError"): "a kind's converter: the parser makes it InputError",
    ("_settings.py", "NotImplementedError"): "an abstract method",
    ("_ui/pictures.py", "NotImplementedError"): "an abstract method",
    ("_ui/pictures.py", "ImportError"): "pandas, an optional dependency, is not installed",
    ("_delivery/spool.py", "OSError"): "a short write is the disk's own error (the journal's)",
    ("_localserver/storage.py", "AssertionError"): "unreachable code",
}


@dataclass(frozen=True)
class Raise:
    """One ``raise`` of a class, found in the source: where, the class, and the classes the
    ``except`` clauses around it catch."""

    module: str  # its path inside the package
    line: int
    raised: type[BaseException]
    caught: tuple[type[BaseException], ...]


def modules() -> Iterator[tuple[str, ModuleType]]:
    """Every module of the package, imported, with its path inside the package."""
    yield "__init__.py", hm
    for info in pkgutil.walk_packages(hm.__path__, "hindsight_magic."):
        module = importlib.import_module(info.name)
        yield Path(str(module.__file__)).relative_to(PACKAGE).as_posix(), module


MODULES = dict(modules())


def resolve(node: ast.expr, module: ModuleType) -> Any:
    """What a name or dotted name in ``module``'s code refers to at run time (None if unknown)."""
    if isinstance(node, ast.Name):
        if node.id in vars(module):
            return vars(module)[node.id]
        return getattr(builtins, node.id, None)
    if isinstance(node, ast.Attribute):
        owner = resolve(node.value, module)
        return getattr(owner, node.attr, None) if owner is not None else None
    return None


def exception_class(node: ast.expr | None, module: ModuleType) -> type[BaseException] | None:
    target = node.func if isinstance(node, ast.Call) else node
    found = resolve(target, module) if target is not None else None
    return found if inspect.isclass(found) and issubclass(found, BaseException) else None


def caught_by(handler: ast.ExceptHandler, module: ModuleType) -> tuple[type[BaseException], ...]:
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    found = (exception_class(node, module) for node in types if node is not None)
    return tuple(cls for cls in found if cls is not None)


def raises() -> Iterator[Raise]:
    for path, module in MODULES.items():
        tree = ast.parse((PACKAGE / path).read_text(encoding="utf-8"))
        yield from raises_in(tree, path, module, ())


def raises_in(
    node: ast.AST, path: str, module: ModuleType, caught: tuple[type[BaseException], ...]
) -> Iterator[Raise]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        caught = ()  # a function defined in a handler runs later, outside it
    if isinstance(node, ast.ExceptHandler):
        caught = caught + caught_by(node, module)
    if isinstance(node, ast.Raise):
        raised = exception_class(node.exc, module)
        if raised is not None:
            yield Raise(path, node.lineno, raised, caught)
    for child in ast.iter_child_nodes(node):
        yield from raises_in(child, path, module, caught)


def defined_exceptions() -> dict[str, type[BaseException]]:
    """The exception classes the package defines, by name (an exported one is named after
    ``hindsight_magic``, where users import it: the module whose source has its ``class``
    statement defines it)."""
    found = {}
    for path, module in MODULES.items():
        defined = {
            node.name
            for node in ast.walk(ast.parse((PACKAGE / path).read_text(encoding="utf-8")))
            if isinstance(node, ast.ClassDef)
        }
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseException) and name in defined:
                found[name] = value
    return found


def handled_by_name() -> set[str]:
    """The names in the package's ``except`` clauses."""
    names = set()
    for path in MODULES:
        for node in ast.walk(ast.parse((PACKAGE / path).read_text(encoding="utf-8"))):
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                for part in ast.walk(node.type):
                    if isinstance(part, ast.Name):
                        names.add(part.id)
                    elif isinstance(part, ast.Attribute):
                        names.add(part.attr)
    return names


def test_the_check_sees_the_package() -> None:
    assert "_memory/curation.py" in MODULES
    assert len(MODULES) > 60
    found = list(raises())
    assert any(r.raised is hm.HindsightError for r in found)
    assert any(r.raised.__name__ == "CurationError" for r in found)


def test_every_exception_class_is_of_the_family() -> None:
    outside = sorted(
        name for name, cls in defined_exceptions().items() if not issubclass(cls, hm.Error)
    )
    assert not outside, f"not hindsight_magic.Error subclasses: {outside}"


def test_every_error_is_exported_unless_it_never_leaves_the_package() -> None:
    defined = defined_exceptions()
    unexported = sorted(
        name
        for name, cls in defined.items()
        if getattr(hm, name, None) is not cls and name not in INTERNAL
    )
    assert not unexported, f"errors a user meets but cannot import from hm: {unexported}"
    assert set(INTERNAL) <= set(defined), "INTERNAL names a class that is gone"
    unhandled = sorted(set(INTERNAL) - handled_by_name())
    assert not unhandled, f"internal errors no module catches by name: {unhandled}"
    assert not set(INTERNAL) & set(hm.__all__)


def test_the_package_raises_its_own_errors_not_built_in_ones() -> None:
    stray = sorted(
        f"{r.module}:{r.line} raises {r.raised.__name__}"
        for r in raises()
        if r.raised.__module__ == "builtins" and (r.module, r.raised.__name__) not in BUILTIN_RAISES
    )
    assert not stray, stray


def test_no_handler_raises_a_second_error_of_the_class_it_caught() -> None:
    rewrapped = sorted(
        f"{r.module}:{r.line} catches and raises {r.raised.__name__}"
        for r in raises()
        if any(issubclass(c, hm.Error) and issubclass(r.raised, c) for c in r.caught)
    )
    assert not rewrapped, rewrapped
