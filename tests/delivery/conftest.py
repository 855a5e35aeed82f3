"""The delivery tests' shared fixtures: each module makes its ``pair`` (a queue and its worker,
built by ``helpers.delivery``); these hand out its parts."""

from __future__ import annotations

import pytest

from hindsight_magic._delivery.queue import RetainQueue
from hindsight_magic._delivery.worker import Worker


@pytest.fixture
def queue(pair: tuple[RetainQueue, Worker]) -> RetainQueue:
    return pair[0]


@pytest.fixture
def worker(pair: tuple[RetainQueue, Worker]) -> Worker:
    return pair[1]
