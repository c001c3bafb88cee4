"""Provenance of the qualified tree: exact head, the tree that was really tested, dirtiness."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from qualify import records
from qualify.errors import UsageError
from qualify.records import frozen_record
from qualify.subproc import run_capture


@frozen_record
class CommitInfo:
    """What was tested, keyed by the head commit (never by a dirty tree)."""

    head: str = ""
    """40-hex SHA of HEAD."""
    head_tree: str = ""
    """Tree of HEAD."""
    tree: str = ""
    """Tree of the working directory as tested (equals head_tree when clean)."""
    dirty: bool = False
    """Tracked changes or untracked, non-ignored files were present."""
    diff_sha256: str | None = None
    """sha256 of the binary diff against HEAD plus untracked files, when dirty."""
    base: str | None = None
    """merge-base of HEAD and ``base_ref``, when that ref exists."""
    base_ref: str | None = None
    branch: str | None = None
    dirty_nested: list[str] = records.field(default_factory=list)
    """Submodules and nested repositories with uncommitted changes (they make the tree dirty)."""
    github: dict[str, Any] | None = None
    """Inside GitHub Actions: ``{event, head, base, merge, pr_number}`` (see ``github_commit``)."""


GIT_TIMEOUT_S = 60.0


def _start_git(
    repo: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """A git command started, to be collected with ``communicate`` (stdout, stderr)."""
    return subprocess.Popen(
        ["git", "-C", str(repo), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    result = run_capture(["git", "-C", str(repo), *args], env=env)
    if result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {result.stderr.decode(errors='replace')}")
    return result.stdout.decode(errors="surrogateescape").strip()


def repo_root(path: Path) -> Path:
    """Top level of the git work tree containing ``path``; UsageError when there is none."""
    if not path.is_dir():
        raise UsageError(f"--repo {str(path)!r} is not a directory")
    # One git: the top level is printed even when HEAD has no commit yet (then it exits 1;
    # outside any work tree, 128 with nothing printed).
    result = run_capture(
        ["git", "-C", str(path), "rev-parse", "--show-toplevel", "--verify", "-q", "HEAD^{commit}"]
    )
    lines = result.stdout.decode(errors="surrogateescape").splitlines()
    if not lines:
        raise UsageError(f"--repo {str(path)!r} is not a git repository (git rev-parse failed)")
    if result.returncode != 0:
        raise UsageError(f"--repo {str(path)!r} has no commit yet: commit first, then qualify")
    return Path(lines[0])


def find_repo(path: Path, required: bool = True) -> Path | None:
    """``repo_root(path)``; when not ``required``, None where there is no git repository."""
    try:
        return repo_root(path)
    except UsageError:
        if required:
            raise
        return None


GITLINK = "160000"
MAX_NESTING = 8


_WORKING_TREE = "git read-tree HEAD && git add -A && git write-tree && exec git ls-files -s -z"
"""Run by ``/bin/sh`` in the work tree (a fixed script: nothing of the caller's in it). One process
started, not four: git reads the tree beside qualify's own start-up, whose imports would hold
the interpreter between the steps."""


def _working_tree(repo: Path) -> tuple[str, list[str]]:
    """The tree on disk, and the gitlinks (submodules, nested repositories) in it.

    A throw-away index: `git add -A` into it and `write-tree` gives the hash of exactly the
    tree on disk (tracked changes and untracked, non-ignored files) without touching the
    user's index. A nested repository is recorded by its HEAD only: its own uncommitted
    changes are looked at separately (``_nested_changes``).
    """
    with tempfile.TemporaryDirectory(prefix="qualify-index-") as scratch:
        env = dict(os.environ, GIT_INDEX_FILE=str(Path(scratch) / "index"))
        result = run_capture(["/bin/sh", "-c", _WORKING_TREE], cwd=repo, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"git (the working tree): {result.stderr.decode(errors='replace')}")
    tree, _, listing = result.stdout.decode(errors="surrogateescape").partition("\n")
    staged = listing.split("\0")
    gitlinks = [line.split("\t", 1)[1] for line in staged if line.startswith(GITLINK + " ")]
    return tree.strip(), gitlinks


def _nested_changes(repo: Path, gitlinks: list[str], depth: int = 0) -> list[tuple[str, bytes]]:
    """(path, binary diff) of every submodule or nested repository with uncommitted changes,
    recursively; one that is not checked out has none."""
    changed: list[tuple[str, bytes]] = []
    for path in gitlinks:
        nested = repo / path
        if depth >= MAX_NESTING or not (nested / ".git").exists():
            continue
        tree, inner = _working_tree(nested)
        head_tree = _git(nested, "rev-parse", "HEAD^{tree}")
        if tree != head_tree:
            changed.append((path, _diff(nested, tree)))
        changed += [
            (f"{path}/{sub}", diff) for sub, diff in _nested_changes(nested, inner, depth + 1)
        ]
    return changed


def _diff(repo: Path, tree: str) -> bytes:
    diff = run_capture(["git", "-C", str(repo), "diff", "--binary", "--no-ext-diff", "HEAD", tree])
    return diff.stdout


def _diff_hash(repo: Path, tree: str, nested: list[tuple[str, bytes]]) -> str:
    import hashlib  # (OpenSSL: loaded for a dirty tree only, not at every start-up)

    digest = hashlib.sha256(_diff(repo, tree))
    for path, diff in nested:
        digest.update(f"\0nested {path}\0".encode() + diff)
    return digest.hexdigest()


def github_commit(environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The commits of a GitHub Actions run; None outside Actions (``GITHUB_ACTIONS``).

    For ``pull_request`` events ``GITHUB_SHA`` is the merge commit GitHub made of the PR head
    and its base, not the head the author pushed; the head and base come from the event file
    (``GITHUB_EVENT_PATH``: ``pull_request.head.sha``, ``pull_request.base.sha``).
    https://docs.github.com/en/actions/writing-workflows/choosing-when-your-workflow-runs/events-that-trigger-workflows#pull_request
    """
    if environ.get("GITHUB_ACTIONS") != "true":
        return None
    event_name = environ.get("GITHUB_EVENT_NAME")
    sha = environ.get("GITHUB_SHA") or None
    record: dict[str, Any] = {
        "event": event_name,
        "head": sha,
        "base": None,
        "merge": None,
        "pr_number": None,
    }
    if event_name not in ("pull_request", "pull_request_target"):
        return record
    given = environ.get("GITHUB_EVENT_PATH")
    if not given:
        raise UsageError(
            f"GITHUB_EVENT_NAME is {event_name} but GITHUB_EVENT_PATH is not set (valid: the "
            "path of the event's JSON, as the runner sets it): the PR head cannot be told from "
            "the merge commit"
        )
    try:
        event = json.loads(Path(given).read_text(encoding="utf-8"))
        pull = event["pull_request"]
        record.update(
            head=pull["head"]["sha"],
            base=pull["base"]["sha"],
            pr_number=pull.get("number", event.get("number")),
        )
    except OSError as exc:
        raise UsageError(
            f"GITHUB_EVENT_PATH {given!r} cannot be read ({exc.strerror or 'unreadable'}; valid: "
            "the event's JSON file): the PR head cannot be told from the merge commit"
        ) from exc
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        what = "not JSON" if isinstance(exc, (ValueError, RecursionError)) else f"no field {exc}"
        raise UsageError(
            f"GITHUB_EVENT_PATH {given!r} is not a pull_request event ({what}): the PR head "
            "cannot be told from the merge commit"
        ) from exc
    # pull_request_target runs on the base branch: GITHUB_SHA is the base, not a merge.
    record["merge"] = sha if event_name == "pull_request" else None
    return record


def record_sha(commit: CommitInfo) -> str:
    """The SHA a run is recorded under: the PR head in a pull_request run, else HEAD."""
    if commit.github and commit.github.get("event") in ("pull_request", "pull_request_target"):
        head = commit.github.get("head")
        if isinstance(head, str) and head:
            return head
    return commit.head


def commit_info(
    repo: Path, base_ref: str | None = None, environ: Mapping[str, str] | None = None
) -> CommitInfo:
    """Read the provenance of ``repo`` (a work tree root, see ``repo_root``).

    ``environ`` (the process environment, passed by ``qualify run``) adds ``github``
    inside GitHub Actions; without it, or outside Actions, ``github`` is None.
    """
    # What does not depend on the working tree runs beside the sequence that hashes it.
    refs = _start_git(repo, "rev-parse", "HEAD", "HEAD^{tree}", "--abbrev-ref", "HEAD")
    merge_base = _start_git(repo, "merge-base", "HEAD", base_ref) if base_ref else None
    try:
        tree, gitlinks = _working_tree(repo)
        nested = _nested_changes(repo, gitlinks)
    except BaseException:
        for started in (refs, merge_base):
            if started is not None:
                started.kill()
                started.communicate()
        raise
    out, err = refs.communicate(timeout=GIT_TIMEOUT_S)
    if refs.returncode != 0:
        raise RuntimeError(f"git rev-parse HEAD: {err.decode(errors='replace')}")
    head, head_tree, branch = out.decode(errors="surrogateescape").split()
    dirty = tree != head_tree or bool(nested)
    base = None
    if merge_base is not None:
        out, _ = merge_base.communicate(timeout=GIT_TIMEOUT_S)
        base = out.decode(errors="surrogateescape").strip() if merge_base.returncode == 0 else None
    return CommitInfo(
        head=head,
        head_tree=head_tree,
        tree=tree,
        dirty=dirty,
        diff_sha256=_diff_hash(repo, tree, nested) if dirty else None,
        dirty_nested=[path for path, _ in nested],
        base=base,
        base_ref=base_ref,
        branch=None if branch == "HEAD" else branch,  # HEAD: detached
        github=github_commit(environ) if environ is not None else None,
    )
