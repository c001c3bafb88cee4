"""The run's terminal summary written without rich (no colours, no phases: a plain pytest
family's run piped into a CI log) is what rich writes for it, character for character."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from qualify.report import terminal
from qualify.verdict import Verdict

TEXTS = [
    "the E2E passed within its limits",
    "a tab\there, a carriage return\r, a bell\a, a backspace\b, a form feed\f, a vt\v",
    "unicode: é, 漢字, ✓; markup that is text: [bold]x[/bold] [/]",
    "an escape \x1b[31m kept, a nul \x00 and a delete \x7f",
    "two\nlines\tand a tab after the break",
    "x" * 300 + " (longer than any width: never wrapped)",
    "trailing spaces   ",
    "漢字\tafter wide characters, a tab: rich counts cells",
    "",
]


def _result(reason: str, **changes: Any) -> Any:
    monitor = SimpleNamespace(peak_bytes=123 << 20, oom_kills=0, last_gasp=(), phases=())
    sandbox = SimpleNamespace(
        in_effect=SimpleNamespace(memory_bytes=4 << 30), backend="cgroup-v1", capped=True
    )
    fields: dict[str, Any] = {
        "spec": SimpleNamespace(
            family=SimpleNamespace(name="fam\tily"),
            profile="ci",
            commit=SimpleNamespace(head="0" * 40, dirty=True),
            backend="cgroup-v1",
        ),
        "execution": SimpleNamespace(sandbox=sandbox, monitor=monitor, teardown_problems=()),
        "verdict": Verdict.FAILED,
        "reason": reason,
        "progress": SimpleNamespace(collected=3, rerun_count=0, flaky=(), running=None),
        "testcases": (),
        "pytest_unseen": False,
        "parity": None,
        "parity_error": None,
        "base": None,
    }
    fields.update(changes)
    return SimpleNamespace(**fields)


@pytest.mark.parametrize("text", TEXTS)
def test_the_plain_summary_is_what_rich_writes(text: str) -> None:
    results = [
        _result(text),
        _result("reason", parity_error=text, pytest_unseen=True),
        _result(
            "reason",
            progress=SimpleNamespace(collected=None, rerun_count=0, flaky=(), running=text),
            base=SimpleNamespace(summary=text),
        ),
        _result(
            text,
            verdict=Verdict.PASSED,
            execution=SimpleNamespace(
                sandbox=None, monitor=None, teardown_problems=(text, "another")
            ),
        ),
    ]
    for result in results:
        before, after = terminal._lines(result)
        rich = terminal._rich(result, before, after, color=False, width=100)
        assert terminal.render_summary(result) == rich
        if "\t" not in text or text.isascii():  # (else rich writes it: cells to a tab stop)
            assert terminal._plain(before, after) == rich


def test_colours_or_phases_are_written_by_rich() -> None:
    phases = (SimpleNamespace(name="load", start_mono=0.0, end_mono=1.5, peak_bytes=1 << 30,
                              error=None),)  # fmt: skip
    monitor = SimpleNamespace(peak_bytes=1 << 30, oom_kills=0, last_gasp=(), phases=phases)
    sandbox = SimpleNamespace(
        in_effect=SimpleNamespace(memory_bytes=4 << 30), backend="cgroup-v1", capped=True
    )
    with_phases = _result(
        "reason", execution=SimpleNamespace(sandbox=sandbox, monitor=monitor, teardown_problems=())
    )
    table = terminal.render_summary(with_phases)
    assert "phases" in table and "load" in table and "25%" in table
    coloured = terminal.render_summary(_result("reason"), color=True)
    assert "\x1b[" in coloured and coloured != terminal.render_summary(_result("reason"))
