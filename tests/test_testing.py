"""``hindsight_magic.testing``: a session made against a transport, its worker pumped by hand,
its time set by a clock; all without a private name of the session."""

from __future__ import annotations

from typing import Any

from helpers import FakeHindsight

from hindsight_magic.testing import Clock, Driver


def test_nothing_is_sent_until_the_driver_pumps(fake: FakeHindsight, make_session: Any) -> None:
    session = make_session()
    driver = Driver(session)
    made = session.retain("The churn table double-counts Q3 refunds.")
    assert [item.document_id for _, item in driver.queued()] == [made]
    assert not fake.calls("POST", r"/memories$")  # no worker thread: nothing went out
    assert not driver.worker_running
    session.flush(0.01)  # a flush asks the worker; none runs
    assert driver.pump() == 1
    assert fake.calls("POST", r"/memories$")
    assert session.queue_stats().accepted == 1
    assert driver.queued() == []


def test_a_job_runs_when_the_clock_says_it_is_due(fake: FakeHindsight, make_session: Any) -> None:
    clock = Clock()
    session = make_session(clock=clock)
    driver = Driver(session)
    ran: list[str] = []

    def job() -> None:
        ran.append("job")

    session.in_background(job, 60.0)
    driver.run_due_jobs()
    assert ran == []
    assert job in driver.scheduled()
    clock.advance(61)
    driver.run_due_jobs()
    assert ran == ["job"]
    assert job not in driver.scheduled()


def test_a_transport_swapped_in_takes_the_session_s_requests(
    fake: FakeHindsight, make_session: Any
) -> None:
    session = make_session()
    other = FakeHindsight()
    driver = Driver(session)
    driver.use_transport(other.transport)
    session.retain("Revenue is in cents.")
    driver.request_flush()
    assert driver.pump() == 1
    assert other.calls("POST", r"/memories$")
    assert not fake.calls("POST", r"/memories$")


def test_a_session_used_in_a_with_block_sends_its_queue_and_closes(
    fake: FakeHindsight, make_session: Any
) -> None:
    with make_session(run_worker=True) as session:
        session.retain("The cohort table starts in March.")
    assert session.closed
    assert fake.calls("POST", r"/memories$")  # what was queued went out on the way out
