"""``qualify merge``: run directories from many runners -> one JUnit and one index per head.

Runs are found by their audit.json. The same run seen twice (a run dir and its public/ copy,
or an artifact downloaded twice) is counted once; two runs of one family x profile are both
kept, latest first; an expected shard with no run is reported as MISSING, never dropped.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from qualify.commands.matrix import split_names
from qualify.errors import UsageError
from qualify.report.atomic import write_bytes_atomic, write_json_atomic
from qualify.report.publish import PUBLIC_DIR
from qualify.verdict import EXIT_ERROR, EXIT_USAGE, Verdict

MISSING = "MISSING"
_PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target")
INDEX_SCHEMA_VERSION = 1


@dataclasses.dataclass(frozen=True)
class Shard:
    """One run found in the inputs (or an expected one that is missing: ``run_dir`` None)."""

    family: str
    profile: str
    run_id: str | None
    verdict: str
    head: str | None
    started: str | None
    source: str | None
    """The input DIR as given on the command line."""
    run_dir: Path | None
    audit: dict[str, Any]

    @property
    def exit_code(self) -> int:
        """The verdict's class code; MISSING and unknown verdicts are 4."""
        try:
            return Verdict(self.verdict).exit_code
        except ValueError:
            return EXIT_ERROR

    def relative(self) -> str | None:
        """The run directory relative to its input."""
        if self.run_dir is None or self.source is None:
            return None
        return str(self.run_dir.relative_to(Path(self.source)))

    def to_dict(self) -> dict[str, Any]:
        """The index entry."""
        memory = self.audit.get("memory") or {}
        path = self.relative()
        return {
            "family": self.family,
            "profile": self.profile,
            "run_id": self.run_id,
            "head": self.head,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "reason": self.audit.get("reason"),
            "started": self.started,
            "peaks": {
                "memory_bytes": memory.get("peak_bytes"),
                "phases": {
                    str(phase.get("name")): phase.get("peak_bytes")
                    for phase in memory.get("phases") or []
                    if isinstance(phase, dict)
                },
            },
            "input": self.source,
            "path": path,
            "junit": None if path is None else str(Path(path) / "junit.xml"),
        }


def find_run_dirs(root: Path) -> list[Path]:
    """Run directories in ``root`` (itself or below), found by audit.json; a public/ copy only
    when its run directory is not there (artifacts of public/ alone)."""
    found = [root] if (root / "audit.json").is_file() else []
    found += sorted(path.parent for path in root.rglob("*/audit.json"))
    return [
        path
        for path in dict.fromkeys(found)
        if not (path.name == PUBLIC_DIR and (path.parent / "audit.json").is_file())
    ]


def record_head(commit: Any) -> str | None:
    """The SHA the run is recorded under (as ``gitinfo.record_sha``): the PR head in a
    pull_request run, where ``commit.head`` is GitHub's merge commit; else HEAD."""
    if not isinstance(commit, dict):
        return None
    github = commit.get("github")
    pull_request = isinstance(github, dict) and github.get("event") in _PULL_REQUEST_EVENTS
    if pull_request and isinstance(github, dict) and isinstance(github.get("head"), str):
        return str(github["head"])
    head = commit.get("head")
    return str(head) if head else None


def read_shard(run_dir: Path, source: Path) -> Shard:
    """The shard of one run directory; a broken audit is a UsageError naming it."""
    try:
        audit = json.loads((run_dir / "audit.json").read_text(encoding="utf-8"))
        family, profile = audit["family"]["name"], audit["profile"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{run_dir / 'audit.json'} is not a qualify audit: {exc!r}") from None
    return Shard(
        family=str(family),
        profile=str(profile),
        run_id=audit.get("run_id"),
        verdict=str(audit.get("verdict")),
        head=record_head(audit.get("commit")),
        started=(audit.get("timings") or {}).get("started"),
        source=str(source),
        run_dir=run_dir,
        audit=audit,
    )


def collect(inputs: Sequence[Path]) -> list[Shard]:
    """Every run once (by run_id), grouped by family x profile, latest first within a group."""
    shards: dict[str, Shard] = {}
    for source in inputs:
        if not source.is_dir():
            raise UsageError(f"{source} is not a directory")
        for run_dir in find_run_dirs(source):
            shard = read_shard(run_dir, source)
            key = shard.run_id or str(run_dir.resolve())
            shards.setdefault(key, shard)
    latest_first = sorted(shards.values(), key=lambda s: (s.started or "", s.run_id or ""))
    latest_first.reverse()
    return sorted(latest_first, key=lambda s: (s.family, s.profile))


def parse_expected(expect: str | None, matrix_file: Path | None) -> list[tuple[str, str]]:
    """``family:profile,...`` and/or a matrix JSON (``{"include": [...]}``)."""
    pairs: list[tuple[str, str]] = []
    for item in split_names(expect, "--expect") if expect else []:
        family, sep, profile = item.partition(":")
        if not sep or not family or not profile:
            raise UsageError(f"--expect item {item!r} is not valid: expected family:profile")
        pairs.append((family, profile))
    if matrix_file is not None:
        try:
            document = json.loads(matrix_file.read_text(encoding="utf-8"))
            rows = document["include"] if isinstance(document, dict) else document
            pairs += [(str(row["family"]), str(row["profile"])) for row in rows]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"--matrix {matrix_file} is not a matrix JSON: {exc!r}") from None
    return list(dict.fromkeys(pairs))


def _missing(family: str, profile: str, head: str | None) -> Shard:
    return Shard(family, profile, None, MISSING, head, None, None, None, {})


def _suite(root: ET.Element, shard: Shard) -> None:
    """One <testsuite> named family/profile with the run's own testcases."""
    suite = ET.SubElement(root, "testsuite", {"name": f"{shard.family}/{shard.profile}"})
    props = ET.SubElement(suite, "properties")
    for name, value in (("run_id", shard.run_id), ("verdict", shard.verdict), ("head", shard.head)):
        ET.SubElement(props, "property", {"name": f"qualify.{name}", "value": str(value or "")})
    cases: list[ET.Element] = []
    problem = "shard missing: no run directory was found for it"
    if shard.run_dir is not None:
        try:
            cases = list(ET.parse(shard.run_dir / "junit.xml").getroot().iter("testcase"))
            problem = "" if cases else "junit.xml has no testcases"
        except (OSError, ET.ParseError) as exc:
            problem = f"junit.xml unreadable: {exc}"
    if problem:
        case = ET.Element("testcase", {"classname": shard.family, "name": shard.profile})
        ET.SubElement(case, "error", {"message": problem, "type": shard.verdict})
        cases = [case]
    suite.extend(copy.deepcopy(case) for case in cases)
    counts = {
        "tests": len(cases),
        "failures": sum(case.find("failure") is not None for case in cases),
        "errors": sum(case.find("error") is not None for case in cases),
        "skipped": sum(case.find("skipped") is not None for case in cases),
    }
    seconds = sum(float(case.get("time") or 0) for case in cases)
    suite.attrib.update({key: str(value) for key, value in counts.items()})
    suite.set("time", f"{seconds:.3f}")


def render_junit(shards: Sequence[Shard]) -> bytes:
    """One <testsuites>, one <testsuite> per run (and per missing shard)."""
    root = ET.Element("testsuites", {"name": "qualify merge"})
    for shard in shards:
        _suite(root, shard)
    for key in ("tests", "failures", "errors"):
        root.set(key, str(sum(int(suite.get(key) or 0) for suite in root)))
    ET.indent(root)
    body: bytes = ET.tostring(root, encoding="utf-8")
    return b'<?xml version="1.0" encoding="utf-8"?>\n' + body


def _write(out: Path, head: str, shards: Sequence[Shard], heads: Sequence[str]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(out / "junit.xml", render_junit(shards))
    worst = max((shard.exit_code for shard in shards), default=0)
    write_json_atomic(
        out / "index.json",
        {
            "schema_version": INDEX_SCHEMA_VERSION,
            "head": head,
            "heads_merged": list(heads),
            "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "exit_code": worst,
            "runs": [shard.to_dict() for shard in shards],
        },
    )
    return worst


def merge(
    *,
    inputs: Sequence[Path],
    out: Path | None = None,
    expect: str | None = None,
    matrix_file: Path | None = None,
    allow_mixed_heads: bool = False,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Merge; exit 0 when every run passed, else the worst class code (missing = 4)."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    try:
        shards = collect(inputs)
        expected = parse_expected(expect, matrix_file)
        heads = sorted({shard.head or "unknown" for shard in shards}) or ["unknown"]
        if len(heads) > 1 and not allow_mixed_heads:
            raise UsageError(
                f"runs of different heads: {', '.join(heads)} (merge one head at a time, "
                "or pass --allow-mixed-heads)"
            )
        if not shards and not expected:
            raise UsageError(f"no run directories (audit.json) under {', '.join(map(str, inputs))}")
    except UsageError as exc:
        stderr.write(f"qualify merge: error: {exc}\n")
        return EXIT_USAGE
    worst = 0
    for head in heads:
        group = [shard for shard in shards if (shard.head or "unknown") == head]
        present = {(shard.family, shard.profile) for shard in group}
        group += [_missing(f, p, head) for f, p in expected if (f, p) not in present]
        group.sort(key=lambda s: (s.family, s.profile))
        target = (
            (out or Path("reports") / "merged") / head if out is None or len(heads) > 1 else out
        )
        worst = max(worst, _write(target, head, group, heads))
        for shard in group:
            stdout.write(f"{shard.family}/{shard.profile} {shard.run_id or '-'} {shard.verdict}\n")
        stdout.write(f"{target}\n")
    return worst
