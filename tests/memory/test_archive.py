"""What a restore reads from disk before anything is sent: the archive's own manifest and the
snapshot manifest beside it, each refused in one line when it is not what it claims."""

from __future__ import annotations

import json
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from hindsight_magic._memory.archive import FORMAT, ArchiveError, Manifest, archive_counts


def test_a_zip_bomb_manifest_is_refused_without_inflating_it(tmp_path: Path) -> None:
    """200 MB of spaces compress to about 200 kB: reading the member whole would ask for it."""
    bomb = tmp_path / "bomb.zip"
    with (
        zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive,
        archive.open("manifest.json", "w", force_zip64=True) as member,
    ):
        member.write(b"{")
        for _ in range(200):
            member.write(b" " * (1 << 20))
        member.write(b"}")
    assert bomb.stat().st_size < 1_000_000
    tracemalloc.start()
    try:
        with pytest.raises(ArchiveError) as refused:
            archive_counts(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "manifest.json inside is over" in str(refused.value)
    assert "\n" not in str(refused.value)
    assert peak < 20_000_000, f"{peak / 1e6:.0f} MB held while reading the manifest"


MANIFEST = {
    "format": FORMAT,
    "archive": "course.zip",
    "bank": "course",
    "scope": "global",
    "memories": 12,
    "documents": 3,
    "observations": 0,
    "mental_models": 2,
    "server_version": "1.1.0",
    "created_at": "2026-12-03T08:00:00+00:00",
    "bytes": 4096,
    "sha256": "0" * 64,
}


def test_a_well_formed_manifest_is_read(tmp_path: Path) -> None:
    path = tmp_path / "course.manifest.json"
    path.write_text(json.dumps(MANIFEST))
    assert Manifest.read(path).memories == 12


@pytest.mark.parametrize(
    ("field", "value"),
    [("memories", "many"), ("bytes", None), ("documents", True), ("sha256", 7), ("bank", [])],
)
def test_a_manifest_field_of_the_wrong_type_is_refused_before_anything_is_sent(
    tmp_path: Path, field: str, value: object
) -> None:
    path = tmp_path / "course.manifest.json"
    path.write_text(json.dumps({**MANIFEST, field: value}))
    with pytest.raises(ArchiveError) as refused:
        Manifest.read(path)
    assert str(refused.value).startswith(f"{path} is not a snapshot manifest (its field {field} is")
    assert str(refused.value).endswith("): nothing was imported.")
    assert "\n" not in str(refused.value)
