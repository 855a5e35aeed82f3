"""Nothing lost, nothing doubled: kernels and servers killed, acknowledgements lost, refusals.

Real servers (the project's launcher), real kernels (jupyter_client) or the real in-process
shell. What was delivered is read from the server itself: the items of the bank's retain
operations (exact as soon as the server has answered) and, where the server can process them
in the suite's time, the bank's documents (an async batch of items without ``document_id`` is
one document, its items one per line). The mock-LLM server processes about 5 items/s on two
cores, so the 1 000-memory test checks the operations and that the documents stored so far
hold no doubles, and the 500-memory test's documents are checked at the end of the module.
Figures are printed; run with ``-s`` to see them:

    .venv/bin/python -m pytest tests/test_faults.py -s -k killed
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faultkit import ServerReader, exactly_once, proxy_for
from helpers import PLANTED_KEY, RunningServer, free_port, poll
from journalkit import on_disk
from kernels import Kernel

from hindsight_magic._localserver import launcher as server
from hindsight_magic.testing import Driver

pytestmark = pytest.mark.integration

# Auto-retain and mental models off where they are not the subject: they only add server work.
QUIET = {
    "HINDSIGHT_AUTO_RETAIN": "false",
    "HINDSIGHT_MENTAL_MODELS": "false",
    "HINDSIGHT_SCOPING": "global",
}
QUIET_SETTINGS = {k.removeprefix("HINDSIGHT_").lower(): v for k, v in QUIET.items()}
SETTLE_S = 300  # the mock-LLM server processes about 5 items/s on two cores (idle)
# Document checks left for the end of the module, so the server processes meanwhile.
DEFERRED: list[tuple[str, str, list[str], str, float]] = []  # url, bank, texts, marker, since


def figure(text: str) -> None:
    print(f"\n[faults] {text}", flush=True)


@pytest.fixture
def kernels() -> Iterator[list[Kernel]]:
    started: list[Kernel] = []
    yield started
    for kernel in started:
        kernel.close()


@pytest.fixture
def reader_for() -> Iterator[Any]:
    readers: list[ServerReader] = []

    def make(url: str, bank: str, key: str | None = None) -> ServerReader:
        readers.append(ServerReader(url, bank, key))
        return readers[-1]

    yield make
    for reader in readers:
        reader.close()


def journal_states(path: Path) -> dict[str, int]:
    """How many memories the journal and its spools hold, by state (``spooled``: not yet taken
    into the journal)."""
    return dict(Counter(state for state, _ in on_disk(path)))


def kernel_stats(kernel: Kernel) -> dict[str, Any]:
    code = (
        "# hindsight: skip\n"  # not part of the notebook's story: auto-retain leaves it out
        "import dataclasses, json\n"
        "print(json.dumps(dataclasses.asdict("
        "get_ipython().magics_manager.registry['HindsightMagics'].session.queue_stats())))"
    )
    return json.loads(kernel.run(code).strip().splitlines()[-1])


def all_sent(stats: dict[str, Any], at_least: int) -> bool:
    """Everything queued was accepted (auto-retain transcripts count too)."""
    held = stats["pending"] + stats["in_flight"] + stats["retrying"] + stats["failed"]
    return held == 0 and stats["accepted"] >= at_least


def assert_exactly_once(
    reader: ServerReader, texts: list[str], marker: str, documents: bool = True
) -> None:
    """Each text accepted by the server exactly once (its retain operations) and, with
    ``documents``, stored exactly once once the server has processed everything."""
    expected = set(texts)
    accepted = exactly_once(reader.accepted_contents(), expected, marker)
    assert accepted == (0, 0, 0), "operations: {} missing, {} doubled, {} unexpected".format(
        *accepted
    )
    if documents:
        stored = exactly_once(reader.settled_lines(expected, SETTLE_S), expected, marker)
        assert stored == (0, 0, 0), "documents: {} missing, {} doubled, {} unexpected".format(
            *stored
        )
    else:  # what is processed so far (1 000 items take minutes here): no doubles, no strangers
        _, doubled, unexpected = exactly_once(reader.lines(), expected, marker)
        assert (doubled, unexpected) == (0, 0)


# -- a kernel killed while 500 memories wait ----------------------------------------------------


def test_a_killed_kernels_500_memories_are_delivered_once_by_the_next_kernel(
    tmp_path: Path,
    hindsight_server: RunningServer,
    bank_id: str,
    dead_url: str,
    kernels: list[Kernel],
    reader_for: Any,
) -> None:
    journal = tmp_path / "journal.sqlite3"
    env = {"HINDSIGHT_BANK_ID": bank_id, "HINDSIGHT_JOURNAL_PATH": str(journal), **QUIET}
    marker = f"kill-{bank_id}"
    texts = [f"Memory {n:04d} of {marker}: sample {n * 37 % 1000} passed QA." for n in range(500)]

    first = Kernel({**env, "HINDSIGHT_API_URL": dead_url}, tmp_path)
    kernels.append(first)
    assert "Error" not in first.run("%load_ext hindsight_magic")
    for text in texts:  # (then says the server is not answering, once the worker saw it)
        assert first.run(f"%retain {text}").strip().startswith("1 memory queued.")
    flushed = first.run("%hindsight flush --timeout 2")
    assert "waiting to retry" in flushed, flushed  # the server is unreachable
    stats = kernel_stats(first)
    assert stats["accepted"] == 0
    assert stats["pending"] + stats["retrying"] + stats["in_flight"] == 500
    first.kill()
    states = journal_states(journal)
    assert sum(states.values()) == 500, states
    figure(f"kernel SIGKILLed with 500 memories pending; journal rows by state: {states}")

    started = time.monotonic()
    second = Kernel({**env, "HINDSIGHT_API_URL": hindsight_server.url}, tmp_path)
    kernels.append(second)
    assert "Error" not in second.run("%load_ext hindsight_magic")
    status = second.run("%hindsight status")
    assert "Recovered 500 memories left by an earlier kernel; sending now." in status
    delivered = poll(lambda: kernel_stats(second)["accepted"] == 500, 120, every_s=0.2)
    accepted_after = time.monotonic() - started
    stats = kernel_stats(second)
    assert delivered, stats
    assert (stats["failed"], stats["retrying"], stats["pending"]) == (0, 0, 0)
    assert journal_states(journal) == {}  # nothing left on disk once the server accepted it

    reader = reader_for(hindsight_server.url, bank_id)
    assert_exactly_once(reader, texts, marker, documents=False)
    ops = reader.retain_operations()
    assert sum(op["items_count"] for op in ops) == 500  # the server saw each memory once
    DEFERRED.append((hindsight_server.url, bank_id, texts, marker, started))
    figure(
        f"new kernel: 500 recovered memories accepted {accepted_after:.1f} s after it started "
        f"({stats['requests']} requests, {len(ops)} retain operations on the server, each "
        "memory in exactly one)"
    )


# -- a kernel SIGKILLed right after its %retain calls returned ------------------------------------

# Runs in the kernel: N %retain calls, then the kernel kills itself the moment the last returned
# (no flush, no exit handler: what each %retain wrote before returning is all there is).
RETAIN_THEN_DIE = """# hindsight: skip
import os, signal
_hm_retain = get_ipython().run_line_magic
for _hm_text in {texts!r}:
    assert _hm_retain("retain", _hm_text) == "1 memory queued."
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_kernel_killed_right_after_its_retains_returned_loses_and_doubles_nothing(
    tmp_path: Path,
    hindsight_server: RunningServer,
    bank_id: str,
    kernels: list[Kernel],
    reader_for: Any,
) -> None:
    journal = tmp_path / "journal.sqlite3"
    env = {
        "HINDSIGHT_BANK_ID": bank_id,
        "HINDSIGHT_JOURNAL_PATH": str(journal),
        "HINDSIGHT_API_URL": hindsight_server.url,  # sending while the retains run
        **QUIET,
    }
    marker = f"sigkill-{bank_id}"
    texts = [f"Memory {n:03d} of {marker}: batch {n * 13 % 97} was reweighed." for n in range(300)]
    first = Kernel(env, tmp_path)
    kernels.append(first)
    assert "Error" not in first.run("%load_ext hindsight_magic")
    first.pid  # noqa: B018  # asked now: the kernel cannot answer once it is dead
    first.client.execute(RETAIN_THEN_DIE.format(texts=texts))
    assert poll(lambda: not first.manager.is_alive(), 60, every_s=0.05), "the kernel still runs"
    first.client.stop_channels()
    first.manager.cleanup_resources()  # its connection file
    at_kill = journal_states(journal)
    figure(f"kernel SIGKILLed right after 300 %retain returned; on disk by state: {at_kill}")

    second = Kernel(env, tmp_path)
    kernels.append(second)
    assert "Error" not in second.run("%load_ext hindsight_magic")
    left = sum(at_kill.values())
    status = second.run("%hindsight status")
    if left:
        assert f"Recovered {left} memor" in status, status
    assert poll(lambda: all_sent(kernel_stats(second), left), 120, every_s=0.2)
    assert journal_states(journal) == {}

    reader = reader_for(hindsight_server.url, bank_id)
    assert_exactly_once(reader, texts, marker, documents=False)
    ops = reader.retain_operations()
    assert sum(op["items_count"] for op in ops) == 300  # each memory accepted once
    figure(f"all 300 accepted exactly once ({len(ops)} retain operations on the server)")


# -- the server killed in the middle of a 1 000-memory burst ------------------------------------

# Runs in the kernel: times each cell on the kernel thread (pre_run_cell → post_run_cell, so
# the extension's own post_run_cell hook is included) and records every network call (DNS
# lookup or connect) made on the kernel thread, whatever makes it.
CELL_PROBE = """# hindsight: skip
import socket as _hm_socket, threading as _hm_threading, time as _hm_time
_hm_cells, _hm_net = [], []
_hm_connect, _hm_getaddrinfo = _hm_socket.socket.connect, _hm_socket.getaddrinfo
def _hm_on_kernel_thread(what):
    if _hm_threading.current_thread() is _hm_threading.main_thread():
        _hm_net.append(what)
def _hm_connect_probe(self, address):
    _hm_on_kernel_thread(f"connect {address}")
    return _hm_connect(self, address)
def _hm_getaddrinfo_probe(*args, **kwargs):
    _hm_on_kernel_thread(f"getaddrinfo {args[:2]}")
    return _hm_getaddrinfo(*args, **kwargs)
_hm_socket.socket.connect, _hm_socket.getaddrinfo = _hm_connect_probe, _hm_getaddrinfo_probe
def _hm_pre(info):
    global _hm_started
    _hm_started = _hm_time.perf_counter()
def _hm_post(result):
    _hm_cells.append(_hm_time.perf_counter() - _hm_started)
get_ipython().events.register("pre_run_cell", _hm_pre)
get_ipython().events.register("post_run_cell", _hm_post)
"""
SKIP = "# hindsight: skip\n"  # the test's own cells stay out of auto-retain
BURST = 1000
KILL_AT = 500
OUTAGE_S = 20.0
# a cell every 20 ms during the outage (no one runs cells faster): over a thousand cells to
# time, without thousands of auto-retained transcripts for the server to index afterwards
ORDINARY_EVERY_S = 0.02


def test_server_killed_mid_burst_and_back_20s_later_loses_and_doubles_nothing(
    tmp_path: Path, bank_id: str, kernels: list[Kernel], reader_for: Any
) -> None:
    port, data_dir = free_port(), tmp_path / "killed-server"
    info = server.start(port=port, data_dir=data_dir)
    restart = Restart(port, data_dir)
    try:
        # the default configuration (auto-retain, mental models) on top of the burst
        kernel = Kernel(
            {
                "HINDSIGHT_API_URL": info.url,
                "HINDSIGHT_BANK_ID": bank_id,
                "HINDSIGHT_JOURNAL_PATH": str(tmp_path / "journal.sqlite3"),
            },
            tmp_path,
        )
        kernels.append(kernel)
        assert "Error" not in kernel.run("%load_ext hindsight_magic")
        kernel.run(CELL_PROBE)
        kernel.run("%recall anything yet")  # a magic that does wait on the network …
        assert "connect" in kernel.run(f"{SKIP}print(_hm_net)")  # … is seen by the probe
        kernel.run(f"{SKIP}_hm_net.clear(); _hm_cells.clear()")
        marker = f"burst-{bank_id}"
        texts = [f"Memory {n:04d} of {marker}: run {n % 7} scored {n % 13}." for n in range(BURST)]
        cells: list[tuple[str, bool, float]] = []  # (kind, during the outage, round trip)

        def run(kind: str, source: str) -> str:
            down = restart.killed_at is not None and not restart.done.is_set()
            began = time.perf_counter()
            out = kernel.run(source)
            cells.append((kind, down, time.perf_counter() - began))
            return out

        for n, text in enumerate(texts):
            if n == KILL_AT:
                restart.kill_now_and_restart_after(OUTAGE_S)
            out = run("retain", f"%retain {text}")
            # IPython may warn first; during the outage the line also says it is not answering
            assert "1 memory queued." in out, out
        while not restart.done.is_set():  # the notebook goes on while the server is away
            n = len(cells)
            assert run("ordinary", f"total_{n} = sum(range(10_000))\ntotal_{n}").strip()
            restart.done.wait(ORDINARY_EVERY_S)
        restart.join()
        assert kernel.run(f"{SKIP}print(_hm_net)").strip() == "[]"  # no cell used the network
        in_kernel = json.loads(kernel.run(f"{SKIP}import json; print(json.dumps(_hm_cells))"))
        timed = list(zip(cells, in_kernel[1:], strict=False))  # [0] is the clearing cell

        delivered = poll(lambda: all_sent(kernel_stats(kernel), BURST), 120, 0.5)
        accepted_after = time.monotonic() - restart.back_at
        stats = kernel_stats(kernel)
        assert delivered, stats
        assert stats["failed"] == 0
        reader = reader_for(info.url, bank_id)
        assert_exactly_once(reader, texts, marker, documents=False)
        ops = reader.retain_operations()
    finally:
        restart.join()
        server.discard(data_dir)

    outage = [(kind, trip, spent) for (kind, down, trip), spent in timed if down]
    assert outage, "no cell ran while the server was down"
    figure(
        f"burst of {BURST} %retain cells, server SIGKILLed after {KILL_AT}, restarted "
        f"{OUTAGE_S:.0f} s later, back {restart.back_at - restart.killed_at:.1f} s after the "
        f"kill; {len(outage)} cells ran meanwhile"
    )
    for kind in ("retain", "ordinary"):
        spent = [s * 1000 for k, _, s in outage if k == kind]
        trips = [t * 1000 for k, t, _ in outage if k == kind]
        if spent:
            figure(
                f"outage, {len(spent)} {kind} cells: kernel-thread time per cell (pre_run_cell → "
                f"post_run_cell) max {max(spent):.1f} ms, median {statistics.median(spent):.2f} "
                f"ms; client round trip max {max(trips):.1f} ms, median "
                f"{statistics.median(trips):.1f} ms"
            )
    figure(
        f"all {BURST} accepted {accepted_after:.1f} s after the server was back (no user action; "
        f"{stats['requests']} requests, {len(ops)} retain operations on the server, each memory "
        f"in exactly one); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    assert max(spent for _, _, spent in outage) < 2.0, "a cell stalled during the outage"


class Restart:
    """Kills this data dir's hindsight-api and starts it again (same port) after a delay."""

    def __init__(self, port: int, data_dir: Path) -> None:
        self.port, self.data_dir = port, data_dir
        self.killed_at: float | None = None
        self.back_at = 0.0
        self.done = threading.Event()
        self.error: BaseException | None = None
        self._timer: threading.Timer | None = None

    def kill_now_and_restart_after(self, delay_s: float) -> None:
        victim = server.running_server(self.data_dir)
        assert victim is not None
        os.kill(victim.pid, signal.SIGKILL)
        self.killed_at = time.monotonic()
        self._timer = threading.Timer(delay_s, self._start)
        self._timer.start()

    def _start(self) -> None:
        try:
            server.start(port=self.port, data_dir=self.data_dir)  # about 15 s
        except BaseException as error:
            self.error = error
        finally:
            self.back_at = time.monotonic()
            self.done.set()

    def join(self) -> None:
        if self._timer is not None:
            self._timer.join()
            self.done.wait(300)
        if self.error is not None:
            raise self.error


# -- a lost acknowledgement ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["close", "hang", "garble"])
def test_a_lost_acknowledgement_is_resent_under_the_same_operation_and_stored_once(
    notebook: Any, hindsight_server: RunningServer, bank_id: str, reader_for: Any, mode: str
) -> None:
    with proxy_for(hindsight_server.url, lose_acks=1, mode=mode, hang_s=4.0) as proxy:
        notebook.load(
            api_url=proxy.url,
            bank_id=bank_id,
            retain_timeout_ms="1500",
            **QUIET_SETTINGS,
        )
        text = f"Lost-ack memory of {bank_id} ({mode}): the Q3 export uses UTC."
        assert str(notebook.run(f"%retain {text}").result) == "1 memory queued."
        started = time.monotonic()
        # The flush returns once the batch was tried; its first try also creates the bank,
        # which waits for the server's write transactions while it digests earlier tests'
        # memories (CREATE INDEX on a shared table): seconds, so the bound is generous.
        first = notebook.run("%hindsight flush --timeout 60")
        tried_after = time.monotonic() - started
        assert "waiting to retry" in str(first.result), first.text
        session = notebook.magics.session
        assert poll(lambda: session.queue_stats().accepted == 1, 30, 0.1)
        resent_after = time.monotonic() - started
        stats = session.queue_stats()
        assert (stats.failed, stats.retrying) == (0, 0)
        # the server got the retain twice on an idle machine; on a busy one its slower replies
        # also miss the 1.5 s timeout, so it may get it more often: …
        assert stats.requests >= 2
        assert len(proxy.forwarded) >= 2
        ids = {body["operation_id"] for body in proxy.forwarded}
        assert len(ids) == 1  # … under one operation_id
        reader = reader_for(hindsight_server.url, bank_id)
        assert_exactly_once(reader, [text], bank_id)  # … and holds it once
        ops = reader.retain_operations()
        assert [op["id"] for op in ops] == list(ids)
    figure(
        f"lost ack ({mode}): first try over {tried_after:.1f} s after the flush began, re-sent "
        f"and accepted {resent_after:.1f} s after it, {stats.requests} requests in all"
    )


# -- refusals: 401, 413, 422 --------------------------------------------------------------------


def notice_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "Memory retention failed" in line]


def test_a_refused_key_fails_only_its_batches_and_a_fixed_key_delivers(
    notebook: Any, keyed_server: RunningServer, bank_id: str, reader_for: Any
) -> None:
    notebook.load(
        api_url=keyed_server.url, bank_id=bank_id, api_key="wrong-key-4711", **QUIET_SETTINGS
    )
    texts = [f"Key test {n} of {bank_id}: churn is measured monthly." for n in range(3)]
    shown = [notebook.run(f"%retain {texts[0]}")]
    shown.append(notebook.run("%hindsight flush"))
    assert "1 memory failed: %hindsight retry." in str(shown[-1].result)
    shown.append(notebook.run(f"%retain {texts[1]}"))  # not stuck behind the refused batch
    shown.append(notebook.run("%hindsight flush"))
    shown.append(status := notebook.run("%hindsight status"))
    lines = notice_lines("\n".join(cell.text for cell in shown))
    assert len(lines) == 2, lines  # one line per refused batch, each shown once
    for line in lines:
        assert "Invalid API key — the server at" in line
        assert "refused the request; check HINDSIGHT_API_KEY" in line
        assert "%hindsight retry" in line
    assert "failed       2 (%hindsight retry)" in repr(status.result)
    for batch in Driver(notebook.magics.session).failed_batches():
        assert "check HINDSIGHT_API_KEY" in (batch.error or "")
        assert "\n" not in (batch.error or "")

    # the key is fixed where it belongs (the kernel's environment) and the extension reloaded
    notebook.monkeypatch.setenv("HINDSIGHT_API_KEY", PLANTED_KEY)
    notebook.run("%reload_ext hindsight_magic")
    for batch in Driver(notebook.magics.session).failed_batches():  # the reason survives reload
        assert "refused the request; check HINDSIGHT_API_KEY" in (batch.error or "")
    notebook.run(f"%retain {texts[2]}")
    flushed = notebook.run("%hindsight flush")
    assert str(flushed.result).startswith("Flushed: 1 memory accepted by the server.")
    assert "2 memories failed" in str(flushed.result)  # still kept, waiting for a retry
    retried = notebook.run("%hindsight retry")
    assert str(retried.result) == "Re-sent 2 memories. See %hindsight status."
    stats = notebook.magics.session.queue_stats()
    assert (stats.accepted, stats.failed) == (3, 0)
    assert_exactly_once(reader_for(keyed_server.url, bank_id, PLANTED_KEY), texts, bank_id)


def test_an_oversized_memory_fails_alone_and_the_rest_is_delivered(
    notebook: Any, hindsight_server: RunningServer, bank_id: str, reader_for: Any
) -> None:
    with proxy_for(hindsight_server.url, max_body=64 * 1024) as proxy:  # nginx-like limit
        notebook.load(api_url=proxy.url, bank_id=bank_id, **QUIET_SETTINGS)
        good = [f"Size test {n} of {bank_id}: the cache holds 7 days." for n in range(3)]
        big = f"Oversized memory of {bank_id}: " + "lorem ipsum " * 10_000  # 120 kB
        for text in (good[0], big, good[1]):  # one batch: the big one in the middle
            assert str(notebook.run(f"%retain {text}").result) == "1 memory queued."
        notebook.run("%hindsight flush")
        later = notebook.run(f"%retain {good[2]}")  # shows what happened in the background
        flushed = notebook.run("%hindsight flush")
        lines = notice_lines(later.text + flushed.text)
        assert len(lines) == 1, later.text + flushed.text
        assert "HTTP 413, too large for the server (or a proxy in front of it)" in lines[0]
        failed = Driver(notebook.magics.session).failed_batches()
        assert [b.items[0].content[:40] for b in failed] == [big[:40]]
        assert "\n" not in (failed[0].error or "")
        stats = notebook.magics.session.queue_stats()
        assert (stats.accepted, stats.failed, stats.pending, stats.retrying) == (3, 1, 0, 0)
        assert proxy.refused_413 >= 2  # the three-item batch, then the big one alone
    reader = reader_for(hindsight_server.url, bank_id)
    assert_exactly_once(reader, good, bank_id)
    assert not [line for line in reader.lines() if line.startswith("Oversized memory")]


def test_a_field_the_server_rejects_fails_alone_with_the_servers_reason(
    notebook: Any, hindsight_server: RunningServer, bank_id: str, reader_for: Any
) -> None:
    notebook.load(api_url=hindsight_server.url, bank_id=bank_id, **QUIET_SETTINGS)
    session = notebook.magics.session
    good = [f"Field test {n} of {bank_id}: revenue is in euros." for n in range(3)]
    session.retain(good[0])
    session.retain(f"Bad timestamp memory of {bank_id}.", timestamp="not-a-date")
    session.retain(good[1])
    notebook.run("%hindsight flush")
    session.retain(good[2])
    flushed = notebook.run("%hindsight flush")
    lines = notice_lines(flushed.text)
    assert len(lines) == 1, flushed.text
    assert (
        "retainBatch failed: items.0.timestamp: Invalid timestamp/event_date format: " in (lines[0])
    )
    assert "'not-a-date'" in lines[0]
    stats = session.queue_stats()
    assert (stats.accepted, stats.failed, stats.pending, stats.retrying) == (3, 1, 0, 0)
    assert [b.items[0].timestamp for b in Driver(session).failed_batches()] == ["not-a-date"]
    reader = reader_for(hindsight_server.url, bank_id)
    assert_exactly_once(reader, good, bank_id)
    dropped = notebook.run("%hindsight retry --drop")
    assert str(dropped.result) == "Dropped 1 failed memory."


def test_the_recovered_memories_end_up_stored_once(reader_for: Any) -> None:
    """The documents of the killed-kernel test, checked last: processing 500 memories takes
    the mock-LLM server a couple of minutes, which it spends while the tests above run."""
    if not DEFERRED:
        pytest.skip("checks what test_a_killed_kernels_500_memories_… delivered")
    for url, bank, texts, marker, since in DEFERRED:
        assert_exactly_once(reader_for(url, bank), texts, marker)
        figure(
            f"the {len(texts)} recovered memories were stored exactly once (documents) "
            f"{time.monotonic() - since:.0f} s after the new kernel started"
        )


def test_unique_marker_helpers_are_strict() -> None:
    """The exactly-once check itself must catch a double, a loss and a stranger."""
    from collections import Counter

    expected = {"a m", "b m"}
    assert exactly_once(Counter({"a m": 1, "b m": 1, "noise": 3}), expected, " m") == (0, 0, 0)
    assert exactly_once(Counter({"a m": 2, "b m": 1}), expected, " m") == (0, 1, 0)
    assert exactly_once(Counter({"a m": 1, "c m": 1}), expected, " m") == (1, 0, 1)
