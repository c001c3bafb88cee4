"""``qualify tokenizer export`` and ``qualify tokenizer verify``: a family's tokenizer as a
standalone directory for a benchmark client, and proof that the client reads it identically."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

from harness import contract
from qualify.commands._args import Commands, Parser, directory, format_option, print_json
from qualify.errors import UsageError
from qualify.publish.errorline import error_line
from qualify.tokenizer.checks import Check
from qualify.verdict import EXIT_FAILED, EXIT_PASSED, EXIT_USAGE


def export(
    *,
    model_dir: Path | None,
    family: str | None,
    output_dir: Path,
    repo: Path | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    output_format: str = "text",
) -> int:
    """Export a tokenizer directory or a family's tokenizer; 0 when every check passed, 1 on
    the first mismatch (nothing written), 2 for bad input. With ``output_format`` json, stdout
    is one JSON document: the directories, every check, and the audit written (``audit``:
    the export's audit file, null when nothing was written)."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    try:
        source_dir = _source(model_dir, family, repo)
        if output_dir.exists():
            raise UsageError(f"--output-dir {output_dir} exists (valid: a path not taken yet)")
        from qualify.tokenizer.export import export_tokenizer

        result = export_tokenizer(source_dir, output_dir)
    except UsageError as exc:
        stderr.write(error_line("qualify tokenizer export", exc))
        return EXIT_USAGE
    if output_format == "json":
        audit_path = output_dir / contract.TOKENIZER_AUDIT
        print_json(
            {
                "source_dir": str(source_dir),
                "output_dir": str(output_dir) if result else None,
                "passed": bool(result),
                "first_mismatch": result.first_mismatch,
                "checks": [check.to_dict() for check in result.checks],
                "audit": json.loads(audit_path.read_text(encoding="utf-8")) if result else None,
            },
            stdout,
        )
    else:
        _print_checks(result.checks, stdout)
    if not result:
        stderr.write(f"qualify tokenizer export: FAILED: {result.first_mismatch}\n")
        return EXIT_FAILED
    if output_format != "json":
        stdout.write(f"exported {source_dir} -> {output_dir}\n")
    return EXIT_PASSED


def verify(
    *,
    export_dir: Path,
    client: str,
    python: Path | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    output_format: str = "text",
) -> int:
    """Run the export's checks in the client's own environment; 1 on any difference. With
    ``output_format`` json, stdout is one JSON document: the client, its interpreter and
    versions, every check, and what HF_HUB_OFFLINE=1 did."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    from qualify.tokenizer import clientenv
    from qualify.tokenizer.verify import load_export, offline_note, verify_export

    try:
        pinned = clientenv.parse_client(client)
        loaded = load_export(export_dir)
        if python is not None and not python.is_file():
            raise UsageError(f"--python {python}: no such interpreter")
        if python is None and not clientenv.is_ready(pinned):
            stderr.write(
                f"qualify tokenizer verify: installing {pinned.requirement} into "
                f"{clientenv.venv_dir(pinned)} (first use; takes minutes)\n"
            )
        interpreter = python if python is not None else clientenv.ensure_venv(pinned)
        result = verify_export(export_dir, pinned, interpreter, loaded)
    except UsageError as exc:
        stderr.write(error_line("qualify tokenizer verify", exc))
        return EXIT_USAGE
    if output_format == "json":
        print_json(
            {
                "export_dir": str(export_dir),
                "client": result.client,
                "python": str(interpreter),
                "versions": result.versions,
                "passed": bool(result),
                "checks": [check.to_dict() for check in result.checks],
                "offline": offline_note(result, export_dir),
                "offline_error": result.offline_error,
                "load_error": result.load_error,
            },
            stdout,
        )
    else:
        versions = ", ".join(
            f"{name} {version}" for name, version in result.versions.items() if version
        )
        stdout.write(f"client {result.client} ({interpreter}): {versions}\n")
        _print_checks(result.checks, stdout)
        stdout.write(offline_note(result, export_dir) + "\n")
    if not result:
        first = next(check.mismatch for check in result.checks if not check)
        stderr.write(f"qualify tokenizer verify: FAILED: {first}\n")
        return EXIT_FAILED
    return EXIT_PASSED


def _source(model_dir: Path | None, family: str | None, repo: Path | None) -> Path:
    from qualify.tokenizer.source import check_source, family_tokenizer

    if (model_dir is None) == (family is None):
        raise UsageError("give exactly one of --model-dir DIR and --family NAME")
    if family is not None:
        from qualify.plan.commit import find_repo
        from qualify.plan.families import default_family_dirs

        root = find_repo(repo if repo is not None else Path.cwd(), required=repo is not None)
        model_dir = family_tokenizer(family, default_family_dirs(root))
    source_dir = Path(model_dir or "")
    check_source(source_dir)
    return source_dir


def _print_checks(results: list[Check], stdout: TextIO) -> None:
    for check in results:
        state = "ok  " if check else "FAIL"
        detail = f"  {check.mismatch}" if check.mismatch else ""
        stdout.write(f"{state} {check.name:<15} {check.count:>8}{detail}\n")


def add_parser(commands: Commands) -> None:
    tokenizer = commands.add_parser(
        "tokenizer", help="export a tokenizer for a benchmark client and verify it there"
    )
    actions = tokenizer.add_subparsers(dest="tokenizer_command", required=True, parser_class=Parser)
    parser = actions.add_parser(
        "export", help="save a standalone fast tokenizer, proven identical on reload"
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--model-dir", type=directory, help="a Hugging Face tokenizer directory")
    source.add_argument("--family", help="a family's own tokenizer (tiny, phi4)")
    parser.add_argument("--output-dir", type=directory, required=True, help="must not exist yet")
    parser.add_argument("--repo", type=Path, help="the repository whose families/ to search")
    format_option(parser, "the checks and the audit written")
    checks = actions.add_parser(
        "verify", help="run the export's checks in the client's own environment"
    )
    checks.add_argument("export_dir", type=directory, metavar="OUT", help="an export directory")
    checks.add_argument(
        "--client",
        default="aiperf",
        help="aiperf[==VERSION] or transformers[==VERSION] (default: aiperf==0.13.0; "
        "transformers: 4.57.6)",
    )
    checks.add_argument(
        "--python", type=Path, help="the client's interpreter (default: a cached venv of its own)"
    )
    format_option(checks, "the client, its versions and every check")


def main(args: argparse.Namespace) -> int:
    if args.tokenizer_command == "export":
        return export(
            model_dir=args.model_dir,
            family=args.family,
            output_dir=args.output_dir,
            repo=args.repo,
            output_format=args.output_format,
        )
    return verify(
        export_dir=args.export_dir,
        client=args.client,
        python=args.python,
        output_format=args.output_format,
    )
