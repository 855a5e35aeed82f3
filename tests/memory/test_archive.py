"""What a restore reads from disk before anything is sent: the archive's own manifest and the
snapshot manifest beside it, each refused in one line when it is not what it claims."""

from __future__ import annotations

import tracemalloc
import zipfile
from pathlib import Path

import pytest

from hindsight_magic._memory.archive import archive_counts
from hindsight_magic._memory.curation import CurationError


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
        with pytest.raises(CurationError) as refused:
            archive_counts(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "manifest.json inside is over" in str(refused.value)
    assert "\n" not in str(refused.value)
    assert peak < 20_000_000, f"{peak / 1e6:.0f} MB held while reading the manifest"
