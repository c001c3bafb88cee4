"""The documentation holds together: every relative link and anchor resolves, the README stays
a short first page, and its quick start names exactly the two make targets a newcomer runs."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = sorted(
    [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *(ROOT / "docs").glob("*.md")]
)
README_MAX_LINES = 150
QUICK_START = {"make demo", "make test"}

_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"(`+).*?\1")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # https:, mailto:, ...


def prose_lines(text: str, *, code_spans: bool = False) -> list[str]:
    """The lines of a Markdown text outside code blocks (fenced or indented: blanked), with its
    inline code spans blanked unless ``code_spans``: a link shown as code is not one, while a
    heading's code span is part of its anchor."""
    lines: list[str] = []
    fenced = False
    previous_blank = True
    indented = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            lines.append("")
            continue
        blank = not line.strip()
        if not blank and line.startswith("    ") and (previous_blank or indented):
            indented = True
        elif not blank:
            indented = False
        keep = not fenced and not indented
        shown = line if keep else ""
        lines.append(shown if code_spans else _INLINE_CODE.sub("", shown))
        previous_blank = blank
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text without Markdown marks, lower-cased, every
    character but letters, digits, spaces, hyphens and underscores dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").lower()
    kept = "".join(
        char for char in text if char in " -_" or unicodedata.category(char)[0] in ("L", "N")
    )
    return kept.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading anchor of a Markdown text; a repeated heading gets -1, -2... as on GitHub."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in prose_lines(text, code_spans=True):
        match = _HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(document: Path, text: str) -> list[str]:
    """The relative links and anchors of ``text`` (the content of ``document``) that resolve to
    no file, or to no heading of the Markdown file they point into."""
    problems: list[str] = []
    for number, line in enumerate(prose_lines(text), start=1):
        for target in _LINK.findall(line):
            if _EXTERNAL.match(target):
                continue
            path_part, _, anchor = target.partition("#")
            destination = (document.parent / path_part).resolve() if path_part else document
            where = f"{document.name}:{number}: {target}"
            if not destination.exists():
                problems.append(f"{where} (no such file)")
                continue
            if anchor and destination.suffix == ".md":
                own = text if destination == document else destination.read_text("utf-8")
                if anchor not in anchors(own):
                    problems.append(f"{where} (no heading with that anchor)")
    return problems


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_resolves(document: Path) -> None:
    assert broken_links(document, document.read_text(encoding="utf-8")) == []


def test_the_documents_are_found() -> None:
    names = {path.name for path in DOCUMENTS}
    assert {"README.md", "cli.md", "architecture.md", "mutation-equivalents.md"} <= names


def test_a_broken_link_or_anchor_is_reported(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## The `qualify run` flags\n", "utf-8")
    page = tmp_path / "page.md"
    text = (
        "# Page\n\n## Same heading\n\n## Same heading\n\n"
        "[ok](other.md#the-qualify-run-flags) [ok](#same-heading-1) [ok](https://example.org/x)\n"
        "[gone](missing.md) [bad anchor](other.md#nope) ![image](missing.png) [self](#nope)\n"
        "`[code](missing.md)`\n\n    [indented code](missing.md)\n"
    )
    page.write_text(text, "utf-8")
    assert broken_links(page, text) == [
        "page.md:8: missing.md (no such file)",
        "page.md:8: other.md#nope (no heading with that anchor)",
        "page.md:8: missing.png (no such file)",
        "page.md:8: #nope (no heading with that anchor)",
    ]


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("`qualify run`", "qualify-run"),
        ("Backends: `qualify doctor`", "backends-qualify-doctor"),
        ("family.toml", "familytoml"),
        ("Experiments: A/B, headroom, merge, matrix", "experiments-ab-headroom-merge-matrix"),
        ("What it does (and why)", "what-it-does-and-why"),
    ],
)
def test_anchors_follow_github(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_the_readme_is_a_short_first_page() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_the_quick_start_names_exactly_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    named = {f"make {target}" for target in re.findall(r"\bmake ([\w-]+)", section)}
    assert named == QUICK_START
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for command in QUICK_START:
        assert re.search(rf"^{command.split()[1]}:", makefile, re.MULTILINE), command
