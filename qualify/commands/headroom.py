"""``qualify headroom``: the smallest cap at which a family passes, and what that leaves under
each profile's cap.

Every probe is a whole ``qualify run`` in its own process and run directory, below
``reports/<head>/<family>/headroom/<id>/runs/``; ``headroom.json`` keeps every probe's cap,
verdict and peak, ``headroom.md`` and ``headroom.html`` the tables a reviewer reads.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from qualify.atomic import write_bytes_atomic, write_json_atomic
from qualify.commands._args import (
    Commands,
    experiment_common,
    experiment_options,
    positive,
    printed_record,
)
from qualify.console import display_path
from qualify.errors import UsageError
from qualify.experiment.ab_record import RUNS_DIR
from qualify.experiment.bisect import Resolution, Search, bisect
from qualify.experiment.pins import differences, pins
from qualify.experiment.plan import parse_sets
from qualify.experiment.repetition import Repetition, experiment, from_run_dir, run_once
from qualify.experiment.tables import Table, to_html, to_markdown, to_text
from qualify.plan.commit import repo_root
from qualify.plan.families import Family, default_family_dirs, find_family
from qualify.plan.profiles import available_profiles, find_profile
from qualify.plan.spec import MIN_MEMORY, merge_options
from qualify.publish.errorline import error_line
from qualify.records import frozen_record
from qualify.sizes import format_bytes, parse_size
from qualify.verdict import EXIT_ERROR, EXIT_USAGE

HEADROOM_JSON = "headroom.json"
HEADROOM_MARKDOWN = "headroom.md"
HEADROOM_HTML = "headroom.html"
DEFAULT_LO = "64M"
DEFAULT_HI = "4G"


@frozen_record
class HeadroomRequest:
    """``qualify headroom`` as typed."""

    family_name: str
    lo: str | None = None
    hi: str | None = None
    resolution: str = "2%"
    repeat: int = 3
    sets: Sequence[str] = ()
    families_dirs: Sequence[Path] = ()
    repo: Path | None = None
    out: Path = Path("reports")
    timeout: str | None = None
    backend: str = "auto"
    image: str | None = None


class _Drift(Exception):
    """A probe's pins differ from the first probe's."""


def parse_resolution(text: str) -> Resolution:
    """``2%`` (of the passing cap) or a size (``16M``)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*%\s*", text)
    if match:
        fraction = float(match.group(1)) / 100
        if not 0 < fraction < 1:
            raise UsageError(f"--resolution {text!r} is not valid (valid: 0% < percent < 100%)")
        return Resolution(fraction=fraction)
    try:
        return Resolution(bytes=parse_size(text, what="--resolution"))
    except UsageError:
        raise UsageError(
            f"--resolution {text!r} is not valid (valid: a percentage such as 2% or a size "
            "such as 16M)"
        ) from None


def _bounds(request: HeadroomRequest, family: Family) -> tuple[int, int]:
    lo = parse_size(request.lo or DEFAULT_LO, what="--lo")
    hi = (
        parse_size(request.hi, what="--hi")
        if request.hi
        else family.memory_bytes or parse_size(DEFAULT_HI)
    )
    if lo < MIN_MEMORY or lo >= hi:
        raise UsageError(
            f"--lo {format_bytes(lo)} and --hi {format_bytes(hi)} are not valid "
            "(valid: 1 MiB <= lo < hi)"
        )
    return lo, hi


def profile_headroom(needs: int) -> list[dict[str, Any]]:
    """Per profile in cgroup_profiles/: its cap, what the family needs, the room left."""
    rows = []
    for name in available_profiles():
        cap = find_profile(name).memory_bytes
        rows.append(
            {
                "profile": name,
                "cap_bytes": cap,
                "needs_bytes": needs,
                "headroom_fraction": round((cap - needs) / cap, 4),
            }
        )
    return rows


def _room(row: dict[str, Any]) -> str:
    cap, needs, fraction = row["cap_bytes"], row["needs_bytes"], row["headroom_fraction"]
    if fraction >= 0:
        return f"{fraction * 100:.1f}%"
    return f"does not fit ({format_bytes(needs - cap)} short)"


def render(
    family: str, head: str, search: Search, rows: list[dict[str, Any]]
) -> tuple[str, list[tuple[str, str]], list[Table]]:
    """Title, facts and tables: the boundary, every probe, and the headroom per profile."""
    facts = [
        ("head", head),
        ("smallest passing cap", format_bytes(search.smallest_passing)),
        ("largest failing cap", format_bytes(search.largest_failing)),
    ]
    if search.flaky:
        facts.append(("flaky at", ", ".join(format_bytes(cap) for cap in search.flaky)))
    if search.stopped:
        facts.append(("stopped", search.stopped))
    probes = [
        (
            str(probe.index + 1),
            format_bytes(probe.limit_bytes),
            probe.verdict,
            format_bytes(probe.peak_bytes),
            f"{probe.wall_s:.1f}s" if probe.wall_s is not None else "-",
        )
        for probe in search.probes
    ]
    tables = [Table("Probes", ("#", "cap", "verdict", "peak", "wall"), probes)]
    if rows:
        profiles = [
            (
                str(row["profile"]),
                format_bytes(row["cap_bytes"]),
                format_bytes(row["needs_bytes"]),
                _room(row),
            )
            for row in rows
        ]
        tables.append(
            Table("Headroom per profile", ("profile", "cap", "needs", "headroom"), profiles)
        )
    return f"Headroom of {family}", facts, tables


def _base_args(request: HeadroomRequest, family: str, root: Path, runs: Path) -> list[str]:
    """The ``qualify run`` arguments of every probe, but its cap."""
    args = ["--family", family, "--repo", str(root), "--out", str(runs)]
    args += ["--backend", request.backend]
    for directory in request.families_dirs:
        args += ["--families-dir", str(directory.resolve())]
    for item in request.sets:
        args += ["--set", item]
    for flag, given in (("--image", request.image), ("--timeout", request.timeout)):
        if given is not None:
            args += [flag, given]
    return args


def headroom(
    request: HeadroomRequest, stdout: TextIO = sys.stdout, stderr: TextIO = sys.stderr
) -> int:
    """Search; 0 when a boundary was found, 2 for bad input, 1 or 3 or 4 when the search
    stopped (the verdict's class), 2 when the runs drifted apart."""
    try:
        root = repo_root(request.repo if request.repo is not None else Path.cwd())
        family = find_family(
            request.family_name, list(request.families_dirs) or default_family_dirs(root)
        )
        sets = parse_sets(request.sets)
        merge_options(family, sets)
        lo, hi = _bounds(request, family)
        resolution = parse_resolution(request.resolution)
        if request.repeat < 1:
            raise UsageError(f"--repeat {request.repeat} is not valid (valid: 1 or more)")
        where = experiment(root, request.out, family, "headroom", request.timeout)
    except UsageError as exc:
        stderr.write(error_line("qualify headroom", exc))
        return EXIT_USAGE
    directory, head = where.directory, where.head
    directory.mkdir(parents=True)
    base = _base_args(request, family.name, root, directory / RUNS_DIR)
    made: list[Repetition] = []
    first: list[dict[str, Any]] = []

    def probe(cap: int) -> Repetition:
        stderr.write(f"qualify headroom: probe {len(made) + 1}: {format_bytes(cap)} starts\n")
        run_dir = run_once(
            [*base, "--mem", str(cap)], cwd=Path.cwd(), timeout_s=where.run_timeout_s
        )
        run, audit = from_run_dir(
            run_dir, arm="probe", level=format_bytes(cap), index=len(made), relative_to=directory
        )
        made.append(run)
        stderr.write(
            f"qualify headroom: probe {len(made)}: {format_bytes(cap)} {run.verdict}, "
            f"peak {format_bytes(run.peak_bytes)}\n"
        )
        found = pins(audit)
        first[:] = first or [found]
        drift = differences(first[0], found)
        if drift:
            raise _Drift(f"probe {len(made)} differs from the first in " + "; ".join(drift))
        return run

    try:
        search = bisect(lo, hi, resolution, request.repeat, probe)
    except _Drift as exc:
        stderr.write(error_line("qualify headroom", f"refused: {exc}"))
        search, code = Search(made, None, None, [], f"refused: {exc}"), EXIT_USAGE
    except KeyboardInterrupt:
        stderr.write("qualify headroom: interrupted\n")
        search, code = Search(made, None, None, [], "interrupted"), EXIT_ERROR
    except (RuntimeError, OSError, UsageError) as exc:
        stderr.write(error_line("qualify headroom", f"a probe could not be made: {exc}"))
        search, code = Search(made, None, None, [], f"a probe could not be made: {exc}"), EXIT_ERROR
    else:
        code = 0 if search.stopped is None else _stopped_code(search)
    _write(
        directory,
        family.name,
        head,
        search,
        {"lo_bytes": lo, "hi_bytes": hi, "options": sets},
        request,
        stdout,
    )
    return code


def _write(
    directory: Path,
    family: str,
    head: str,
    search: Search,
    asked: dict[str, Any],
    request: HeadroomRequest,
    stdout: TextIO,
) -> None:
    """``headroom.json``, ``headroom.md`` and ``headroom.html``; the same as plain text and
    the directory on stdout."""
    rows = profile_headroom(search.smallest_passing) if search.smallest_passing else []
    document = {
        "kind": "qualify-headroom",
        "schema_version": 1,
        "family": family,
        "head": head,
        **asked,
        "resolution": request.resolution,
        "repeat": request.repeat,
        **search.to_dict(),
        "profiles": rows,
    }
    write_json_atomic(directory / HEADROOM_JSON, document)
    title, facts, tables = render(family, head, search, rows)
    markdown = to_markdown(title, facts, tables)
    write_bytes_atomic(directory / HEADROOM_MARKDOWN, markdown.encode())
    write_bytes_atomic(directory / HEADROOM_HTML, to_html(title, facts, tables).encode())
    stdout.write(to_text(title, facts, tables))
    stdout.write(f"{display_path(directory)}\n")


def _stopped_code(search: Search) -> int:
    from qualify.verdict import Verdict

    if not search.probes:
        return EXIT_ERROR
    last = search.probes[-1]
    if last.passed:
        return 0  # passes at --lo: a finding about the bounds, not a failure of the family
    try:
        return Verdict(last.verdict).exit_code
    except ValueError:
        return EXIT_ERROR


def add_parser(commands: Commands) -> None:
    parser = commands.add_parser(
        "headroom", help="smallest passing cap by bisection, and the headroom per profile"
    )
    experiment_options(parser)
    parser.add_argument("--lo", help="a cap expected to fail (default 64M)")
    parser.add_argument("--hi", help="a cap expected to pass (default: the family's memory)")
    parser.add_argument(
        "--resolution", default="2%", help="when to stop: 2%% of the cap (default), or a size (16M)"
    )
    parser.add_argument(
        "--repeat", type=positive, default=3, help="runs at each boundary cap (default 3)"
    )


def main(args: argparse.Namespace) -> int:
    request = HeadroomRequest(
        **experiment_common(args),
        lo=args.lo,
        hi=args.hi,
        resolution=args.resolution,
        repeat=args.repeat,
    )
    return printed_record(
        lambda out: headroom(request, out), HEADROOM_JSON, args.output_format, sys.stdout
    )
