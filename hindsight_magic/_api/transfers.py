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

from .._errors import ErrorKind, HindsightError
from .client import path_segment
from .errors import detail_of, readable, reply_line

if TYPE_CHECKING:
    import httpx

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

    def _submitted(self, operation: str, path: str, **params: Any) -> str:
        reply = self.client._request(
            operation,
            "POST",
            path,
            timeout_s=self.client.timeouts.request,
            params={k: v for k, v in params.items() if v is not None},
        )
        operation_id = reply.get("operation_id") if isinstance(reply, dict) else None
        if not operation_id:
            message = f"{operation} failed: the reply named no operation"
            raise HindsightError(operation, message, 202, reply, "not_hindsight")
        return str(operation_id)

    def export(self, bank_id: str) -> str:
        """Start an export of the whole bank (its data and configuration); the operation id."""
        path = f"{self.client._bank(bank_id)}/transfer/export"
        return self._submitted("exportBank", path)

    def clone(self, bank_id: str, target_bank_id: str) -> str:
        """Start copying ``bank_id`` into the new bank ``target_bank_id``; the operation id."""
        path = f"{self.client._bank(bank_id)}/clone"
        return self._submitted("cloneBank", path, target_bank_id=target_bank_id)

    def delete_bank(self, bank_id: str) -> bool:
        """``DELETE …/banks/{bank}`` with everything in it; False when there was none."""
        reply = self.client._request(
            "deleteBank",
            "DELETE",
            self.client._bank(bank_id),
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
        import httpx

        client = self.client
        path = f"{client._bank(recorded_in)}/transfer/import"
        params = {"mode": "restore", "target_bank_id": target_bank_id}
        with archive.open("rb") as file:
            counted = cast("IO[bytes]", _Counted(file, progress))  # read, seek and tell suffice
            files = {"file": (archive.name, counted, "application/zip")}
            request = httpx.Request("POST", client.base_url + path, params=params, files=files)
            http = client._http()
            for name in ("Authorization", "User-Agent"):
                if name in http.headers:
                    request.headers[name] = http.headers[name]
            timeout = client.timeouts.retain
            request.extensions["timeout"] = httpx.Timeout(timeout).as_dict()
            response = self._sent("importBank", http, request, timeout)
        try:
            reply = response.json()
        except ValueError:
            reply = None
        operation_id = reply.get("operation_id") if isinstance(reply, dict) else None
        if response.status_code >= 400 or not operation_id:
            raise _refused("importBank", response, reply)
        return str(operation_id)

    def download(
        self, url: str, out: BinaryIO, progress: Progress, expected: int | None = None
    ) -> int:
        """Stream the archive at ``url`` (an export's ``download_url``) into the open file
        ``out`` in chunks, then flush it to disk; the bytes written. ``OSError`` (a full disk
        …) is the caller's to report, and the partial file its to remove."""
        import httpx

        if not url.startswith(DOWNLOADS):
            message = f"downloadFile failed: the server named an unexpected address {url!r}"
            raise HindsightError("downloadFile", message, None, url, "not_hindsight")
        client = self.client
        key = url[len(DOWNLOADS) :]
        path = DOWNLOADS + "/".join(path_segment(part) for part in key.split("/"))
        timeout = httpx.Timeout(client.timeouts.retain, connect=10.0)
        written = 0
        try:
            with client._http().stream("GET", path, timeout=timeout) as response:
                if response.status_code >= 400:
                    response.read()
                    raise _refused("downloadFile", response, _json(response))
                for chunk in response.iter_bytes(CHUNK):
                    out.write(chunk)
                    written += len(chunk)
                    progress(written)
                out.flush()
                os.fsync(out.fileno())
        except httpx.TimeoutException as error:
            message = f"downloadFile request timed out after {int(timeout.read or 0)}s"
            raise HindsightError("downloadFile", message, details=error, kind="timeout") from None
        except httpx.HTTPError as error:
            message = f"downloadFile request failed: {error or type(error).__name__}"
            raise HindsightError("downloadFile", message, details=error, kind="connect") from None
        if expected is not None and written != expected:
            message = (
                f"downloadFile failed: {written:,} bytes arrived of the {expected:,} the "
                "server announced"
            )
            raise HindsightError("downloadFile", message, None, None, "timeout")
        return written

    @staticmethod
    def _sent(
        operation: str, http: httpx.Client, request: httpx.Request, timeout_s: float
    ) -> httpx.Response:
        import httpx

        try:
            return http.send(request)
        except httpx.TimeoutException as error:
            message = f"{operation} request timed out after {int(timeout_s + 0.5)}s"
            raise HindsightError(operation, message, details=error, kind="timeout") from None
        except httpx.HTTPError as error:
            message = f"{operation} request failed: {error or type(error).__name__}"
            raise HindsightError(operation, message, details=error, kind="connect") from None


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _refused(operation: str, response: httpx.Response, reply: Any) -> HindsightError:
    """The one-line error for a refused transfer request."""
    details = detail_of(reply, response.text)
    shown = reply_line(readable(details)) if reply is not None else response.reason_phrase
    kind: ErrorKind = "http" if reply is not None else "not_hindsight"
    return HindsightError(
        operation, f"{operation} failed: {shown}", response.status_code, details, kind
    )
