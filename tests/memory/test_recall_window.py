"""The client side of a recall: the order of the server's wider reply, what a window keeps of
it, and what fits the tokens asked for."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hindsight_magic import RecalledMemory
from hindsight_magic._memory.reading import (
    CLOSE_IN_MEANING,
    KEYWORD_WEIGHT,
    POOL_WIDENING,
    fitting,
    ranked,
    widened,
    within,
)
from hindsight_magic._timewindow import TimeWindow

ZONE = timezone(timedelta(hours=1))
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=ZONE)
WINDOW = TimeWindow.parse("2026-11-03", "2026-11-05", now=NOW)


def memory(text: str, when: str | None) -> RecalledMemory:
    return RecalledMemory(id=text[:8], text=text, mentioned_at=when)


def test_only_memories_dated_inside_the_window_are_kept_best_first() -> None:
    assert WINDOW is not None
    found = [
        memory("before the window", "2026-11-02T22:59:00+00:00"),  # 23:59 local, the day before
        memory("first day, local midnight", "2026-11-02T23:00:00+00:00"),
        memory("undated", None),
        memory("last day, late", "2026-11-05T22:30:00+00:00"),  # 23:30 local: the day is whole
        memory("after the window", "2026-11-05T23:00:00+00:00"),
    ]
    kept = [m.text for m in within(found, WINDOW)]
    assert kept == ["first day, local midnight", "last day, late"]


def test_the_kept_memories_fit_the_tokens_asked_for() -> None:
    assert WINDOW is not None
    inside = "2026-11-04T10:00:00+00:00"
    found = [memory("a" * 400, inside), memory("b" * 400, inside), memory("c" * 40, inside)]
    kept = [m.text[0] for m in fitting(within(found, WINDOW), 150)]  # ~100 tokens each, ~10
    assert kept == ["a", "c"]  # as the server does: one that does not fit is skipped
    assert [m.text[0] for m in fitting(found[:1], 10)] == ["a"]  # the best, even so


def test_a_window_asks_for_more_within_reason() -> None:
    assert widened(1024) == 4096
    assert widened(8192) == 16384
    assert widened(32768) == 32768  # never less than the user asked for


def scored(text: str, semantic: float | None, keyword: float | None = None) -> RecalledMemory:
    scores = {"semantic": semantic, "keyword": keyword}
    return RecalledMemory.model_validate({"id": text, "text": text, "scores": scores})


def test_the_pool_is_ordered_by_meaning_then_words() -> None:
    """The server's order (reciprocal rank fusion) put a search's first result first whatever
    it was; the pool is ordered by similarity plus a share of BM25 over the pool, a memory
    without a similarity counting as the pool's least similar one."""
    pool = [
        scored("the server's best keyword match, unrelated", None, 2.0),  # its first
        scored("close in meaning", 0.45),
        scored("close in meaning, and it names the freezer", 0.40),
        scored("found along an entity link only", None),
        scored("a little in meaning", 0.30, 0.0),
        scored("the freezer, nothing more", None),
    ]
    order = [m.text for m in ranked(pool, "which freezer holds the cores?")]
    assert order[0] == "close in meaning, and it names the freezer"
    assert order[1:3] == ["the freezer, nothing more", "close in meaning"]  # .30 + .3 > .45
    assert order[3:] == [  # .30 each: the measured similarity first, then the server's order
        "a little in meaning",
        "the server's best keyword match, unrelated",
        "found along an entity link only",
    ]
    assert KEYWORD_WEIGHT <= CLOSE_IN_MEANING  # words add to a similarity, never more


def test_a_memory_the_semantic_search_missed_is_not_ranked_as_unrelated() -> None:
    """In a bank of 50 000 memories the server's approximate semantic search misses memories
    more similar than the ones it returns, and the keyword search finds them: such a memory
    counts as similar as the pool's least similar one, and its words decide, instead of
    coming after every memory the semantic search returned (growth benchmark, issue 45)."""
    pool = [
        scored(f"weather station W{n:02d} was closed for a sensor swap", 0.38 - n / 100)
        for n in range(8)
    ]
    pool.append(scored("NOTE: S09 Mill Pond was shut for roadworks 8-21 April", None))
    order = [m.text for m in ranked(pool, "Which station was closed for the roadworks?")]
    assert order[0].startswith("NOTE: S09 Mill Pond")


def test_a_rare_word_of_the_question_counts_more_than_a_common_one() -> None:
    """The server's keyword score counts every shared word alike; BM25 weighs each by how few
    memories of the pool have it."""
    pool = [scored(f"station S{n:02d} had {n * 10} trips on Monday", 0.3) for n in range(8)]
    pool.append(scored("NOTE: S09 Mill Pond was shut for roadworks 8-21 April", 0.3))
    pool.append(scored("the trips station table station by station", 0.3))
    order = [m.text for m in ranked(pool, "Which station was closed for the roadworks?")]
    assert order[0].startswith("NOTE: S09 Mill Pond")


def test_the_rare_words_of_a_question_outweigh_a_little_more_meaning() -> None:
    """A question written to mislead (it names the wrong person) is found by its rare words:
    a memory that has them all outranks one only a little closer in meaning that has none
    (LoCoMo's adversarial questions, issue 53)."""
    pool = [
        scored("Melanie painted a sunrise over the lake last summer", 0.45),
        scored("Caroline went to the adoption agency interview on Friday", 0.20),
        scored("Melanie took the kids camping in the mountains", 0.35),
        scored("Caroline bought new running shoes for the race", 0.30),
    ]
    order = [m.text for m in ranked(pool, "When did Melanie go to the adoption agency interview?")]
    assert order[0].startswith("Caroline went to the adoption agency")


def test_a_recall_ranks_a_pool_eight_times_what_it_shows() -> None:
    """The server's reply fills its tokens in its own order, and its entity-link search brings
    many memories that share a name and little else: twice the tokens held 0.68 of LoCoMo's
    evidence turns, eight times 0.92 (issue 53)."""
    assert widened(1024, POOL_WIDENING) == 8192
    assert widened(4096, POOL_WIDENING) == 16384  # at most a window's cap
    assert widened(32768, POOL_WIDENING) == 32768


def test_a_question_of_function_words_only_keeps_the_order_of_meaning() -> None:
    pool = [scored("b", 0.2), scored("a", 0.5), scored("c", None)]
    assert [m.text for m in ranked(pool, "what is it?")] == ["a", "b", "c"]
    assert ranked([], "anything") == []


def test_a_memory_is_scored_by_its_words_and_those_retained_before_it() -> None:
    """A turn of a conversation answers a question with the turn before it ("where did you
    grow up?" — "Sweden, near Gothenburg"): the keyword score reads a memory's text and the
    end of the memory retained before it (its ``before``), so the answer outranks a turn
    that is only a little closer in meaning (LoCoMo, issue 53)."""
    answer = RecalledMemory.model_validate(
        {
            "id": "a",
            "text": "Caroline: Sweden, a small town near Gothenburg.",
            "scores": {"semantic": 0.30},
            "metadata": {"before": "Melanie: where did you grow up?"},
        }
    )
    pool = [scored("Melanie: the kids loved the camping trip", 0.40), answer]
    pool += [scored(f"Caroline: the {n}th painting is done", 0.25) for n in range(4)]
    order = [m.text for m in ranked(pool, "Where did Caroline grow up?")]
    assert order[0] == answer.text
