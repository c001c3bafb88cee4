"""The Markdown step summary of a run, bounded so that GitHub never rejects it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape
from typing import TYPE_CHECKING

from qualify.rundir import Audit
from qualify.sizes import format_bytes
from qualify.untrusted import printable

if TYPE_CHECKING:
    from qualify.report.github import Failure

SUMMARY_LIMIT = 1024 * 1024 - 16 * 1024
"""GitHub accepts 1 MiB per step; 16 KiB stay free for other tools writing to the same step."""
FAILURE_TEXT_LIMIT = 4096


Clean = Callable[[str], str]
"""The sanitizer, applied to every piece of text after it is clipped and before it is escaped."""


def _same(text: str) -> str:
    return text


def _cell(value: object, clean: Clean = _same) -> str:
    """A Markdown table cell: sanitized, HTML-escaped, pipes and line breaks neutralised."""
    text = "-" if value is None else clean(str(value))
    return escape(text).replace("|", "&#124;").replace("\r", "").replace("\n", "<br>")


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit // 2] + "\n[... truncated ...]\n" + text[-limit // 2 :]


def _header(audit: Audit, run_dir: str, clean: Clean) -> str:
    commit = audit.commit
    github = commit.github or {}
    in_effect = audit.limits.in_effect
    memory, tests, parity = audit.memory, audit.tests, audit.parity
    rows = [
        ("reason", audit.reason),
        ("head", github.get("head") or commit.head),
        ("base / merge", f"{github.get('base') or commit.base} / {github.get('merge')}"),
        ("cap in effect", format_bytes(in_effect.memory_bytes if in_effect else None)),
        ("peak", format_bytes(memory.peak_bytes)),
        ("OOM kills", audit.oom.kills),
        ("phase at end", memory.phase_at_end),
        (
            "tests",
            f"{tests.passed} passed, {tests.failed} failed, "
            f"{tests.errors} errors, {tests.skipped} skipped{tests.reruns_said()}",
        ),
        ("parity", parity.reason if parity else None),
        ("run directory", run_dir),
    ]
    table = "\n".join(f"| {_cell(key)} | {_cell(value, clean)} |" for key, value in rows)
    return (
        f"## qualify {_cell(audit.verdict)}: {_cell(audit.family.name, clean)} "
        f"({_cell(audit.profile, clean)})\n\n| | |\n|---|---|\n{table}\n\n"
    )


def _failure(failure: Failure, clean: Clean) -> str:
    where = f" ({failure.file}:{failure.line})" if failure.file else ""
    return (
        f"<details><summary><b>{escape(clean(failure.title))}</b>{escape(clean(where))}: "
        f"{escape(clean(_clip(failure.message, 500)))}</summary>\n\n"
        f"<pre>{escape(clean(_clip(failure.text, FAILURE_TEXT_LIMIT)))}</pre>\n</details>\n\n"
    )


def _priority(failure: Failure) -> int:
    """Errors (what killed the run) first, then test failures, then parity cases."""
    if failure.outcome == "error":
        return 0
    return 2 if failure.classname.endswith("parity") else 1


def _fit(text: str, budget: int) -> str:
    text = printable(text)  # (a test id's lone surrogate: \xNN)
    data = text.encode("utf-8")
    return text if len(data) <= budget else data[: max(budget, 0)].decode("utf-8", "ignore")


def render_summary(
    audit: Audit,
    failures: Sequence[Failure],
    run_dir: str,
    budget: int,
    clean: Clean = _same,
) -> str:
    """Header, then failures (most important first) while they fit in ``budget`` bytes; every
    piece of text through ``clean`` after it is clipped, before it is escaped."""
    if budget <= 0:
        return ""
    pointer_reserve = 600
    text = _header(audit, run_dir, clean)
    ordered = sorted(failures, key=_priority)
    if ordered:
        text += f"### Failures ({len(ordered)})\n\n"
    used = len(text.encode("utf-8"))
    shown = 0
    for failure in ordered:
        entry = _failure(failure, clean)
        size = len(entry.encode("utf-8"))
        if used + size + pointer_reserve > budget:
            break
        text += entry
        used += size
        shown += 1
    if shown < len(ordered):
        text += (
            f"**{len(ordered) - shown} more failures not shown** (the step summary is limited to "
            f"1 MiB): see the JUnit file in the uploaded artifact of {_cell(run_dir, clean)}.\n"
        )
    return _fit(text, budget)
