"""Recall on a grown bank: found or not, how fast, and — for what is missed — why.

``quality`` asks every planted question of the recall-quality benchmark two ways on the same
bank, taking turns: the extension (``hm.recall`` from a session of the project the bank was
filled from, its defaults) and by hand (``hindsight-client``'s ``arecall`` with its
defaults). ``diagnose`` asks the server for the pool the extension ranks, with the server's
trace, and finds each answer's memory in it: its rank in each of the server's arms (semantic,
keyword, graph, temporal), in the pool the server returns, and after the extension's own
ranking (``reading.ranked``, ``versions.collapse``, ``reading.fitting``: the package's
functions, not copies). Then the same with other pools (``VARIANTS``: a wider ``max_tokens``,
``budget=high``), each scored and timed, to see what would recover a missed answer. Nothing
of the package's recall is changed here.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .common import api_headers, percentile
from .growth_bank import PROJECT
from .recall_sessions import Fact, Session

TOP = 5
MRR_DEPTH = 10
ARMS = ("semantic", "bm25", "graph", "temporal")
# (name, budget, pool max_tokens, bank settings): the extension's default pool first
# (``POOL_WIDENING`` × ``recall_max_tokens``), then wider ones, the server's larger budget,
# and the bank without its graph arm (a bank setting, ``enable_graph_retrieval``: set for
# the variant's pass and put back).
NO_GRAPH = {"enable_graph_retrieval": False}
Variant = tuple[str, str, int, dict[str, Any]]
VARIANTS: tuple[Variant, ...] = (
    ("default (mid, 2 048 tokens)", "mid", 2048, {}),
    ("pool 4 096 tokens", "mid", 4096, {}),
    ("pool 8 192 tokens", "mid", 8192, {}),
    ("pool 16 384 tokens", "mid", 16384, {}),
    ("budget high, 2 048 tokens", "high", 2048, {}),
    ("budget high, 8 192 tokens", "high", 8192, {}),
    ("budget high, 16 384 tokens", "high", 16384, {}),
    ("no graph arm, 2 048 tokens", "mid", 2048, NO_GRAPH),
    ("no graph arm, 8 192 tokens", "mid", 8192, NO_GRAPH),
    ("no graph arm, 16 384 tokens", "mid", 16384, NO_GRAPH),
)


def found(fact: Fact, text: str) -> bool:
    return any(answer in text for answer in fact.answers)


def rank_of(fact: Fact, texts: Sequence[str], depth: int | None = None) -> int | None:
    """1-based rank of the first text holding the fact's answer (within ``depth``)."""
    for n, text in enumerate(texts[:depth] if depth else texts, 1):
        if found(fact, text):
            return n
    return None


def scores(ranks: Sequence[int | None], latencies: Sequence[float]) -> dict[str, Any]:
    n = len(ranks) or 1
    return {
        "questions": len(ranks),
        "hit@5": sum(1 for r in ranks if r is not None and r <= TOP) / n,
        "mrr": sum(1 / r for r in ranks if r is not None and r <= MRR_DEPTH) / n,
        "latency_ms": {
            "median": statistics.median(latencies) if latencies else 0.0,
            "p95": percentile(latencies, 95) if latencies else 0.0,
            "n": len(latencies),
        },
    }


class Asker:
    """The extension's session (a project session in a folder named like the filled
    project, on ``bank``) and the official client, for the same bank."""

    def __init__(self, url: str, bank: str) -> None:
        from hindsight_client import Hindsight

        import hindsight_magic as hm

        self.url, self.bank = url, bank
        self._tmp = tempfile.TemporaryDirectory(prefix="bench-growth-recall-")
        project = Path(self._tmp.name) / PROJECT
        project.mkdir()
        self._saved = dict(os.environ)
        os.environ.update(
            HINDSIGHT_API_URL=url,
            HINDSIGHT_BANK_ID=bank,
            HINDSIGHT_JOURNAL_PATH=str(Path(self._tmp.name) / "journal.sqlite3"),
        )
        self.session = hm.project_session(project)
        key = os.environ.get("HINDSIGHT_API_KEY") or os.environ.get("HINDSIGHT_API_TOKEN")
        self._client = Hindsight(base_url=url, api_key=key, timeout=120.0)
        self._loop = asyncio.new_event_loop()

    def extension(self, question: str) -> list[str]:
        import hindsight_magic as hm

        return [memory.text for memory in hm.recall(question, session=self.session)]

    def by_hand(self, question: str) -> list[str]:
        reply = self._loop.run_until_complete(self._client.arecall(self.bank, question))
        return [result.text for result in reply.results]

    def close(self) -> None:
        self.session.close(5)
        self._loop.run_until_complete(self._client.aclose())
        self._loop.close()
        os.environ.clear()
        os.environ.update(self._saved)
        self._tmp.cleanup()


def _timed(call: Callable[[str], list[str]], question: str) -> tuple[list[str], float]:
    started = time.perf_counter()
    texts = call(question)
    return texts, (time.perf_counter() - started) * 1000


def quality(asker: Asker, questions: Sequence[tuple[Session, int, Fact]]) -> dict[str, Any]:
    """Every question both ways, taking turns (the order alternating): hit@5, MRR, latency."""
    asker.extension(questions[0][2].question)  # warm-up: connections, imports
    asker.by_hand(questions[0][2].question)
    ranks: dict[str, list[int | None]] = {"extension": [], "by hand": []}
    latency: dict[str, list[float]] = {"extension": [], "by hand": []}
    ways = (("extension", asker.extension), ("by hand", asker.by_hand))
    for n, (_, _, fact) in enumerate(questions):
        for who, call in ways if n % 2 == 0 else ways[::-1]:
            texts, ms = _timed(call, fact.question)
            ranks[who].append(rank_of(fact, texts, MRR_DEPTH))
            latency[who].append(ms)
    result = {who: scores(ranks[who], latency[who]) for who in ranks}
    result["ranks"] = ranks
    ext, hand = (statistics.median(latency[w]) for w in ("extension", "by hand"))
    result["ratio"] = ext / hand
    return result


# -- why a question is missed ---------------------------------------------------------------


def _pool_body(asker: Asker, question: str, budget: str, max_tokens: int, trace: bool) -> dict:
    """The body the extension's recall sends (``HindsightClient.recall`` as ``Reader`` calls
    it), with another budget and pool size, and the server's trace when asked."""
    scope = asker.session.scope
    settings = asker.session.settings
    body: dict[str, Any] = {
        "query": question,
        "budget": budget,
        "include": {"entities": None},
        "min_scores": {"semantic": 0.0},
        "max_tokens": max_tokens,
        "types": list(settings.recall_types),
    }
    if scope.recall_tags:
        body["tags"] = list(scope.recall_tags)
        body["tags_match"] = scope.tags_match
    if trace:
        body["trace"] = True
    return body


def extension_order(reply: dict[str, Any], question: str, max_tokens: int) -> list[str]:
    """The texts the extension would show from this pool: ranked by meaning then words,
    one per cell, cut to ``max_tokens`` — the package's own functions."""
    from hindsight_magic._memory.parsed_replies import parse_recall
    from hindsight_magic._memory.reading import fitting, ranked
    from hindsight_magic._memory.versions import collapse

    memories = parse_recall(reply)
    return [m.text for m in fitting(collapse(ranked(memories, question)), max_tokens)]


def _arm_ranks(trace: dict[str, Any], fact: Fact) -> dict[str, Any]:
    """The answer's best rank in each arm (over the fact types), the arm's length, and the
    answer's similarity beside the arm's best."""
    ranks: dict[str, Any] = {}
    for arm in trace.get("retrieval_results") or ():
        name = arm.get("method_name")
        results = arm.get("results") or []
        best = ranks.setdefault(name, {"rank": None, "length": 0})
        best["length"] += len(results)
        for item in results:
            better = best["rank"] is None or item["rank"] < best["rank"]
            if better and found(fact, str(item.get("text") or "")):
                best["rank"] = item["rank"]
                best["score"] = item.get("score")
        if name == "semantic" and results:
            best["top_score"] = max(float(r.get("score") or 0) for r in results)
    merged = trace.get("rrf_merged") or []
    ranks["rrf"] = {
        "rank": next(
            (m.get("final_rrf_rank") for m in merged if found(fact, str(m.get("text") or ""))),
            None,
        ),
        "length": len(merged),
    }
    return ranks


def diagnose(
    asker: Asker,
    questions: Sequence[tuple[Session, int, Fact]],
    variants: Sequence[Variant] = VARIANTS,
) -> dict[str, Any]:
    """For each question, where its answer is in the default pool (with the server's trace);
    then every variant's hit@5, MRR and time (the server's reply plus the extension's
    ranking). Variants with the bank's own settings take turns per question; one that needs
    other bank settings gets a pass of its own, the settings put back afterwards."""
    import httpx

    shown = asker.session.settings.recall_max_tokens
    bank = f"/v1/default/banks/{asker.bank}"
    per_question: list[dict[str, Any]] = []
    ranks: dict[str, list[int | None]] = {v[0]: [] for v in variants}
    latency: dict[str, list[float]] = {v[0]: [] for v in variants}
    pools: dict[str, list[int]] = {v[0]: [] for v in variants}
    with httpx.Client(
        base_url=asker.url, headers=api_headers(), timeout=300, trust_env=False
    ) as http:

        def ask(fact: Fact, variant: Variant) -> None:
            name, budget, pool, _ = variant
            started = time.perf_counter()
            body = _pool_body(asker, fact.question, budget, pool, False)
            reply = http.post(f"{bank}/memories/recall", json=body)
            reply.raise_for_status()
            data = reply.json()
            texts = extension_order(data, fact.question, shown)
            latency[name].append((time.perf_counter() - started) * 1000)
            ranks[name].append(rank_of(fact, texts, MRR_DEPTH))
            pools[name].append(len(data.get("results") or ()))

        _, budget, pool, _ = variants[0]
        for _, _, fact in questions:
            body = _pool_body(asker, fact.question, budget, pool, True)
            reply = http.post(f"{bank}/memories/recall", json=body)
            reply.raise_for_status()
            data = reply.json()
            texts = [str(r.get("text") or "") for r in data.get("results") or ()]
            trace = data.get("trace") or {}
            summary = trace.get("summary") or {}
            per_question.append(
                {
                    "question": fact.question,
                    "kind": fact.kind,
                    "pool": len(texts),
                    "server_rank": rank_of(fact, texts),
                    "extension_rank": rank_of(fact, extension_order(data, fact.question, shown)),
                    "arms": _arm_ranks(trace, fact),
                    "phases": {
                        p.get("phase_name"): p.get("duration_seconds")
                        for p in summary.get("phase_metrics") or ()
                    },
                }
            )
        plain = [v for v in variants if not v[3]]
        for n, (_, _, fact) in enumerate(questions):
            for variant in plain if n % 2 == 0 else plain[::-1]:
                ask(fact, variant)
        for variant in (v for v in variants if v[3]):
            before = http.get(f"{bank}/config").json().get("config", {})
            saved = {key: before.get(key) for key in variant[3]}
            http.patch(f"{bank}/config", json={"updates": variant[3]}).raise_for_status()
            try:
                for _, _, fact in questions:
                    ask(fact, variant)
            finally:
                http.patch(f"{bank}/config", json={"updates": saved}).raise_for_status()
    result: dict[str, Any] = {"questions": per_question, "variants": {}}
    for name, budget, pool, settings in variants:
        result["variants"][name] = {
            **scores(ranks[name], latency[name]),
            "budget": budget,
            "max_tokens": pool,
            "bank_settings": settings,
            "pool_median": statistics.median(pools[name]),
            "ranks": ranks[name],
        }
    result["misses"] = miss_causes(per_question)
    return result


def miss_causes(per_question: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Why each question missed the top 5 of the extension's default pool: its answer was
    in no arm's candidates; in an arm but not in the pool the server returned (cut by the
    fusion and ``max_tokens``); or in the pool and ranked below 5 by the extension."""
    causes = {
        "found": 0,
        "in no arm": 0,
        "in an arm, not in the pool": 0,
        "in the pool, below 5": 0,
    }
    for q in per_question:
        if q["extension_rank"] is not None and q["extension_rank"] <= TOP:
            causes["found"] += 1
        elif q["server_rank"] is not None:
            causes["in the pool, below 5"] += 1
        elif any(arm.get("rank") for name, arm in q["arms"].items() if name in ARMS):
            causes["in an arm, not in the pool"] += 1
        else:
            causes["in no arm"] += 1
    return causes


# The semantic arm's query as the server sends it (``build_semantic_arm``): its similarity
# floor is what lets PostgreSQL choose the bank's HNSW index, as the server's own query does.
ARM_SQL = (
    "SELECT id, text FROM memory_units WHERE bank_id = '{bank}' AND fact_type = 'world' "
    "AND embedding IS NOT NULL AND (1 - (embedding <=> $1::vector)) >= 0.0 "
    "ORDER BY embedding <=> $1::vector LIMIT {depth}"
)
# The server's recall-side index settings (``hindsight_api._vector_index``, high recall).
INDEX_SETTINGS = (
    "SET hnsw.ef_search = 200",
    "SET hnsw.iterative_scan = strict_order",
    "SET hnsw.max_scan_tuples = 4000",
)
EXACT_SETTINGS = ("SET enable_indexscan = off", "SET enable_bitmapscan = off")
# The bank's HNSW indexes (the server names each after the bank's internal id; its predicate
# names the bank): none below HINDSIGHT_API_VECTOR_INDEX_MIN_ROWS, where the server's plan is
# exact too.
HNSW_SQL = (
    "SELECT count(*) FROM pg_indexes WHERE tablename = 'memory_units' "
    "AND indexdef ILIKE '%using hnsw%' AND strpos(indexdef, quote_literal($1::text)) > 0"
)


def index_exactness(
    url: str, pg_port: int, bank: str, questions: Sequence[tuple[Session, int, Fact]]
) -> dict[str, Any]:
    """What the bank's approximate (HNSW) index costs the semantic arm: for each planted
    question, the server's own embedding of it (its trace), then the arm's query run on the
    kept server's PostgreSQL twice, as the server runs it (through the bank's index, with the
    server's settings, where it has one; how many it has is counted) and exactly (no
    index): the answers each finds in its top 5 and top 50, the index's top 10 against the
    exact top 10, and each one's time. Read-only; the bank is left as it is."""
    import asyncpg
    import httpx

    embeddings: list[str] = []
    with httpx.Client(base_url=url, headers=api_headers(), timeout=120, trust_env=False) as http:
        for _, _, fact in questions:
            reply = http.post(
                f"/v1/default/banks/{bank}/memories/recall",
                json={"query": fact.question, "trace": True, "max_tokens": 64},
            )
            reply.raise_for_status()
            vector = reply.json()["trace"]["query"]["query_embedding"]
            embeddings.append("[" + ",".join(map(str, vector)) + "]")

    async def run(settings: Sequence[str]) -> tuple[list[list[Any]], list[float]]:
        conn = await asyncpg.connect(
            f"postgresql://postgres:postgres@127.0.0.1:{pg_port}/hindsight"
        )
        try:
            for statement in settings:
                await conn.execute(statement)
            sql = ARM_SQL.format(bank=bank.replace("'", "''"), depth=50)
            got, times = [], []
            for vector in embeddings:
                start = time.perf_counter()
                got.append(await conn.fetch(sql, vector))
                times.append((time.perf_counter() - start) * 1000)
            return got, times
        finally:
            await conn.close()

    async def hnsw_indexes() -> int:
        conn = await asyncpg.connect(
            f"postgresql://postgres:postgres@127.0.0.1:{pg_port}/hindsight"
        )
        try:
            return int(await conn.fetchval(HNSW_SQL, bank))
        finally:
            await conn.close()

    index, index_ms = asyncio.run(run(INDEX_SETTINGS))
    exact, exact_ms = asyncio.run(run(EXACT_SETTINGS))

    def hits(results: list[list[Any]], depth: int) -> int:
        return sum(
            rank_of(fact, [row["text"] for row in rows], depth) is not None
            for (_, _, fact), rows in zip(questions, results, strict=True)
        )

    overlap = [
        len({r["id"] for r in a[:10]} & {r["id"] for r in b[:10]}) / max(len(b[:10]), 1)
        for a, b in zip(index, exact, strict=True)
    ]
    return {
        "questions": len(questions),
        "hnsw_indexes": asyncio.run(hnsw_indexes()),
        "index": {
            "top5": hits(index, 5),
            "top50": hits(index, 50),
            "ms": statistics.median(index_ms),
        },
        "exact": {
            "top5": hits(exact, 5),
            "top50": hits(exact, 50),
            "ms": statistics.median(exact_ms),
        },
        "recall@10": statistics.fmean(overlap),
    }
