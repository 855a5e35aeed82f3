"""Evidence: the local data files a cell read, recorded with its memory and checked when read.

A memory such as "Q3 revenue fell 4 %" rests on the file the cell read; when that file is
re-exported the memory no longer holds. So a cell's memory carries, in its metadata, the data
files its source names (``paths_in``: string literals passed to ``open``, ``pandas.read_*``,
``np.load``, ``Path(…)`` …, found by parsing the source with ``ast``, never by patching the
user's libraries), each as a ``Evidence``: its path relative to the project (never absolute:
a team bank would carry everyone's home folders), its size, modification time and a content
fingerprint.

**The fingerprint** (``fingerprint``) is taken on the worker, never in the post-cell hook. A
file up to ``evidence_hash_limit_mb`` is hashed whole (BLAKE2b: about 1 ms per MiB); a larger
one by its size and the hashes of its first and last ``ENDS`` bytes, which costs the same few
milliseconds for 100 MB or 1 TB. Re-exports change the size, the header or the last rows almost
always; an edit in the middle of a large file that keeps its size is the case it misses, and
its mtime still differs (the check then re-hashes the ends, sees them equal and says nothing:
the choice is to never cry wolf on a ``touch`` or a copy).

**The check** (``check``) stats each file first: the same size and mtime (to the nanosecond
the file system keeps) is the same file, no hash, as ``make`` and ``rsync`` judge it (a file
re-written to the same size within one tick of the file system's clock passes as unchanged);
only a changed stat is fingerprinted again, and a fingerprint is cached by (path, size,
mtime), so a recall shown many times hashes a changed file once. A memory recorded in another
project or on another machine (``root_id``) whose file is not here is "not checkable here",
not "gone".
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import socket
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .._enums import StrEnum
from .._machine import project_folder
from .identity import VERSION_CHARS
from .redact import redact

EVIDENCE = "evidence"  # metadata key: the files, as JSON
EVIDENCE_ROOT = "evidence_root"  # metadata key: which project on which machine recorded them
ENDS = 64 * 1024  # bytes hashed at each end of a file too large to hash whole
MAX_FILES = 8  # files recorded per memory: the metadata stays small
MAX_PATH = 300  # a longer literal is not a data file's name
DIGEST_BYTES = 8  # 64 bits: enough to tell versions of one file apart
WHOLE, ENDS_ONLY = "w", "e"  # how a digest was taken (its first letter)

# calls whose string arguments name a file the cell reads
READERS = frozenset(
    {
        "open",
        "Path",
        "PurePath",
        "load",
        "loadtxt",
        "genfromtxt",
        "fromfile",
        "memmap",
        "imread",
        "load_workbook",
        "open_dataset",
        "open_mfdataset",
        "File",
        "connect",
        "ExcelFile",
        "ParquetFile",
        "read_table",
    }
)
READER_PREFIXES = ("read_", "scan_", "load_")
MODE_KEYWORDS = frozenset({"mode"})  # ``open``'s: how the file is opened
PATH_CLASSES = frozenset({"Path", "PurePath"})  # pathlib's: ``Path("data") / "sales.csv"``
PATH_KEYWORDS = frozenset(
    {"path", "filepath_or_buffer", "fname", "file", "filename", "io", "source", "path_or_buf"}
)


class State(StrEnum):
    """What a recorded file is now."""

    SAME = "same"
    CHANGED = "changed"
    GONE = "gone"  # recorded in this project, and no longer here
    ELSEWHERE = "elsewhere"  # recorded in another project or machine, and not here


@dataclass(frozen=True)
class Evidence:
    """One data file a memory rests on, as it was when the cell ran."""

    path: str  # relative to the project, with forward slashes
    size: int
    mtime_ns: int  # its modification time (ns since the epoch)
    digest: str  # ``w…`` (whole file) or ``e…`` (size and ends); "" when not taken

    def row(self) -> list[object]:
        return [self.path, self.size, self.mtime_ns, self.digest]


@dataclass(frozen=True)
class Checked:
    """A recorded file as the check found it: its state, and when it was re-written."""

    evidence: Evidence
    state: State
    mtime: float | None = None  # the file's mtime now (changed files)


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _literal(node: ast.expr) -> str | None:
    """The path a node spells: a string, or ``Path("data") / "sales.csv"``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left, right = _literal(node.left), _literal(node.right)
        return f"{left}/{right}" if left is not None and right is not None else None
    if isinstance(node, ast.Call) and _name(node.func) in PATH_CLASSES and node.args:
        parts = [_literal(arg) for arg in node.args]
        return "/".join(p for p in parts if p is not None) if None not in parts else None
    return None


@functools.lru_cache(maxsize=256)
def paths_in(source: str) -> tuple[str, ...]:
    """The file names ``source`` passes to a reader (``open``, ``pd.read_csv``, ``np.load``,
    ``Path``, ``json.load(open(…))`` …), in order, once each; ``()`` when it does not parse
    (IPython's magics, a syntax error)."""
    if "(" not in source or ('"' not in source and "'" not in source):
        return ()
    tree = _parsed(source)
    if tree is None:
        return ()
    found: list[tuple[int, int, str]] = []
    inside: set[int] = set()  # ``Path("data")`` within ``Path("data") / "sales.csv"``
    for node in ast.walk(tree):  # breadth first: an outer ``/`` before its parts
        if isinstance(node, ast.BinOp) and id(node) not in inside:
            text = _literal(node)
            if text is not None and _starts_with_path(node):
                inside.update(id(part) for part in ast.walk(node))
                found.append((node.lineno, node.col_offset, text))
            continue
        if not isinstance(node, ast.Call) or id(node) in inside:
            continue
        name = _name(node.func)
        if (name not in READERS and not name.startswith(READER_PREFIXES)) or _writes(node):
            continue
        given = node.args[:1] + [k.value for k in node.keywords if k.arg in PATH_KEYWORDS]
        found += [(arg.lineno, arg.col_offset, text) for arg in given if (text := _literal(arg))]
    kept = (text for *_, text in sorted(found))
    return tuple(
        dict.fromkeys(t for t in kept if len(t) <= MAX_PATH and "\n" not in t and "\x00" not in t)
    )


def _writes(call: ast.Call) -> bool:
    """Whether ``call`` opens its file to write it (``open(p, "w")``, ``mode="a"``): what a
    cell writes is its output, not the data it rests on."""
    modes = [k.value for k in call.keywords if k.arg in MODE_KEYWORDS] + call.args[1:2]
    return any(
        isinstance(mode, ast.Constant)
        and isinstance(mode.value, str)
        and set("wax") & set(mode.value)
        for mode in modes
    )


def _parsed(source: str) -> ast.Module | None:
    """``source`` parsed; a cell with IPython's line magics or shell lines (``%retain …``,
    ``!ls``) parsed without them; None for what is not Python (a cell magic's body)."""
    for attempt in (source, None):
        if attempt is None:
            if source.lstrip().startswith("%%"):
                return None
            lines = source.split("\n")
            attempt = "\n".join("" if x.lstrip().startswith(("%", "!")) else x for x in lines)
        try:
            return ast.parse(attempt)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return None


def _starts_with_path(node: ast.expr) -> bool:
    while isinstance(node, ast.BinOp):
        node = node.left
    return isinstance(node, ast.Call) and _name(node.func) in PATH_CLASSES


def fingerprint(path: Path, size: int, whole_limit: int) -> str:
    """The file's content fingerprint: a hash of all of it up to ``whole_limit`` bytes, else
    of its first and last ``ENDS`` bytes (the size is compared beside it); "" if unreadable."""
    digest = hashlib.blake2b(digest_size=DIGEST_BYTES)
    try:
        with open(path, "rb") as file:
            if size <= whole_limit:
                for block in iter(lambda: file.read(1 << 20), b""):
                    digest.update(block)
                return WHOLE + digest.hexdigest()
            digest.update(file.read(ENDS))
            file.seek(max(ENDS, size - ENDS))
            digest.update(file.read(ENDS))
            return ENDS_ONLY + digest.hexdigest()
    except OSError:
        return ""


@functools.lru_cache(maxsize=16)
def root_id(root: str) -> str:
    """Which project on which machine: a short hash (the folder's path is never stored)."""
    mark = f"{socket.gethostname()}\x1f{root}".encode()
    return hashlib.blake2b(mark, digest_size=6).hexdigest()


def here() -> Path | None:
    """The project this process works in (the main checkout of its git repository, else the
    working folder), or None."""
    return _project(os.getcwd()) if _cwd_ok() else None


def _cwd_ok() -> bool:
    try:
        os.getcwd()
    except OSError:
        return False
    return True


@functools.lru_cache(maxsize=8)
def _project(cwd: str) -> Path | None:
    return project_folder(cwd)


def recorded(
    source: str,
    *,
    ran_at: float,
    whole_limit: int,
    secrets: Sequence[str] = (),
) -> tuple[list[Evidence], str]:
    """The files ``source`` read that are in this project, fingerprinted (worker thread), and
    the project's ``root_id``. A file written after the cell ran (``ran_at``) is recorded
    without a fingerprint, at that moment: the version the cell read is gone, so the check
    says it changed."""
    root = here()
    names = paths_in(source)
    if root is None or not names:
        return [], ""
    cwd = Path(os.getcwd())
    found: list[Evidence] = []
    for name in names:
        if len(found) >= MAX_FILES:
            break
        try:
            path = (cwd / Path(name).expanduser()).resolve()
            relative = path.relative_to(root).as_posix()
            stat = path.stat()
        except (OSError, ValueError, RuntimeError):
            continue  # outside the project, or not a file here
        if not path.is_file() or redact(relative, secrets) != relative:
            continue
        if any(e.path == relative for e in found):
            continue
        if stat.st_mtime > ran_at:
            found.append(Evidence(relative, stat.st_size, int(ran_at * 1e9), ""))
        else:
            digest = fingerprint(path, stat.st_size, whole_limit)
            found.append(Evidence(relative, stat.st_size, stat.st_mtime_ns, digest))
    return found, root_id(str(root)) if found else ""


def with_evidence(version: str, files: Sequence[Evidence]) -> str:
    """A cell's ``version`` (``identity.version_of``) joined with the fingerprints of the files
    it read: the same cell run again on changed data is a new version, sent to replace the
    memory that rests on the old data; run again on the same data (or a file only touched),
    the same version, so nothing is sent. Unchanged for a cell that read no file."""
    if not files:
        return version
    mark = "\x1f".join([version, *(f"{e.path}\x1e{e.size}\x1e{e.digest}" for e in files)])
    return hashlib.blake2b(mark.encode(), digest_size=VERSION_CHARS // 2).hexdigest()


def evidence_metadata(files: Sequence[Evidence], root: str) -> dict[str, str]:
    """The metadata keys that carry ``files`` (none when there are none)."""
    if not files:
        return {}
    rows = json.dumps([e.row() for e in files], separators=(",", ":"))
    return {EVIDENCE: rows, EVIDENCE_ROOT: root}


def parse_evidence(metadata: Mapping[str, object]) -> tuple[tuple[Evidence, ...], str]:
    """The files a memory's metadata records, and its ``root_id``; ``()`` for none or for
    metadata that is not this shape (someone else's). Metadata comes from the server: a path
    that would leave the project (absolute, ``..``) is dropped, and at most ``MAX_FILES`` are
    read, so a memory can never make a recall stat or hash what is not the project's."""
    text = metadata.get(EVIDENCE)
    if not isinstance(text, str) or not text.startswith("["):
        return (), ""
    try:
        rows = json.loads(text)
        files = tuple(
            Evidence(str(path), int(size), int(mtime_ns), str(digest))
            for path, size, mtime_ns, digest in rows[:MAX_FILES]
        )
    except (ValueError, TypeError):
        return (), ""
    files = tuple(e for e in files if _inside(e.path))
    return files, str(metadata.get(EVIDENCE_ROOT) or "")


def _inside(path: str) -> bool:
    """Whether ``path`` stays inside the folder it is relative to."""
    parts = PurePosixPath(path).parts
    return (
        bool(parts)
        and not path.startswith(("/", "\\", "~"))
        and ".." not in parts
        and (":" not in parts[0])
    )


_DIGESTS: dict[tuple[str, int, int, str], str] = {}
_DIGESTS_LOCK = threading.Lock()
MAX_CACHED = 1024


def _current_digest(path: Path, size: int, mtime_ns: int, kind: str) -> str:
    """The digest of ``path`` now, taken as the recorded one was (whole or ends), cached by
    its stat: a changed file is hashed once however often it is shown."""
    key = (str(path), size, mtime_ns, kind)
    with _DIGESTS_LOCK:
        known = _DIGESTS.get(key)
    if known is not None:
        return known
    digest = fingerprint(path, size, size if kind == WHOLE else size - 1)
    with _DIGESTS_LOCK:
        if len(_DIGESTS) >= MAX_CACHED:
            _DIGESTS.clear()
        _DIGESTS[key] = digest
    return digest


def check(files: Iterable[Evidence], recorded_root: str) -> list[Checked]:
    """What each recorded file is now, here: stat first, fingerprint only what changed."""
    root = here()
    home = root_id(str(root)) if root is not None else ""
    checked = []
    for evidence in files:
        path = root / evidence.path if root is not None else None
        try:
            stat = path.stat() if path is not None else None
        except OSError:
            stat = None
        if stat is None or not path or not path.is_file():
            state = State.GONE if recorded_root == home else State.ELSEWHERE
            checked.append(Checked(evidence, state))
            continue
        if stat.st_size == evidence.size and stat.st_mtime_ns == evidence.mtime_ns:
            checked.append(Checked(evidence, State.SAME))
            continue
        same = False
        if evidence.digest and stat.st_size == evidence.size:
            kind = evidence.digest[:1]
            now = _current_digest(path, stat.st_size, stat.st_mtime_ns, kind)
            same = now == evidence.digest
        checked.append(Checked(evidence, State.SAME if same else State.CHANGED, stat.st_mtime))
    return checked
