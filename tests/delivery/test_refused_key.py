"""A server that refuses the API key is told once, where the user reads it: in the notice of
a batch the worker sent (kept with the batch for ``%hindsight status``), and in the one line of
a read that sent a batch itself (an agent's read sends what other kernels queued)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from hindsight_magic._errors import HindsightError
from hindsight_magic.testing import Driver

HINT = "check HINDSIGHT_API_KEY"


def refusing(request: httpx.Request) -> httpx.Response:
    return httpx.Response(401, json={"detail": "Invalid API key"})


def test_a_batch_the_worker_sent_keeps_one_line_saying_to_check_the_key(sessions: Any) -> None:
    session = sessions(transport=httpx.MockTransport(refusing))
    session.retain("The churn table double-counts Q3 refunds.")
    session.flush(5)
    notices = [line for line in Driver(session).notices() if "retention failed" in line]
    assert len(notices) == 1, notices
    assert notices[0].count(HINT) == 1, notices[0]
    assert "Invalid API key" in notices[0]


def test_a_read_that_sent_other_kernels_memories_says_to_check_the_key_once(
    sessions: Any,
) -> None:
    kernel = sessions(start_worker=False)  # never sends: its memory stays queued
    kernel.retain("The gauge reads in kPa.")
    agent = sessions(start_worker=False, reads_others=True, transport=httpx.MockTransport(refusing))
    with pytest.raises(HindsightError) as info:
        agent.recall("gauge")
    line = agent.explain(info.value)  # the one line a magic or an agent's tool shows
    assert line.count(HINT) == 1, line
    assert "Invalid API key" in line
