"""The extension's one background thread: runs scheduled jobs and the subclass's ``pump``.

All background I/O happens here (sending retains, building transcripts, refreshing mental
models), so the kernel thread only ever appends to queues. Jobs are plain callables scheduled
with ``submit(job, delay_s)``; a job already waiting is not queued twice.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger("hindsight_magic")

Job = Callable[[], object]


class Scheduler(Protocol):
    """What other parts need of the worker: ``submit(job, delay_s)`` runs ``job`` on it later."""

    def submit(self, job: Job, delay_s: float = 0.0) -> bool: ...


class BackgroundWorker:
    """A daemon thread that sleeps on a condition until a job or the subclass has work."""

    thread_name = "hindsight-magic-worker"

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._jobs: list[tuple[float, Job]] = []  # (due, job)
        self._stopping = False
        self._thread: threading.Thread | None = None

    def submit(self, job: Job, delay_s: float = 0.0) -> bool:
        """Run ``job`` on the worker thread after ``delay_s`` (unless it is already waiting)."""
        with self._cond:
            if self._stopping:
                return False
            if all(job != queued for _, queued in self._jobs):
                self._jobs.append((self._clock() + delay_s, job))
                self._cond.notify()
            return True

    def scheduled(self) -> list[Job]:
        """The jobs waiting to run (a snapshot)."""
        with self._cond:
            return [job for _, job in self._jobs]

    def start(self) -> None:
        """Start the thread (once)."""
        with self._cond:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
            self._thread.start()

    def stop(self, timeout_s: float = 2.0) -> None:
        """Stop the thread after its current step (waits at most ``timeout_s``)."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=max(0.1, timeout_s))

    @property
    def running(self) -> bool:
        """Whether the thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopping and not self._has_work():
                    self._cond.wait(self._idle_delay())
                if self._stopping:
                    return
            try:
                self.pump()
            except Exception:  # the worker must outlive any one failure (e.g. a full disk)
                log.exception("Hindsight: background step failed")
                time.sleep(0.5)

    def run_due_jobs(self) -> None:
        """Run the jobs whose time has come, outside the lock, one by one."""
        while True:
            with self._cond:
                now = self._clock()
                due = next((entry for entry in self._jobs if entry[0] <= now), None)
                if due is None:
                    return
                self._jobs.remove(due)
            try:
                due[1]()
            except Exception:
                log.exception("Hindsight: background job failed")

    def _job_due(self) -> bool:
        now = self._clock()
        return any(due <= now for due, _ in self._jobs)

    def _job_deadlines(self) -> list[float]:
        return [due for due, _ in self._jobs]

    # -- for subclasses (called with the lock held, except pump) ----------------------------

    def pump(self) -> int:
        """Do the work that is due; the base class only runs jobs."""
        self.run_due_jobs()
        return 0

    def _has_work(self) -> bool:
        return self._job_due()

    def _idle_delay(self) -> float | None:
        deadlines = self._job_deadlines()
        return max(0.0, min(deadlines) - self._clock()) + 0.001 if deadlines else None
