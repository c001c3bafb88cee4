"""``qualify profiles``: the resource profiles of real CI hosts."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from qualify import records
from qualify.commands._args import Commands
from qualify.errors import UsageError
from qualify.plan.profiles import available_profiles, find_profile
from qualify.publish.errorline import error_line
from qualify.sizes import format_bytes
from qualify.verdict import EXIT_USAGE


def profiles(
    *, output_format: str = "text", stdout: TextIO = sys.stdout, stderr: TextIO = sys.stderr
) -> int:
    """One line per profile: name, cap, host RAM, swap, GPU, description (``json``: a list of
    the profiles' fields, sizes in bytes)."""
    try:
        loaded = [find_profile(name) for name in available_profiles()]
    except UsageError as exc:
        stderr.write(error_line("qualify profiles", exc))
        return EXIT_USAGE
    if output_format == "json":
        json.dump([records.asdict(profile) for profile in loaded], stdout, indent=2)
        stdout.write("\n")
        return 0
    for profile in loaded:
        gpu = "no GPU"
        if profile.gpu is not None:
            gpu = (
                f"{profile.gpu.count}x {profile.gpu.model} {format_bytes(profile.gpu.memory_bytes)}"
            )
            if profile.gpu.budget_bytes:
                gpu += f" (budget {format_bytes(profile.gpu.budget_bytes)})"
        stdout.write(
            f"{profile.name:<12} cap {format_bytes(profile.memory_bytes):>9} of "
            f"{format_bytes(profile.host_memory_bytes):>9} host, swap "
            f"{format_bytes(profile.swap_bytes)}, {gpu}: {profile.description}\n"
        )
    return 0


def add_parser(commands: Commands) -> None:
    parser = commands.add_parser("profiles", help="list the resource profiles")
    parser.add_argument(
        "--format", dest="output_format", choices=("text", "json"), default="text",
        help="text (default) or json",
    )  # fmt: skip


def main(args: argparse.Namespace) -> int:
    return profiles(output_format=args.output_format)
