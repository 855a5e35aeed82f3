"""Bank scope: project label (plain dirs, git repos, worktrees), scoping modes, ensured banks."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from hindsight_magic._api.banks import EnsuredBanks
from hindsight_magic._memory.scope import BankScope, base_bank, compute_scope, project_label

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    subprocess.run(
        ["git", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
    )


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    return path


# -- project_label --------------------------------------------------------------------------------


def test_plain_directory_is_its_lowercased_basename(tmp_path: Path) -> None:
    folder = tmp_path / "My Analysis.v2"
    folder.mkdir()
    assert project_label(folder) == "my analysis.v2"
    assert project_label(str(folder)) == "my analysis.v2"


def test_default_is_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "CwdProject"
    folder.mkdir()
    monkeypatch.chdir(folder)
    assert project_label() == "cwdproject"


def test_root_gives_unknown() -> None:
    assert project_label("/") == "unknown"


@needs_git
def test_nested_dir_in_a_git_repo_uses_the_repo_root(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "MyRepo")
    nested = repo / "src" / "Deep" / "pkg"
    nested.mkdir(parents=True)
    assert project_label(nested) == "myrepo"
    assert project_label(repo) == "myrepo"


@needs_git
def test_repo_nested_in_a_plain_dir_wins_over_the_outer_dir(tmp_path: Path) -> None:
    outer = tmp_path / "Outer"
    repo = make_repo(outer / "Inner")
    (repo / "notebooks").mkdir()
    assert project_label(repo / "notebooks") == "inner"
    assert project_label(outer) == "outer"


def make_repo_with_a_commit(path: Path) -> Path:
    """A repository with one empty commit (a worktree needs one)."""
    repo = make_repo(path)
    git(
        repo,
        "-c",
        "user.email=a@b",
        "-c",
        "user.name=t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "x",
    )
    return repo


@needs_git
def test_linked_worktree_maps_to_the_main_checkout(tmp_path: Path) -> None:
    main = make_repo_with_a_commit(tmp_path / "MainCheckout")
    worktree = tmp_path / "Feature-Branch"
    git(main, "worktree", "add", "-q", str(worktree))
    assert (worktree / ".git").is_file()  # really a linked worktree
    sub = worktree / "analysis"
    sub.mkdir()
    assert project_label(worktree) == "maincheckout"
    assert project_label(sub) == "maincheckout"


@needs_git
def test_worktree_with_a_relative_gitdir(tmp_path: Path) -> None:
    main = make_repo_with_a_commit(tmp_path / "Primary")
    worktree = tmp_path / "wt"
    git(main, "worktree", "add", "-q", str(worktree))
    gitdir = (worktree / ".git").read_text().removeprefix("gitdir:").strip()
    relative = os.path.relpath(gitdir, worktree)
    (worktree / ".git").write_text(f"gitdir: {relative}\n")
    assert project_label(worktree) == "primary"


def test_git_file_without_commondir_keeps_its_own_folder(tmp_path: Path) -> None:
    # A submodule: ".git" is a file pointing into the parent's modules dir, no commondir there.
    parent = tmp_path / "Parent"
    modules = parent / ".git" / "modules" / "lib"
    modules.mkdir(parents=True)
    sub = parent / "Lib"
    sub.mkdir()
    (sub / ".git").write_text("gitdir: ../.git/modules/lib\n")
    assert project_label(sub) == "lib"


def test_unreadable_or_odd_git_file_keeps_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / "Odd"
    folder.mkdir()
    (folder / ".git").write_text("not a gitdir line\n")
    (folder / "x").mkdir()
    assert project_label(folder / "x") == "odd"


# -- compute_scope --------------------------------------------------------------------------------


def test_base_bank_and_prefix() -> None:
    assert base_bank("jupyter") == "jupyter"
    assert base_bank("jupyter", "team") == "team-jupyter"
    assert base_bank(" notes ", " team ") == "team-notes"
    assert base_bank("", "") == "jupyter"
    assert base_bank("  ", "p") == "p-jupyter"


def test_global_scope() -> None:
    scope = compute_scope("global", "jupyter", "", "myrepo")
    assert scope == BankScope("global", "jupyter", "myrepo")
    assert scope.retain_tags is None
    assert scope.recall_tags is None
    assert scope.tags_match is None
    assert compute_scope("global", "jupyter", "team", "myrepo").bank_id == "team-jupyter"


def test_per_project_scope() -> None:
    scope = compute_scope("per-project", "jupyter", "", "myrepo")
    assert scope.bank_id == "jupyter-myrepo"
    assert scope.retain_tags is None
    assert scope.recall_tags is None
    assert scope.tags_match is None
    assert compute_scope("per-project", "notes", "team", "x").bank_id == "team-notes-x"


def test_per_project_tagged_scope() -> None:
    scope = compute_scope("per-project-tagged", "jupyter", "", "myrepo")
    assert scope.bank_id == "jupyter"
    assert scope.retain_tags == ("project:myrepo",)
    assert scope.recall_tags == ("project:myrepo",)
    assert scope.tags_match == "any"
    assert scope.label == "myrepo"
    prefixed = compute_scope("per-project-tagged", "jupyter", "team", "myrepo")
    assert prefixed.bank_id == "team-jupyter"
    assert prefixed.retain_tags == ("project:myrepo",)


def test_describe_is_one_line() -> None:
    tagged = compute_scope("per-project-tagged", "jupyter", "", "myrepo").describe()
    assert tagged == "bank jupyter (per-project-tagged, tags project:myrepo)"
    assert compute_scope("global", "jupyter", "", "m").describe() == "bank jupyter (global)"


# -- EnsuredBanks ---------------------------------------------------------------------------------


def test_ensured_banks_basic() -> None:
    banks = EnsuredBanks(cap=4)
    assert "a" not in banks
    banks.add("a")
    banks.add("a")
    assert "a" in banks
    assert len(banks) == 1


def test_ensured_banks_cap_drops_the_sorted_first_half() -> None:
    banks = EnsuredBanks(cap=4)
    for bank in ("bank-d", "bank-b", "bank-e", "bank-a"):
        banks.add(bank)
    assert len(banks) == 4  # at the cap: nothing dropped
    banks.add("bank-c")  # 5 > 4: drop sorted first 5 >> 1 = 2 (bank-a, bank-b)
    assert len(banks) == 3
    kept = {b for b in ("bank-a", "bank-b", "bank-c", "bank-d", "bank-e") if b in banks}
    assert kept == {"bank-c", "bank-d", "bank-e"}


def test_ensured_banks_new_id_sorting_first_is_dropped_at_once() -> None:
    banks = EnsuredBanks(cap=4)
    for bank in ("m", "n", "o", "p"):
        banks.add(bank)
    banks.add("a")  # sorts first, so it is forgotten again along with "m"
    assert "a" not in banks
    assert "m" not in banks
    assert {b for b in "nop" if b in banks} == {"n", "o", "p"}


def test_the_process_wide_set_holds_ten_thousand_banks_then_drops_half() -> None:
    banks = EnsuredBanks()  # the default, as ENSURED_BANKS uses
    names = [f"bank-{n:05d}" for n in range(10_000)]
    for name in names:
        banks.add(name)
    assert len(banks) == 10_000
    assert all(name in banks for name in names)  # full, nothing forgotten yet
    banks.add("bank-10000")  # one past the cap: the sorted first half goes
    assert len(banks) == 5_001
    assert not any(name in banks for name in names[:5_000])
    assert all(name in banks for name in [*names[5_000:], "bank-10000"])


def test_a_per_project_bank_never_carries_what_a_url_path_cannot() -> None:
    # a folder may be called anything; the tag keeps its name, the bank only what travels
    scope = compute_scope("per-project", "jupyter", "", "q3?draft#2 50%")
    assert scope.bank_id == "jupyter-q3-draft-2 50-"
    tagged = compute_scope("per-project-tagged", "jupyter", "", "q3?draft#2 50%")
    assert tagged.retain_tags == ("project:q3?draft#2 50%",)
