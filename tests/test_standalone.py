"""The repository stands on its own: nothing it runs or tests reads a file outside the clone."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import git

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTATION = (".md",)
CAPTURED = ("tests/data/",)
"""Samples copied from real machines and public issues: their paths are data, not references."""
_UPWARD = re.compile(r"(?:\.\./)+(?:[\w.-]+/?)*|(?<![\w.])\.\.(?![\w./])")
_PARENTS = re.compile(r"__file__\)(?:\.resolve\(\))?((?:\.parent)+)")


def _tracked() -> list[Path]:
    names = git(ROOT, "ls-files").splitlines()
    this = Path(__file__).resolve().relative_to(ROOT).as_posix()  # holds examples on purpose
    return [
        ROOT / name
        for name in names
        if not name.endswith(DOCUMENTATION) and not name.startswith(CAPTURED) and name != this
    ]


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, IsADirectoryError):
        return None


def _inside(path: Path) -> bool:
    return path.resolve().is_relative_to(ROOT)


def test_no_relative_path_leaves_the_checkout() -> None:
    leaving = []
    for path in _tracked():
        text = _text(path)
        if text is None:
            continue
        for match in _UPWARD.finditer(text):
            if not _inside(path.parent / match.group()):
                line = text.count("\n", 0, match.start()) + 1
                leaving.append(f"{path.relative_to(ROOT)}:{line}: {match.group()}")
        for match in _PARENTS.finditer(text):
            levels = match.group(1).count(".parent")
            if not _inside(path.parents[levels - 1] if levels else path):
                line = text.count("\n", 0, match.start()) + 1
                leaving.append(f"{path.relative_to(ROOT)}:{line}: {match.group()}")
    assert leaving == []


def test_no_tracked_file_names_this_machine() -> None:
    """Paths of the machine the tree was checked out on (its parent directory, the user's
    home) appear nowhere: the project speaks of itself only."""
    machine = [str(ROOT.parent) + "/"] if ROOT.parent != Path("/") else []
    home = str(Path.home())
    machine += [home + "/"] if home not in ("/", "/root") else []
    # A path of its own, not the tail of another one (``/home/work/crates`` in a real log).
    pattern = re.compile("|".join(rf"(?<![\w./-]){re.escape(p)}" for p in machine) or r"(?!)")
    found = [
        str(path.relative_to(ROOT))
        for path in _tracked()
        if (text := _text(path)) is not None and pattern.search(text)
    ]
    assert found == []


def test_the_checker_sees_what_it_must() -> None:
    """The two patterns above, on the shapes of reference they exist for."""
    assert _UPWARD.search("SCHEMA = ROOT / '../../shared/schemas/junit-10.xsd'")
    assert not _inside(ROOT / "tests" / "../../shared/schemas")
    match = _PARENTS.search('Path(__file__).resolve().parent.parent.parent / "shared"')
    assert match is not None and match.group(1).count(".parent") == 3
    assert _inside(ROOT / "families/tiny" / "../..")
