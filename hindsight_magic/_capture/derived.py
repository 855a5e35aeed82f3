"""Telling a line a cell printed that was made from a text the extension showed.

A recalled text comes back into a cell's output in many shapes besides itself:
``r[0].text.upper()``, ``r[0].text.split()`` (IPython prints a long list one item to a line),
``sorted(set(words))``, ``Counter(words)``, ``" ".join(reversed(words))``, a pandas Series of the
texts (cut to 50 characters, line breaks shown as ``\\n``), ``json.dumps``, ``list(text)``. Every
shape is compared by the text's *words* (lower-cased; punctuation, quotes and the escapes a
``repr`` or a JSON dump writes ignored), three ways:

- **in sequence**: four-word shingles. A line long enough to have two shingles of its own is
  judged by them (half of them a shown text's); a shorter line, such as one item of a list
  printed one to a line, by the run it is part of across line breaks, when that run follows a
  shown text for ``SEQUENCE`` words or more, or holds the whole of a shorter one (a table's
  short header, the same as a recalled table's, stays above the re-run's new values);
- **as a bag** (a set, a sort, a count, a reversal): a run of words, each a word of one shown
  text (numbers in between, such as counts, do not break it), holding at least ``BAG_WORDS``
  of its distinct words and ``BAG_SHARE`` of them. Covering most of one text is what tells a
  bag of its words from a user's own line that shares a few of them; and a re-run's new
  numbers under a recalled table's labels stay, since the old numbers are part of that text's
  words and the new ones are not;
- **spelled out** (``list(text)``): ``SPELLED`` one-character words in a row that spell a
  stretch of a shown text.

A line is cut when at least half of its words are so marked (one of them a word, not a number,
unless the line has only numbers), and a line without words (``]``) with the cut lines around
it. Fingerprints are made on the worker, once per shown text; the kernel thread only keeps the
text's beginning.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from itertools import chain

SHINGLE = 4  # words in a run compared to tell a line derived from a shown text
SEQUENCE = 2 * SHINGLE  # words following a shown text in a row that judge a short line
BAG_WORDS = 8  # a bag of a shown text's words holds at least this many of its distinct words…
BAG_SHARE = 0.75  # …and this share of them
SPELLED = 12  # one-character words in a row compared to tell a text spelled out
SPELLED_RUN = re.compile(f"1{{{SPELLED},}}")  # such a run, in a line of words' shapes
WORDS = re.compile(r"[^\W_]+")
# what a repr or a JSON dump writes for a line break, a quote, a backslash or a character
ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[nrt'\"\\/])")


def words_of(text: str) -> list[str]:
    """``text``'s words, lower-cased, with punctuation, quotes and escapes ignored."""
    return WORDS.findall(ESCAPE.sub(" ", text).lower())


def shingles(words: list[str]) -> frozenset[tuple[str, ...]]:
    """The runs of ``SHINGLE`` consecutive ``words``."""
    return frozenset(zip(*(words[i:] for i in range(SHINGLE)), strict=False))


@dataclass(frozen=True)
class Fingerprint:
    """What one shown text is compared by: its words, their shingles, its distinct words, and
    its words run together (what it spells one character at a time)."""

    words: tuple[str, ...]
    shingles: frozenset[tuple[str, ...]]
    vocabulary: frozenset[str]
    spelled: str

    @classmethod
    def of(cls, text: str) -> Fingerprint:
        words = words_of(text)
        return cls(tuple(words), shingles(words), frozenset(words), "".join(words))


class Known:
    """The fingerprints of every shown text, joined to judge a cell's output in one pass."""

    def __init__(self, prints: list[Fingerprint]) -> None:
        self._prints = prints
        self._shingles: frozenset[tuple[str, ...]] = frozenset().union(
            *(p.shingles for p in prints)
        )
        holders: dict[str, list[int]] = {}
        for n, fingerprint in enumerate(prints):
            if len(fingerprint.vocabulary) >= BAG_WORDS:  # a smaller one: no telling a bag
                for word in fingerprint.vocabulary:
                    holders.setdefault(word, []).append(n)
        self._holders = holders
        # texts shorter than a run that judges (``The pump runs at 40 Hz.``), by their words
        self._short = {words for p in prints if len(words := p.words) < SEQUENCE}

    def derived(self, lines: list[str]) -> list[bool]:
        """For each of ``lines`` (a cell's output, in order), whether it was made from a
        shown text."""
        by_line = [words_of(line) for line in lines]
        stream = [word for words in by_line for word in words]
        in_sequence = self._in_sequence(stream)
        in_bag = self._in_bag(stream)
        self._spelled(stream, in_bag)
        verdicts = []
        start = 0
        for words in by_line:
            end = start + len(words)
            own = shingles(words)
            if len(own) >= 2:  # judged by its own shingles (or as part of a bag)
                cut = 2 * len(own & self._shingles) >= len(own)
                cut = cut or _mostly(words, in_bag[start:end])
            else:  # too short to judge alone: by the runs it is part of
                pairs = zip(in_sequence[start:end], in_bag[start:end], strict=True)
                marks = [a or b for a, b in pairs]
                cut = _mostly(words, marks)
            verdicts.append(cut)
            start = end
        return _with_what_lies_between(verdicts, [bool(words) for words in by_line])

    def _in_sequence(self, stream: list[str]) -> list[bool]:
        """Which words are part of a run of at least ``SEQUENCE`` words following a shown text,
        across line breaks (one shingle alone may be a table's labels above new values)."""
        marks = [False] * len(stream)
        known = self._shingles
        for i, window in enumerate(zip(*(stream[k:] for k in range(SHINGLE)), strict=False)):
            if window in known:
                marks[i : i + SHINGLE] = [True] * SHINGLE
        start = 0
        while start < len(marks):
            end = start
            while end < len(marks) and marks[end]:
                end += 1
            if start < end < start + SEQUENCE and not self._whole_text_in(stream[start:end]):
                marks[start:end] = [False] * (end - start)
            start = end + 1
        return marks

    def _whole_text_in(self, run: list[str]) -> bool:
        """Whether ``run`` holds the whole of a short shown text, in order."""
        return any(
            tuple(run[i : i + len(words)]) == words
            for words in self._short
            for i in range(len(run) - len(words) + 1)
        )

    def _in_bag(self, stream: list[str]) -> list[bool]:
        """Which words are part of a run of one shown text's words covering most of them."""
        marks = [False] * len(stream)
        held = self._bag_holders(set(stream))
        if not held:
            return marks
        runs: dict[int, list[int]] = {}  # text → [first, last] word of its current run
        previous = -1  # the last word that is not a number
        for i, word in enumerate(stream):
            if word.isdigit():  # a count or an index between a bag's words does not break it
                continue
            for n in held.get(word, ()):
                run = runs.get(n)
                if run is not None and run[1] == previous:
                    run[1] = i
                    continue
                if run is not None and run[1] - run[0] + 1 >= BAG_WORDS:
                    self._mark_bag(n, run, stream, marks)
                # from the numbers just before it (a sort puts the text's own first)
                runs[n] = [previous + 1, i]
            previous = i
        for n, run in runs.items():
            if run[1] - run[0] + 1 >= BAG_WORDS:
                self._mark_bag(n, run, stream, marks)
        return marks

    def _bag_holders(self, words: set[str]) -> dict[str, list[int]]:
        """For each of ``words``, the shown texts holding it, among those of which ``words``
        hold enough to be a bag at all (most often none: then there is nothing to walk)."""
        holders = self._holders
        counts = Counter(chain.from_iterable(holders[word] for word in words if word in holders))
        chosen = {
            n
            for n, count in counts.items()
            if count >= BAG_WORDS and count >= BAG_SHARE * len(self._prints[n].vocabulary)
        }
        if not chosen:
            return {}
        held = {word: [n for n in self._holders.get(word, ()) if n in chosen] for word in words}
        return {word: texts for word, texts in held.items() if texts}

    def _mark_bag(self, n: int, run: list[int], stream: list[str], marks: list[bool]) -> None:
        """Mark ``run`` when it holds enough of text ``n``'s distinct words to be a bag of them."""
        first, last = run
        vocabulary = self._prints[n].vocabulary
        found = len(vocabulary.intersection(stream[first : last + 1]))
        if found >= BAG_WORDS and found >= BAG_SHARE * len(vocabulary):
            marks[first : last + 1] = [True] * (last + 1 - first)

    def _spelled(self, stream: list[str], marks: list[bool]) -> None:
        """Mark runs of one-character words that spell a stretch of a shown text."""
        shape = "".join("1" if len(word) == 1 else "w" for word in stream)
        for run in SPELLED_RUN.finditer(shape):
            i, end = run.span()
            starts = list(range(i, end - SPELLED + 1, SPELLED))
            if starts and starts[-1] + SPELLED < end:
                starts.append(end - SPELLED)  # the run's tail too
            for start in starts:
                stretch = "".join(stream[start : start + SPELLED])
                if any(stretch in p.spelled for p in self._prints):
                    marks[start : start + SPELLED] = [True] * SPELLED


def _mostly(words: list[str], marks: list[bool]) -> bool:
    """Whether at least half of a line's ``words`` are marked, and one of them not a number
    (``rows: 3`` just before a bag of words keeps its number), unless the line has only
    numbers."""
    marked = [word for word, mark in zip(words, marks, strict=True) if mark]
    if 2 * len(marked) < len(words) or not marked:
        return False
    return not all(word.isdigit() for word in marked) or all(word.isdigit() for word in words)


def _with_what_lies_between(cut: list[bool], worded: list[bool]) -> list[bool]:
    """``cut``, and also the lines without a word (``' ',``, ``]``) inside a block of cut lines
    or after one at the end: what is left of a list once its items are cut."""
    verdicts = list(cut)
    before: bool | None = None  # the verdict on the last line with words, if any
    for n, has_words in enumerate(worded):
        if has_words:
            before = cut[n]
            continue
        after = next((cut[k] for k in range(n + 1, len(cut)) if worded[k]), None)
        verdicts[n] = bool(before) and after is not False
    return verdicts
