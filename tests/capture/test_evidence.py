"""The data files a cell read: found in its source, fingerprinted, and checked later."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from hindsight_magic._capture.evidence import (
    ENDS,
    Evidence,
    State,
    check,
    evidence_metadata,
    fingerprint,
    parse_evidence,
    paths_in,
    recorded,
    with_evidence,
)

RAN_LATER = 4e9  # a moment after every file here was written


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder (a git repository) the process works in, with data/sales.csv."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "sales.csv").write_text("region,revenue\nEU,100\nUS,120\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_paths_in_finds_what_readers_are_given() -> None:
    source = "\n".join(
        [
            "import pandas as pd, numpy as np, json",
            "from pathlib import Path",
            "df = pd.read_csv('data/sales.csv', sep=',')",
            "arr = np.load(file='arrays/x.npy')",
            "grid = np.loadtxt('grid.txt')",
            "meta = json.load(open('meta.json'))",
            "p = Path('data') / 'more.parquet'",
            "q = pd.read_parquet(path='data/q.parquet')",
            "print('not a path')",
            "name = 'not read.csv'",
            "df.to_csv('out.csv')",
        ]
    )
    assert paths_in(source) == (
        "data/sales.csv",
        "arrays/x.npy",
        "grid.txt",
        "meta.json",
        "data/more.parquet",
        "data/q.parquet",
    )


def test_a_file_the_cell_writes_is_not_its_evidence() -> None:
    source = "open('out.csv', 'w'); open('log.txt', mode='a'); open('in.csv', 'r'); open('x', 'rb')"
    assert paths_in(source) == ("in.csv", "x")


def test_paths_in_reads_past_line_magics() -> None:
    source = "%retain Q3 revenue fell 4 %\ndf = pd.read_csv('data/sales.csv')\n!ls data"
    assert paths_in(source) == ("data/sales.csv",)


@pytest.mark.parametrize(
    "source",
    ["%%time\nx = open('a.csv')", "open('a.csv'", "x = 1", "open(name)", "pd.read_csv(f'{d}.csv')"],
)
def test_paths_in_finds_nothing_where_no_literal_is_read(source: str) -> None:
    assert paths_in(source) == ()


def test_recorded_keeps_files_of_the_project_relative_only(project: Path, tmp_path: Path) -> None:
    outside = tmp_path.parent / "outside-evidence.csv"
    outside.write_text("x\n")
    try:
        source = f"open('data/sales.csv'); open({str(outside)!r}); open('missing.csv')"
        files, root = recorded(source, ran_at=RAN_LATER, whole_limit=1 << 20)
    finally:
        outside.unlink()
    assert [e.path for e in files] == ["data/sales.csv"]
    assert files[0].size == (project / "data" / "sales.csv").stat().st_size
    assert files[0].digest.startswith("w")
    assert root
    meta = evidence_metadata(files, root)
    assert str(project) not in str(meta)
    assert parse_evidence(meta) == (tuple(files), root)


def test_a_path_that_looks_like_a_secret_is_not_recorded(project: Path) -> None:
    token = "ghp_" + "a1B2" * 6
    (project / f"{token}.csv").write_text("x\n")
    files, _ = recorded(f"open('{token}.csv')", ran_at=RAN_LATER, whole_limit=1 << 20)
    assert files == []


def test_check_says_same_changed_gone_and_elsewhere(project: Path) -> None:
    sales = project / "data" / "sales.csv"
    files, root = recorded("pd.read_csv('data/sales.csv')", ran_at=RAN_LATER, whole_limit=1 << 20)
    assert [c.state for c in check(files, root)] == [State.SAME]

    os.utime(sales, (1e9, 1e9))  # touched: another mtime, the same content
    assert [c.state for c in check(files, root)] == [State.SAME]

    sales.write_text("region,revenue\nEU,96\nUS,120\n")  # re-written, same size
    (changed,) = check(files, root)
    assert changed.state == State.CHANGED
    assert changed.mtime == sales.stat().st_mtime

    sales.unlink()
    assert [c.state for c in check(files, root)] == [State.GONE]
    assert [c.state for c in check(files, "another-machine")] == [State.ELSEWHERE]


def test_a_file_rewritten_before_it_was_fingerprinted_counts_as_changed(project: Path) -> None:
    files, root = recorded("open('data/sales.csv')", ran_at=1e9, whole_limit=1 << 20)
    assert files[0].digest == ""
    assert [c.state for c in check(files, root)] == [State.CHANGED]


def test_a_large_file_is_fingerprinted_by_its_ends(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    size = 10 * ENDS
    big.write_bytes(b"a" * size)
    ends = fingerprint(big, size, whole_limit=ENDS)
    assert ends.startswith("e")
    assert fingerprint(big, size, whole_limit=size).startswith("w")
    with open(big, "r+b") as file:  # the middle changes: the ends do not see it
        file.seek(size // 2)
        file.write(b"b")
    assert fingerprint(big, size, whole_limit=ENDS) == ends
    with open(big, "r+b") as file:  # the last rows change: they do
        file.seek(size - 10)
        file.write(b"c")
    assert fingerprint(big, size, whole_limit=ENDS) != ends


@pytest.mark.parametrize("path", ["/etc/passwd", "../secrets.csv", "data/../../x", "~/x", "C:/x"])
def test_a_path_from_the_server_that_leaves_the_project_is_never_checked(path: str) -> None:
    meta = evidence_metadata([Evidence(path, 1, 1, "wff")], "root")
    assert parse_evidence(meta) == ((), "root")


def test_metadata_that_is_not_evidence_is_ignored() -> None:
    assert parse_evidence({"evidence": "[[1]]"}) == ((), "")
    assert parse_evidence({"evidence": "data.csv"}) == ((), "")
    assert parse_evidence({}) == ((), "")
    kept = (Evidence("a.csv", 1, 2_000_000_000, "wff"),)
    assert parse_evidence(evidence_metadata(kept, "r"))[0] == kept


def test_a_cell_s_version_follows_the_content_of_what_it_read() -> None:
    read = [Evidence("data/sales.csv", 29, 1, "wabc")]
    assert with_evidence("0123456789ab", []) == "0123456789ab"
    mixed = with_evidence("0123456789ab", read)
    assert re.fullmatch(r"[0-9a-f]{12}", mixed)
    touched = [Evidence("data/sales.csv", 29, 2, "wabc")]  # same content, another mtime
    assert with_evidence("0123456789ab", touched) == mixed
    assert with_evidence("0123456789ab", [Evidence("data/sales.csv", 29, 1, "wdef")]) != mixed
