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
``PARITY``                 harness   one JSON line per recorded generation (``record_case``)
``STDOUT`` / ``STDERR``    host      the E2E's output, bounded (head and tail kept)
``PYTEST_JUNIT``           pytest    pytest's own JUnit, when its session finished
``GPU_SUMMARY``            host      NVML peaks of the run
``CUDA_SNAPSHOT``          harness   the allocator's history dumped on a CUDA OOM
``REPORT_HTML``            host      the self-contained page of the run
``PUBLIC_DIR``             host      the sanitized bundle, safe to publish
``PUBLICATION``            host      how the publication went (internal)
``SANITIZE_MAP``           host      value -> pseudonym of this run (internal, never published)
``DEBUG_LOG``              host      a traceback when qualify itself failed (internal)
``PHASE_ACK``              host      phase-boundary acknowledgements the harness waits for
``LIMITS_MARKER``          harness   taken by the first process that reads the limits inside
``GITHUB_MARKER``          host      the GitHub channels were written once for this run
``HARNESS_DIR``            host      a copy of this package: all the sandbox's PYTHONPATH holds
=========================  ========  ==========================================================

Every JSON-lines file is written one line per ``write()`` and may end in a truncated line after
a SIGKILL: ``decode_line`` returns None for it, and readers skip it.
"""

from __future__ import annotations

import json
from typing import Any

# --- files of a run directory
AUDIT = "audit.json"
JUNIT = "junit.xml"
EVENTS = "events.jsonl"
TIMELINE = "timeline.jsonl"
PARITY = "parity.jsonl"
STDOUT = "stdout.log"
STDERR = "stderr.log"
PYTEST_JUNIT = "pytest-junit.xml"
GPU_SUMMARY = "gpu-nvml.json"
CUDA_SNAPSHOT = "cuda-snapshot.pickle"
REPORT_HTML = "report.html"
PUBLIC_DIR = "public"
PUBLICATION = "publication.json"
SANITIZE_MAP = "sanitize-map.json"
DEBUG_LOG = "debug.log"
PHASE_ACK = ".phase-ack"
LIMITS_MARKER = ".sandbox-limits"
GITHUB_MARKER = ".github-published"
HARNESS_DIR = ".harness"

INTERNAL_FILES = frozenset({PUBLIC_DIR, PUBLICATION, SANITIZE_MAP, DEBUG_LOG})
"""Never copied into the public bundle, whatever its level."""

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
CASE = "case"
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


def encode_line(record: dict[str, Any]) -> bytes:
    """One JSON line, compact, as every writer of a JSON-lines file of the run writes it."""
    return (json.dumps(record, separators=(",", ":")) + "\n").encode()


def decode_line(line: bytes) -> dict[str, Any] | None:
    """The record of one line; None for a truncated, garbled or non-object line."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None
