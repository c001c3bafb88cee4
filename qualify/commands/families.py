"""``qualify families``: the families ``qualify run`` can see, and where each comes from."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from qualify.commands._args import Commands, family_search_options, format_option
from qualify.errors import UsageError
from qualify.plan.commit import find_repo
from qualify.plan.families import FAMILY_FILE, load_family, search_path
from qualify.publish.errorline import error_line
from qualify.verdict import EXIT_USAGE

FORMATS = ("text", "json")


def listing(families_dirs: Sequence[Path], repo: Path | None) -> list[dict[str, Any]]:
    """One entry per family directory in search order; a name seen earlier is shadowed."""
    entries: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for source in search_path(families_dirs, repo):
        for toml in sorted(source.path.glob(f"*/{FAMILY_FILE}")):
            name = toml.parent.name
            entry: dict[str, Any] = {
                "name": name,
                "origin": source.origin,
                "directory": str(toml.parent),
                "shadowed_by": seen.get(name),
            }
            try:
                family = load_family(toml.parent)
                entry["description"] = family.description
                entry["error"] = None
            except UsageError as exc:
                entry["description"] = None
                entry["error"] = str(exc)
            seen.setdefault(name, str(toml.parent))
            entries.append(entry)
    return entries


def families(
    *,
    families_dirs: Sequence[Path] = (),
    repo: Path | None = None,
    output_format: str = "text",
    stdout: TextIO = sys.stdout,
    stderr: TextIO = sys.stderr,
) -> int:
    """Print the families; exit 2 for bad input (an unknown format, a --repo that is not a
    directory). A broken family.toml is listed with its error, not fatal."""
    if output_format not in FORMATS:
        message = f"--format {output_format!r} is not one of {FORMATS}"
        stderr.write(error_line("qualify families", message))
        return EXIT_USAGE
    try:
        root = find_repo(repo if repo is not None else Path.cwd(), required=repo is not None)
    except UsageError as exc:
        stderr.write(error_line("qualify families", exc))
        return EXIT_USAGE
    entries = listing(families_dirs, root)
    if output_format == "json":
        stdout.write(json.dumps({"families": entries}, indent=2) + "\n")
        return 0
    for entry in entries:
        state = (
            f"shadowed by {entry['shadowed_by']}"
            if entry["shadowed_by"]
            else f"error: {entry['error']}"
            if entry["error"]
            else entry["description"] or ""
        )
        stdout.write(f"{entry['name']:<12} {entry['origin']:<14} {entry['directory']}  {state}\n")
    if not entries:
        stdout.write("no families found\n")
    return 0


def add_parser(commands: Commands) -> None:
    parser = commands.add_parser(
        "families", help="list the families qualify run can see and where each comes from"
    )
    family_search_options(parser)
    format_option(parser, "the families found")


def main(args: argparse.Namespace) -> int:
    return families(
        families_dirs=args.families_dir, repo=args.repo, output_format=args.output_format
    )
