"""Taking memory along: snapshot a bank to a file, restore it, clone it on the server.

A **snapshot** is the server's own transfer archive (a ZIP: documents, facts, observations,
mental models and configuration; embeddings are rebuilt on import, without an LLM) and, beside
it, a small **manifest** of ours (``NAME.manifest.json``): the bank and scope, the counts, the
server's version, the UTC time and the archive's SHA-256. Restoring checks the archive against
the manifest before anything is sent — a truncated or altered file is refused — and checks the
server's import counts against it afterwards.

The server's transfers run as operations; ``Archiver`` follows each, reporting to a
``Progress`` (a widget bar in notebooks, a text bar in terminals: the caller's choice), and an
interrupt cancels the operation on the server. Archives stream to and from disk in chunks
(``_api/transfers.py``), never whole in memory. Every refusal is an ``ArchiveError`` and every
operation the server failed a ``HindsightError``: one line saying what to do, nothing imported
or half-written left behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from .._api.errors import reply_line
from .._api.transfers import BankTransfers
from .._api.vocabulary import ENDED_UNDONE, OperationStatus
from .._enums import StrEnum
from .._errors import PUBLIC, HindsightError, InputError
from .._text import plural
from .curation import Outcome

if TYPE_CHECKING:
    from .._api.client import Connection
    from .._api.replies import BankListItem, BankStats, OperationReply, OperationResult
    from .scope import BankScope

FORMAT = "hindsight-magic snapshot 1"
TRANSFER_BANK = "hindsight-magic-transfers"  # imports are recorded here (the target is new)
POLL_S = 0.2
RESTORE_ATTEMPTS = 3
OPERATION_TIMEOUT_S = 3600.0
HASH_CHUNK = 1 << 20
INNER_MANIFEST_MAX = 1 << 20  # the server's manifest.json inside an archive: a few hundred bytes
COUNTS = (  # manifest field, the archive's own manifest key
    ("memories", "fact_count"),
    ("documents", "document_count"),
    ("observations", "observation_count"),
    ("mental_models", "mental_model_count"),
)


class TransferKind(StrEnum):
    """A whole-bank operation the server runs and the archiver follows; named in its errors."""

    SNAPSHOT = "snapshot"
    RESTORE = "restore"
    CLONE = "clone"


class ArchiveError(InputError):
    """A snapshot, restore or clone that cannot be done; one line saying what to do."""

    __module__ = PUBLIC


class Progress(Protocol):
    """Where a long transfer reports how far it is (a widget bar, a text bar, nothing)."""

    def stage(self, label: str, total: int | None = None, unit: str | None = None) -> None:
        """A new step: ``label``, and its size when known (else indeterminate): bytes, or a
        count of ``unit`` (``memories``)."""

    def advance(self, done: int) -> None:
        """How far the current step is (bytes, or the ``unit``)."""

    def close(self, outcome: str) -> None:
        """The transfer ended; ``outcome`` is its one line."""


class NoProgress:
    """Reports nowhere (scripts that asked for quiet)."""

    def stage(self, label: str, total: int | None = None, unit: str | None = None) -> None:
        pass

    def advance(self, done: int) -> None:
        pass

    def close(self, outcome: str) -> None:
        pass


@dataclass(frozen=True)
class LayerSnapshot:
    """Which snapshot a layer's bank was restored from, as its name records it (``course
    snapshot 2026-12-04T09:12:00Z 3fa9…``): a teacher's newer snapshot of the course replaces
    it (re-published, with its cells' current versions), the same or an older one does not."""

    created_at: str = ""
    sha256: str = ""

    @property
    def replaced(self) -> bool:
        """Whether a bank restored from a snapshot is there (to be replaced by a newer one)."""
        return bool(self.sha256)

    def older_than(self, manifest: Manifest) -> bool:
        """Whether ``manifest`` is a newer snapshot than the one the bank holds."""
        return (
            self.replaced
            and self.sha256 != manifest.sha256[:16]
            and (manifest.created_at > self.created_at)
        )

    @staticmethod
    def name_for(manifest: Manifest) -> str:
        """The bank name that records ``manifest``'s snapshot."""
        return f"{SNAPSHOT_NAME} {manifest.created_at} {manifest.sha256[:16]}"


SNAPSHOT_NAME = "course snapshot"
_SNAPSHOT = re.compile(rf"{SNAPSHOT_NAME} (\S+) ([0-9a-f]{{16}})$")


def layer_snapshot(banks: Sequence[BankListItem], bank_id: str) -> LayerSnapshot:
    """The snapshot ``bank_id``'s name (in ``GET /banks``'s list) says it was restored from;
    an empty one for a bank that was not restored as a layer (or is not there)."""
    for bank in banks:
        if bank.bank_id == bank_id:
            found = _SNAPSHOT.fullmatch(bank.name or "")
            if found:
                return LayerSnapshot(found.group(1), found.group(2))
    return LayerSnapshot()


@dataclass(frozen=True)
class Manifest:
    """What a snapshot holds, written beside its archive."""

    format: str
    archive: str  # the archive's file name
    bank: str
    scope: str
    memories: int
    documents: int
    observations: int
    mental_models: int
    server_version: str
    created_at: str  # UTC, ISO 8601
    bytes: int
    sha256: str

    def to_json(self) -> str:
        """The manifest file's text."""
        return json.dumps(asdict(self), indent=2) + "\n"

    @classmethod
    def from_json(cls, data: object, path: Path) -> Manifest:
        """The manifest in ``data`` (the JSON of the manifest file at ``path``); an
        ``ArchiveError`` naming the file and the first field that is missing or not of its type
        (a count that is not a whole number would fail only after the import)."""

        def refused(why: str) -> ArchiveError:
            return ArchiveError(f"{path} is not a snapshot manifest ({why}): nothing was imported.")

        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise refused("damaged, or another tool's")
        values: dict[str, Any] = {}
        for name, field in cls.__dataclass_fields__.items():
            value = data.get(name)
            if field.type == "int":
                if type(value) is not int or value < 0:  # True is an int, not a count
                    raise refused(f"its field {name} is not a count (a whole number)")
            elif type(value) is not str:
                raise refused(f"its field {name} is not text")
            values[name] = value
        return cls(**values)

    @classmethod
    def read(cls, path: Path) -> Manifest:
        """The manifest at ``path``; ``ArchiveError`` when it is missing, not ours, or has a
        field of the wrong type — before anything is sent."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ArchiveError(
                f"No manifest beside the archive ({path.name}): restore archives made by "
                "%hindsight snapshot, with their manifest next to them."
            ) from None
        except (OSError, ValueError):
            data = None
        return cls.from_json(data, path)


def manifest_path(archive: Path) -> Path:
    """``course.zip`` → ``course.manifest.json``."""
    return archive.with_name(f"{archive.stem}.manifest.json")


def _check_destination(archive: Path, replace: bool) -> None:
    """Refuse, before the export starts, a snapshot whose archive or manifest would land on
    something already there: a folder always, a file unless ``replace``."""
    for path in (archive, manifest_path(archive)):
        if path.is_dir():
            raise ArchiveError(
                f"{path} is a folder, where the snapshot's "
                f"{'archive' if path == archive else 'manifest'} would go: move it or choose "
                "another PATH; nothing was written."
            )
        if (path.exists() or path.is_symlink()) and not replace:
            raise ArchiveError(
                f"{path} already exists: choose another PATH, or add --replace "
                "(replace=True) to write over it; nothing was written."
            )


@contextlib.contextmanager
def _new_file_beside(final: Path, made: list[Path]) -> Iterator[BinaryIO]:
    """A new file in ``final``'s folder, opened for writing, its path appended to ``made``:
    created exclusively under a random name, so no file or link already there is written
    through."""
    fd, name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".partial", dir=final.parent)
    made.append(Path(name))
    with os.fdopen(fd, "wb") as out:
        yield out


def sha256_of(path: Path) -> str:
    """The file's SHA-256, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def archive_counts(path: Path) -> dict[str, Any]:
    """The server's own manifest inside the archive (its counts); ``ArchiveError`` when the
    file is not a transfer archive. The member is read up to ``INNER_MANIFEST_MAX`` bytes
    only: a few hundred kilobytes of ZIP can inflate to gigabytes."""
    try:
        with zipfile.ZipFile(path) as archive, archive.open("manifest.json") as member:
            text = member.read(INNER_MANIFEST_MAX + 1)
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, EOFError):
        text = b""
    if len(text) > INNER_MANIFEST_MAX:
        raise ArchiveError(
            f"{path} is not a Hindsight archive: its manifest.json inside is over "
            f"{_size(INNER_MANIFEST_MAX)} (a real one is under a kilobyte); nothing was imported."
        )
    try:
        inner = json.loads(text)
    except ValueError:
        raise ArchiveError(
            f"{path} is not a Hindsight archive (no readable manifest.json inside): nothing "
            "was imported."
        ) from None
    if not isinstance(inner, dict):
        raise ArchiveError(f"{path} is not a Hindsight archive: nothing was imported.")
    return inner


def imported_counts(result: OperationResult) -> dict[str, int]:
    """What an import or a clone reports it copied, by manifest field."""
    return {
        "memories": result.facts_imported,
        "documents": result.documents_imported,
        "observations": result.observations_imported,
        "mental_models": result.mental_models_imported,
    }


def _dumped(reply: OperationReply | None) -> dict[str, Any] | None:
    """An operation's status as the details of the error it ends in."""
    return None if reply is None else reply.model_dump(exclude_none=True)


def _inner_counts(path: Path, inner: dict[str, Any]) -> dict[str, int]:
    """The counts the archive's own manifest declares, by manifest field; ``ArchiveError``
    when one is not a count."""
    counts = {}
    for name, key in COUNTS:
        value = inner.get(key, 0)
        if type(value) is not int or value < 0:
            raise ArchiveError(
                f"{path} is not a Hindsight archive: its manifest.json's {key} is not a count; "
                "nothing was imported."
            )
        counts[name] = value
    return counts


def default_name(bank_id: str, now: datetime | None = None) -> str:
    """``jupyter-2026-12-02T060012Z.zip``: the bank and the UTC time to the second (two
    snapshots a minute apart must not collide: an existing file is never replaced unasked),
    safe as a file name."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H%M%SZ")
    return f"{re.sub(r'[^A-Za-z0-9._-]+', '_', bank_id)}-{stamp}.zip"


def _size(count: int) -> str:
    """``8.4 kB``: a file size for people."""
    if count < 1000:
        return f"{count} bytes"
    scaled = float(count)
    for unit in ("kB", "MB", "GB"):
        scaled /= 1000
        if scaled < 1000 or unit == "GB":
            break
    return f"{scaled:.1f} {unit}"


def counts_line(counts: dict[str, int]) -> str:
    """``12 memories, 3 documents, 3 mental models``."""
    return ", ".join(
        [
            plural(counts.get("memories", 0), "memory", "memories"),
            plural(counts.get("documents", 0), "document", "documents"),
            plural(counts.get("mental_models", 0), "mental model", "mental models"),
        ]
    )


class Archiver:
    """Snapshot, restore and clone for one session: its connection, scope and queue."""

    def __init__(
        self,
        connection: Connection,
        scope: Callable[[], BankScope],
        flush: Callable[[], object],
        indexed: Callable[[str], object],
        changed: Callable[[], object],
        prepared: Callable[[], object] = lambda: None,
    ) -> None:
        self._connection = connection
        self._scope = scope
        self._flush = flush  # send this session's queue first: a snapshot must hold it
        self._indexed = indexed  # then wait (bounded) until the server can find it
        self._changed = changed  # a bank was replaced under the session: reload what it caches
        # wait (bounded) for the session's first preparation of its bank (created, models
        # seeded, on the worker): done after a restore's delete, it made the bank again
        self._prepared = prepared

    def _transfers(self) -> BankTransfers:
        return BankTransfers(self._connection.client)

    def _submit(self, start: Callable[[], str]) -> str:
        """Start a transfer operation; a server without the endpoint is told in one line."""
        try:
            return start()
        except HindsightError as error:
            if error.status_code not in (404, 405) or "Bank" in str(error.details):
                raise
            version = self._connection.client.identity().api_version
            raise ArchiveError(
                f"This server (Hindsight API {version}) does not offer bank transfers: "
                "snapshot, restore and clone need Hindsight API 1.1 or later."
            ) from None

    # -- snapshot ---------------------------------------------------------------------------

    def snapshot(
        self, path: Path | None, notebook: str | None, progress: Progress, replace: bool = False
    ) -> Outcome:
        """Write the current bank to ``path`` (default: a dated file next to the ``notebook``
        when its path is known, else in the working folder) and its manifest beside it; the
        queue is flushed first. An existing file at either place is replaced only with
        ``replace``; both are written to new temporary files first (never through a link
        someone left there), so a failure leaves neither half-written."""
        scope = self._scope()
        bank = scope.bank_id
        beside = Path(notebook) if notebook else None
        folder = beside.parent if beside is not None and beside.is_absolute() else Path.cwd()
        target = path if path is not None else folder / default_name(bank)
        if target.is_dir():
            target = target / default_name(bank)
        _check_destination(target, replace)
        stats = self._settled(bank, progress)
        if stats is None:
            raise ArchiveError(f"Nothing to snapshot: bank {bank!r} does not exist yet.")
        client = self._connection.client
        version = client.identity().api_version or "?"
        transfers = self._transfers()
        progress.stage(f"exporting bank {bank} on the server")
        operation = self._submit(lambda: transfers.export(bank))
        result = self._follow(bank, operation, progress, TransferKind.SNAPSHOT)
        url, size = result.download_url, result.byte_size
        progress.stage(f"downloading to {target.name}", int(size) if size else None)
        made: list[Path] = []  # the temporary files, removed whatever happens
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with _new_file_beside(target, made) as out:
                written = transfers.download(
                    url, out, progress.advance, int(size) if size else None
                )
            digest = sha256_of(made[0])
            inner = archive_counts(made[0])
            counts = {name: int(inner.get(key) or 0) for name, key in COUNTS}
            manifest = Manifest(
                format=FORMAT,
                archive=target.name,
                bank=bank,
                scope=scope.mode,
                server_version=version,
                created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                bytes=written,
                sha256=digest,
                **counts,
            )
            with _new_file_beside(manifest_path(target), made) as out:
                out.write(manifest.to_json().encode("utf-8"))
            made[0].replace(target)
            try:
                made[1].replace(manifest_path(target))
            except OSError:
                target.unlink(missing_ok=True)  # an archive without its manifest is no result
                raise
        except OSError as error:
            raise ArchiveError(
                f"Could not write the snapshot to {target}: {error.strerror or error} "
                "(the partial file was removed; free space or choose another PATH)."
            ) from None
        except KeyboardInterrupt:
            progress.close("Snapshot cancelled.")
            raise ArchiveError(
                "The snapshot was cancelled during the download; no partial file was kept."
            ) from None
        finally:
            for partial in made:
                with contextlib.suppress(OSError):
                    partial.unlink()
        line = (
            f"Snapshot of bank {bank!r}: {counts_line(asdict(manifest))} → {target} "
            f"({_size(written)}, SHA-256 {digest[:12]}…; manifest beside it)."
        )
        progress.close(line)
        return Outcome(line)

    # -- restore ----------------------------------------------------------------------------

    def restore(
        self, archive: Path, into: str | None, replace: bool, progress: Progress
    ) -> Outcome:
        """Import ``archive`` as bank ``into`` (default: the current bank) after checking it
        against its manifest (size, SHA-256), or, for a plain Hindsight export without one,
        against what the archive itself declares; a bank that holds memories is only replaced
        with ``replace``."""
        if not archive.is_file():
            raise ArchiveError(f"No archive at {archive}: give the path of a snapshot .zip.")
        beside = manifest_path(archive)
        manifest = Manifest.read(beside) if beside.exists() or beside.is_symlink() else None
        if manifest is not None:
            progress.stage(f"checking {archive.name} against its manifest")
            if archive.stat().st_size != manifest.bytes or sha256_of(archive) != manifest.sha256:
                raise ArchiveError(
                    f"{archive} does not match its manifest (size or SHA-256 differ: truncated "
                    "or altered); nothing was imported."
                )
        inner = archive_counts(archive)  # a ZIP the server can read, and its own counts
        if manifest is not None:
            expected = {name: int(getattr(manifest, name)) for name, _ in COUNTS}
            against, skipped = "the manifest", ""
        else:  # a plain Hindsight export (the official client, the API, the UI)
            expected = _inner_counts(archive, inner)
            against = "the archive's own manifest"
            skipped = " (no snapshot manifest beside it: the size and SHA-256 checks were skipped)"
        current = self._scope().bank_id
        target = into or current
        client, transfers = self._connection.client, self._transfers()
        # what this session queued for the bank counts as held (and would land in it)
        if target == current:
            self._prepared()
            self._settled(target, progress)
        held = client.holds_memories(target)
        client.create_bank(TRANSFER_BANK)
        for attempt in range(RESTORE_ATTEMPTS):
            if held is not None:
                if held and not replace:
                    raise ArchiveError(
                        f"Bank {target!r} already holds memories: restore into a new bank with "
                        "--into NAME, or add --replace to delete them first; nothing was "
                        "imported."
                    )
                transfers.delete_bank(target)
            progress.stage(f"uploading {archive.name}", archive.stat().st_size)
            try:
                operation = self._submit(
                    lambda: transfers.import_archive(
                        TRANSFER_BANK, target, archive, progress.advance
                    )
                )
                progress.stage(f"restoring bank {target} on the server")
                result = self._follow(TRANSFER_BANK, operation, progress, TransferKind.RESTORE)
                break
            except HindsightError as error:
                # the session's own background work (the mental models' first load, a
                # panel) may create the empty bank again between the delete and the import,
                # which the server refuses when it runs: look again, delete again
                if attempt + 1 == RESTORE_ATTEMPTS or "already exists" not in str(error):
                    raise
                held = client.holds_memories(target)
        if target == current:
            self._changed()
        imported = imported_counts(result)
        if imported == expected:
            line = (
                f"Restored bank {target!r} from {archive.name}{skipped}: "
                f"{counts_line(imported)} — the counts match {against}."
            )
        else:
            line = (
                f"Restored bank {target!r} from {archive.name}{skipped}, but the counts differ "
                f"from {against}: {counts_line(imported)} imported, {counts_line(expected)} "
                "expected."
            )
        progress.close(line)
        return Outcome(line, done=imported == expected)

    # -- clone ------------------------------------------------------------------------------

    def clone(self, target: str, replace: bool, progress: Progress) -> Outcome:
        """Copy the current bank into the new bank ``target`` on the server; an existing
        ``target`` is deleted first only with ``replace``."""
        bank = self._scope().bank_id
        client = self._connection.client
        if target == bank:
            raise ArchiveError(f"A clone needs a name of its own, not {bank!r}: use --to NAME.")
        if self._settled(bank, progress) is None:
            raise ArchiveError(f"Nothing to clone: bank {bank!r} does not exist yet.")
        if client.bank_stats(target) is not None:
            if not replace:
                raise ArchiveError(
                    f"Bank {target!r} already exists: choose another name with --to NAME, or "
                    "add --replace to delete it first."
                )
            self._transfers().delete_bank(target)
        progress.stage(f"cloning bank {bank} into {target} on the server")
        operation = self._submit(lambda: self._transfers().clone(bank, target))
        result = self._follow(bank, operation, progress, TransferKind.CLONE)
        counts = imported_counts(result)
        line = f"Cloned bank {bank!r} into {target!r}: {counts_line(counts)}."
        progress.close(line)
        return Outcome(line)

    # -- following the server -----------------------------------------------------------------

    def _settled(self, bank: str, progress: Progress) -> BankStats | None:
        """Send this session's queue and wait (bounded) until the server has indexed the
        memories the user queued, as a recall does — an export taken earlier would miss them
        (derived work, consolidation and mental model refreshes, is not waited for); the
        bank's stats, None when it does not exist."""
        progress.stage(f"sending what is queued for bank {bank}")
        self._flush()
        self._indexed(bank)
        return self._connection.client.bank_stats(bank)

    def _cancel(self, bank: str, operation: str) -> None:
        """Cancel the server's operation (best effort: it may have ended already)."""
        with contextlib.suppress(HindsightError):
            self._connection.client.cancel_operation(bank, operation)

    def _follow(
        self, bank: str, operation: str, progress: Progress, what: TransferKind
    ) -> OperationResult:
        """Poll the operation until it ends; its ``result_metadata``. An interrupt cancels
        it on the server; an operation that failed or never ended there is a
        ``HindsightError`` (the server's fault, not the user's input), in one line."""
        client = self._connection.client
        deadline = time.monotonic() + OPERATION_TIMEOUT_S
        try:
            while True:
                reply = client.operation(bank, operation)
                status = reply.status if reply is not None else None
                if reply is not None and status == OperationStatus.COMPLETED:
                    return reply.result
                why = (reply.error_message if reply is not None else None) or ""
                if status in ENDED_UNDONE or (
                    what == TransferKind.RESTORE and "already exists" in why
                ):
                    # an import refused because its bank exists is retried by the server for
                    # minutes, refused each time: give up on it now (the caller deletes again)
                    if status not in ENDED_UNDONE:
                        self._cancel(bank, operation)
                    why = reply_line(why) if why else f"the server's operation {status}"
                    message = f"The {what} failed on the server: {why.rstrip('.')}."
                    raise HindsightError(what, message, details=_dumped(reply))
                if time.monotonic() > deadline:
                    message = f"The {what} did not finish within an hour."
                    raise HindsightError(what, message, details=_dumped(reply), kind="timeout")
                progress.advance(0)
                time.sleep(POLL_S)
        except KeyboardInterrupt:
            self._cancel(bank, operation)
            progress.close(f"{what.capitalize()} cancelled.")
            raise ArchiveError(
                f"The {what} was cancelled (the server's operation too); nothing was kept."
            ) from None
