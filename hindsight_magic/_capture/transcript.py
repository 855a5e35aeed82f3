"""Cells → transcript text: skip rules, output capture, and keeping memory from feeding on itself.

The formatting functions are pure and run on the worker thread (never on the kernel's);
redaction is ``redact.py``.

**Memory never feeds on itself.** A cell that shows what the extension returned (``%recall``'s
table, ``hm.reflect(...)``'s answer, a status report, a variable holding a recall shown later)
would otherwise send it back to the server in the next transcript, so every recall would
re-retain what it found. Two marks keep it out, both set by the result classes themselves:

- ``OWN_RESULT``: a class attribute of every result type; a cell whose value is such an object
  keeps its source in the transcript but not that value;
- ``SHOWN``: the last texts those objects rendered as (``own_text``), so the same text printed
  with ``print`` or put in an f-string is cut out of the cell's printed output and value; and
  so is a line *derived* from them (``r[0].text.upper()``, ``r[0].text.split()``,
  ``sorted(set(words))``, a pandas Series of the texts …): ``derived.py`` tells them by their
  words. What they are compared by is made on the worker, when a transcript is built; the
  kernel thread only keeps the text's beginning.

And the ``<memories>``/``<mental_models>`` blocks of ``%hindsight context`` and ``as_context()``
are stripped wherever they appear, as the reference system strips them on the way in.
"""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .._machine import EMBEDDED_CHARS
from .._settings import RetainOutputs
from .._text import BLOCK_NAMES
from .derived import WORDS, Fingerprint, Known
from .redact import redact

SKIP_MARKER = re.compile(r"^\s*#\s*hindsight\s*:\s*skip\b", re.IGNORECASE)
OWN_MAGIC = re.compile(
    r"^\s*(?:[A-Za-z_][\w.]*\s*=\s*)?%{1,2}(?:retain|recall|reflect|hindsight)\b"
    r"|^\s*%(?:load_ext|reload_ext|unload_ext)\s+hindsight_magic\s*$"
)
_NAMES = "|".join(BLOCK_NAMES)  # the blocks' names, as _text escapes them in every prompt
MEMORY_TAGS = re.compile(rf"<\s*({_NAMES})\b[^<>]*>.*?<\s*/\s*\1\s*>", re.DOTALL | re.IGNORECASE)
# what a cell printed may hold a block cut short (``r.as_context()[:300]``): to the end
OPEN_MEMORY_TAG = re.compile(rf"<\s*({_NAMES})\b[^<>]*>.*", re.DOTALL | re.IGNORECASE)
HAS_WORD = re.compile(r"[^\W_]")
SOURCE_CAP = 4000
RESULT_CAP = 1000
ERROR_CAP = 500
STREAM_CAP = 1000
MIN_TRANSCRIPT_CHARS = 10
PIECE_CHARS = EMBEDDED_CHARS  # what the embedding model reads whole: see ``cell_pieces``


OWN_RESULT = "_hindsight_result_"  # a class attribute: True on every result type of ours
SHOWN_TEXTS = 256  # how many rendered texts are remembered (a recall brings dozens) …
SHOWN_HEAD = 4096  # … by their beginning and length (a recall may be megabytes)


def is_own_result(value: Any) -> bool:
    """Whether ``value`` is one of the extension's own result objects."""
    return getattr(type(value), OWN_RESULT, False) is True


class ShownTexts:
    """The last texts the extension's results rendered as, to cut out of a cell's outputs.

    ``add`` runs on the kernel thread when a result renders (O(1)); ``strip`` on the worker.
    """

    def __init__(self, size: int = SHOWN_TEXTS, head: int = SHOWN_HEAD) -> None:
        self._texts: deque[tuple[str, int]] = deque(maxlen=size)  # (beginning, length)
        self._head = head
        self._lock = threading.Lock()
        self._prints: dict[str, Fingerprint] = {}  # the worker's cache, by head
        self._known: tuple[list[str], Known] = ([], Known([]))

    def add(self, text: str) -> None:
        """Remember ``text`` (only its beginning and length are kept)."""
        if len(text.strip()) >= MIN_TRANSCRIPT_CHARS:
            with self._lock:
                self._texts.append((text[: self._head], len(text)))

    def strip(self, text: str) -> str:
        """``text`` without any remembered text in it, nor a line derived from one."""
        with self._lock:
            shown = list(self._texts)
        for head, length in reversed(shown):
            start = text.find(head)
            while start >= 0:
                text = text[:start] + text[start + length :]
                start = text.find(head)
        if not shown or not WORDS.search(text):
            return text
        lines = text.split("\n")
        derived = self._joined([head for head, _ in shown]).derived(lines)
        return "\n".join(line for line, cut in zip(lines, derived, strict=True) if not cut)

    def _joined(self, heads: list[str]) -> Known:
        """The remembered texts' fingerprints: each text's made once, and joined again only
        when what is remembered changed (a recall), not for each cell."""
        if heads == self._known[0]:
            return self._known[1]
        prints = {head: self._prints.get(head) or Fingerprint.of(head) for head in heads}
        self._prints = prints  # only what is still remembered
        self._known = (heads, Known(list(prints.values())))
        return self._known[1]


SHOWN = ShownTexts()


def own_text(text: str) -> str:
    """``text``, remembered as the rendering of one of the extension's results (see above)."""
    SHOWN.add(text)
    return text


def is_skipped(source: str) -> bool:
    """Empty cells, ``# hindsight: skip`` cells and cells that only run this extension's magics."""
    lines = [line for line in source.splitlines() if line.strip()]
    if not lines:
        return True
    first = lines[0]
    if SKIP_MARKER.match(first):
        return True
    if first.lstrip().startswith("%%") and OWN_MAGIC.match(first):
        return True  # a cell magic of ours owns the whole cell
    ours = [line for line in lines if OWN_MAGIC.match(line)]
    comments = [line for line in lines if line.lstrip().startswith("#")]
    return bool(ours) and len(ours) + len(comments) == len(lines)


def without_own_magics(source: str) -> str:
    """``source`` without the lines that run this extension's line magics.

    A cell mixing them with code keeps its code: a ``%retain`` line is already its own memory,
    and a ``%recall``/``%reflect`` line is a question asked, not something decided; kept, it
    would be what the same question finds first the next time, above the answer.
    """
    if "%" not in source:
        return source
    return "\n".join(line for line in source.split("\n") if not OWN_MAGIC.match(line))


def cap(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with a visible marker."""
    if len(text) <= limit:
        return text
    return text[:limit].rstrip() + f" …[{len(text) - limit} more characters]"


def strip_memory_tags(text: str, output: bool = False) -> str:
    """Remove recalled ``<memories>``/``<mental_models>`` blocks (any case) so they never feed
    back; in what a cell printed or returned (``output``), also one left open, to the end."""
    text = MEMORY_TAGS.sub("", text)
    return OPEN_MEMORY_TAG.sub("", text) if output else text


@dataclass(frozen=True)
class CellText:
    """What a cell contributes: its source and (per ``retain_outputs``) output texts."""

    number: int
    source: str
    result: str | None = None
    error: str | None = None
    stdout: str | None = None
    # the same cell cleaned without cutting out the texts the extension showed, when that cut
    # took something out (``clean_cell``): what the cell's version is taken from, since what
    # is cut depends on what was recalled before the cell ran, not on the cell
    as_shown: CellText | None = None


def _clean(text: str | None, limit: int, secrets: Iterable[str], output: bool = True) -> str:
    if not text:
        return ""
    if output:  # what a cell printed or returned may hold a result of ours
        text = SHOWN.strip(text)
    return _tidy(text, limit, secrets, output)


def _tidy(text: str, limit: int, secrets: Iterable[str], output: bool) -> str:
    text = redact(strip_memory_tags(text, output), secrets).strip()  # before a cap cuts a secret
    return cap(text, limit) if HAS_WORD.search(text) else ""


def _clean_output(text: str | None, limit: int, secrets: list[str]) -> tuple[str, str | None]:
    """An output ``_clean``-ed, and (when cutting the shown texts out took something out) the
    same output cleaned without that cut."""
    if not text:
        return "", None
    cut = SHOWN.strip(text)
    whole = _tidy(text, limit, secrets, output=True) if cut != text else None
    return _tidy(cut, limit, secrets, output=True), whole


def clean_cell(
    cell: CellText, outputs: RetainOutputs = RetainOutputs.RESULT, secrets: Iterable[str] = ()
) -> CellText | None:
    """The parts of ``cell`` that are retained (per ``outputs``: none|result|all; its source
    without the lines running this extension's magics), each redacted (``secrets`` plus
    credential shapes) before it is capped; None when its source has nothing worth keeping.
    Its ``as_shown`` is the same cell without the texts the extension showed cut out of its
    outputs, when that cut took something out."""
    secrets = list(secrets)
    source = _clean(without_own_magics(cell.source), SOURCE_CAP, secrets, output=False)
    if not source:
        return None
    kept: list[tuple[str | None, str | None]] = [(None, None)] * 3  # result, error, stdout
    if outputs in (RetainOutputs.RESULT, RetainOutputs.ALL):
        kept[0] = _clean_output(cell.result, RESULT_CAP, secrets)
        kept[1] = _clean_output(cell.error, ERROR_CAP, secrets)
    if outputs == RetainOutputs.ALL:
        kept[2] = _clean_output(cell.stdout, STREAM_CAP, secrets)
    result, error, stdout = (text or None for text, _ in kept)
    as_shown = None
    if any(whole is not None for _, whole in kept):
        shown_as = [(whole if whole is not None else text) or None for text, whole in kept]
        as_shown = CellText(cell.number, source, shown_as[0], shown_as[1], shown_as[2])
    return CellText(cell.number, source, result, error, stdout, as_shown)


def _body(cell: CellText) -> str:
    parts = [cell.source]
    for label, text in (("result", cell.result), ("error", cell.error), ("output", cell.stdout)):
        if text:
            parts += [f"[{label}]", text]
    return "\n".join(parts)


def format_cell(
    cell: CellText, outputs: RetainOutputs = RetainOutputs.RESULT, secrets: Iterable[str] = ()
) -> str:
    """``[cell N]``, the source, and the outputs allowed by ``outputs`` (none|result|all).

    Every part is redacted (``secrets`` plus credential shapes) before it is capped.
    """
    cleaned = clean_cell(cell, outputs, secrets)
    return f"[cell {cleaned.number}]\n{_body(cleaned)}" if cleaned else ""


def cell_pieces(cell: CellText, limit: int = PIECE_CHARS) -> list[str]:
    """A (cleaned) cell as the memories it becomes: one ``[cell N]`` piece when it fits in
    ``limit`` characters, else ``[cell N, part K of M]`` pieces cut at line boundaries (a
    line longer than a piece at a space).

    ``limit`` is what the embedding model reads whole: the local server's all-MiniLM-L6-v2
    reads 256 word pieces and ignores the rest, and code runs 2.4-3.4 characters to a word
    piece; a memory longer than that would be found only by its beginning.
    """
    body = _body(cell)
    header = f"[cell {cell.number}]"
    if len(header) + 1 + len(body) <= limit:
        return [f"{header}\n{body}"]
    room = max(limit - len(f"[cell {cell.number}, part 999 of 999]") - 1, 40)
    chunks = split_lines(body, room)
    return [
        f"[cell {cell.number}, part {n} of {len(chunks)}]\n{chunk}"
        for n, chunk in enumerate(chunks, 1)
    ]


def split_lines(text: str, room: int) -> list[str]:
    """``text`` in chunks of at most ``room`` characters, cut between lines where it can."""
    chunks: list[str] = []
    current = ""
    for line in text.splitlines():
        while len(line) > room:  # one line longer than a chunk: cut it at a space
            cut = line.rfind(" ", room // 2, room)
            cut = cut if cut > 0 else room
            if current:
                chunks.append(current)
                current = ""
            chunks.append(line[:cut].rstrip())
            line = line[cut:].lstrip()
        joined = f"{current}\n{line}" if current else line
        if len(joined) <= room:
            current = joined
        else:
            chunks.append(current)
            current = line
    if current.strip():
        chunks.append(current)
    return [chunk for chunk in chunks if chunk.strip()]


def pack_pieces(
    cells: Iterable[tuple[int, list[str]]], limit: int = PIECE_CHARS
) -> list[tuple[tuple[int, ...], str]]:
    """Consecutive cells' pieces packed into memories of at most ``limit`` characters (the
    window of ``last-cells`` mode): whole small cells share one, a cut cell's parts stay
    apart. Each memory with the cells it holds."""
    packed: list[tuple[tuple[int, ...], str]] = []
    numbers: list[int] = []
    text = ""
    for number, pieces in cells:
        if len(pieces) == 1 and len(text) + 2 + len(pieces[0]) <= limit:
            text = f"{text}\n\n{pieces[0]}" if text else pieces[0]
            numbers.append(number)
            continue
        if text:
            packed.append((tuple(numbers), text))
        numbers, text = [], ""
        if len(pieces) == 1:
            numbers, text = [number], pieces[0]
        else:
            packed += [((number,), piece) for piece in pieces]
    if text:
        packed.append((tuple(numbers), text))
    return packed


_CELL_HEADER = re.compile(r"^\[cell (\d+)(?:, part \d+ of \d+)?\]$", re.MULTILINE)


def count_cells(transcripts: Iterable[str]) -> int:
    """How many cells some transcript pieces hold (a cell cut in parts counts once)."""
    return len({number for text in transcripts for number in _CELL_HEADER.findall(text)})
