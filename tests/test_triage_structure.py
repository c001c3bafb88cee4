"""The readers of structure and of ends, on real lines (tests/data/triage-lines/SOURCES.md).

Each line was copied from a public tracker or log with its source; its expected kind was written
before the readers ran on it. A line must be read as decided, held by a needle of the scanner
(what the scan of a whole log admits), and found at its place by a scan of a log that holds it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from qualify.evidence.end_parts import parse_end_parts
from qualify.evidence.lines import parse_line
from qualify.evidence.scan import scan_log
from qualify.evidence.structure import read_fields, spelled
from tests.test_triage_scan import needle_at

SOURCES = Path(__file__).parent / "data" / "triage-lines" / "SOURCES.md"
_CELL = re.compile(r"(?<!\\)\|")


def _rows() -> list[tuple[str, str, str, str]]:
    rows = []
    for text in SOURCES.read_text(encoding="utf-8").splitlines():
        if not re.match(r"\| \d+ \|", text):
            continue
        item, source, _, expected, line = _CELL.split(text, 5)[1:6]
        line = line[1:].removesuffix(" |").replace("\\|", "|")
        rows.append((item.strip(), source.strip(), expected.strip(), line))
    return rows


ROWS = _rows()


def test_the_table_is_sourced() -> None:
    assert len(ROWS) >= 30
    assert len({item for item, _, _, _ in ROWS}) == 20
    for _, source, _, line in ROWS:
        assert source.startswith("https://github.com/"), source
        assert line.strip(), source


@pytest.mark.parametrize(("item", "source", "expected", "line"), ROWS, ids=[r[0] for r in ROWS])
def test_a_real_line_reads_as_decided(item: str, source: str, expected: str, line: str) -> None:
    found = parse_line(line)
    assert found is not None and found.kind == expected, (source, found)
    assert needle_at(line.lower().encode()), (source, "no needle: a scan would never read it")


@pytest.mark.parametrize(("item", "source", "expected", "line"), ROWS, ids=[r[0] for r in ROWS])
def test_a_real_line_is_found_in_a_log(
    tmp_path: Path, item: str, source: str, expected: str, line: str
) -> None:
    log = tmp_path / "console.log"
    log.write_text(f"step 1 of 3\nchecking out the sources\n{line}\ndone\n", encoding="utf-8")
    kinds = {(s.evidence.line, s.signal.kind) for s in scan_log(log).signals}
    assert (3, expected) in kinds, (source, kinds)


def test_identifiers_are_spelled_as_words() -> None:
    # from the rows above: a Kubernetes event's reason, .NET's exception, a JSON audit event
    assert "Deadline Exceeded" in (spelled("0s  Warning   DeadlineExceeded   job/64bf") or "")
    assert (spelled("System.InsufficientMemoryException: Insufficient memory") or "").startswith(
        "System.Insufficient Memory Exception:"
    )
    assert "reason:OOM Killed" in (spelled('"reason":"OOMKilled","code":137') or "")


@pytest.mark.parametrize(
    "line",
    [
        # names of code and settings stay as written (each from a real artifact of the corpus)
        "org.gradle.jvmargs=-Xmx2048m -XX:+HeapDumpOnOutOfMemoryError",  # an option
        "   +  where False = killed_by_oom({666, 667})",  # a function called
        "[INFO] [launch.py:315:sigkill_handler] Killing subprocess 3353707",  # a location
        "exit_status  1",  # a name in lower case, not a field's value
    ],
)
def test_names_of_code_are_not_spelled(line: str) -> None:
    words = spelled(line)
    assert words is None or all(
        token not in words
        for token in ("Heap Dump", "killed by oom", "sigkill handler", "exit status")
    ), words


def test_a_code_that_ends_a_sentence_is_read() -> None:
    """YARN's sentence "Exit status: 143." (https://github.com/TalkingData/Fregata/issues/12,
    between "on host: ..." and "Diagnostics: ..."): the period after the code ends the
    sentence; a decimal would go on."""
    found = parse_end_parts("Exit status: 143.")
    assert found is not None and found.fields["code"] == 143
    assert parse_end_parts("Exit status: 143.5 s") is None


def test_a_field_says_why_by_its_value() -> None:
    assert read_fields("    reason: Deadline Exceeded") is not None
    assert read_fields("    reason: Deadline Exceeded").kind == "timeout"  # type: ignore[union-attr]
    assert read_fields("    type: Failed") is None
    assert read_fields("  activeDeadlineSeconds: 100") is None  # a setting, not a reason


@pytest.mark.parametrize(
    "line",
    [
        # supposed, advised, set or refused: no end happened (real lines of the build corpus and
        # of the rows' sources)
        "If you catch the runner pod that's being evicted, you may find an event like the follow",
        "8 total processes killed (some possibly by mpiexec during cleanup)",
        "ERROR: (gcloud.builds.submit) INVALID_ARGUMENT: generic::invalid_argument: invalid value "
        "for 'build.steps[1].timeout': value must be less than or equal to build timeout value of "
        '"20m0s"',
        "=>> PBS: job killed: ncpus 9.3 exceeded limit 8",  # another resource's limit
        "curl: (28) Connection timed out after 5001 milliseconds",  # a network's time
        # a parameter named in a traceback's frame (the build corpus' BrokenProcessPool)
        "File ~/anaconda3/envs/nwb_datajoint/lib/python3.8/concurrent/futures/_base.py:444, in "
        "Future.result(self, timeout)",
        "Job failed due to timeout waiting for the lock",  # a wait's time
        "status: ok, timeout: 300",  # a state and a setting
    ],
)
def test_what_only_supposes_an_end_is_not_one(line: str) -> None:
    assert parse_end_parts(line) is None


def test_json_that_names_oomkilled_as_a_value_is_read_as_a_log(tmp_path: Path) -> None:
    # A Kubernetes audit event (item 14): JSON holding "OOMKilled" is taken for docker inspect
    # output by its content; with no docker State in it, its lines are read as a log.
    from qualify.triage import Sources, triage

    line = next(line for item, _, _, line in ROWS if item == "14")
    path = tmp_path / "audit-event.json"
    path.write_text(line + "\n", encoding="utf-8")
    result = triage(Sources(paths=(path,)))
    assert result.triage_class.value == "CGROUP_OOM", result.summary
    assert [e.line for e in result.decided_by] == [1], result.decided_by


def test_a_request_past_any_device_is_said_to_be_an_overflow(tmp_path: Path) -> None:
    """PyTorch's "Tried to allocate more than 1EB memory" (item 21): a device's allocation
    refused, whose size is a bug rather than memory running out."""
    from qualify.triage import Sources, triage

    (line,) = [line for item, _, _, line in ROWS if item == "21"]
    log = tmp_path / "console.log"
    log.write_text(f"step 1 of 3\n{line}\n", encoding="utf-8")
    result = triage(Sources(paths=(log,)))
    assert result.triage_class.value == "CUDA_OOM_CAPACITY"
    assert "an NPU" in result.summary and "overflow" in result.summary, result.summary
