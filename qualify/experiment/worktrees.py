"""Commits of the repository under test, checked out one per directory (``git worktree``), so
that an experiment can run the family of another commit with everything else as it is."""

from __future__ import annotations

import shutil
from pathlib import Path

from qualify.console import display_path
from qualify.errors import UsageError
from qualify.subproc import run_capture


def git(root: Path, *args: str) -> tuple[int, str]:
    """git in ``root``: its exit code and its stdout, stripped."""
    result = run_capture(["git", "-C", str(root), *args])
    return result.returncode, result.stdout.decode(errors="replace").strip()


def resolve_commit(root: Path, ref: str, flag: str) -> str:
    """The full id of commit ``ref``; UsageError naming ``flag`` when there is none."""
    code, sha = git(root, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}")
    if code != 0 or not sha:
        raise UsageError(f"{flag} {ref!r} is not a commit of {display_path(root)}")
    return sha


def subject(root: Path, sha: str) -> str:
    """The commit's subject line."""
    return git(root, "log", "-1", "--format=%s", sha)[1]


def add_worktree(root: Path, path: Path, sha: str) -> bool:
    """``sha`` checked out, detached, at ``path``; False when git could not."""
    return git(root, "worktree", "add", "--detach", "-q", str(path), sha)[0] == 0


def remove_worktree(root: Path, path: Path) -> None:
    """The worktree at ``path`` gone, from disk and from git's list."""
    git(root, "worktree", "remove", "--force", str(path))
    shutil.rmtree(path, ignore_errors=True)
    git(root, "worktree", "prune")
