"""``HindsightSession`` as a front door: its parts stay behind it.

The public functions, the magics and the cell hook ask the session's use-case methods; none of
the parts it builds (queue, worker, client, caches …) is reachable from a public name of
``hm.Session``, so code outside the session cannot come to depend on them.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterator

import pytest

import hindsight_magic as hm
from hindsight_magic._session import PARTS, HindsightSession
from hindsight_magic._session.parts import Parts
from hindsight_magic._settings import HindsightSettings

DATA = {"settings", "reads_others", "session_id", "started_at", "run_id", "label", "scope"}


@pytest.fixture
def session() -> Iterator[HindsightSession]:
    made = HindsightSession(
        HindsightSettings(api_url="http://127.0.0.1:9", journal_path="off", mental_models=False),
        cwd="/tmp/churn",
        start_worker=False,
    )
    yield made
    made.close(0.1)


def part_types(session: HindsightSession) -> tuple[type, ...]:
    """The types of the session's parts. A private reach on purpose: these tests check that
    no public attribute or property hands one out, so they must know what the parts are."""
    parts = PARTS[id(session)]
    found = {type(getattr(parts, field.name)) for field in dataclasses.fields(Parts)}
    found |= {type(parts.connection.client)}
    return tuple(found - {type(None)})


def test_no_public_attribute_of_a_session_is_one_of_its_parts(
    session: HindsightSession,
) -> None:
    public = {name: value for name, value in vars(session).items() if not name.startswith("_")}
    assert set(public) <= DATA, set(public) - DATA
    leaked = [name for name, value in public.items() if isinstance(value, part_types(session))]
    assert not leaked, leaked


def test_no_public_property_of_a_session_hands_out_a_part(session: HindsightSession) -> None:
    properties = [
        name
        for name, member in inspect.getmembers(type(session))
        if isinstance(member, property) and not name.startswith("_")
    ]
    assert properties  # api_url, notebook, closed … are read here
    values = {name: getattr(session, name) for name in properties}
    leaked = [name for name, value in values.items() if isinstance(value, part_types(session))]
    assert not leaked, leaked


def test_the_public_name_is_the_session() -> None:
    assert hm.Session is HindsightSession


def test_a_driver_hands_out_time_and_steps_not_parts(session: HindsightSession) -> None:
    from hindsight_magic.testing import Driver

    # issue 54: tests reached the queue, worker, client and journal through the driver 64 times
    driver = Driver(session)
    public = [name for name in dir(driver) if not name.startswith("_") and name != "session"]
    readable = [name for name in public if not callable(getattr(driver, name))]
    assert "pump" in public
    assert "worker_running" in readable  # the walk reads the driver's properties
    leaked = [name for name in readable if isinstance(getattr(driver, name), part_types(session))]
    assert not leaked, leaked
    assert not {"queue", "worker", "client", "journal_file", "mental_models"} & set(public)
