"""Snapshot, restore and clone against the real server: what comes back is what went out, a copy
stays a copy, and every damaged or refused input is one line with nothing imported.

With the mock LLM the server stores some prompt noise as facts too, so assertions are on the
planted facts ("contains"); each test uses banks of its own and removes them.
"""

from __future__ import annotations

import errno
import hashlib
import json
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import Notebook
from helpers import Relay, RunningServer, wait_for
from journalkit import small_disk

import hindsight_magic as hm
from hindsight_magic._api import transfers
from hindsight_magic.testing import Driver

pytestmark = pytest.mark.integration


@pytest.fixture
def banks(hindsight_server: RunningServer) -> Iterator[list[str]]:
    """Banks a test makes; deleted afterwards."""
    made: list[str] = []
    yield made
    with httpx.Client(base_url=hindsight_server.url, timeout=30) as http:
        for bank in made:
            http.delete(f"/v1/default/banks/{bank}")


@pytest.fixture
def book(
    notebook: Notebook, hindsight_server: RunningServer, bank_id: str, banks: list[str]
) -> Notebook:
    banks.append(bank_id)
    notebook.load(
        api_url=hindsight_server.url,
        bank_id=bank_id,
        auto_retain="false",
        scoping="global",
    )
    return notebook


def shown(book: Notebook, source: str) -> str:
    """What a cell shows: its value's text form, or its one error line."""
    cell = book.run(source)
    return repr(cell.result) if cell.error is None else f"Error: {cell.error}"


def recalled(query: str) -> dict[str, Any]:
    """text → memory of a recall in the current bank."""
    return {m.text: m for m in hm.recall(query)}


def planted(book: Notebook, count: int = 3) -> list[str]:
    mark = uuid.uuid4().hex[:8]
    facts = [f"Survey {mark} plot {n} holds {n + 3} nests." for n in range(count)]
    for fact in facts:
        assert book.run(f"%retain {fact}").error is None
    return facts


def holding(facts: list[str]) -> dict[str, Any] | None:
    """The recalled memories when every one of ``facts`` is among them, else None."""
    found = recalled("Survey plot nests")
    return found if all(fact in found for fact in facts) else None


def models(server: RunningServer, bank: str) -> set[str]:
    reply = httpx.get(f"{server.url}/v1/default/banks/{bank}/mental-models", timeout=30)
    return {m["id"] for m in reply.json().get("items", [])} if reply.status_code == 200 else set()


def test_a_snapshot_restores_the_memories_their_provenance_and_the_models(
    book: Notebook, hindsight_server: RunningServer, bank_id: str, tmp_path: Path
) -> None:
    facts = planted(book)
    before = wait_for(lambda: holding(facts), 60, "the facts")
    wait_for(lambda: models(hindsight_server, bank_id) or None, 30, "the seeded mental models")
    seeded = models(hindsight_server, bank_id)
    archive = tmp_path / "course.zip"

    line = shown(book, f"%hindsight snapshot {archive}")
    assert line.startswith(f"Snapshot of bank '{bank_id}':"), line
    manifest = json.loads((tmp_path / "course.manifest.json").read_text())
    assert manifest["bank"] == bank_id
    assert manifest["memories"] >= 3
    assert manifest["mental_models"] == len(seeded)
    assert len(manifest["sha256"]) == 64
    assert manifest["bytes"] == archive.stat().st_size

    httpx.delete(f"{hindsight_server.url}/v1/default/banks/{bank_id}", timeout=30)
    assert hm.recall("Survey plot nests").texts == []  # gone
    line = shown(book, f"%hindsight restore {archive}")
    assert "the counts match the manifest" in line, line
    after = recalled("Survey plot nests")
    for fact in facts:
        assert fact in after
        assert after[fact].provenance == before[fact].provenance  # notebook, cell, source …
        assert after[fact].provenance.source == "%retain"
    assert models(hindsight_server, bank_id) == seeded


def test_a_clone_and_its_source_keep_apart(
    book: Notebook, hindsight_server: RunningServer, bank_id: str, banks: list[str]
) -> None:
    facts = planted(book, 1)
    wait_for(lambda: holding(facts), 60, "the fact")
    copy = f"{bank_id}-copy"
    banks.append(copy)
    line = shown(book, f"%hindsight clone --to {copy} --switch")
    assert line.startswith(f"Cloned bank '{bank_id}' into '{copy}'"), line
    assert line.endswith(f"This session now uses '{copy}'.")
    assert facts[0] in recalled("Survey plot nests")  # the copy holds what the source held
    hm.retain("Only the clone knows the east plot flooded.")
    assert "Only the clone knows the east plot flooded." in recalled("east plot flooded")
    book.run(f"%hindsight bank {bank_id}")
    assert "Only the clone knows the east plot flooded." not in recalled("east plot flooded")
    hm.retain("Only the source knows the west plot dried out.")
    assert "Only the source knows the west plot dried out." in recalled("west plot dried")
    book.run(f"%hindsight bank {copy}")
    assert "Only the source knows the west plot dried out." not in recalled("west plot dried")


@pytest.fixture
def snapshot(book: Notebook, tmp_path: Path) -> Path:
    planted(book, 2)
    archive = tmp_path / "kept.zip"
    assert "Snapshot of bank" in shown(book, f"%hindsight snapshot {archive}")
    return archive


def bank_exists(server: RunningServer, bank: str) -> bool:
    return httpx.get(f"{server.url}/v1/default/banks/{bank}/stats", timeout=30).status_code == 200


def twin(archive: Path, data: bytes, name: str) -> Path:
    """An archive called ``name`` holding ``data``, with ``archive``'s manifest beside it."""
    other = archive.with_name(name)
    other.write_bytes(data)
    manifest = json.loads(archive.with_name(f"{archive.stem}.manifest.json").read_text())
    other.with_name(f"{other.stem}.manifest.json").write_text(json.dumps(manifest))
    return other


def test_damaged_or_refused_archives_are_one_line_and_import_nothing(
    book: Notebook, hindsight_server: RunningServer, bank_id: str, snapshot: Path
) -> None:
    data = snapshot.read_bytes()
    altered = bytearray(data)
    altered[len(altered) // 2] ^= 0x01
    notes = snapshot.with_name("notes.zip")
    notes.write_text("not a zip at all")
    manifest = json.loads(snapshot.with_name("kept.manifest.json").read_text())
    digest = hashlib.sha256(notes.read_bytes()).hexdigest()
    manifest.update(bytes=notes.stat().st_size, sha256=digest)
    snapshot.with_name("notes.manifest.json").write_text(json.dumps(manifest))
    cases = {
        twin(snapshot, data[: len(data) // 2], "cut.zip"): "does not match its manifest",
        twin(snapshot, bytes(altered), "altered.zip"): "does not match its manifest",
        notes: "is not a Hindsight archive",
        snapshot: f"Bank '{bank_id}' already holds memories",  # no --replace
        snapshot.with_name("missing.zip"): "No archive at",
    }
    for archive, expected in cases.items():
        target = f"{bank_id}-{archive.stem}"
        into = "" if archive == snapshot else f" --into {target}"
        cell = book.run(f"%hindsight restore {archive}{into}")
        assert cell.error is not None, archive
        assert expected in str(cell.error), (archive, str(cell.error))
        assert "\n" not in str(cell.error)
        if into:
            assert not bank_exists(hindsight_server, target), target  # nothing imported


def test_an_archive_the_server_cannot_import_is_its_failure_in_one_line(
    book: Notebook, hindsight_server: RunningServer, bank_id: str, snapshot: Path
) -> None:
    """A ZIP whose own manifest reads well but whose document the server cannot parse: the
    server's import operation fails, which is the server's failure (``HindsightError``), not
    bad input, and its multi-line reason is one line."""
    broken = snapshot.with_name("broken.zip")
    with zipfile.ZipFile(snapshot) as source, zipfile.ZipFile(broken, "w") as copy:
        for member in source.infolist():
            data = source.read(member)
            if member.filename.startswith("documents/"):
                data = b'{"not": "a document"'
            copy.writestr(member, data)
    target = f"{bank_id}-broken"
    cell = book.run(f"%hindsight restore {broken} --into {target}")
    assert isinstance(cell.error, hm.HindsightError), repr(cell.error)
    assert "The restore failed on the server: ValidationError" in str(cell.error)
    assert "\n" not in str(cell.error)
    said = [line for line in cell.text.splitlines() if "failed on the server" in line]
    assert said == [f"HindsightError: {cell.error}"], cell.text  # one line, no traceback
    assert "Traceback" not in cell.text
    httpx.delete(f"{hindsight_server.url}/v1/default/banks/{target}", timeout=30)


def test_a_server_without_transfers_is_told_in_one_line(
    book: Notebook, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    planted(book, 1)
    session = book.magics.session

    def old_server(request: httpx.Request) -> httpx.Response | None:  # no transfer endpoints
        if request.url.path.endswith("/transfer/export"):
            return httpx.Response(404, json={"detail": "Not Found"})
        return None

    Driver(session).use_transport(Relay(old_server))
    cell = book.run(f"%hindsight snapshot {tmp_path / 'x.zip'}")
    assert "does not offer bank transfers" in str(cell.error)
    assert not list(tmp_path.glob("*.zip"))


@pytest.mark.parametrize("kind", ["tmpfs", "injected"])
def test_a_full_disk_while_downloading_leaves_no_partial_file(
    book: Notebook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    planted(book, 2)
    with small_disk(tmp_path / "disk", kind, monkeypatch) as disk:
        if disk.mounted:
            disk.fill()
        else:  # where nothing can be mounted, the write fails as a full disk's does

            def full(fd: int) -> None:
                raise OSError(errno.ENOSPC, "No space left on device")

            monkeypatch.setattr(transfers.os, "fsync", full)
        cell = book.run(f"%hindsight snapshot {disk.root / 'full.zip'}")
        assert "Could not write the snapshot" in str(cell.error), cell.text
        assert "No space left on device" in str(cell.error)
        left = [p.name for p in disk.root.iterdir() if p.name != "filler"]
        assert left == [], left


def test_an_interrupt_cancels_the_servers_operation_and_keeps_nothing(
    book: Notebook,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    hindsight_server: RunningServer,
    bank_id: str,
) -> None:
    planted(book, 1)
    session = book.magics.session
    asked: list[str] = []
    export = transfers.BankTransfers.export

    def exported(self: transfers.BankTransfers, bank: str) -> str:
        asked.append(export(self, bank))
        return asked[-1]

    def interrupted(request: httpx.Request) -> httpx.Response | None:
        following = request.method == "GET" and "/operations/" in request.url.path
        if following and request.url.path.rsplit("/", 1)[-1] in asked:
            raise KeyboardInterrupt  # the user pressed Interrupt while the server exported
        return None

    monkeypatch.setattr(transfers.BankTransfers, "export", exported)
    Driver(session).use_transport(Relay(interrupted))
    folder = tmp_path / "snapshots"
    cell = book.run(f"%hindsight snapshot {folder / 'x.zip'}")
    assert "The snapshot was cancelled (the server's operation too)" in str(cell.error)
    assert not folder.exists() or list(folder.iterdir()) == []
    state = httpx.get(
        f"{hindsight_server.url}/v1/default/banks/{bank_id}/operations/{asked[0]}", timeout=30
    ).json()["status"]
    assert state in ("cancelled", "completed", "not_found"), state  # it may have finished first


def test_a_restore_into_a_fresh_kernels_unused_bank_works_the_first_time(
    book: Notebook, hindsight_server: RunningServer, banks: list[str], snapshot: Path
) -> None:
    """A new kernel (journal on, mental models on: the defaults) restoring a course into its
    own bank: the flush before the restore may create the empty bank, which is nothing to
    replace."""
    fresh = f"{banks[0]}-fresh"
    banks.append(fresh)
    book.run("%unload_ext hindsight_magic")
    book.load(bank_id=fresh)
    line = shown(book, f"%hindsight restore {snapshot}")
    assert "the counts match the manifest" in line, line
    assert bank_exists(hindsight_server, fresh)


def test_a_bank_that_just_got_a_memory_is_not_replaced_without_replace(
    book: Notebook, hindsight_server: RunningServer, banks: list[str], snapshot: Path
) -> None:
    """The server caches a bank's stats for a minute: read while the bank was empty (here by
    the doctor), they still say so after a retain. Whether a bank holds memories is read where
    nothing is cached, so the restore is refused and the retained note is not lost."""
    fresh = f"{banks[0]}-again"
    banks.append(fresh)
    book.run("%unload_ext hindsight_magic")
    book.load(bank_id=fresh, auto_retain="false", scoping="global")
    httpx.put(f"{hindsight_server.url}/v1/default/banks/{fresh}", json={}, timeout=30)
    assert "0 memories" in book.run("%hindsight doctor").text  # read while it was empty
    mine = f"My own note {uuid.uuid4().hex[:8]}: the ridge plots were re-counted."
    assert book.run(f"%retain {mine}").error is None
    line = shown(book, f"%hindsight restore {snapshot}")
    assert f"Bank '{fresh}' already holds memories" in line, line
    assert mine in recalled("own note ridge plots re-counted")


def test_a_snapshot_never_writes_over_or_through_what_is_already_there(
    book: Notebook, tmp_path: Path
) -> None:
    """An unrelated file at PATH stays unless --replace; a link planted where the download
    goes is never followed; a folder where the manifest goes is one line and no archive."""
    planted(book, 1)
    thesis = tmp_path / "thesis.zip"
    thesis.write_text("three years of work")
    line = shown(book, f"%hindsight snapshot {thesis}")
    assert line.startswith(f"Error: {thesis} already exists"), line
    assert "--replace" in line
    assert thesis.read_text() == "three years of work"

    victim = tmp_path / "victim.txt"
    victim.write_text("not yours")
    (tmp_path / ".linked.zip.partial").symlink_to(victim)
    line = shown(book, f"%hindsight snapshot {tmp_path / 'linked.zip'}")
    assert line.startswith("Snapshot of bank"), line
    assert victim.read_text() == "not yours"
    assert zipfile.is_zipfile(tmp_path / "linked.zip")

    (tmp_path / "blocked.manifest.json").mkdir()
    line = shown(book, f"%hindsight snapshot {tmp_path / 'blocked.zip'}")
    assert line.startswith("Error: "), line
    assert "blocked.manifest.json" in line
    assert "\n" not in line
    assert not (tmp_path / "blocked.zip").exists()

    line = shown(book, f"%hindsight snapshot {thesis} --replace")
    assert line.startswith("Snapshot of bank"), line
    assert zipfile.is_zipfile(thesis)
    assert (tmp_path / "thesis.manifest.json").is_file()
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".partial"))
    assert left == [".linked.zip.partial"]  # the planted link, untouched; nothing of ours


def test_a_plain_hindsight_export_restores_and_a_snapshot_imports_by_hand(
    book: Notebook,
    hindsight_server: RunningServer,
    bank_id: str,
    banks: list[str],
    tmp_path: Path,
) -> None:
    """Users have archives exported by Hindsight itself (the official client, the API, the
    UI): no manifest beside them. And a snapshot must stay importable by the client."""
    from hindsight_client import Hindsight

    facts = planted(book, 2)
    wait_for(lambda: holding(facts), 60, "the facts")
    client = Hindsight(base_url=hindsight_server.url, timeout=120.0)
    plain = tmp_path / "exported.zip"
    plain.write_bytes(client.export_bank(bank_id, poll_interval=0.2))
    restored = f"{bank_id}-plain"
    banks.append(restored)
    line = shown(book, f"%hindsight restore {plain} --into {restored}")
    assert line.startswith(f"Restored bank '{restored}' from exported.zip"), line
    assert "no snapshot manifest beside it" in line, line
    assert "size and SHA-256 checks were skipped" in line, line
    assert "the counts match the archive's own manifest" in line, line
    book.run(f"%hindsight bank {restored}")
    assert set(facts) <= set(recalled("Survey plot nests"))

    book.run(f"%hindsight bank {bank_id}")
    snapshot = tmp_path / "kept.zip"
    assert "Snapshot of bank" in shown(book, f"%hindsight snapshot {snapshot}")
    by_hand = f"{bank_id}-by-hand"
    banks.append(by_hand)
    client.import_bank(bank_id, snapshot.read_bytes(), target_bank_id=by_hand)
    wait_for(lambda: bank_exists(hindsight_server, by_hand), 60, "the import by hand")
