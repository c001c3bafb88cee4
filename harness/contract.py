"""The run directory contract: every file name, environment variable and event kind that the
host (qualify) and the sandbox (this harness) share, defined once.

Standard library only and free of side effects: qualify imports it on the host, the harness
inside the sandbox, where qualify is not installed. Nothing else on either side spells these
names. The layout of one run directory (``reports/<head-sha>/<family>/<profile>/<run-id>/``):

=========================  ========  ==========================================================
file                       writer    what it holds
=========================  ========  ==========================================================
``AUDIT``                  host      the record of the run (typed: ``qualify.rundir.audit``)
``JUNIT``                  host      always present and valid JUnit
``EVENTS``                 harness   one JSON line per event (kinds below), append-only
``TIMELINE``               host      one JSON line per monitor sample
``PARITY``                 harness   one JSON line per generation or forced view (``record_case``)
``STDOUT`` / ``STDERR``    host      the E2E's output, bounded (head and tail kept)
``GPU_SUMMARY``            host      NVML peaks of the run
``CUDA_SNAPSHOT``          harness   the allocator's history dumped on a CUDA OOM
``REPORT_HTML``            host      the self-contained page of the run
``PUBLIC_DIR``             host      the sanitized bundle, safe to publish
``PUBLICATION``            host      how the publication went (internal)
``SANITIZE_MAP``           host      value -> pseudonym of this run (internal, never published)
``SECRET_SOURCES``         host      every secret source ever given for the run (names, paths)
``DEBUG_LOG``              host      a traceback when qualify itself failed (internal)
``PHASE_ACK``              host      phase-boundary acknowledgements the harness waits for
``LIMITS_MARKER``          harness   taken by the first process that reads the limits inside
``GITHUB_MARKER``          host      the GitHub channels were written once for this run
``HARNESS_DIR``            host      a copy of this package: all the sandbox's PYTHONPATH holds
``TOKENIZER_AUDIT``        E2E       a tokenizer export's audit (``qualify tokenizer export``)
``JUNIT_STAGED``           host      the final JUnit, whole, before it is renamed into place
``AUDIT_STAGED``           host      the final audit, whole: once it exists, the reports commit
=========================  ========  ==========================================================

Every JSON-lines file is written one line per ``write()`` and may end in a truncated line after
a SIGKILL: ``decode_line`` returns None for it, and readers skip it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing, json and the re they import load only where they are used: every
    import json  # Python process of the E2E imports this module as it starts
    from typing import Any

try:  # the C encoder json itself uses
    from _json import encode_basestring_ascii as _json_str
except ImportError:  # an interpreter without CPython's accelerator module
    from json.encoder import encode_basestring_ascii as _json_str

# --- files of a run directory
AUDIT = "audit.json"
JUNIT = "junit.xml"
EVENTS = "events.jsonl"
TIMELINE = "timeline.jsonl"
PARITY = "parity.jsonl"
STDOUT = "stdout.log"
STDERR = "stderr.log"
GPU_SUMMARY = "gpu-nvml.json"
CUDA_SNAPSHOT = "cuda-snapshot.pickle"
REPORT_HTML = "report.html"
PUBLIC_DIR = "public"
PUBLICATION = "publication.json"
SANITIZE_MAP = "sanitize-map.json"
SECRET_SOURCES = "secret-sources.json"
DEBUG_LOG = "debug.log"
PHASE_ACK = ".phase-ack"
LIMITS_MARKER = ".sandbox-limits"
GITHUB_MARKER = ".github-published"
HARNESS_DIR = ".harness"
STACKS = "stacks.txt"
"""Where each Python process of the E2E dumps its threads' stacks on ``STACK_SIGNAL`` (the
last-gasp capture: ``qualify.run.last_gasp``), each dump after qualify's header line."""
TOKENIZER_AUDIT = "tokenizer-audit.json"
"""Also the audit's name inside an export directory (``qualify.tokenizer.export``)."""
JUNIT_STAGED = ".junit.xml.staged"
AUDIT_STAGED = ".audit.json.staged"
"""The final JUnit and audit, committed as one unit (``qualify.rundir.RunDir.commit_reports``)."""

INTERNAL_FILES = frozenset(
    {PUBLIC_DIR, PUBLICATION, SANITIZE_MAP, SECRET_SOURCES, DEBUG_LOG, JUNIT_STAGED, AUDIT_STAGED}
)
"""Never copied into the public bundle, whatever its level."""

STACK_SIGNAL = 40
"""The signal on which the harness dumps a process's Python stacks (faulthandler, at once,
even inside an allocation) and, where torch is loaded, its allocator's state: a real-time
signal (glibc's and musl's run 34/35..64), which programs leave alone, with one number on every
libc. qualify sends it only to processes whose ``SigCgt`` shows it caught."""
STACKS_HEADER = "=== qualify last-gasp"
"""How qualify's line before each process's dump in ``STACKS`` starts."""
TORCH_STATE = "qualify-torch-state "
"""How a process's allocator-state line in ``STACKS`` starts (JSON follows)."""

# --- environment of the sandbox (every variable the harness reads starts with QUALIFY_)
ENV_RUN_DIR = "QUALIFY_RUN_DIR"
ENV_RUN_ID = "QUALIFY_RUN_ID"
ENV_FAMILY = "QUALIFY_FAMILY"
ENV_EVENTS = "QUALIFY_EVENTS"
ENV_PARITY = "QUALIFY_PARITY"
ENV_PHASE_ACK = "QUALIFY_PHASE_ACK"
ENV_PHASE_ACK_TIMEOUT = "QUALIFY_PHASE_ACK_TIMEOUT"
ENV_OPTION_PREFIX = "QUALIFY_OPT_"
ENV_GPU_BUDGET = "QUALIFY_GPU_BUDGET_BYTES"
ENV_GPU_BUDGET_MODE = "QUALIFY_GPU_BUDGET_MODE"
ENV_CUDA_HISTORY = "QUALIFY_CUDA_HISTORY"

# --- event kinds of EVENTS (the ``event`` key of each line)
PHASE_START = "phase_start"
PHASE_END = "phase_end"
ACK_TIMEOUT = "ack_timeout"
COLLECTION = "collection"
TEST_PHASE = "test_phase"
SESSION_FINISH = "session_finish"
SUITE_PROPERTY = "suite_property"
CASE = "case"
FORCED = "forced"
"""A teacher-forced view of a case in ``PARITY`` (``record_forced``); not an ``EVENTS`` kind."""
FORCED_ROLES = ("teacher", "noise")
"""``teacher``: the engine fed the reference's tokens; ``noise``: the reference again in the
engine's precision, fed the same tokens (``harness.kit.forced``)."""
METRIC = "metric"
SANDBOX_LIMITS = "sandbox_limits"
GPU_BUDGET = "gpu_budget"
GPU_ALLOCATOR = "gpu_allocator"
CUDA_OOM = "cuda_oom"
CUDA_HISTORY = "cuda_history"
GPU_HOOK_ERROR = "gpu_hook_error"

EVENT_KINDS = frozenset(
    {
        PHASE_START,
        PHASE_END,
        ACK_TIMEOUT,
        COLLECTION,
        TEST_PHASE,
        SESSION_FINISH,
        SUITE_PROPERTY,
        CASE,
        METRIC,
        SANDBOX_LIMITS,
        GPU_BUDGET,
        GPU_ALLOCATOR,
        CUDA_OOM,
        CUDA_HISTORY,
        GPU_HOOK_ERROR,
    }
)
BOUNDARY_EVENTS = (PHASE_START, PHASE_END)
"""Events the host measures at: the memory watermark is read and reset at each."""

# --- what a TEST_PHASE line holds (harness.pytest_plugin writes them, qualify replays them)
#
# ``state: "start"`` as each phase (``when``: setup, call, teardown) of a test begins, the
# setup's with the test's ``file`` and 1-based ``line``; ``state: "end"`` with ``outcome`` and
# ``duration`` when the test's teardown ends, and at once for a phase that did not pass
# (failed, skipped, xfailed...; with a bounded ``longrepr`` and ``message``, both as pytest's
# JUnit writer gives them: a failure's crash message, a skip's reason). A start line says the
# test's previous phase passed; ``duration`` covers the phase and every earlier phase of the
# test that passed without a line of its own. So a test whose last line is a start was
# running that phase when the process died. A test whose setup starts again after its
# teardown ended is run again (pytest-rerunfailures, which ends the failed attempt with
# ``rerun``; flaky): its last attempt decides its outcome.

TEST_START = "start"
TEST_END = "end"

# --- a SUITE_PROPERTY line: ``name`` and ``value`` (strings) that a test recorded for the
# whole suite (pytest's ``record_testsuite_property``), a property of the run's JUnit suite.

# --- what a SESSION_FINISH line holds: pytest's ``exitstatus`` and ``junitxml``, the absolute
# path of the file pytest's JUnit writer wrote (the E2E's own ``--junitxml``: qualify asks for
# none, the events make its JUnit; null when it wrote none). The line is written after every
# other plugin's end of the session, so the file is whole once it is there.


def marker(kind: str) -> bytes:
    """The bytes every line of event ``kind`` holds (the kind, quoted): a reader that needs a
    few kinds out of many lines finds their candidates without decoding the rest."""
    return _json_str(kind).encode()


_ENCODER: list[json.JSONEncoder] = []
"""The compact encoder, made at the first ``encode_line``."""


def encode_line(record: dict[str, Any]) -> bytes:
    """One JSON line, compact, as every writer of a JSON-lines file of the run writes it."""
    if not _ENCODER:
        import json

        _ENCODER.append(json.JSONEncoder(separators=(",", ":")))
    return (_ENCODER[0].encode(record) + "\n").encode()


_STAMP = ',"t":%.6f,"mono":%.6f,"pid":%d}\n'
"""The end of a test line: its times to the microsecond. The shortest round-trip ``repr`` of a
float, which the generic encoder writes, costs twice as many instructions as this fixed format
(about 8,000 per time); the plugin writes nine times a test."""


def encode_test_start(
    when: str,
    nodeid: str,
    stamp: tuple[float, float, int],
    location: tuple[str, int | None] | None = None,
) -> bytes:
    """``encode_line`` of a TEST_PHASE start (``file`` and ``line`` from ``location``, then
    ``t``, ``mono`` and ``pid`` from ``stamp``, the times rounded to the microsecond), built in
    a fraction of the time: a suite writes three of them per test."""
    where = ""
    if location is not None:
        line = "null" if location[1] is None else int(location[1])
        where = f',"file":{_json_str(location[0])},"line":{line}'
    return (
        f'{{"event":"{TEST_PHASE}","state":"{TEST_START}","when":{_json_str(when)},'
        f'"nodeid":{_json_str(nodeid)}{where}' + _STAMP % stamp
    ).encode()


def encode_test_end(
    when: str, nodeid: str, outcome: str, duration: float, stamp: tuple[float, float, int]
) -> bytes:
    """``encode_line`` of a TEST_PHASE end without ``longrepr`` (a test that passed), built
    like ``encode_test_start``: most tests of a suite end with one. ``duration`` to the
    nanosecond: rounded to the millisecond as pytest's JUnit writer rounds the exact value, it
    gives the same figure unless that value lies within half a nanosecond of a rounding
    boundary."""
    return (
        f'{{"event":"{TEST_PHASE}","state":"{TEST_END}","when":{_json_str(when)},'
        f'"nodeid":{_json_str(nodeid)},"outcome":{_json_str(outcome)},'
        '"duration":%.9f' % duration + _STAMP % stamp
    ).encode()


def decode_line(line: bytes) -> dict[str, Any] | None:
    """The record of one line; None for a truncated, garbled or non-object line."""
    import json

    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # (nested deeper than the decoder goes)
        return None
    return record if isinstance(record, dict) else None
