"""Layers: a recall over three layers vs. a recall of one bank holding the same memories.

The same ``memories`` sentences (one finding per study and topic, so each question has one
answer) are retained synchronously into one bank, and split three ways (every third one) into
three banks. One session reads the single bank; the other reads the first of the three as its
own bank with the other two as layers (``HINDSIGHT_LAYERS``). For each question (the study and
topic of one memory, in other words than the memory's), the two recalls take turns, the order
rotating, ``rounds`` times over the questions; each call is ``hm.recall`` timed whole.

Reported: both medians and their ratio (issue 35's bar: three layers ≤ 1.3× one bank); the
merge's own time (the joined pools ranked and cut, timed alone on each layered recall's
pools; bar ≤ 5 ms); and how often each finds the question's memory in its top 5 (the merge
must not lose what one bank finds).

Run alone: ``python -m bench.layers [--memories N] [--rounds N]``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import itertools
import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .common import Stat, bench_server, delete_bank, new_bank, progress, raw_client, settle_bank
from .report import Row, Section, num, stat_row

RATIO_BAR = 1.3
WAYS = ("one", "three", "raw one", "raw three")  # taking turns, the order rotating
# the body the extension sends a bank, by hand (its defaults: max_tokens widened twice)
RAW_BODY = {
    "budget": "mid",
    "max_tokens": 2048,
    "types": ["world", "experience"],
    "include": {"entities": None},
    "min_scores": {"semantic": 0.0},
}
MERGE_BAR_MS = 5.0
TOP = 5
STUDIES = (
    "churn", "retention", "pricing", "onboarding", "fraud", "latency", "sensor drift",
    "survey", "enzyme", "soil moisture", "bike sharing", "air quality", "grading", "attendance",
    "dropout", "forecast", "inventory", "recruitment", "vaccination", "traffic",
)  # fmt: skip
TOPICS = (
    ("outliers", "the outliers came from a logging bug and were dropped"),
    ("missing values", "missing values were imputed with the weekly median"),
    ("sampling", "the sample was stratified by region"),
    ("baseline", "the baseline was last quarter's mean"),
    ("seasonality", "a weekly seasonality explained most of the variance"),
    ("units", "all durations were converted to seconds first"),
    ("duplicates", "duplicate rows were removed on the event id"),
    ("time zone", "timestamps were moved to UTC before grouping"),
    ("threshold", "the alert threshold was set at three standard deviations"),
    ("holdout", "the last four weeks were held out for testing"),
    ("labels", "labels were checked by two annotators"),
    ("weights", "observations were weighted by exposure"),
    ("bias", "the early cohort over-represented power users"),
    ("cost", "the cloud bill capped the run at 200 GPU hours"),
    ("deadline", "results are due to the steering group on Friday"),
)


def memories(count: int) -> list[tuple[str, str]]:
    """(memory, question) pairs: each memory one study's finding on one topic."""
    pairs = []
    for study, (topic, finding) in itertools.islice(itertools.product(STUDIES, TOPICS), count):
        pairs.append(
            (
                f"In the {study} study, on {topic}: {finding}.",
                f"what did we decide about {topic} for the {study} analysis?",
            )
        )
    return pairs


def _retain(http: Any, bank_id: str, texts: list[str]) -> None:
    for start in range(0, len(texts), 25):
        items = [{"content": text} for text in texts[start : start + 25]]
        reply = http.post(f"/v1/default/banks/{bank_id}/memories", json={"items": items})
        reply.raise_for_status()


@contextmanager
def _session(url: str, bank_id: str, layers: str = "") -> Iterator[Any]:
    from hindsight_magic._session import HindsightSession
    from hindsight_magic._settings import HindsightSettings

    settings = HindsightSettings(
        api_url=url,
        bank_id=bank_id,
        scoping="global",
        layers=layers,
        auto_retain=False,
        mental_models=False,
        journal_path="off",
    )
    session = HindsightSession(settings, start_worker=False)
    try:
        yield session
    finally:
        session.close()


def _merge_ms(session: Any, query: str) -> float:
    """The merge alone: the layers' pools (asked as a recall asks them) ranked and cut."""
    from hindsight_magic._memory.layers import Layer, layers_of
    from hindsight_magic._memory.reading import POOL_WIDENING, fitting, ranked, widened

    reader, s = session._parts.reader, session.settings
    asked = [Layer("mine", session.scope.bank_id), *layers_of(s.layers)]
    pooled, _ = reader._pooled(
        asked, query, None, widened(s.recall_max_tokens, POOL_WIDENING), None, None
    )
    started = time.perf_counter()
    fitting(ranked(pooled, query), s.recall_max_tokens)
    return (time.perf_counter() - started) * 1000


def measure(url: str, count: int, rounds: int) -> dict[str, Any]:
    """Both recalls, taking turns; times in ms."""
    import hindsight_magic as hm

    pairs = memories(count)
    texts = [text for text, _ in pairs]
    whole, parts = new_bank("layers-one"), [new_bank(f"layers-{n}") for n in range(3)]
    try:
        with raw_client(url) as http:
            progress(f"layers: {len(texts)} memories into one bank and into three …", "layers")
            _retain(http, whole, texts)
            for n, bank_id in enumerate(parts):
                _retain(http, bank_id, texts[n::3])
            for bank_id in (whole, *parts):
                settle_bank(http, bank_id, 600)  # consolidation too: none runs while timed
        layers = f"b={parts[1]},c={parts[2]}"
        times: dict[str, list[float]] = {way: [] for way in WAYS}
        found = {"one": 0, "three": 0}
        merge: list[float] = []
        asked = 0
        with (
            _session(url, whole) as one,
            _session(url, parts[0], layers) as three,
            raw_client(url) as http,
            concurrent.futures.ThreadPoolExecutor(3) as threads,
        ):
            sessions = {"one": one, "three": three}

            def by_hand(banks: list[str], question: str) -> None:
                body = {**RAW_BODY, "query": question}
                path = "/v1/default/banks/{}/memories/recall"
                for reply in threads.map(lambda b: http.post(path.format(b), json=body), banks):
                    reply.raise_for_status()

            for session in sessions.values():  # connections and imports warm
                hm.recall(pairs[0][1], session=session)
            by_hand(parts, pairs[0][1])
            for turn, (text, question) in enumerate(pairs[: max(count // 5, 4)] * rounds):
                order = WAYS if turn % 2 == 0 else WAYS[::-1]
                for way in order:
                    started = time.perf_counter()
                    if way in sessions:
                        result = hm.recall(question, session=sessions[way])
                        found[way] += any(text in memory.text for memory in result[:TOP])
                    else:
                        by_hand([whole] if way == "raw one" else parts, question)
                    times[way].append((time.perf_counter() - started) * 1000)
                merge.append(_merge_ms(three, question))
                asked += 1
    finally:
        for bank_id in (whole, *parts):
            delete_bank(url, bank_id)
    stats = {way: Stat.of(values) for way, values in times.items()}
    merge_stat = Stat.of(merge)
    return {
        "one": stats["one"].to_json(),
        "three": stats["three"].to_json(),
        "ratio": stats["three"].median / stats["one"].median,
        "raw one": stats["raw one"].to_json(),
        "raw three": stats["raw three"].to_json(),
        "raw ratio": stats["raw three"].median / stats["raw one"].median,
        "merge": merge_stat.to_json(),
        "found_one": found["one"],
        "found_three": found["three"],
        "asked": asked,
        "memories": len(texts),
    }


def rows(result: dict[str, Any]) -> Section:
    """Section 13 of BENCHMARKS.md: one bank vs. three layers, the merge, what each found."""
    one, three, merge = (Stat.from_json(result[key]) for key in ("one", "three", "merge"))
    n, asked = result["memories"], result["asked"]
    table = [
        stat_row("13", f"`hm.recall` of one bank holding {n} memories", one, "ms"),
        stat_row(
            "13",
            f"`hm.recall` over three layers holding the same {n} memories (a third each; "
            "alternating with the one bank)",
            three,
            "ms",
        ),
        stat_row(
            "13",
            "by hand, raw `POST …/memories/recall` of the one bank (the extension's body)",
            Stat.from_json(result["raw one"]),
            "ms",
        ),
        stat_row(
            "13",
            "by hand, the same to the three banks at once (three threads, one connection pool)",
            Stat.from_json(result["raw three"]),
            "ms",
        ),
        Row(
            "13",
            "… by hand, three banks ÷ one bank (medians): the server's own floor for a "
            "three-layer recall on this machine",
            num(result["raw ratio"]),
        ),
        Row(
            "13",
            "three layers ÷ one bank (medians)",
            num(result["ratio"]),
            bar=f"≤ {RATIO_BAR}×",
            passed=result["ratio"] <= RATIO_BAR,
        ),
        stat_row(
            "13",
            "the merge's own time (the layers' pools joined, ranked and cut)",
            merge,
            "ms",
            bar=f"≤ {MERGE_BAR_MS:.0f} ms",
            passed=merge.median <= MERGE_BAR_MS,
        ),
        Row(
            "13",
            f"questions whose memory is in the top {TOP}: one bank / three layers",
            f"{result['found_one']} / {result['found_three']} of {asked}",
            bar="three layers ≥ one bank",
            passed=result["found_three"] >= result["found_one"],
        ),
    ]
    notes = [
        "13: the same memories retained into one bank and, a third each, into three; each "
        "question (a study and topic, worded unlike its memory) asked of both, and by hand of "
        "both, taking turns, the order rotating. The server does a whole recall per bank (it "
        "has no cross-bank recall): by hand, three banks at once cost what the by-hand ratio "
        "says, which bounds what the extension can reach on this machine. The layered recall "
        "asks its three banks at once and ranks the joined pools as one "
        "(`_memory/layers.py`). The merge is timed alone, on the pools the layered recall "
        "asked for."
    ]
    return table, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=300, help="memories in all (≤ 300)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over the questions")
    args = parser.parse_args(argv)
    with bench_server() as server:
        result = measure(server.url, args.memories, args.rounds)
    print(json.dumps(result, indent=2))
    print(
        f"recall of one bank {result['one']['median']:.0f} ms, over three layers "
        f"{result['three']['median']:.0f} ms: ratio {result['ratio']:.2f} (bar ≤ {RATIO_BAR}); "
        f"the merge {result['merge']['median']:.2f} ms (bar ≤ {MERGE_BAR_MS}); found in the top "
        f"{TOP}: {result['found_one']} and {result['found_three']} of {result['asked']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
