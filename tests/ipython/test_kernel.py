"""Auto-retain in real Jupyter kernels (jupyter_client) against the real server.

Each test runs cells one by one, as a notebook front end does, then reads the server's documents
directly to see what the extension sent.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import RunningServer, wait_for
from kernels import Kernel

pytestmark = pytest.mark.integration

SECRET_SK = "sk-proj-" + "Q7x9" * 6
SECRET_GHP = "ghp_" + "a1B2c3D4e5" * 3
SECRET_ENV = "envsecret-7h3-v4lu3-42"


@pytest.fixture
def kernel_factory(tmp_path: Path) -> Iterator[Any]:
    kernels: list[Kernel] = []

    def start(**env: str) -> Kernel:
        env.setdefault("HINDSIGHT_JOURNAL_PATH", str(tmp_path / f"journal-{len(kernels)}.db"))
        kernel = Kernel(env, tmp_path)
        kernels.append(kernel)
        return kernel

    yield start
    for kernel in kernels:
        kernel.close()


def session_id_of(kernel: Kernel) -> str:
    code = "print(get_ipython().magics_manager.registry['HindsightMagics'].session.session_id)"
    return kernel.run(code).strip()


def documents(url: str, bank: str) -> dict[str, str]:
    """Document id → text, read from the server."""
    reply = httpx.get(f"{url}/v1/default/banks/{bank}/documents", params={"limit": 100})
    if reply.status_code == 404:
        return {}
    texts = {}
    for item in reply.json()["items"]:
        doc = httpx.get(f"{url}/v1/default/banks/{bank}/documents/{item['id']}").json()
        texts[item["id"]] = doc.get("original_text") or ""
    return texts


def wait_for_documents(url: str, bank: str, check: Any, timeout_s: float = 30.0) -> dict[str, str]:
    """The bank's documents, once ``check`` holds for them (fails after ``timeout_s``)."""
    return wait_for(lambda: documents(url, bank), timeout_s, "documents", every_s=0.3, until=check)


HEADER = re.compile(r"\[cell (\d+)")
CELLS = [
    "import statistics",
    "sales = [120, 135, 128, 150, 149]",
    "mean_sales = statistics.mean(sales)\nmean_sales",
    "growth = (sales[-1] - sales[0]) / sales[0]",
    "labels = [f'week {n}' for n in range(5)]",
    "best = max(zip(sales, labels))\nbest",
    "spread = statistics.pstdev(sales)",
    "report = {'mean': mean_sales, 'growth': growth}",
    "summary = f'growth was {growth:.0%}'\nsummary",
    "final_note = 'ship the weekly sales report on Monday'",
]


def test_full_session_retains_each_cell_once_and_exit_sends_the_rest(
    kernel_factory: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    kernel = kernel_factory(HINDSIGHT_API_URL=hindsight_server.url, HINDSIGHT_BANK_ID=bank_id)
    assert "Error" not in kernel.run("%load_ext hindsight_magic")
    for cell in CELLS[:9]:
        assert "Error" not in kernel.run(cell)
    kernel.run("%hindsight flush")
    docs = wait_for_documents(hindsight_server.url, bank_id, lambda d: len(d) >= 9)
    texts = sorted(docs.values(), key=lambda text: int(HEADER.findall(text)[0]))
    assert len(texts) == 9, texts  # a document for each cell, each sent once
    for cell, text in zip(CELLS[:9], texts, strict=True):
        header, body = text.split("\n", 1)
        assert HEADER.match(header), text
        assert body.startswith(cell), text
    assert "mean_sales\n[result]\n136.4" in texts[2]  # the last expression's value
    assert not any(CELLS[9] in text for text in texts)

    assert "Error" not in kernel.run(CELLS[9])  # one cell short of the next retain
    kernel.shutdown()
    docs = wait_for_documents(
        hindsight_server.url, bank_id, lambda d: any("final_note" in t for t in d.values())
    )
    assert len(docs) == 10
    assert any("ship the weekly sales report on Monday" in text for text in docs.values())


def test_secrets_and_skipped_cells_never_reach_the_server(
    kernel_factory: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    kernel = kernel_factory(
        HINDSIGHT_API_URL=hindsight_server.url,
        HINDSIGHT_BANK_ID=bank_id,
        MY_SERVICE_TOKEN=SECRET_ENV,
    )
    kernel.run("%load_ext hindsight_magic")
    kernel.run(f"openai_key = '{SECRET_SK}'")
    kernel.run(f"github = '{SECRET_GHP}'")
    kernel.run("import os\nservice = os.environ['MY_SERVICE_TOKEN']\nservice")
    kernel.run("# hindsight: skip\nprivate_plan = 'acquire the competitor in spring'")
    kernel.run("token_count = 3")
    kernel.run("%hindsight autoretain now")
    wanted = ("openai_key =", "github =", "service =", "token_count =")  # a document each
    docs = wait_for_documents(
        hindsight_server.url,
        bank_id,
        lambda d: all(any(start in t for t in d.values()) for start in wanted),
    )
    text = "\n".join(docs.values())
    assert "openai_key = '[REDACTED]'" in text
    assert "github = '[REDACTED]'" in text
    assert "token_count = 3" in text  # ordinary text is left alone
    for secret in (SECRET_SK, SECRET_GHP, SECRET_ENV, "acquire the competitor"):
        assert secret not in text


def test_last_cells_mode_makes_separate_overlapping_documents(
    kernel_factory: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    kernel = kernel_factory(
        HINDSIGHT_API_URL=hindsight_server.url,
        HINDSIGHT_BANK_ID=bank_id,
        HINDSIGHT_RETAIN_MODE="last-cells",
    )
    kernel.run("%load_ext hindsight_magic")
    for cell in CELLS[:6]:
        kernel.run(cell)
    kernel.run("%hindsight flush")
    docs = wait_for_documents(hindsight_server.url, bank_id, lambda d: len(d) >= 2)
    assert len(docs) == 2, list(docs)
    assert all(doc_id.startswith("hm-") for doc_id in docs)  # new documents each time
    first, second = sorted(docs.values(), key=len)
    assert "import statistics" in first
    # the second window is the last N + overlap = 5 cells: cells 2-6, overlapping the first
    assert "sales = [120" in second
    assert "best = max" in second
    assert "import statistics" not in second
