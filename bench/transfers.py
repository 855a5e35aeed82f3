"""Snapshot and restore of a 5 000-memory bank, vs. the same export, download and import by hand.

One bank of about 5 000 memories is built first (untimed: documents retained asynchronously,
then waited for until the server has indexed them all). Then, taking turns (the order
alternating from run to run), in one process:

- the extension: ``hm.snapshot(path)`` (sends the queue, waits for indexing, exports, follows the
  operation, streams the archive to disk, hashes it, writes the manifest) and ``hm.restore(path,
  into=NEW)`` (checks the archive against its manifest, imports, follows, checks the counts);
- by hand with ``httpx`` (one persistent connection): ``POST …/transfer/export``, poll the
  operation every 0.2 s (as the extension does), ``GET`` the archive to a file (streamed), and
  ``POST …/transfer/import`` (multipart, the file opened from disk), poll again.

A warm-up of each way runs first, untimed, once the bank is indexed and consolidated. It also
samples the process's resident memory every 5 ms during the extension's downloads, for
this archive and for a small bank's: the growth stays flat (chunks of 1 MB), whatever the
archive's size.

Run alone: ``python -m bench.transfers [--runs N] [--documents N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .common import (
    Stat,
    api_headers,
    bank_counts,
    bench_server,
    current_rss_mb,
    delete_bank,
    loaded,
    new_bank,
    quiet_shell,
    settle_bank,
)

BAR = 1.10  # issue 23: snapshot and restore each within 1.1× of doing it by hand
DOCUMENTS = 870  # with the mock LLM each document makes about six memories: ~5 000 in all
SMALL_DOCUMENTS = 20
POLL_S = 0.2
CONSOLIDATION_WAIT_S = 300.0


def survey_plot(i: int) -> dict[str, Any]:
    """The ``i``th document of the default bench bank."""
    return {
        "content": f"Plot {i} of the ridge survey held {i % 37} nests in week {i % 12}.",
        "document_id": f"plot-{i}",
    }


def build(
    http: Any,
    bank: str,
    documents: int,
    timeout_s: float = 1800.0,
    item: Callable[[int], dict[str, Any]] = survey_plot,
    first: int = 0,
) -> tuple[int, int]:
    """A bank with documents ``item(first)`` … ``item(first + documents - 1)`` added,
    retained asynchronously and waited for (indexed, then consolidated); the (memories,
    documents) it then holds."""
    http.put(f"/v1/default/banks/{bank}", json={}).raise_for_status()
    for start in range(first, first + documents, 100):
        items = [item(i) for i in range(start, min(first + documents, start + 100))]
        reply = http.post(
            f"/v1/default/banks/{bank}/memories", json={"items": items, "async": True}
        )
        reply.raise_for_status()
    # indexed, then consolidated: background work would slow the first transfers
    settle_bank(http, bank, timeout_s + CONSOLIDATION_WAIT_S)
    return bank_counts(http, bank)


def _follow(http: Any, bank: str, operation: str) -> dict[str, Any]:
    while True:
        reply = http.get(f"/v1/default/banks/{bank}/operations/{operation}").json()
        if reply["status"] == "completed":
            return dict(reply.get("result_metadata") or {})
        if reply["status"] in ("failed", "cancelled", "not_found"):
            raise RuntimeError(f"operation {operation}: {reply}")
        time.sleep(POLL_S)


def export_by_hand(http: Any, bank: str, target: Path) -> int:
    """Export, follow, download (streamed): the bytes written."""
    reply = http.post(f"/v1/default/banks/{bank}/transfer/export")
    reply.raise_for_status()
    result = _follow(http, bank, reply.json()["operation_id"])
    written = 0
    with http.stream("GET", result["download_url"]) as response, target.open("wb") as out:
        response.raise_for_status()
        for chunk in response.iter_bytes(1 << 20):
            written += out.write(chunk)
    return written


def import_by_hand(http: Any, recorded_in: str, archive: Path, target: str) -> dict[str, Any]:
    """Upload the archive as the new bank ``target`` and follow the import."""
    with archive.open("rb") as file:
        reply = http.post(
            f"/v1/default/banks/{recorded_in}/transfer/import",
            params={"mode": "restore", "target_bank_id": target},
            files={"file": (archive.name, file, "application/zip")},
        )
    reply.raise_for_status()
    return _follow(http, recorded_in, reply.json()["operation_id"])


@contextmanager
def peak_rss() -> Iterator[Callable[[], float]]:
    """Samples this process's resident memory every 5 ms; yields a function giving the peak
    growth (MB) over the baseline so far."""
    baseline = current_rss_mb()
    peak = [baseline]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.005):
            peak[0] = max(peak[0], current_rss_mb())

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield lambda: peak[0] - baseline
    finally:
        done.set()
        thread.join()


def measure(url: str, runs: int, documents: int = DOCUMENTS) -> dict[str, Any]:
    """Both ways, taking turns, ``runs`` times each; times in s, memory in MB."""
    import httpx

    import hindsight_magic as hm
    from hindsight_magic._memory.archive import TRANSFER_BANK

    big, small = new_bank("transfer-big"), new_bank("transfer-small")
    made: list[str] = [big, small]
    times: dict[str, list[float]] = {w: [] for w in ("snapshot", "export", "restore", "import")}
    growth: dict[str, float] = {}
    sizes: dict[str, int] = {}
    shell = quiet_shell()
    http = httpx.Client(base_url=url, headers=api_headers(), timeout=600)
    try:
        memories, documents_held = build(http, big, documents)
        build(http, small, SMALL_DOCUMENTS)
        http.put(f"/v1/default/banks/{TRANSFER_BANK}", json={})
        with tempfile.TemporaryDirectory(prefix="bench-transfer-") as tmp:
            folder = Path(tmp)
            for name, bank in (("small", small), ("big", big)):
                with loaded(shell, url, bank, SCOPING="global", AUTO_RETAIN="false"):
                    with peak_rss() as grown:
                        hm.snapshot(folder / f"{name}.zip")
                    growth[name] = grown()
                    sizes[name] = (folder / f"{name}.zip").stat().st_size
            archive = folder / "big.zip"
            with loaded(shell, url, big, SCOPING="global", AUTO_RETAIN="false"):
                for run in range(-1, runs):  # run -1: a warm-up of each way, not timed
                    order = ("magic", "hand") if run % 2 == 0 else ("hand", "magic")
                    for way in order:
                        target = f"{big}-{way}-{run}-{uuid.uuid4().hex[:4]}"
                        made.append(target)
                        started = time.perf_counter()
                        if way == "magic":
                            hm.snapshot(folder / f"magic-{run}.zip")
                            took = [time.perf_counter() - started]
                            started = time.perf_counter()
                            hm.restore(archive, into=target)
                        else:
                            export_by_hand(http, big, folder / f"hand-{run}.zip")
                            took = [time.perf_counter() - started]
                            started = time.perf_counter()
                            import_by_hand(http, TRANSFER_BANK, archive, target)
                        took.append(time.perf_counter() - started)
                        if run >= 0:
                            out, back = (
                                ("snapshot", "restore")
                                if way == "magic"
                                else (
                                    "export",
                                    "import",
                                )
                            )
                            times[out].append(took[0])
                            times[back].append(took[1])
                        delete_bank(url, target)
    finally:
        http.close()
        for bank in made:
            delete_bank(url, bank)
    found = {way: Stat.of(values) for way, values in times.items()}
    result: dict[str, Any] = {way: stat.to_json() for way, stat in found.items()}
    result.update(
        snapshot_ratio=found["snapshot"].median / found["export"].median,
        restore_ratio=found["restore"].median / found["import"].median,
        memories=memories,
        documents=documents_held,
        growth=growth,
        sizes=sizes,
        runs=runs,
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each way")
    parser.add_argument("--documents", type=int, default=DOCUMENTS, help="documents in the bank")
    args = parser.parse_args(argv)
    os.environ.pop("HINDSIGHT_BANK_ID", None)
    with bench_server() as server:
        result = measure(server.url, args.runs, args.documents)
    print(json.dumps(result, indent=2))
    print(
        f"{result['memories']} memories ({result['sizes']['big'] / 1e6:.1f} MB archive): "
        f"snapshot {result['snapshot']['median']:.2f} s vs by hand "
        f"{result['export']['median']:.2f} s (ratio {result['snapshot_ratio']:.2f}); restore "
        f"{result['restore']['median']:.2f} s vs {result['import']['median']:.2f} s (ratio "
        f"{result['restore_ratio']:.2f}); bar ≤ {BAR}. RSS growth during the download: "
        f"{result['growth']['big']:.1f} MB (big), {result['growth']['small']:.1f} MB (small "
        f"archive of {result['sizes']['small'] / 1e3:.0f} kB)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
