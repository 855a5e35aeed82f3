"""Generated damage (Hypothesis): what a dead kernel left on disk, with bytes changed, zeroed,
cut or added, as a failing disk or an interrupted copy leaves files.

The next kernel takes in a dead kernel's spool (``spool.py``) and journal rows
(``journal_file.py``). For any damage it must not raise, must send no memory twice, must send
once every memory whose bytes the damage did not reach, and must lose none silently: every
memory of the dead kernel is sent (perhaps altered: neither file carries checksums) or a line
says that something could not be read and where the damaged file is kept.

Cases that once failed are kept as ``@example``s, so every run replays them first.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from helpers import BatchRecorder, FakeClock, budget, delivery, item
from hypothesis import example, given
from hypothesis import strategies as st

from hindsight_magic._delivery.items import Route
from hindsight_magic._delivery.journal import open_journal
from hindsight_magic._delivery.journal_file import JournalFile
from hindsight_magic._delivery.queue import RetainQueue

A = Route("bank-a", ("project:a",))

# One change to a file: its kind, where (taken modulo the bytes that were written), and what.
Damage = tuple[str, int, bytes]
DAMAGE = st.lists(
    st.one_of(
        st.tuples(st.just("flip"), st.integers(0, 1 << 20), st.binary(min_size=1, max_size=8)),
        st.tuples(st.just("zero"), st.integers(0, 1 << 20), st.binary(min_size=1, max_size=64)),
        st.tuples(st.just("insert"), st.integers(0, 1 << 20), st.binary(min_size=1, max_size=16)),
        st.tuples(st.just("cut"), st.integers(0, 1 << 20), st.just(b"")),
    ),
    min_size=1,
    max_size=3,
)
# memory texts: any characters (lone surrogates and NUL included), some long
TEXTS = st.lists(
    st.text(st.characters(exclude_categories=()), max_size=300), min_size=1, max_size=12
)


def damaged(data: bytes, changes: Sequence[Damage], span: int) -> tuple[bytes, int]:
    """``data`` with ``changes`` made within its first ``span`` bytes (plus a little after), and
    the first offset they reached: the bytes before it are unchanged."""
    out, first = bytearray(data), len(data)
    for kind, where, what in changes:
        at = where % (min(span, len(out)) + 16)
        if kind == "flip":  # xor: every byte given changes
            for i, byte in enumerate(what[: max(0, len(out) - at)]):
                out[at + i] ^= byte or 0x20
        elif kind == "zero":
            out[at : at + len(what)] = bytes(len(out[at : at + len(what)]))
        elif kind == "insert":
            out[at:at] = what
        else:
            del out[at:]
    # the first byte that differs: two flips of the same byte cancel out and reach nothing
    pairs = enumerate(zip(data, out, strict=False))
    first = next((i for i, (a, b) in pairs if a != b), min(first, len(out)))
    return bytes(out), first


@contextlib.contextmanager
def scratch_journal(factory: pytest.TempPathFactory, name: str) -> Iterator[Path]:
    """A journal path in a folder of its own, removed after the case: every spool reserves
    1 MB, and a run makes hundreds of cases."""
    folder = factory.mktemp(name)
    try:
        yield folder / "journal.sqlite3"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def cut_short(changes: Sequence[Damage]) -> bool:
    return any(kind == "cut" for kind, _, _ in changes)


def unique(texts: list[str]) -> list[str]:
    """The texts made distinct, so a memory sent twice cannot hide behind an equal one."""
    return [f"memory {n}: {text}" for n, text in enumerate(texts)]


def next_kernel(path: Path) -> tuple[list[str], list[str]]:
    """What a new kernel on ``path`` sends of what the dead one left, and the lines it says."""
    journal, line = open_journal(str(path))
    sender, lines, clock = BatchRecorder(), [line] if line else [], FakeClock()
    queue, worker = delivery(sender, journal, on_notice=lines.append, clock=clock)
    queue.recover()
    for _ in range(50):  # until nothing is left: recovered rows load in chunks, and damage
        clock.advance(60)  # found while reading is dealt with by the worker's next try
        queue.request_flush()
        worker.pump()
        if not queue.stats().pending and not queue.stats().journal_problem:
            break
    queue.close()
    return sender.texts(), lines


def check_nothing_doubled_or_lost_silently(
    texts: list[str], sent: list[str], lines: list[str], unseen: bool
) -> None:
    """``sent`` has no memory twice, and every memory of ``texts`` is in it (perhaps altered)
    or one of ``lines`` says something could not be read. Damage that is ``unseen`` may lose
    memories without a word: a file cut short reads as one whose kernel died sooner, a spool
    damaged only in its last line as one whose kernel died while writing that line (the
    ``%retain`` never returned)."""
    doubled = [text for text, count in Counter(sent).items() if count > 1]
    assert not doubled, doubled
    assert len(sent) <= len(texts)
    for line in lines:
        assert "\n" not in line, line
        assert line.strip()
    lost = set(texts) - set(sent)
    altered = set(sent) - set(texts)  # damage that left valid JSON: undetectable, still sent
    if len(lost) > len(altered) and not unseen:
        assert lines, f"{len(lost)} memories lost and nobody told: {sorted(lost)[:3]}"


def spooled_by_a_dead_kernel(path: Path, texts: list[str]) -> tuple[Path, bytes]:
    """A journal whose owner died with ``texts`` in its spool, not taken in yet."""
    dead = JournalFile(path)
    queue = RetainQueue(dead)
    for text in texts:
        queue.enqueue(A, item(text))
    [spool] = path.parent.glob(f"{path.name}.spool-*")
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("update owners set pid = 999999999")  # its process is gone
    return spool, spool.read_bytes()


@budget(150)
@given(texts=TEXTS, changes=DAMAGE)
@example(texts=["a", "b", "c"], changes=[("zero", 3, b"\0")])  # once lost every line after it
@example(texts=["a", "b"], changes=[("flip", 5, b"\x01")])  # once dropped without a word
@example(  # two flips of the first byte cancel out: only the last line was reached
    texts=["0\x1f\x1f\x1f\x1f\x1f\x0b\x07\U00010000"] * 3,
    changes=[("flip", 0, b"\x00"), ("flip", 0, b"\x00"), ("flip", 497, b"\x00")],
)
def test_any_damage_to_a_dead_kernels_spool(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str], changes: list[Damage]
) -> None:
    with scratch_journal(tmp_path_factory, "spool") as path:
        texts = unique(texts)
        spool, data = spooled_by_a_dead_kernel(path, texts)
        written = len(data.rstrip(b"\0"))
        bad, first = damaged(data, changes, written)
        spool.write_bytes(bad)

        sent, lines = next_kernel(path)

        intact = []  # the lines wholly before the first change
        end = 0
        for text, line in zip(texts, data[:written].split(b"\n")[:-1], strict=True):
            last_start, end = end, end + len(line) + 1
            if end <= first:
                intact.append(text)
        assert set(intact) <= set(sent), "a memory the damage did not reach was not sent"
        torn = first >= last_start  # only the last line (or the space after it) was reached
        check_nothing_doubled_or_lost_silently(texts, sent, lines, cut_short(changes) or torn)
        told = [line for line in lines if "could not be read" in line]
        if told:  # the damaged file is kept, as it was, where the line says
            kept = Path(told[0].rsplit("kept in ", 1)[1].rstrip("."))
            assert kept.read_bytes() == bad
            assert not spool.exists()


def left_in_the_journal(path: Path, texts: list[str]) -> bytes:
    """A journal file holding ``texts`` as rows of an owner that is gone; its bytes."""
    dead = JournalFile(path)
    queue = RetainQueue(dead)
    for text in texts:
        queue.enqueue(A, item(text))
    dead.close()  # the last connection: everything is in the main file, the owner gone
    return path.read_bytes()


def sqlite_sees_damage(scratch: Path, data: bytes) -> bool:
    """Whether SQLite's own check of a file holding ``data`` finds damage (on a copy)."""
    scratch.write_bytes(data)
    try:
        with contextlib.closing(sqlite3.connect(scratch)) as db:
            return bool(db.execute("pragma quick_check(1)").fetchone()[0] != "ok")
    except (sqlite3.DatabaseError, UnicodeDecodeError):
        return True
    finally:
        scratch.unlink()


@budget(150)
@given(texts=TEXTS, changes=DAMAGE)
@example(texts=[""], changes=[("flip", 4096, b"\0")])  # damage found after opening: retried
@example(texts=[""], changes=[("zero", 103, b"\0\0")])  # once read as an empty journal
@example(texts=[""], changes=[("insert", 3949, b"'")])  # once a line quoting the schema's lines
def test_any_damage_to_a_journal_file(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str], changes: list[Damage]
) -> None:
    with scratch_journal(tmp_path_factory, "journal") as path:
        texts = unique(texts)
        data = left_in_the_journal(path, texts)
        bad, _ = damaged(data, changes, len(data))
        path.write_bytes(bad)
        seen = sqlite_sees_damage(path.with_name("copy.sqlite3"), bad)

        sent, lines = next_kernel(path)

        # SQLite keeps no checksum of a row: damage inside one that leaves the file sound to its
        # own check (a spool's name, a row's text) is as unseen as a cut
        check_nothing_doubled_or_lost_silently(texts, sent, lines, not seen)
