"""A read's synchronous retain whose reply is lost is stored once (real server, a lossy proxy).

The proxy forwards the retain to the real server, which stores the memory, and then loses
the reply. The memory is re-sent — by the same kernel after its back-off, or by the next kernel
from the journal after this one died — asynchronously, under its operation id and the same
``document_id``; the server replaces that document, so its documents and memories hold the fact
exactly once (counted through the server's list APIs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from faultkit import ServerReader, proxy_for
from helpers import RunningServer, poll, wait_for

pytestmark = pytest.mark.integration

QUIET = {"auto_retain": "false", "mental_models": "false", "scoping": "global"}
SETTLE_S = 120.0

# A kernel that retains, reads (the read's synchronous retain loses its reply) and dies before
# its back-off is over: its journal keeps the memory under its operation id.
DYING_KERNEL = r"""
import json, os, sys
from hindsight_magic._session import HindsightSession
from hindsight_magic._settings import HindsightSettings
# a long back-off: the kernel surely dies before its own re-send
settings = HindsightSettings.from_environment()
session = HindsightSession(settings, queue_options={"backoff_base_s": 60})
session.retain(sys.argv[1])
session.recall(sys.argv[1])  # its synchronous retain loses the reply
print(json.dumps({"stats": session.queue_stats().retrying}), flush=True)
os._exit(0)
"""


def stored(reader: ServerReader, marker: str) -> tuple[int, int]:
    """(documents, facts) on the server whose text contains ``marker``. Observations are left
    out: the server's consolidation derives them from facts in the background, on its own."""
    documents = sum(marker in text for text in reader.documents().values())
    facts = reader.pages("memories/list", "items", 100)
    found = sum(marker in f["text"] for f in facts if f.get("fact_type") != "observation")
    return documents, found


def did_the_work(reader: ServerReader, marker: str) -> tuple[int, int]:
    """``stored`` once the server holds the document and its facts: it did the work whose
    reply was lost. (On an idle machine that is before the read's recall runs; on a busy one
    the recall may come first: the read does not wait past its retain timeout.)"""
    return wait_for(
        lambda: stored(reader, marker), 30, "the server storing the fact",
        until=lambda found: found[0] == 1 and found[1] >= 1,
    )  # fmt: skip


def settled(reader: ServerReader, marker: str) -> tuple[int, int]:
    """``stored`` once the bank has no retain work left."""
    poll(lambda: reader.busy() == 0, SETTLE_S, 0.5, until=bool)
    return stored(reader, marker)


def sync_then_async(forwarded: list[dict[str, Any]]) -> str:
    """The two retains the server got: sync, then async under the same document id (returned)."""
    assert [body["async"] for body in forwarded] == [False, True], forwarded
    first, second = (body["items"][0]["document_id"] for body in forwarded)
    assert first == second
    assert second
    return str(first)


@pytest.mark.parametrize("mode", ["close", "hang"])
def test_a_reads_retain_whose_reply_is_lost_is_resent_and_stored_once(
    notebook: Any, hindsight_server: RunningServer, bank_id: str, mode: str
) -> None:
    text = f"Read-after-write fact of {bank_id}: the Q3 export is in UTC."
    reader = ServerReader(hindsight_server.url, bank_id)
    try:
        with proxy_for(hindsight_server.url, lose_acks=1, mode=mode, hang_s=4.0) as proxy:
            notebook.load(api_url=proxy.url, bank_id=bank_id, retain_timeout_ms="1500", **QUIET)
            assert str(notebook.run(f"%retain {text}").result) == "1 memory queued."
            assert notebook.run(f"%recall {text}").error is None
            first = did_the_work(reader, bank_id)
            session = notebook.magics.session
            wait_for(lambda: session.queue_stats().accepted == 1, 30, "the re-send")
            document_id = sync_then_async(proxy.forwarded)
        assert settled(reader, bank_id) == first  # replaced, not added
        assert list(reader.documents()) == [document_id]
    finally:
        reader.close()


def test_a_kernel_that_died_after_a_lost_reply_is_resent_by_the_next_and_stored_once(
    notebook: Any, hindsight_server: RunningServer, bank_id: str, tmp_path: Path
) -> None:
    text = f"Recovered read-after-write fact of {bank_id}: churn is monthly."
    journal = tmp_path / "journal.sqlite3"
    reader = ServerReader(hindsight_server.url, bank_id)
    try:
        with proxy_for(hindsight_server.url, lose_acks=1, mode="close") as proxy:
            env = {
                **os.environ,
                "HINDSIGHT_API_URL": proxy.url,
                "HINDSIGHT_BANK_ID": bank_id,
                "HINDSIGHT_JOURNAL_PATH": str(journal),
                "HINDSIGHT_RETAIN_TIMEOUT_MS": "1500",
                **{f"HINDSIGHT_{k.upper()}": v for k, v in QUIET.items()},
            }
            done = subprocess.run(
                [sys.executable, "-c", DYING_KERNEL, text],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert done.returncode == 0, done.stderr[-3000:]
            child = json.loads(done.stdout.strip().splitlines()[-1])
            assert child["stats"] == 1  # it died waiting to re-send
            first = did_the_work(reader, bank_id)
        with proxy_for(hindsight_server.url) as relay:  # records what the next kernel sends
            notebook.load(api_url=relay.url, bank_id=bank_id, journal_path=str(journal), **QUIET)
            session = notebook.magics.session
            wait_for(lambda: session.queue_stats().accepted == 1, 30, "the next kernel's re-send")
            sync_then_async(proxy.forwarded + relay.forwarded)
        assert settled(reader, bank_id) == first  # replaced, not added
        assert len(reader.documents()) == 1
    finally:
        reader.close()
