"""``qualify doctor``: which backends can cap a run on this machine, and why the others cannot.

``--plan`` is the GitHub Action's side of the same decision: it picks the route ``--backend``
takes here, makes the docker image ready when that route is docker, and prints the argv of the
``qualify run`` to execute (NUL-terminated items, for ``mapfile -d ''``), the decision on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO, TextIO

from qualify.commands._args import Commands, format_option
from qualify.errors import UsageError
from qualify.publish.errorline import error_line
from qualify.sandbox import CHOICES as BACKENDS
from qualify.sandbox.choice import Diagnosis, choose, decision, diagnose, run_argv
from qualify.sandbox.hostfacts import HostFacts, gather
from qualify.verdict import EXIT_USAGE

FORMATS = ("text", "json")
SCHEMA_VERSION = 1
EXIT_UNCAPPED = 1
"""No route caps memory here (only ``--backend none`` would run)."""
LABELS = {"gpu": "GPU (NVML)", "mps": "MPS daemon"}
"""How the text output names a topic (JSON keeps the keys)."""


def as_json(diagnosis: Diagnosis, backend: str, image: str | None) -> dict[str, Any]:
    """The diagnosis with stable keys (``schema_version``)."""
    try:
        chosen = choose(diagnosis, backend, image)
        choice: dict[str, Any] = {
            "backend": chosen.backend,
            "via": chosen.via,
            "decision": decision(chosen, backend),
        }
    except UsageError as exc:
        choice = {"backend": None, "via": None, "decision": str(exc)}
    return {
        "schema_version": SCHEMA_VERSION,
        "backends": [
            {"backend": r.backend, "via": r.via, "works": r.works, "reason": r.reason}
            for r in diagnosis.routes
        ],
        "facts": {topic: finding for topic, finding in diagnosis.topics},
        "cgroup_version": diagnosis.cgroup_version,
        "capped": diagnosis.capped,
        "choice": {"asked": backend, "image": image, **choice},
    }


def as_text(diagnosis: Diagnosis, backend: str, image: str | None) -> str:
    """Backends (works or not, and why), the facts behind them, and what auto picks."""
    lines = ["backends on this machine:"]
    width = max(len(route.label) for route in diagnosis.routes)
    for route in diagnosis.routes:
        state = "works" if route.works else "no"
        lines.append(f"  {route.label:<{width}}  {state:<5}  {route.reason}")
    lines.append("facts:")
    labels = [(LABELS.get(topic, topic), finding) for topic, finding in diagnosis.topics]
    width = max(len(label) for label, _ in labels)
    lines += [f"  {label:<{width}}  {finding}" for label, finding in labels]
    try:
        chosen = choose(diagnosis, backend, image)
        lines.append(f"qualify run {decision(chosen, backend)}")
    except UsageError as exc:
        lines.append(f"qualify run: {exc}")
    return "\n".join(lines) + "\n"


def plan(
    facts: HostFacts,
    diagnosis: Diagnosis,
    run_args: Sequence[str],
    *,
    backend: str,
    image: str | None,
    environ: Mapping[str, str],
    executable: str,
) -> tuple[list[str], str]:
    """(argv, decision) of the run; the docker image made ready first. UsageError otherwise."""
    for flag in ("--backend", "--image", "--mount-host-python"):
        if any(arg == flag or arg.startswith(flag + "=") for arg in run_args):
            raise UsageError(f"{flag} belongs to qualify doctor --plan, not to the run's arguments")
    route = choose(diagnosis, backend, image)
    if route.backend == "docker":
        from qualify.sandbox.docker.backend import connect
        from qualify.sandbox.docker.image import ensure_image

        client = connect()
        try:
            ensure_image(client, image)
        finally:
            client.close()
    argv = run_argv(
        route, facts, run_args, backend=backend, executable=executable, environ=environ, image=image
    )
    return argv, decision(route, backend)


def doctor(
    *,
    output_format: str = "text",
    backend: str = "auto",
    image: str | None = None,
    plan_run: bool = False,
    run_args: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    stdout: TextIO = sys.stdout,
    stderr: TextIO = sys.stderr,
    binary_stdout: BinaryIO | None = None,
) -> int:
    """Print the diagnosis (exit 0 when a route caps memory here, 1 when none does), or with
    ``plan_run`` the argv of the run (exit 2 with every reason when nothing can run it)."""
    environ = os.environ if environ is None else environ
    if output_format not in FORMATS:
        stderr.write(
            error_line("qualify doctor", f"--format {output_format!r} is not one of {FORMATS}")
        )
        return EXIT_USAGE
    facts = gather(environ)
    diagnosis = diagnose(facts)
    if plan_run:
        try:
            argv, why = plan(
                facts,
                diagnosis,
                run_args,
                backend=backend,
                image=image,
                environ=environ,
                executable=sys.executable,
            )
        except UsageError as exc:
            stderr.write(error_line("qualify doctor", exc))
            return EXIT_USAGE
        stderr.write(f"qualify doctor: {why}\n")
        out = binary_stdout if binary_stdout is not None else sys.stdout.buffer
        out.write(b"".join(item.encode() + b"\0" for item in argv))
        out.flush()
        return 0
    if output_format == "json":
        stdout.write(json.dumps(as_json(diagnosis, backend, image), indent=2) + "\n")
    else:
        stdout.write(as_text(diagnosis, backend, image))
    return 0 if diagnosis.capped else EXIT_UNCAPPED


def add_parser(commands: Commands) -> None:
    parser = commands.add_parser(
        "doctor", help="which backends can cap memory on this machine, and why the others cannot"
    )
    format_option(parser, "the backends and their checks")
    parser.add_argument(
        "--backend", default="auto", choices=BACKENDS, help="what run would ask (default auto)"
    )
    parser.add_argument("--image", help="the docker image run would get (--image)")
    parser.add_argument(
        "--plan",
        action="store_true",
        help="print the argv of `qualify run RUN_ARGS` on the chosen route (NUL-terminated), "
        "after making its docker image ready; the decision goes to stderr (the GitHub Action)",
    )
    parser.add_argument("run_args", nargs=argparse.REMAINDER, help="-- RUN_ARGS (with --plan)")


def main(args: argparse.Namespace) -> int:
    run_args = args.run_args[1:] if args.run_args[:1] == ["--"] else args.run_args
    return doctor(
        output_format=args.output_format,
        backend=args.backend,
        image=args.image,
        plan_run=args.plan,
        run_args=run_args,
    )
