"""``qualify matrix``: the ``strategy.matrix`` of a GitHub Actions job, families x profiles."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from qualify.commands._args import Commands, family_search_options
from qualify.errors import UsageError
from qualify.plan.families import available_families, default_family_dirs, validate_name
from qualify.plan.profiles import available_profiles
from qualify.publish.errorline import error_line
from qualify.verdict import EXIT_USAGE


def split_names(value: str, what: str) -> list[str]:
    """``"a, b,a"`` -> ``["a", "b"]`` (order kept, duplicates dropped); empty is an error."""
    names = list(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    if not names:
        raise UsageError(f"{what} {value!r} is empty: give comma-separated names")
    return names


def _check(names: Sequence[str], valid: Sequence[str], what: str) -> None:
    for name in names:
        if name not in valid:
            raise UsageError(f"unknown {what} {name!r} (available: {', '.join(valid) or 'none'})")


def build_matrix(
    families: Sequence[str], profiles: Sequence[str], families_dirs: Sequence[Path]
) -> dict[str, list[dict[str, str]]]:
    """``{"include": [{"family": f, "profile": p}, ...]}``, every name validated."""
    for family in families:
        validate_name(family)
    _check(families, available_families(families_dirs), "family")
    _check(profiles, available_profiles(), "profile")
    return {"include": [{"family": f, "profile": p} for f in families for p in profiles]}


def matrix(
    *,
    families: str,
    profiles: str,
    families_dirs: Sequence[Path] = (),
    repo: Path | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Print the matrix JSON on one line; exit 2 with one line for an unknown name."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    try:
        search = list(families_dirs) or default_family_dirs(repo or Path.cwd())
        document = build_matrix(
            split_names(families, "--families"), split_names(profiles, "--profiles"), search
        )
    except UsageError as exc:
        stderr.write(error_line("qualify matrix", exc))
        return EXIT_USAGE
    stdout.write(json.dumps(document, separators=(",", ":")) + "\n")
    return 0


def add_parser(commands: Commands) -> None:
    parser = commands.add_parser("matrix", help="print a GitHub Actions strategy.matrix JSON")
    parser.add_argument("--families", required=True, help="comma-separated family names")
    parser.add_argument("--profiles", required=True, help="comma-separated profile names")
    family_search_options(parser)


def main(args: argparse.Namespace) -> int:
    return matrix(
        families=args.families,
        profiles=args.profiles,
        families_dirs=args.families_dir,
        repo=args.repo,
    )
