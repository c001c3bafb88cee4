"""``ab.json``: the one record of an A/B experiment, and its Markdown and HTML pages.

Every repetition is kept (verdict, peaks, phase peaks, metric samples, its run directory);
the summaries are recomputed from them by whoever reads the record (``qualify merge`` too), so
the numbers in a table can always be traced to the runs that made them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from qualify import records
from qualify.atomic import write_bytes_atomic, write_json_atomic
from qualify.errors import UsageError
from qualify.experiment.plan import ARMS
from qualify.experiment.repetition import Repetition
from qualify.experiment.summary import LevelSummary, summarise_level
from qualify.experiment.tables import Table, level_tables, to_html, to_markdown
from qualify.records import frozen_record

AB_JSON = "ab.json"
AB_MARKDOWN = "ab.md"
AB_HTML = "ab.html"
RUNS_DIR = "runs"
"""Below the experiment's directory: the repetitions' run directories (``qualify run --out``)."""
KIND = "qualify-ab"
SCHEMA_VERSION = 1


@frozen_record
class AbRecord:
    """An A/B experiment as run on one host."""

    id: str
    family: str
    head: str
    host: str
    """Who ran it (``--host``, else the machine's name): merged results keep hosts apart."""
    created: str
    command: list[str]
    arms: dict[str, dict[str, str]]
    """Each arm's options as given."""
    differing: dict[str, dict[str, Any]]
    """The difference under test: option -> {arm: value in effect}."""
    common: dict[str, str]
    n: int
    order: str
    seed: int
    cap: str
    """``--mem``, ``--profile NAME``, the sweep, or the family's default."""
    levels: list[str]
    coupled: list[list[str]]
    metrics_asked: list[str] | None
    repetitions: list[Repetition]
    refused: str | None = None
    """Why the result is refused (a pin differed between runs) or incomplete (``qualify ab``
    still running, or killed before its last run); no summary is then given."""
    wall_s: float | None = None

    def summaries(self) -> list[LevelSummary]:
        """Each sweep level, both arms compared (none for a refused record)."""
        if self.refused:
            return []
        return [
            summarise_level(
                label,
                [run for run in self.repetitions if run.level == label],
                ARMS,
                self.metrics_asked,
                self.coupled,
            )
            for label in self.levels
        ]

    def to_dict(self) -> dict[str, Any]:
        """The JSON document: the record, then the summaries computed from it."""
        document = records.asdict(self)
        document["repetitions"] = [run.to_dict() for run in self.repetitions]
        document["kind"], document["schema_version"] = KIND, SCHEMA_VERSION
        document["summary"] = [level.to_dict() for level in self.summaries()]
        return document

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> AbRecord:
        """Read back what ``to_dict`` wrote (the summary is recomputed, not read)."""
        fields = {field.name for field in records.fields(cls)}
        values = {key: value for key, value in document.items() if key in fields}
        values["repetitions"] = [Repetition.from_dict(run) for run in document["repetitions"]]
        return cls(**values)

    def arm_labels(self) -> dict[str, str]:
        """``a (retain_plans=true)`` for each arm."""
        return {
            arm: f"{arm} ({', '.join(f'{k}={v}' for k, v in self.arms[arm].items())})"
            for arm in ARMS
        }

    def caps(self) -> dict[str, dict[str, int | None]]:
        """Per level, the cap each arm ran under (the largest in effect)."""
        caps: dict[str, dict[str, int | None]] = {}
        for run in self.repetitions:
            level = caps.setdefault(run.level, {})
            if run.limit_bytes is not None:
                level[run.arm] = max(level.get(run.arm) or 0, run.limit_bytes)
        return caps


def read_record(directory: Path) -> AbRecord:
    """The record in ``directory``; UsageError naming the file when it is not one."""
    path = directory / AB_JSON
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        if document.get("kind") != KIND:
            raise ValueError(f"kind is {document.get('kind')!r}, not {KIND!r}")
        return AbRecord.from_dict(document)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise UsageError(f"{path} is not a qualify A/B record: {exc}") from None


def find_records(root: Path) -> list[Path]:
    """Directories under ``root`` (itself included) that hold an A/B record."""
    found = [root] if (root / AB_JSON).is_file() else []
    return found + sorted(p.parent for p in root.rglob(f"*/{AB_JSON}") if p.parent != root)


def _option(value: Any) -> str:
    """An option's value as family.toml and ``--set`` write it (``true``, not ``True``)."""
    return json.dumps(value) if isinstance(value, bool) else str(value)


def render(records: Sequence[AbRecord]) -> tuple[str, list[tuple[str, str]], list[Table]]:
    """Title, facts and tables of one or more records of the same experiment (one per host)."""
    first = records[0]
    difference = "; ".join(
        f"{name}: " + " vs ".join(f"{arm}={_option(values[arm])}" for arm in ARMS)
        for name, values in first.differing.items()
    )
    title = f"A/B of {first.family}: {difference}"
    facts = [
        ("head", first.head),
        ("hosts", ", ".join(record.host for record in records)),
        ("runs per arm and level", str(first.n)),
        ("order", f"{first.order} (seed {first.seed})"),
        ("cap", first.cap),
        (
            "pinned",
            "commit, tree, image, limits, environment; options "
            + (", ".join(f"{k}={v}" for k, v in first.common.items()) or "(family defaults)"),
        ),
    ]
    facts += [(f"refused on {r.host}", r.refused) for r in records if r.refused]
    labels = first.arm_labels()
    tables: list[Table] = []
    summaries = {record.host: record.summaries() for record in records if not record.refused}
    caps = {record.host: record.caps() for record in records}
    for index, _ in enumerate(first.levels):
        per_host = {host: levels[index] for host, levels in summaries.items()}
        if per_host:
            label = first.levels[index]
            tables += level_tables(per_host, labels, {h: c.get(label, {}) for h, c in caps.items()})
    return title, facts, tables


def write_pages(directory: Path, records: Sequence[AbRecord]) -> None:
    """``ab.md`` and ``ab.html`` of ``records``, atomically."""
    title, facts, tables = render(records)
    write_bytes_atomic(directory / AB_MARKDOWN, to_markdown(title, facts, tables).encode())
    write_bytes_atomic(directory / AB_HTML, to_html(title, facts, tables).encode())


def write_record(directory: Path, record: AbRecord) -> None:
    """``ab.json`` and its pages, each atomically."""
    write_json_atomic(directory / AB_JSON, record.to_dict())
    write_pages(directory, [record])
