"""What kind of artifact a path is, from its content: the user need not know which flag fits.

Kinds: ``run_dir`` (a directory: a qualify run directory), ``audit`` (a qualify audit, read
as a run directory holding only it), ``inspect`` (``docker inspect`` JSON or
a ``State`` fragment of it, or ``docker events`` output), ``junit`` (JUnit XML), ``report_log``
(pytest-reportlog JSON lines), ``kernel`` (dmesg, ``dmesg -T``, journald/syslog kernel lines: most
lines shaped like the kernel's), ``pod`` (a Kubernetes pod as JSON or YAML, ``kubectl describe``
output: read as a log, whose parsers know its OOMKilled and exit-code wordings) and ``log``
(anything else: a CI console, a traceback). Only the head of a file is read (HEAD_BYTES); a
UTF-16 head is decoded first.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from qualify.evidence.scan import utf16_encoding
from qualify.untrusted import open_regular

HEAD_BYTES = 64 << 10
KINDS = ("run_dir", "audit", "inspect", "junit", "report_log", "kernel", "pod", "log")

_KERNEL_LINE = re.compile(
    r"^\s*(?:<\d>)?\[\s*\d+\.\d+\]"  # dmesg
    r"|^\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d [\d:]{8} \d{4}\]"  # dmesg -T
    r"|^\d{4}-\d\d-\d\dT[\d:.,]+[+-]\d\d:?\d\d \w"  # dmesg --time-format iso
    r"|^(?:\w{3} [ \d]\d [\d:]{8}|\d{4}-\d\d-\d\dT\S+) \S+ kernel: "  # syslog, journalctl
    r"|^kernel: "  # journalctl -o cat
    # a report with no prefix at all: its own line shapes
    r"|invoked oom-killer: |^(?:Memory cgroup o|O)ut of memory: Kill|mems_allowed="
    r"|^CPU: \d+ (?:UID: \d+ )?PID: \d+|^Hardware name: |^Call Trace:|^\s+</?TASK>"
    r"|^\s+(?:\[<[0-9a-f]+>\] )?(?:\? )?[\w.]+\+0x[0-9a-f]+/0x|^\s*(?:[0-9a-f]{16} ?){2,}$"
    r"|^\[\s*\d+\]\s+\d+\s+\d+\s+\d+|^\[\s*pid\s*\]|^Mem-Info:|^Node \d+ |^Task in |^memory"
    r"|^(?:kmem|Memory cgroup stats|RIP|RSP|Code): |^R[A-Z0-9]{2}: [0-9a-f]{16}|^\w+ \d+$"
)
_DOCKER_EVENT = re.compile(r"\bcontainer (?:create|start|die|oom|kill|stop|destroy) [0-9a-f]{12}")
_INSPECT_KEYS = ('"OOMKilled"', '"ExitCode"')
_POD = re.compile(
    r'^\s*"?kind"?\s*:\s*"?(?:Pod|PodList)\b|^\s*"?apiVersion"?\s*:|^Name:\s+\S+\s*$'
    r"|^\s*Last State:\s+Terminated|^\s*State:\s+Terminated",
    re.MULTILINE,
)
_KERNEL_SHARE = 0.5
_AUDIT_KEYS = ("verdict", "reason", "commit", "limits", "memory", "exit")
"""Keys every qualify audit has (the run directory's audit, also under another name)."""


def head_text(path: Path) -> str:
    """The first HEAD_BYTES of ``path`` as text (UTF-16 decoded)."""
    with open_regular(path) as handle:
        head = handle.read(HEAD_BYTES)
    encoding = utf16_encoding(head)
    if encoding is not None:
        return head.decode(encoding, errors="replace")
    return head.decode("utf-8", errors="replace")


def detect(path: Path) -> str:
    """The kind of ``path`` (one of KINDS); raises OSError when it cannot be read."""
    if path.is_dir():
        return "run_dir"
    text = head_text(path)
    lines = [line for line in text.splitlines()[:400] if line.strip()]
    start = text.lstrip()[:200]
    xml = start.startswith("<?xml") or start.startswith("<testsuite")
    if xml and ("<testsuite" in text or "<testcase" in text):
        return "junit"
    if lines and '"$report_type"' in lines[0] and _is_json(lines[0]):
        return "report_log"
    if start.startswith("{") and all(f'"{key}"' in text for key in _AUDIT_KEYS):
        return "audit"
    if _is_inspect(start, text, lines):
        return "inspect"
    if (
        lines
        and sum(1 for line in lines if _KERNEL_LINE.search(line)) >= len(lines) * _KERNEL_SHARE
    ):
        return "kernel"
    if _POD.search(text[:8192]) and (
        "OOMKilled" in text or "exitCode" in text or "Exit Code" in text
    ):
        return "pod"
    return "log"


def _is_json(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, RecursionError):
        return False


def _is_inspect(start: str, text: str, lines: list[str]) -> bool:
    document = start[:1] in "[{" or start.startswith(('"State"', "docker inspect"))
    if document and any(key in text for key in _INSPECT_KEYS):
        return True
    events = sum(1 for line in lines if _DOCKER_EVENT.search(line))
    return bool(lines) and events >= len(lines) * _KERNEL_SHARE
