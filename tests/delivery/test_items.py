"""A memory as it is queued, journaled and sent: every text field redacted, not only its
content — the context and the tags leave the kernel and land in the journal too."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import Notebook

import hindsight_magic as hm
from hindsight_magic._delivery.items import MemoryItem, UpdateMode, new_item, request_item

SHAPED = "sk-" + "Zq8" * 8  # credential-shaped: redacted whatever its name
AWS = "AKIA" + "Q7WZ" * 4
NAMED = "pw-context-5f1d0c3b9e"  # redacted because an environment variable holds it


def test_context_and_tags_are_redacted_like_the_content() -> None:
    item = new_item(
        f"the key is {SHAPED}",
        timestamp="2026-12-03T08:00:00+00:00",
        context=f"deploy with {AWS}",
        metadata={"source": "%retain"},
        tags=("project:churn", f"key-{SHAPED}", NAMED),
        secrets=[NAMED],
    )
    sent = json.dumps(request_item(item, [NAMED]))
    for secret in (SHAPED, AWS, NAMED):
        assert secret not in sent
        assert secret not in json.dumps(item.to_json())
    assert item.context == "deploy with [REDACTED]"
    assert item.tags == ("project:churn", "key-[REDACTED]", "[REDACTED]")


def test_a_secret_in_context_or_tags_never_reaches_the_journal(
    notebook: Notebook, dead_url: str
) -> None:
    """The server is down: everything stays in the journal, which must not hold a secret."""
    notebook.monkeypatch.setenv("WAREHOUSE_PASSWORD", NAMED)
    notebook.load(api_url=dead_url, auto_retain="false", mental_models="false")
    cell = notebook.run(f"%retain --context {SHAPED} --tags a,{AWS} Refunds are late.")
    assert cell.error is None, cell.text
    hm.retain("Deploys go out on Tuesdays.", context=f"vault {AWS}", tags=[NAMED])
    hm.flush(0.2)
    journal = Path(os.environ["HINDSIGHT_JOURNAL_PATH"])
    stored = b"".join(path.read_bytes() for path in journal.parent.glob(journal.name + "*"))
    assert b"Refunds are late." in stored or b"Deploys go out" in stored  # sanity: it is there
    for secret in (SHAPED, AWS, NAMED):
        assert secret.encode() not in stored, secret


def test_an_append_kept_by_an_earlier_version_reads_back_as_one() -> None:
    """The journal and the spool keep the wire form; the mode is a word there, read back as the
    vocabulary's member and written out as the same word."""
    kept = '{"content":"[cell 3]","timestamp":"2026-12-03T08:00:00+00:00","update_mode":"append"}'
    first = MemoryItem.from_stored(json.loads(kept))
    second = MemoryItem.from_stored(json.loads(kept.replace("[cell 3]", "[cell 4]")))
    assert first.update_mode is UpdateMode.APPEND
    assert first.merge_append(second)
    assert json.dumps(first.stored()) == (
        '{"content": "[cell 3]\\n\\n[cell 4]", "timestamp": "2026-12-03T08:00:00+00:00", '
        '"update_mode": "append", "parts": 2}'
    )
    assert MemoryItem.from_stored(first.stored()).update_mode is UpdateMode.APPEND
