"""The lines of a recalled memory that answer the query: what a recall shows of a long memory.

An auto-retained memory is a notebook cell (its source, its result or error), up to a few
hundred characters over many lines. A recall that showed each one whole made the user scan a
page of code for the line that answers; so a multi-line memory is shown by its best lines: the
line sharing the most words with the query (a word matches when the two share their first
``STEM`` letters, so ``outliers`` finds ``outlier`` and ``temperatures`` ``temperature``), with
the line before and after it, cut to ``EXCERPT_CHARS``. When no line shares a word (the query
is a paraphrase the server matched by meaning), the memory's first lines are shown. The full
text stays on the memory (``.text``) and one click away in notebooks.

Bookkeeping lines (``[cell 14]``, ``[result]``) never count as a match; the cell's number is in
the provenance shown beside the excerpt.

**What carries nothing.** Some cells hold nothing a question could be about: only import lines
(``import numpy as np``), or only values (``r-03 11.532819``, the second part of a long printed
table cut to the embedding window). Their similarity to a question is as high as a decision's
on a small bank, so they filled the top 5 (``carries_nothing`` tells them, and the ranking
weighs them down). A line with a word of its own, a comment or a name, carries something.

**What states something** (``says_in_words``, ``huge_value``): what a mental model lists when
no LLM summarizes (``mental_models.listed``) must be a statement, not a cell: a comment or a
printed sentence that is not a plan; never a bare ``print``, a value shown or a huge one.
Stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

EXCERPT_CHARS = 240
CONTEXT_LINES = 1  # lines shown before and after the best one
STEM = 5
BLANK = " \t"
MIN_WORD = 3
WORD = re.compile(r"[^\W_]+", re.UNICODE)
MARKER = re.compile(r"^\[(?:cell \d+(?:, part \d+ of \d+)?|result|error|output)\]$")
QUIET_WORDS = frozenset(
    """the and for are was were what which when where who why how did does do our we you
    that this these those with from into about have has had not any all can could should would
    there their then than them they its it's""".split()  # noqa: SIM905 (words read as words)
)


# whole lines, without a comment (a comment may say why): an import, the first line of one in
# parentheses, the names inside them, and the set-up magics that go with imports
_NAMES = r"[\w.]+(?:\s+as\s+\w+)?(?:\s*,\s*[\w.]+(?:\s+as\s+\w+)?)*"
IMPORT = re.compile(
    rf"(?:from\s+[\w.]+\s+)?import\s+{_NAMES}|%(?:matplotlib|load_ext|autoreload)\b[\w .-]*"
)
IMPORT_OPEN = re.compile(r"from\s+[\w.]+\s+import\s*\(")
IMPORT_INSIDE = re.compile(rf"(?:{_NAMES})?\s*,?\s*\)?")
NAMED = re.compile(r"[^\W\d_]{3,}")  # a word of three letters or more
REPR_WORDS = frozenset(
    """array dtype float int uint bool object complex name length rows columns none true false
    nan nat inf timestamp tensor series dataframe index""".split()  # noqa: SIM905 (words)
)  # what a printed value is wrapped in (``array([…])``, ``Name: x, dtype: float64``)


def carries_nothing(text: str) -> bool:
    """Whether every line of ``text`` (bookkeeping lines aside) is an import or a bare value,
    with no word of its own: nothing a question could be about (see the module's docstring)."""
    importing = False  # inside ``from x import (`` … ``)``
    for line in text.split("\n"):
        line = line.strip()
        if importing and IMPORT_INSIDE.fullmatch(line):
            importing = not line.endswith(")")
            continue
        importing = bool(IMPORT_OPEN.fullmatch(line))
        if importing or not line or MARKER.match(line) or IMPORT.fullmatch(line):
            continue
        if any(word.casefold() not in REPR_WORDS for word in NAMED.findall(line)):
            return False
    return True


BLOB = re.compile(r"\S{200,}")  # a value, not words: a long string, a number's digits, base64
COMMENT = re.compile(r"(?:^|\s)#+\s*(.*)$")
PRINTED = re.compile(r"^\[output\]$")  # what follows: the cell's printed lines
PLAN = re.compile(
    r"\b(?:todo|fixme|tbd|wip|plans?|planned|next|later|maybe|perhaps|try|trying|idea|ideas)\b",
    re.IGNORECASE,
)
STATED_WORDS = 3  # a comment or printed line of this many words or more says something


def huge_value(text: str) -> bool:
    """Whether ``text`` holds a huge value: a run of 200 characters without a space (a long
    string shown, a blob), or only a part of a cell too long to embed whole."""
    return bool(BLOB.search(text)) or bool(re.search(r"^\[cell \d+, part ", text, re.MULTILINE))


def says_in_words(text: str) -> bool:
    """Whether a cell (a transcript: ``[cell N]``, its source, ``[output]`` …) states something
    in words: a comment in its source, or a line it printed, of ``STATED_WORDS`` words or more
    that is neither a plan (``todo``, ``next``, ``try`` …) nor a question. A bare ``print``,
    an import, a value shown (``[result]``) or an error say nothing of the project."""
    if carries_nothing(text):
        return False
    source, printed = True, False  # in the cell's source; in what it printed
    for line in text.split("\n"):
        line = line.strip(BLANK)
        if MARKER.match(line):
            source, printed = line.startswith("[cell"), bool(PRINTED.match(line))
            continue
        if source:
            comment = COMMENT.search(line)
            words = comment.group(1) if comment else ""
        else:
            words = line if printed else ""
        said = len(NAMED.findall(words)) >= STATED_WORDS
        if said and not PLAN.search(words) and not words.rstrip().endswith("?"):
            return True
    return False


@dataclass(frozen=True)
class Excerpt:
    """What is shown of a memory: ``lines`` of it, and whether any were left out."""

    lines: tuple[str, ...]
    cut: bool  # False: the lines are the whole memory

    def one_line(self, joiner: str = " ⏎ ") -> str:
        """The lines on one line (``…`` where text was left out)."""
        text = joiner.join(self.lines)
        return f"{text} …" if self.cut else text


def _stems(text: str) -> set[str]:
    words = (w.casefold() for w in WORD.findall(text))
    return {w[:STEM] for w in words if len(w) >= MIN_WORD and w not in QUIET_WORDS}


def excerpt(text: str, query: str = "", limit: int = EXCERPT_CHARS) -> Excerpt:
    """The lines of ``text`` that best answer ``query`` (see the module's docstring)."""
    # only spaces and tabs are trimmed, only \n breaks lines: a carriage return or a control
    # character is part of the text, which each output form shows escaped
    lines = [line.strip(BLANK) for line in text.split("\n") if line.strip(BLANK)]
    if len(lines) <= 1 and len(text) <= limit:
        return Excerpt(tuple(lines), cut=False)
    content = [n for n, line in enumerate(lines) if not MARKER.match(line)]
    if not content:
        return Excerpt(tuple(lines[:1]), cut=len(lines) > 1)
    wanted = _stems(query)
    scores = {n: len(_stems(lines[n]) & wanted) for n in content} if wanted else {}
    best = max(content, key=lambda n: (scores.get(n, 0), -n))
    if not scores.get(best):
        best = content[0]
    window = [n for n in content if abs(n - best) <= CONTEXT_LINES]
    while len(window) > 1 and sum(len(lines[n]) for n in window) > limit:
        window.remove(max(window, key=lambda n: (abs(n - best), n)))  # the farthest goes
    shown = [lines[n] for n in window]
    truncated = len(shown[0]) > limit
    if truncated:
        shown[0] = shown[0][: limit - 1].rstrip(BLANK) + "…"
    return Excerpt(tuple(shown), cut=truncated or window != list(range(len(lines))))
