"""The timeline and the entity map of a 10 000-memory bank: the extension's own time per call.

One bank of at least 10 000 memories is built first (untimed: documents naming people, sites
and instruments, dated over the last 90 days with the retain item's ``timestamp``, retained
asynchronously and waited for until indexed and consolidated). Then, in one process with the
extension loaded, taking turns:

- ``hm.timeline()`` and what a notebook does to show it (``_repr_mimebundle_``: the PNG, the
  SVG and the text table);
- ``hm.memory_map()`` (the top 20 entities) and its display the same way.

The figure is each call's wall time minus the time spent in the HTTP requests it made (the
client's ``_request``: sending, waiting, reading and decoding the reply): the listing of 10 000
memories takes the server seconds, and that is not the extension's work. The first call of
each (importing matplotlib and networkx) is reported on its own.

Run alone: ``python -m bench.pictures [--runs N] [--memories N]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from .common import Stat, bench_server, delete_bank, loaded, new_bank, quiet_shell, raw_client
from .latency import HttpTimer
from .transfers import build

BAR_MS = 300.0  # issue 24: a timeline and a map of 10 000 memories, each ≤ 300 ms of our own
MEMORIES = 10_000
BATCH = 200  # at most this many documents added per round until the bank holds enough
PEOPLE = ("Priya", "Tomas", "Aiko", "Lena", "Omar", "Grace", "Mateo", "Sofia", "Kwame", "Ines")
SITES = ("Berkeley", "Svalbard", "Nairobi", "Hobart", "Quito", "Uppsala", "Kyoto", "Tromso")
TOOLS = ("Hubble", "Keck", "Alma", "Gemini", "Subaru", "Lofar")


def observation(i: int) -> dict[str, Any]:
    """The ``i``th document: three named entities, dated ``i % 90`` days ago at noon UTC."""
    day = datetime.now(timezone.utc).replace(hour=12, minute=0, second=0, microsecond=0)
    person, site, tool = PEOPLE[i % 10], SITES[(i // 10) % 8], TOOLS[(i // 80) % 6]
    return {
        "content": f"{person} measured sample {i} at {site} with the {tool} array.",
        "document_id": f"obs-{i}",
        "timestamp": (day - timedelta(days=i % 90)).isoformat(),
        "metadata": {"notebook": f"survey-{i % 4}.ipynb", "source": "%retain"},
        # named as the extension names them (the local server extracts none without an LLM)
        "entities": [{"text": person}, {"text": site}, {"text": tool}],
        "resolve_entities": False,
    }


def fill(url: str, bank: str, memories: int) -> tuple[int, int]:
    """Add documents until ``bank`` holds at least ``memories``; (memories, documents).

    A first round shows how many memories a document makes here (facts and the server's
    observations); the rest is added in one round sized from that, and topped up if short.
    """
    documents = 0
    batch = max(10, min(BATCH, memories // 12))
    with raw_client(url) as http:
        while True:
            held, _ = build(http, bank, batch, item=observation, first=documents)
            documents += batch
            if held >= memories:
                return held, documents
            per_document = max(held / documents, 1.0)
            batch = max(10, int((memories - held) / per_document * 1.05) + 1)


def measure(url: str, runs: int, memories: int = MEMORIES) -> dict[str, Any]:
    """Own and HTTP times (ms) per displayed timeline and map, over ``runs`` turns each."""
    import hindsight_magic as hm

    bank = new_bank("pictures")
    try:
        held, documents = fill(url, bank, memories)
        shell = quiet_shell()
        with loaded(shell, url, bank, AUTO_RETAIN="false", MENTAL_MODELS="false") as session:
            timer = HttpTimer(session._parts.connection.client, "call")
            calls: dict[str, Callable[[], Any]] = {
                "timeline": lambda: hm.timeline(session=session),
                "map": lambda: hm.memory_map(session=session),
            }
            times: dict[str, list[float]] = {}
            shown: dict[str, Any] = {}
            for run in range(-1, runs):  # run -1: the first calls, with their imports
                for name in list(calls) if run % 2 else list(calls)[::-1]:
                    timer.take()
                    started = time.perf_counter_ns()
                    picture = calls[name]()
                    bundle = picture._repr_mimebundle_()
                    elapsed = (time.perf_counter_ns() - started) / 1e6
                    http = timer.take()
                    key = "first" if run < 0 else "own"
                    times.setdefault(f"{name} {key}", []).append(elapsed - http)
                    times.setdefault(f"{name} http", []).append(http)
                    shown[name] = (picture, bundle)
        timeline, timeline_bundle = shown["timeline"]
        memory_map, _ = shown["map"]
        result: dict[str, Any] = {k: Stat.of(v).to_json() for k, v in times.items()}
        result.update(
            runs=runs,
            memories=held,
            documents=documents,
            counted=timeline.counts.total,
            periods=len(timeline.counts.periods),
            by=timeline.counts.by,
            entities=memory_map.map.total_entities,
            nodes=len(memory_map.map.nodes),
            edges=len(memory_map.map.edges),
            png_bytes=len(timeline_bundle["image/png"]),
            svg_bytes=len(timeline_bundle["image/svg+xml"]),
        )
        return result
    finally:
        delete_bank(url, bank)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="turns of each call")
    parser.add_argument("--memories", type=int, default=MEMORIES, help="the bank's size")
    args = parser.parse_args(argv)
    with bench_server() as server:
        result = measure(server.url, args.runs, args.memories)
    print(json.dumps(result, indent=2))
    for name in ("timeline", "map"):
        own = result[f"{name} own"]["median"]
        print(
            f"{name}: own {own:.1f} ms (bar ≤ {BAR_MS:.0f} ms: "
            f"{'pass' if own <= BAR_MS else 'FAIL'}), its HTTP "
            f"{result[f'{name} http']['median']:.0f} ms, first call "
            f"{result[f'{name} first']['median']:.0f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
