"""The entities a memory is about: what a person would name when asking about a cell.

Hindsight links memories through entities (its graph retrieval, ``%hindsight map``). A server
with an LLM extracts them itself; without one (the local server's default, which stores each
piece verbatim) it keeps only the entities a retain item carries, and a mock LLM "extracted"
the words of its own prompt (``Context``, ``Extract``, ``Date``, ``Thursday``). So every item
the extension writes carries its own:

- what the cell **names**: the functions and classes it defines, and the variables whose names
  say what they hold (read by Python's own parser, ``ast``, so a name in a string or a comment
  is not taken for one), and the data **files** it reads or writes (string literals that are
  file names);
- the **terms** a person capitalises in comments, printed notes and ``%retain`` text:
  ``Berkeley Lab``, ``AUC``, ``XGBoost``, ``PM2.5`` (``tokenize`` finds the comments and
  strings).

A variable counts by the same rule as a word of prose, where a lowercase word is never a term:
its name must be made of parts (``daily_trips``, ``MIN_TRIP_S``, ``userCount``). One lowercase
word (``weekly``, ``exceed``, ``trips``), with or without a number after it (``df2``), is a
throwaway name, as are the names library documentation gives its objects (``rng``, ``clf``,
``X_train``). A dictionary of English words would not do instead: none comes with the
extension's dependencies; the smallest well-kept one (pyspellchecker's) holds 30 MB in every
kernel once loaded, and knows neither ``rng`` nor ``preds`` nor ``agg``.

The notebook and the tags are not entities of each memory, though a person would name them:
each memory already carries them (metadata and tags; the timeline counts by notebook), and as
entities they tie every memory of a notebook to every other, so the server's graph retrieval
brought a notebook's unrelated cells into every recall (measured on the recall-quality
benchmark's sessions: 44 of 72 questions found in the top 5 without them, 38 with them).

Python's ``ast`` and ``tokenize`` are the well-kept parsers for code; for the prose around it a
named-entity model would need weights from a model hub, which the offline default cannot fetch,
so terms are read from their capitals, and words that only start a sentence or name a date are
left out. Runs on the worker thread (auto-retain) or once per ``%retain``; stdlib only.
"""

from __future__ import annotations

import ast
import io
import itertools
import re
import tokenize
from collections.abc import Iterable, Iterator

MAX_ENTITIES = 12  # per memory: the most telling first
MAX_NAME = 80
MAX_TEXT = 20_000  # of a long text, its beginning says what it is about

FILE_NAME = re.compile(
    r"[\w.-]*\w\.(?:csv|tsv|json|jsonl|parquet|feather|arrow|xlsx?|ods|txt|dat|h5|hdf5|nc|zarr"
    r"|zip|gz|bz2|pkl|pickle|joblib|sqlite3?|db|ya?ml|toml|ipynb|npy|npz|mat|fits|fasta|fa"
    r"|fastq|bam|sam|vcf|bed|xml|html|pdf|png|jpe?g|tiff?|wav|mp3|mp4)\b",
    re.IGNORECASE,
)
# ``Berkeley Lab``, ``Random Forest`` (Title Case runs); ``AUC``, ``QC2``, ``PM2.5``
# (acronyms, with a number whole); ``XGBoost``, ``PyTorch``, ``Q3``, ``V1.2`` (inner capitals,
# a letter and a number); ``order_id`` (a column or variable named in words); a capitalised
# word inside a sentence (``the Vostok cores``)
NUMBER = r"(?:[0-9]+(?:\.[0-9]+)*)"  # ``2``, ``2.5``, ``1.2.3``: not the full stop after it
TERM = re.compile(
    r"\b(?:[A-Z][a-z0-9]+(?:[ -](?:of |de |van |von )?[A-Z][A-Za-z0-9]+)+"
    rf"|[A-Z]{{2,}}{NUMBER}?s?|[A-Z][0-9]{{1,3}}(?:\.[0-9]+)*"
    r"|[A-Z]{2,}[a-z]+[A-Za-z0-9]*"
    r"|[A-Z]?[a-z]+[A-Z][A-Za-z0-9]*|[a-z][a-z0-9]*_[a-z0-9_]*[a-z0-9])\b"
    r"|(?<=[a-z0-9,;] )[A-Z][a-z]{2,}\b"
)
# words that only start a sentence, shout, or name a date: not what a memory is about
NOT_TERMS = frozenset(
    """a an the this that these those we our us i you it its they he she his her there here and
    or but if then so not no yes ok note notes todo fixme xxx hack warning error nb ps na nan
    none true false null id ids url api http https csv json sql utc gmt am pm etc eg ie vs
    redacted monday tuesday wednesday thursday friday saturday sunday january february march
    april may june july august september october november december today yesterday tomorrow
    date event context extract step part cell cells result output see use using drop keep check
    fix ask add remove filter load save run set compute make try do always never only please
    """.split()  # noqa: SIM905 (a list of words reads better as words)
)
# the names library documentation and tutorials give their objects (NumPy's ``rng``,
# scikit-learn's ``clf`` and ``X_train``), and the words any code uses for what it handles
GENERIC_NAMES = frozenset(
    """df data tmp temp res result results out output val value values idx key keys item items
    row rows col cols line lines text obj args kwargs self cls fig ax axes plt np pd sns ok err
    var vals arr mask count total name names path file files rng clf reg est model pipe
    x_train x_test x_val y_train y_test y_val y_pred y_proba y_true y_score""".split()  # noqa: SIM905
)
# string literals (f-strings are split into parts from Python 3.12)
WORDS_TOKENS = frozenset({tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)})


def entities_of(
    texts: Iterable[str] = (),
    code: str | None = None,
    within: str | None = None,
    known: Iterable[str] = (),
) -> tuple[str, ...]:
    """The entities of one memory, most telling first, at most ``MAX_ENTITIES``.

    ``code`` is a cell's source (names, files, and the terms of its comments and strings);
    ``texts`` are prose (a ``%retain`` text, a printed note, an error message; their first
    ``MAX_TEXT`` characters). With ``within`` (one piece of a longer cell), only the names and
    terms that piece mentions. ``known``: entities found before (a cell's, when it was run).
    """
    fixed = list(known)
    prose = [text[:MAX_TEXT] for text in texts]
    names: list[str] = []
    if code is not None:
        prose += list(_comments_and_strings(code))
        names = list(_defined_names(code))
    joined = "\n".join(prose)
    mentioned = [_file_name(match.group()) for match in FILE_NAME.finditer(joined)]
    mentioned += [*_terms(joined), *names]
    if within is not None:  # a piece of a longer cell: what it mentions
        mentioned = [name for name in mentioned if name in within]
    unique: dict[str, str] = {}  # casefolded → as first written
    for name in (*fixed, *mentioned):
        name = name.strip()[:MAX_NAME]
        if name:
            unique.setdefault(name.casefold(), name)
    return tuple(unique.values())[:MAX_ENTITIES]


def _file_name(path: str) -> str:
    return re.split(r"[\\/]", path.rstrip("/\\"))[-1] or path


def _terms(text: str) -> Iterator[str]:
    for match in TERM.finditer(text):
        words = match.group().split()
        while words and words[0].casefold() in NOT_TERMS:  # "The Berkeley Lab" → "Berkeley Lab"
            words.pop(0)
        term = " ".join(words)
        if term and term.casefold() not in NOT_TERMS and not FILE_NAME.fullmatch(term):
            yield term


def _comments_and_strings(code: str) -> Iterator[str]:
    """The text of ``code``'s comments and string literals (what a person wrote in words)."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.COMMENT:
                yield token.string.lstrip("#").strip()
            elif token.type in WORDS_TOKENS:
                yield token.string
    except (tokenize.TokenError, SyntaxError, IndentationError):
        yield from (line.split("#", 1)[1] for line in code.splitlines() if "#" in line)


def _defined_names(code: str) -> Iterator[str]:
    """Variables, functions and classes ``code`` defines (magics and shell lines left out)."""
    python = "\n".join(
        "" if line.lstrip().startswith(("%", "!")) else line for line in code.splitlines()
    )
    try:
        tree = ast.parse(python)
    except (SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined, candidates = True, [node.name]
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined, candidates = (
                False,
                [
                    name.id
                    for target in targets
                    for name in ast.walk(target)
                    if isinstance(name, ast.Name)
                ],
            )
        else:
            continue
        yield from (name for name in candidates if _names_a_thing(name, defined=defined))


def _names_a_thing(name: str, *, defined: bool) -> bool:
    """Whether ``name`` says what it holds: a function's or class's (``defined``) of three
    characters or more; a variable's when made of parts (``daily_trips``, ``MIN_TRIP_S``,
    ``userCount``, ``sensor_12``); never a private or generic one (``_cache``, ``df2``,
    ``rng``)."""
    core = name.rstrip("0123456789_")
    if len(core) < 3 or name.startswith("_") or core.casefold() in GENERIC_NAMES:
        return False
    if defined:
        return True
    parts = [part for part in name.split("_") if part]
    inner_capital = any(a.islower() and b.isupper() for a, b in itertools.pairwise(core))
    return len(parts) > 1 or core.isupper() or inner_capital
