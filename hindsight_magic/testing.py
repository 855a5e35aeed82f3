"""Building and driving a session in tests: a server you choose, a worker you pump, a clock
you set.

A session normally sends its queue and runs its background jobs on its own worker thread, on
the real clock, against the server its settings name. A test wants each of those in hand::

    from hindsight_magic.testing import Clock, Driver, make_session

    clock = Clock()
    session = make_session("http://127.0.0.1:8888", transport=fault_transport, clock=clock,
                           bank_id="nb", auto_retain=False)
    driver = Driver(session)
    session.retain("The churn table double-counts Q3 refunds.")
    assert driver.queued()[0][1].content.startswith("The churn table")
    clock.advance(60)
    driver.pump()  # what is due now is done, on this thread: nothing races the test

``make_session`` makes a ``Session`` whose worker does not run unless asked (``run_worker``);
``Driver`` does by hand what the worker does, and reads the delivery state a test checks.
Both exist so that tests (ours and a user's) need no private name of a session. A driver hands
out time, steps and readings, never a part (the queue, the worker, the client): a test checks
what a user would see, through the session and the functions.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

    from ._delivery.items import Batch, MemoryItem, Route
    from ._session import HindsightSession as Session
    from ._session.parts import Parts

__all__ = ["Clock", "Driver", "make_session"]

Job = Callable[[], object]


class Clock:
    """A clock set by hand: call it (a ``clock=`` argument) or patch it in for ``time``.

    ``clock()`` and ``clock.time()`` return ``now``; any other ``time`` attribute is the real
    one, so a module that does ``time.monotonic()`` or ``time.sleep()`` still works.
    """

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def time(self) -> float:
        """``now`` (what ``time.time`` gives where this clock is patched in)."""
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock on by ``seconds``."""
        self.now += seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def make_session(
    url: str = "http://127.0.0.1:9",
    *,
    transport: httpx.BaseTransport | None = None,
    cwd: str | None = None,
    session_id: str | None = None,
    run_worker: bool = False,
    clock: Callable[[], float] = time.monotonic,
    queue_options: dict[str, Any] | None = None,
    reads_others: bool = False,
    **settings: Any,
) -> Session:
    """A session for the server at ``url`` (its requests through ``transport`` when given:
    an ``httpx.MockTransport`` that injects a fault), with ``settings`` (any setting by name:
    ``bank_id="nb"``, ``journal_path="off"``), the worker's and queue's time from ``clock``.

    Its worker thread runs only with ``run_worker``; otherwise nothing is sent and no job
    runs until a ``Driver`` pumps it. Close it (``with`` or ``close()``) when done."""
    from ._session import HindsightSession
    from ._settings import HindsightSettings

    return HindsightSession(
        HindsightSettings(api_url=url, **settings),
        cwd=cwd,
        session_id=session_id,
        transport=transport,
        start_worker=run_worker,
        queue_options=queue_options,
        reads_others=reads_others,
        clock=clock,
    )


class Driver:
    """Does by hand what a session's worker does, and reads what a test checks of its
    delivery: the memories queued, the batches refused, the jobs waiting.

    Pumping a session whose worker thread also runs is allowed (the worker's own locks hold)
    but no longer deterministic: make the session with ``run_worker=False`` for that."""

    def __init__(self, session: Session) -> None:
        from ._session import PARTS

        self.session = session
        self._parts: Parts = PARTS[id(session)]

    # -- the worker, by hand --------------------------------------------------------------------

    def pump(self) -> int:
        """One worker step on this thread: the jobs that are due, the journal's upkeep, then
        every batch that is due, sent; the batches sent."""
        return self._parts.worker.pump()

    def run_due_jobs(self) -> None:
        """Run the jobs whose time has come (by the session's clock), nothing else."""
        self._parts.worker.run_due_jobs()

    def scheduled(self) -> list[Job]:
        """The jobs waiting to run on the worker."""
        return self._parts.worker.scheduled()

    def cancel(self, job: Job) -> bool:
        """Drop ``job`` if it waits to run; whether it did."""
        return self._parts.worker.cancel(job)

    @property
    def worker_running(self) -> bool:
        """Whether the session's worker thread is alive."""
        return self._parts.worker.running

    # -- delivery -----------------------------------------------------------------------------

    def queued(self) -> list[tuple[Route, MemoryItem]]:
        """The memories still held (queued, in flight or failed), each with its route."""
        return self._parts.queue.held()

    def failed_batches(self) -> list[Batch]:
        """The batches the server refused for good (kept for ``%hindsight retry``)."""
        return self._parts.queue.failed_batches()

    def request_flush(self) -> None:
        """Ask the worker to send the queue now (does not wait)."""
        self._parts.queue.request_flush()

    # -- the server ---------------------------------------------------------------------------

    def use_transport(
        self, transport: httpx.BaseTransport, url: str | None = None, timeout_s: float | None = None
    ) -> None:
        """Send the session's requests through ``transport`` from now on (a fault injected
        after the session was made), to ``url`` (default: the URL in use), with ``timeout_s``
        as every operation's deadline (default: the session's deadlines)."""
        from ._api.client import HindsightClient, Timeouts

        timeouts = self._parts.connection.client.timeouts
        if timeout_s is not None:
            timeouts = Timeouts(timeout_s, timeout_s, timeout_s, timeout_s)
        client = HindsightClient(url or self.session.api_url, None, timeouts, transport=transport)
        self._parts.connection.use(client)

    # -- background jobs, by hand -------------------------------------------------------------

    def retain_cells(self, force: bool = False) -> bool:
        """Auto-retain's step as the worker runs it once cells are due (``force``: due or
        not): the executed cells become queued memories; whether any did."""
        return bool(self._parts.autoretain.process(force=force))

    def models_loaded(self, timeout: float = 0.0) -> bool:
        """Whether the mental models' first load (a worker job) has finished, waiting at most
        ``timeout`` seconds for it."""
        return self._parts.mental_models.wait_first_load(timeout)

    def notices(self) -> tuple[str, ...]:
        """The notices not yet shown, without taking them."""
        return self._parts.notices.pending()
