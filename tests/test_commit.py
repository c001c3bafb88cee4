"""Provenance read from real git repositories: root, head, tree, branch, base, dirtiness."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from qualify.errors import UsageError
from qualify.plan.commit import commit_info, repo_root
from tests.conftest import git


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "src" / "a.txt").write_text("a\n")
    (root / ".gitignore").write_text("ignored.txt\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return root


def test_the_root_is_found_from_a_subdirectory(project: Path) -> None:
    assert repo_root(project / "src") == project


def test_a_directory_outside_any_repository_is_named(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"is not a git repository"):
        repo_root(tmp_path)


def test_a_repository_without_a_commit_is_told_to_commit(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    with pytest.raises(UsageError, match=r"has no commit yet"):
        repo_root(tmp_path)


def test_a_clean_branch(project: Path) -> None:
    info = commit_info(project, "main")
    assert info.head == git(project, "rev-parse", "HEAD")
    assert info.head_tree == info.tree == git(project, "rev-parse", "HEAD^{tree}")
    assert (info.branch, info.dirty, info.diff_sha256, info.dirty_nested) == (
        "main",
        False,
        None,
        [],
    )
    assert info.base == info.head and info.base_ref == "main"


def test_a_detached_head_has_no_branch_and_an_unknown_base_ref_no_base(project: Path) -> None:
    git(project, "checkout", "-q", "--detach")
    info = commit_info(project, "origin/main")
    assert (info.branch, info.base, info.base_ref) == (None, None, "origin/main")


def test_an_untracked_file_makes_the_tree_dirty_an_ignored_one_does_not(project: Path) -> None:
    git(project, "checkout", "-q", "-b", "feature/x")
    (project / "ignored.txt").write_text("not part of the tree\n")
    assert commit_info(project).dirty is False
    (project / "src" / "b.txt").write_text("b\n")
    info = commit_info(project)
    assert info.branch == "feature/x" and info.dirty is True and info.tree != info.head_tree
    # The tree is exactly the disk's: committing it gives the same tree id.
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "b")
    assert git(project, "rev-parse", "HEAD^{tree}") == info.tree
    diff = subprocess.run(
        ["git", "-C", str(project), "diff", "--binary", "--no-ext-diff", "HEAD~1", info.tree],
        capture_output=True,
        check=True,
    ).stdout
    assert info.diff_sha256 == hashlib.sha256(diff).hexdigest()


def test_the_prefetched_commit_is_taken_only_for_the_same_repository_and_base(
    project: Path, tmp_path: Path
) -> None:
    from qualify.commands._overlap import CommitPrefetch

    prefetch = CommitPrefetch(project / "src", None, {})
    assert prefetch.get(project, None, {}) == commit_info(project)
    # Asked with another base ref: read again, so the base is there.
    assert prefetch.get(project, "main", {}).base == git(project, "rev-parse", "HEAD")
    # A prefetch that failed (no repository there) is read again where asked.
    failed = CommitPrefetch(tmp_path / "nowhere", None, {})
    assert failed.get(project, None, {}) == commit_info(project)


def test_the_prefetched_top_level_is_taken_for_the_same_path_with_no_git_of_its_own(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import qualify.plan.commit as commit_module
    from qualify.commands._overlap import CommitPrefetch

    prefetch = CommitPrefetch(project / "src", None, {})
    prefetch.get(project, None, {})  # the thread is done
    nowhere = CommitPrefetch(tmp_path, None, {})
    nowhere.get(project, None, {})

    def no_git(*args: object, **kwargs: object) -> None:
        raise AssertionError("git was run again")

    monkeypatch.setattr(commit_module, "run_capture", no_git)
    assert prefetch.root(project / "src") == project
    # A path the thread did not look at is looked at now.
    with pytest.raises(AssertionError, match="git was run again"):
        prefetch.root(project)
    # What the thread found wrong is the same one-line error as a fresh look gives.
    with pytest.raises(UsageError, match="is not a git repository") as found:
        nowhere.root(tmp_path)
    monkeypatch.undo()
    with pytest.raises(UsageError) as fresh:
        repo_root(tmp_path)
    assert str(found.value) == str(fresh.value)


def test_what_the_prefetch_met_is_raised_where_the_plan_asks_for_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repository whose HEAD tree is missing from its object store: its top level is found,
    reading the commit fails. The prefetch keeps that failure and raises it, once, where the
    plan asks for the commit; it does not swallow it nor read the repository twice."""
    import qualify.plan.commit as commit_module
    from qualify.commands._overlap import CommitPrefetch

    repo = tmp_path / "corrupt"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "f").write_text("a\n")
    git(repo, "add", "f")
    git(repo, "-c", "user.name=a", "-c", "user.email=a@x", "commit", "-q", "-m", "a")
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    obj = repo / ".git" / "objects" / tree[:2] / tree[2:]
    obj.chmod(0o600)
    obj.unlink()
    with pytest.raises(RuntimeError) as fresh:
        commit_info(repo)
    prefetch = CommitPrefetch(repo, None, {})
    assert prefetch.root(repo) == repo

    def no_git(*args: object, **kwargs: object) -> None:
        raise AssertionError("git was run again")

    prefetch._thread.join()
    monkeypatch.setattr(commit_module, "run_capture", no_git)
    with pytest.raises(RuntimeError) as found:
        prefetch.get(repo, None, {})
    assert str(found.value) == str(fresh.value)
