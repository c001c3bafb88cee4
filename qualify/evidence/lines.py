"""Pure parsers of single log lines: kernel OOM reports, CI consoles, pytest, TensorRT.

Each parser takes one line (any prefix: dmesg ``[  219.35]``, ISO time, syslog host
``kernel:``, GitHub's ``2024-04-14T21:49:58.7397481Z``) and returns a ``LineSignal`` or None.
The formats are those of the real captures in tests/data/samples/ (SOURCES.md):

- kernel (mm/oom_kill.c): "<comm> invoked oom-killer: gfp_mask=..."; since 4.19
  "oom-kill:constraint=CONSTRAINT_MEMCG|CONSTRAINT_NONE,...,oom_memcg=...,task_memcg=...,
  task=...,pid=...,uid=..."; "Memory cgroup out of memory: Killed process P (comm) ..." (memcg)
  or "Out of memory: Killed process P (comm) ..." (global); before 4.x a bare "Killed process"
  line, the scope then given by "Task in X killed as a result of limit of Y" (memcg only).
- GitHub Actions: "Process completed with exit code N.", "##[error]The process '...' failed
  with exit code N", "The runner has received a shutdown signal.", "The operation was canceled."
- pytest-xdist: "worker 'gw0' crashed while running 'nodeid'", "[gw0] node down: ...",
  "replacing crashed worker gw0"; pytest: "FAILED nodeid", "==== 1 failed, 2 passed ... ====".
- TensorRT: "Error Code 2: OutOfMemory", "Requested amount of GPU memory (N bytes) could not be
  allocated", "Skipping tactic ... insufficient memory on requested size of N" (a warning: the
  builder goes on), "Engine building failed".
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

KB = 1024


@dataclasses.dataclass(frozen=True)
class LineSignal:
    """What one line says: a kind and its parsed fields."""

    kind: str
    """kernel_invoked, kernel_oom_kill, kernel_killed, kernel_task_in, kernel_select,
    kernel_memcg_trace, kernel_no_killable, kernel_memcg_usage, exit_code, shell_killed,
    runner_shutdown, canceled, xdist_crash, xdist_node_down, test_failed, pytest_summary,
    trt_oom, trt_oom_warning, trt_build_failed, timeout."""
    fields: dict[str, Any] = dataclasses.field(default_factory=dict)


_INVOKED = re.compile(r"(\S+) invoked oom-killer: gfp_mask=([^,\s]+).*?order=(-?\d+)")
_OOM_KILL = re.compile(r"oom-kill:(constraint=\S+)")
_KILLED = re.compile(
    r"(?:(Memory cgroup out of memory|Out of memory): )?Killed process (\d+) \((.*?)\) "
    r"total-vm:(\d+)kB, anon-rss:(\d+)kB, file-rss:(\d+)kB(?:, shmem-rss:(\d+)kB)?"
)
_SELECT = re.compile(
    r"(Memory cgroup out of memory|Out of memory): Kill process (\d+) \((.*?)\) score (\d+)"
)
_MEMCG_USAGE = re.compile(r"\bmemory: usage (\d+)kB, limit (\d+)kB, failcnt (\d+)")
_TASK_IN = re.compile(r"Task in (\S+) killed as a result of limit of (\S+)")
_EXIT = re.compile(r"(?:Process completed|failed) with exit code (-?\d+)")
_SHELL_KILLED = re.compile(r"(?:^|\s|Z\s|line \d+:\s+\d+ )Killed(?:\s{2,}.*|\s*)$")
_XDIST_CRASH = re.compile(r"worker '?(gw\d+)'? crashed while running(?: '([^']+)')?")
_NODE_DOWN = re.compile(r"\[(gw\d+)\] node down: (.*)")
_REPLACING = re.compile(r"[Rr]eplacing crashed worker (gw\d+)")
_FAILED_TEST = re.compile(r"(?:^|\s)FAILED (\S+::\S+)")
_SUMMARY = re.compile(r"=+ (.*?\b(\d+) (failed|errors?)\b.*?) in [\d.]+s")
_TRT_REQUESTED = re.compile(r"Requested amount of (?:GPU )?memory \((\d+) bytes\)")
_TRT_SIZE_WAS = re.compile(r"Requested size was (\d+) bytes")
_TRT_TACTIC = re.compile(r"insuff?icient memory on requested size of (\d+)")
_TIMEOUT = re.compile(
    r"\+{3,} Timeout \+{3,}|Failed: Timeout >|has exceeded the maximum execution time"
)


def _kernel_kill_fields(text: str) -> dict[str, Any]:
    """``key=value`` pairs of the oom-kill line (values may contain '/', never ',')."""
    fields: dict[str, Any] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if sep:
            fields[key.strip()] = value.strip()
        elif part.strip():
            fields[part.strip()] = True  # "global_oom"
    if "pid" in fields:
        fields["pid"] = int(fields["pid"]) if str(fields["pid"]).isdigit() else fields["pid"]
    return fields


def parse_kernel_line(line: str) -> LineSignal | None:
    """One line of a kernel OOM report, or None."""
    if "invoked oom-killer" in line and (match := _INVOKED.search(line)):
        return LineSignal(
            "kernel_invoked",
            {"comm": match.group(1), "gfp_mask": match.group(2), "order": int(match.group(3))},
        )
    if "oom-kill:" in line and (match := _OOM_KILL.search(line)):
        fields = _kernel_kill_fields(match.group(1))
        fields["scope"] = "memcg" if fields.get("constraint") == "CONSTRAINT_MEMCG" else "global"
        return LineSignal("kernel_oom_kill", fields)
    if "Killed process" in line and (match := _KILLED.search(line)):
        prefix = match.group(1)
        scope = {"Memory cgroup out of memory": "memcg", "Out of memory": "global"}.get(
            prefix or "", "unknown"
        )
        shmem = match.group(7)
        return LineSignal(
            "kernel_killed",
            {
                "scope": scope,
                "pid": int(match.group(2)),
                "comm": match.group(3),
                "total_vm_bytes": int(match.group(4)) * KB,
                "anon_rss_bytes": int(match.group(5)) * KB,
                "file_rss_bytes": int(match.group(6)) * KB,
                "shmem_rss_bytes": int(shmem) * KB if shmem is not None else None,
            },
        )
    if "memory: usage" in line and (match := _MEMCG_USAGE.search(line)):
        usage, limit = int(match.group(1)) * KB, int(match.group(2)) * KB
        return LineSignal("kernel_memcg_usage", {"usage_bytes": usage, "limit_bytes": limit})
    if "Task in " in line and (match := _TASK_IN.search(line)):
        return LineSignal("kernel_task_in", {"task_memcg": match[1], "oom_memcg": match[2]})
    if "Kill process" in line and (match := _SELECT.search(line)):
        scope = "memcg" if match.group(1).startswith("Memory") else "global"
        fields = {"scope": scope, "pid": int(match[2]), "comm": match[3], "score": int(match[4])}
        return LineSignal("kernel_select", fields)
    if "mem_cgroup_out_of_memory" in line:
        # The call trace of a memcg OOM (present even when nothing could be killed).
        return LineSignal("kernel_memcg_trace", {"scope": "memcg"})
    if "Out of memory and no killable processes" in line:
        return LineSignal("kernel_no_killable")
    return None


def parse_console_line(line: str) -> LineSignal | None:
    """One line of a CI console (GitHub Actions, a shell), or None."""
    if "exit code" in line and (match := _EXIT.search(line)):
        return LineSignal("exit_code", {"code": int(match.group(1))})
    if "shutdown signal" in line and "runner has received a shutdown signal" in line:
        return LineSignal("runner_shutdown")
    if "The operation was canceled" in line:
        return LineSignal("canceled")
    if _TIMEOUT.search(line):
        return LineSignal("timeout")
    if "Killed" in line and "Killed process" not in line and _SHELL_KILLED.search(line):
        return LineSignal("shell_killed")
    return None


def parse_pytest_line(line: str) -> LineSignal | None:
    """One line of pytest / pytest-xdist output, or None."""
    if "crashed while running" in line and (match := _XDIST_CRASH.search(line)):
        return LineSignal("xdist_crash", {"worker": match.group(1), "nodeid": match.group(2)})
    if "node down" in line and (match := _NODE_DOWN.search(line)):
        return LineSignal("xdist_node_down", {"worker": match.group(1), "why": match[2].strip()})
    if "crashed worker" in line and (match := _REPLACING.search(line)):
        return LineSignal("xdist_node_down", {"worker": match.group(1), "why": "replaced"})
    if "FAILED " in line and (match := _FAILED_TEST.search(line)):
        return LineSignal("test_failed", {"nodeid": match.group(1)})
    if "failed" in line or "error" in line:
        match = _SUMMARY.search(line)
        if match and int(match.group(2)) > 0:
            return LineSignal("pytest_summary", {"summary": match.group(1)})
    return None


def parse_tensorrt_line(line: str) -> LineSignal | None:
    """One TensorRT builder out-of-memory line, or None."""
    if "Engine building failed" in line:
        return LineSignal("trt_build_failed")
    requested = _TRT_REQUESTED.search(line) or _TRT_SIZE_WAS.search(line)
    fatal = (
        "Error Code 2: OutOfMemory" in line
        or "OutOfMemory Error" in line
        or "Out of memory error during" in line
        or (requested is not None and ("ERROR" in line or "[E]" in line))
    )
    if fatal:
        size = int(requested.group(1)) if requested else None
        return LineSignal("trt_oom", {"requested_bytes": size})
    tactic = _TRT_TACTIC.search(line)
    if requested or tactic:
        match = requested or tactic
        assert match is not None
        return LineSignal("trt_oom_warning", {"requested_bytes": int(match.group(1))})
    return None


PARSERS = (parse_kernel_line, parse_tensorrt_line, parse_pytest_line, parse_console_line)


def parse_line(line: str) -> LineSignal | None:
    """The first parser that recognises ``line``."""
    for parser in PARSERS:
        if (found := parser(line)) is not None:
            return found
    return None
