"""The extension's one background thread: scheduled jobs, the journal's upkeep, and delivery.

All background I/O happens here (sending retains, writing the journal, building transcripts,
refreshing mental models, the panel's pushes), so the kernel thread only ever appends to
queues. Jobs are plain callables scheduled with ``submit(job, delay_s)`` (the parts that
schedule jobs declare that one method as their own ``Scheduler`` protocol); a job already
waiting is not queued twice. Each step (``pump``) runs the jobs that are due, keeps the journal
(heartbeat, spool taken in, memory refilled, pending writes; or restoring it after a failure),
then forms and sends batches one by one, telling the queue each outcome.

The thread sleeps on the queue's lock (a ``threading.Condition``) until a job, the queue or the
journal has work: a ``%retain`` that makes a batch due, a flush, or a job wakes it with one
notify.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from .._errors import HindsightError
from .items import Batch, FlushOutcome
from .queue import RetainQueue

log = logging.getLogger("hindsight_magic")

Job = Callable[[], object]
Sender = Callable[[Batch], bool | None]  # True: sent synchronously, already searchable


class Worker:
    """A daemon thread that delivers ``queue`` through ``send`` and runs scheduled jobs;
    ``refusal`` words a refused batch for the queue (the error's message unless told)."""

    thread_name = "hindsight-magic-worker"

    def __init__(
        self,
        queue: RetainQueue,
        send: Sender,
        *,
        refusal: Callable[[HindsightError], str] = str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.queue = queue
        self.journal = queue.journal
        self.send = send  # the queue's only way to the server (tests put a recorder here)
        self._refusal = refusal
        self._clock = clock
        self._lock = queue.lock  # one lock: a retain or a job wakes the same sleeper
        self._jobs: list[tuple[float, Job]] = []  # (due, job)
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._running_job = threading.local()  # set on the thread running one of the jobs

    # -- jobs (any thread) --------------------------------------------------------------------

    def submit(self, job: Job, delay_s: float = 0.0) -> bool:
        """Run ``job`` on the worker thread after ``delay_s`` (unless it is already waiting)."""
        with self._lock:
            if self._stopping:
                return False
            if all(job != queued for _, queued in self._jobs):
                self._jobs.append((self._clock() + delay_s, job))
                self._lock.notify()
            return True

    def scheduled(self) -> list[Job]:
        """The jobs waiting to run (a snapshot)."""
        with self._lock:
            return [job for _, job in self._jobs]

    def cancel(self, job: Job) -> bool:
        """Drop ``job`` if it waits to run; whether it did."""
        with self._lock:
            kept = [entry for entry in self._jobs if entry[1] != job]
            found = len(kept) < len(self._jobs)
            self._jobs = kept
            return found

    def run_due_jobs(self) -> None:
        """Run the jobs whose time has come, outside the lock, one by one."""
        while True:
            with self._lock:
                now = self._clock()
                due = next((entry for entry in self._jobs if entry[0] <= now), None)
                if due is None:
                    return
                self._jobs.remove(due)
            self._running_job.active = True
            try:
                due[1]()
            except Exception:
                log.exception("Hindsight: background job failed")
            finally:
                self._running_job.active = False

    def in_job(self) -> bool:
        """Whether the calling thread is running one of the jobs: nothing it asks may wait
        for delivery, which only its own return lets happen."""
        return bool(getattr(self._running_job, "active", False))

    # -- the thread ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the thread (once)."""
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
            self._thread.start()

    def stop(self, timeout_s: float = 2.0) -> None:
        """Stop the thread after its current step (waits at most ``timeout_s``)."""
        with self._lock:
            self._stopping = True
            self._lock.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=max(0.1, timeout_s))

    @property
    def running(self) -> bool:
        """Whether the thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._stopping and not self._has_work():
                    self._lock.wait(self._idle_delay())
                if self._stopping:
                    return
            try:
                self.pump()
            except Exception:  # the worker must outlive any one failure (e.g. a full disk)
                log.exception("Hindsight: background step failed")
                time.sleep(0.5)

    def _has_work(self) -> bool:
        now = self._clock()
        return (
            any(due <= now for due, _ in self._jobs) or self.journal.due() or self.queue.has_work()
        )

    def _idle_delay(self) -> float | None:
        now = self._clock()
        delays = [max(0.0, due - now) for due, _ in self._jobs]
        delays += [d for d in (self.queue.idle_delay(), self.journal.idle_delay()) if d is not None]
        return min(delays) + 0.001 if delays else None

    # -- one step -----------------------------------------------------------------------------

    def pump(self) -> int:
        """Do all work that is due now (jobs, the journal, forming and sending batches);
        returns the batches sent.

        The thread calls this; tests with a fake clock call it directly, without a thread.
        """
        self.run_due_jobs()
        self._journal_upkeep()
        queue, journal = self.queue, self.journal
        sent = 0
        while True:
            journal.ingest_if_behind()  # a read's flush finds its memories in one batch
            batch = queue.next_batch()
            if batch is None:
                break
            journal.beat_if_due()
            journal.write_pending()  # its operation id is on disk before it is sent
            self._deliver(batch)
            journal.write_pending()
            sent += 1
        journal.write_pending()
        return sent

    def _journal_upkeep(self) -> None:
        """Heartbeat, spool into the journal, refill memory, pending writes; or restore it."""
        queue, journal = self.queue, self.journal
        if journal.upkeep():
            queue.refill()
            journal.write_pending()
        elif journal.restore_due():
            journal.restore(queue.held_rows, queue.adopt)

    def _deliver(self, batch: Batch) -> None:
        try:
            indexed = self.send(batch)
        except HindsightError as error:
            # a batch refused for what it carries is halved, so one bad memory fails alone
            message = self._refusal(error)
            self.queue.refused(batch, message, error.transient, split=error.refuses_items)
        except Exception as error:  # a bug or an unexpected reply: keep the items, visibly
            log.exception("Hindsight retain queue: batch flush failed")
            self.queue.refused(batch, f"{type(error).__name__}: {error}", transient=False)
        else:
            self.queue.accepted(batch, bool(indexed))

    # -- the kernel thread --------------------------------------------------------------------

    def flush(self, timeout_s: float | None = None) -> FlushOutcome:
        """Send everything now and wait until each batch was tried once (or ``timeout_s``)."""
        self.queue.request_flush()
        return self.queue.wait_settled(timeout_s, lambda: self.running)

    def close(self, timeout_s: float = 5.0) -> int:
        """Flush (bounded), stop the thread, close the journal; returns how many memories were
        left undelivered (the next kernel finds them in the journal)."""
        self.queue.close()
        self.flush(timeout_s)
        self.stop(min(timeout_s, 2.0))
        stats = self.queue.stats()
        self.journal.close()
        return stats.pending + stats.in_flight + stats.retrying + stats.failed
