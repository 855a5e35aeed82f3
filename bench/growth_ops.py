"""What a user waits for on one grown bank, measured in a fresh process (a kernel's stand-in).

``python -m bench.growth_ops URL BANK`` loads the extension into a quiet IPython shell, in a
project folder named like the one the bank was filled from (so its scope is that bank and
that project's tag), and times, ``--runs`` times each, every call a user or an agent waits
for, rendered as a notebook shows it (``_repr_mimebundle_`` / ``_repr_html_``): the HTTP
requests each made and the time spent in them are counted beside (the session's client's
``call``). Then the panel, headless (widgets on recording comms): the time until
``%hindsight panel`` returns, until its first full paint (health, forgotten memories and
the last cells loaded) and a search's results. Then ``hm.snapshot`` (and, with
``--restore``, ``hm.restore`` into a new bank, deleted afterwards) with this process's
resident memory sampled every 5 ms. Last, the process's resident memory and the journal's
size. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .common import Stat, current_rss_mb, delete_bank, peak_rss_mb, quiet_shell, settled
from .growth_bank import PROJECT

QUESTION = "Which file had the broken dates?"  # a planted question: a recall with an answer
ABSENT = "sk-live-7Qz0growthbenchNOTHERE"  # a leaked key no memory holds: purge's preview


class Requests:
    """Wraps the session client's ``call``: the requests made and the ms spent in them."""

    def __init__(self, client: Any) -> None:
        self.count = 0
        self.ms = 0.0
        original = client.call

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter_ns()
            try:
                return original(*args, **kwargs)
            finally:
                self.count += 1
                self.ms += (time.perf_counter_ns() - started) / 1e6

        client.call = timed

    def take(self) -> tuple[int, float]:
        taken = (self.count, self.ms)
        self.count, self.ms = 0, 0.0
        return taken


def shown(value: Any) -> Any:
    """What a notebook does to show ``value``: its richest representation."""
    for method in ("_repr_mimebundle_", "_repr_html_", "_repr_markdown_"):
        render = getattr(value, method, None)
        if render is not None:
            return render()
    return repr(value)


@contextlib.contextmanager
def rss_peak() -> Iterator[Callable[[], tuple[float, float]]]:
    """Samples this process's resident memory every 5 ms; yields a function giving (the
    baseline, the peak) in MB so far."""
    baseline = current_rss_mb()
    peak = [baseline]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.005):
            peak[0] = max(peak[0], current_rss_mb())

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield lambda: (baseline, peak[0])
    finally:
        done.set()
        thread.join()


def timed(
    name: str, call: Callable[[], Any], runs: int, requests: Requests, out: dict[str, Any]
) -> Any:
    """Run ``call`` (and show its result) ``runs`` times; wall ms, HTTP ms and requests per
    run into ``out[name]``; the last result."""
    walls, https, counts = [], [], []
    result: Any = None
    for _ in range(runs):
        requests.take()
        started = time.perf_counter_ns()
        result = call()
        shown(result)
        walls.append((time.perf_counter_ns() - started) / 1e6)
        count, ms = requests.take()
        https.append(ms)
        counts.append(count)
    out[name] = {
        "wall_ms": Stat.of(walls).to_json(),
        "http_ms": Stat.of(https).to_json(),
        "requests": max(counts),
        "all_ms": walls,
        "rss_after_mb": current_rss_mb(),  # which call raised the process's resident memory
    }
    return result


# -- the panel, headless --------------------------------------------------------------------


class RecordingComm:
    """A kernel comm's stand-in (as ``tests/ui/test_panel.py`` drives the panel)."""

    kernel = "recording"

    def __init__(self, **kwargs: Any) -> None:
        import uuid

        self.comm_id = uuid.uuid4().hex

    def open(self, *args: Any, **kwargs: Any) -> None:
        pass

    def on_msg(self, callback: Any) -> None:
        pass

    def send(self, *args: Any, **kwargs: Any) -> None:
        pass

    def close(self, *args: Any, **kwargs: Any) -> None:
        pass


def _wait(check: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return False


def panel_times(shell: Any, session: Any, runs: int) -> dict[str, Any]:
    """``%hindsight panel``: until it returns and until its first full paint (the session's
    first panel, then the others opened after it), and a search in each."""
    import comm
    import ipykernel.ipkernel  # noqa: F401  (installs its own create_comm, replaced next)

    comm.create_comm = lambda **kwargs: RecordingComm(**kwargs)
    shell.kernel = object()  # looks like a kernel: widgets can show
    shell.display_formatter.ipython_display_formatter.enabled = True
    returned, painted, searched = [], [], []
    for run in range(runs):
        started = time.perf_counter()
        panel = shell.run_line_magic("hindsight", "panel")
        returned.append((time.perf_counter() - started) * 1000)

        def full(panel: Any = panel) -> bool:
            browser = panel._hub.browser
            return (
                "ok (Hindsight" in panel.w_header.value
                and browser.curation_view.forgotten.loaded
                and browser.document_view.message != "Loading…"
            )

        if not _wait(full, 120):
            raise RuntimeError(f"the panel did not paint in 120 s: {panel.w_header.value[:200]}")
        painted.append((time.perf_counter() - started) * 1000)
        query = f"{QUESTION} {'?' * run}".strip()
        panel.browser.w_search_box.value = query
        started = time.perf_counter()
        panel.browser.w_search.click()

        def done(panel: Any = panel, query: str = query) -> bool:
            state = panel.browser.w_search_state.value
            return f"{query}" in state and bool(
                re.search(r"\d+ memor(?:y|ies) shown|No relevant", state)
            )

        if not _wait(done, 120):
            raise RuntimeError(f"the search did not end: {panel.browser.w_search_state.value}")
        searched.append((time.perf_counter() - started) * 1000)
        panel.close()
    return {  # the session's first panel reads everything; later ones start from its hub
        "panel_first_ms": {"wall_ms": Stat.of(returned[:1]).to_json()},
        "panel_first_paint_ms": {"wall_ms": Stat.of(painted[:1]).to_json()},
        "panel_reopen_paint_ms": {"wall_ms": Stat.of(painted[1:] or painted).to_json()},
        "panel_search_ms": {"wall_ms": Stat.of(searched).to_json()},
    }


# -- the server's own queries ------------------------------------------------------------


def probes(url: str, bank: str, runs: int) -> dict[str, Any]:
    """The raw requests behind the listings, and the server queries that could replace
    them, timed by hand (ms, median of ``runs``): which grow with the bank."""
    from .common import raw_client

    path = f"/v1/default/banks/{bank}"
    tags = {"tags": f"project:{PROJECT}", "tags_match": "any"}
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        "list 1 (a count)": ("/memories/list", {"limit": 1}),
        "list 20 newest of a type (latest)": (
            "/memories/list",
            {"limit": 20, "type": "world", "state": "valid", **tags},
        ),
        "list 2 000 by time (a timeline page)": (
            "/memories/list",
            {"limit": 2000, "time_field": "mentioned_at", "state": "valid", **tags},
        ),
        "list 500 of a type (a dedupe page)": (
            "/memories/list",
            {"limit": 500, "type": "world", "state": "valid", **tags},
        ),
        "list 100 forgotten": ("/memories/list", {"limit": 100, "state": "invalidated", **tags}),
        "list matching a text (purge)": ("/memories/list", {"limit": 100, "q": ABSENT}),
        "documents matching a cell's prefix (history)": (
            "/documents",
            {"limit": 100, "q": "hm-cell-0123456789-"},
        ),
        "stats": ("/stats", {}),
        "memories-timeseries by day": (
            "/stats/memories-timeseries",
            {"period": "day", "time_field": "mentioned_at"},
        ),
        "entities, top 20": ("/entities", {"limit": 20, **tags}),
        "entity graph, 5 000 edges": ("/entities/graph", {"limit": 5000, **tags}),
    }
    out: dict[str, Any] = {}
    with raw_client(url) as http:
        for name, (where, params) in calls.items():
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                reply = http.get(f"{path}{where}", params=params)
                times.append((time.perf_counter() - started) * 1000)
            out[name] = {
                "wall_ms": Stat.of(times).to_json(),
                "status": reply.status_code,
                "bytes": len(reply.content),
            }
    return out


# -- the run --------------------------------------------------------------------------------


def measure(url: str, bank: str, runs: int, restore: bool) -> dict[str, Any]:
    import hindsight_magic as hm
    from hindsight_magic import load_ipython_extension, unload_ipython_extension
    from hindsight_magic._agents.memory import ProjectMemory

    out: dict[str, Any] = {"bank": bank, "runs": runs}
    with tempfile.TemporaryDirectory(prefix="bench-growth-") as tmp:
        project = Path(tmp) / PROJECT
        project.mkdir()
        journal = Path(tmp) / "journal.sqlite3"
        os.environ.update(
            HINDSIGHT_API_URL=url,
            HINDSIGHT_BANK_ID=bank,
            HINDSIGHT_JOURNAL_PATH=str(journal),
        )
        os.chdir(project)
        shell = quiet_shell()
        load_ipython_extension(shell)
        session = shell.magics_manager.registry["HindsightMagics"].session
        settled(session)
        requests = Requests(session._parts.connection.client)
        try:
            hm.recall(QUESTION)  # a first recall: connections and imports, not timed
            timed(
                "status", lambda: shell.run_line_magic("hindsight", "status"), runs, requests, out
            )
            timed("latest", lambda: hm.latest(), runs, requests, out)
            timed("recall", lambda: hm.recall(QUESTION), runs, requests, out)
            timed("history", lambda: hm.history("#1"), runs, requests, out)
            timed("forgotten", lambda: hm.forgotten(), runs, requests, out)
            timed("purge_preview", lambda: hm.purge_matching(ABSENT), runs, requests, out)
            timed("dedupe_preview", lambda: hm.dedupe(), runs, requests, out)
            timeline = timed("timeline", lambda: hm.timeline(), runs, requests, out)
            out["timeline_memories"] = timeline.counts.total
            out["timeline_by"] = timeline.counts.by
            timed("map", lambda: hm.memory_map(), runs, requests, out)
            out.update(panel_times(shell, session, runs))
            out["probes"] = probes(url, bank, runs)
            agent = ProjectMemory(str(project))
            try:
                agent.recall(QUESTION)  # its session's first call, not timed
                agent_requests = Requests(agent.session()._parts.connection.client)
                timed("agent_recall", lambda: agent.recall(QUESTION), runs, agent_requests, out)
                timed("agent_latest", lambda: agent.latest(), runs, agent_requests, out)
            finally:
                agent.close()
            archive = Path(tmp) / "snapshot.zip"
            with rss_peak() as peak:
                started = time.perf_counter()
                hm.snapshot(archive)
                out["snapshot_s"] = time.perf_counter() - started
            out["snapshot_rss_mb"] = peak()
            out["archive_bytes"] = archive.stat().st_size
            if restore:
                target = f"{bank}-restored"
                delete_bank(url, target)
                try:
                    with rss_peak() as peak:
                        started = time.perf_counter()
                        hm.restore(archive, into=target)
                        out["restore_s"] = time.perf_counter() - started
                    out["restore_rss_mb"] = peak()
                finally:
                    delete_bank(url, target)
            out["rss_mb"] = current_rss_mb()
            out["peak_rss_mb"] = peak_rss_mb()
            out["journal_bytes"] = sum(
                path.stat().st_size for path in Path(tmp).glob("journal.sqlite3*")
            )
        finally:
            unload_ipython_extension(shell)
            os.chdir(tmp and Path(tmp).parent)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.growth_ops")
    parser.add_argument("url")
    parser.add_argument("bank")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--restore", action="store_true", help="also time hm.restore")
    parser.add_argument("--output", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    stdout = sys.stdout  # IPython's shell may swap it while the calls run
    result = json.dumps(measure(args.url, args.bank, args.runs, args.restore))
    if args.output:
        args.output.write_text(result)
    print(result, file=stdout, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
