"""Moving whole banks: the server's transfer endpoints, streamed to and from disk.

``BankTransfers`` wraps a ``HindsightClient`` (its connection pool, key and timeouts) and adds
what JSON requests cannot do: a multipart upload of an archive read from disk in chunks, and a
download written to disk in chunks — an archive is never whole in memory, so a bank of any size
moves in a flat amount of RAM. Each reports its progress in bytes to a callback.

The endpoints (hindsight-api 1.1.0) are asynchronous: ``POST …/transfer/export``, ``POST
…/transfer/import`` (``restore`` mode: into a bank that must not exist yet; the operation is
recorded against the bank in the path, which must exist) and ``POST …/clone`` return an
``operation_id`` to follow with ``GET …/operations/{id}``; an export's result names its archive
(``download_url``), fetched with ``GET /v1/default/files/download/{key}``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO, cast

from .._errors import HindsightError
from .transport import bank_path, path_segment

if TYPE_CHECKING:
    from .client import HindsightClient

CHUNK = 1 << 20  # bytes per read and write: progress moves, memory stays flat
DOWNLOADS = "/v1/default/files/download/"
Progress = Callable[[int], None]  # bytes moved so far


class _Counted:
    """A file read by httpx's multipart encoder, counting what it has read."""

    def __init__(self, file: IO[bytes], progress: Progress) -> None:
        self._file = file
        self._progress = progress
        self._done = 0

    def read(self, size: int = -1) -> bytes:
        data = self._file.read(CHUNK if size is None or size < 0 else min(size, CHUNK))
        self._done += len(data)
        self._progress(self._done)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()


class BankTransfers:
    """Export, import and clone banks, and stream archives, through ``client``."""

    def __init__(self, client: HindsightClient) -> None:
        self.client = client

    def _submitted(
        self, operation: str, path: str, files: dict[str, Any] | None = None, **params: Any
    ) -> str:
        timeout = self.client.timeouts.retain if files else self.client.timeouts.request
        reply = self.client.call(
            operation,
            "POST",
            path,
            timeout_s=timeout,
            params={k: v for k, v in params.items() if v is not None},
            files=files,
        )
        operation_id = reply.get("operation_id") if isinstance(reply, dict) else None
        if not operation_id:
            message = f"{operation} failed: the reply named no operation"
            raise HindsightError(operation, message, 202, reply, "not_hindsight")
        return str(operation_id)

    def export(self, bank_id: str) -> str:
        """Start an export of the whole bank (its data and configuration); the operation id."""
        return self._submitted("exportBank", f"{bank_path(bank_id)}/transfer/export")

    def clone(self, bank_id: str, target_bank_id: str) -> str:
        """Start copying ``bank_id`` into the new bank ``target_bank_id``; the operation id."""
        path = f"{bank_path(bank_id)}/clone"
        return self._submitted("cloneBank", path, target_bank_id=target_bank_id)

    def delete_bank(self, bank_id: str) -> bool:
        """``DELETE …/banks/{bank}`` with everything in it; False when there was none."""
        reply = self.client.call(
            "deleteBank",
            "DELETE",
            bank_path(bank_id),
            timeout_s=self.client.timeouts.request,
            allow_404=True,
            need_json=False,
        )
        return reply is not None

    def import_archive(
        self, recorded_in: str, target_bank_id: str, archive: Path, progress: Progress
    ) -> str:
        """Upload ``archive`` to be restored as the new bank ``target_bank_id``, reading it in
        chunks; the operation id (recorded against the existing bank ``recorded_in``)."""
        with archive.open("rb") as file:
            counted = cast("IO[bytes]", _Counted(file, progress))  # read, seek and tell suffice
            return self._submitted(
                "importBank",
                f"{bank_path(recorded_in)}/transfer/import",
                files={"file": (archive.name, counted, "application/zip")},
                mode="restore",
                target_bank_id=target_bank_id,
            )

    def download(
        self, url: str, out: BinaryIO, progress: Progress, expected: int | None = None
    ) -> int:
        """Stream the archive at ``url`` (an export's ``download_url``) into the open file
        ``out`` in chunks, then flush it to disk; the bytes written. ``OSError`` (a full disk
        …) is the caller's to report, and the partial file its to remove."""
        if not url.startswith(DOWNLOADS):
            message = f"downloadFile failed: the server named an unexpected address {url!r}"
            raise HindsightError("downloadFile", message, None, url, "not_hindsight")
        key = url[len(DOWNLOADS) :]
        path = DOWNLOADS + "/".join(path_segment(part) for part in key.split("/"))
        written = 0
        with self.client.stream("downloadFile", path, timeout_s=self.client.timeouts.retain) as got:
            for chunk in got.iter_bytes(CHUNK):
                out.write(chunk)
                written += len(chunk)
                progress(written)
            out.flush()
            os.fsync(out.fileno())
        if expected is not None and written != expected:
            message = (
                f"downloadFile failed: {written:,} bytes arrived of the {expected:,} the "
                "server announced"
            )
            raise HindsightError("downloadFile", message, None, None, "timeout")
        return written
