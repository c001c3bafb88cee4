"""Pure parsers of single log lines: kernel OOM reports, kills, CI consoles, pytest, GPU engines.

Each parser takes one line (any prefix: dmesg ``[  219.35]``, ``dmesg -T`` dates, ISO time,
syslog host ``kernel:``, GitHub's ``2024-04-14T21:49:58.7397481Z``) and returns a ``LineSignal``
or None. ``parse_line`` lowercases the line once and every pattern is guarded by a substring test
on it, so that a line that only mentions memory or a timeout costs a few ``in`` tests. The
formats are those of the real captures in tests/data/samples/ and tests/data/triage/:

- kernel (mm/oom_kill.c): "<comm> invoked oom-killer: gfp_mask=..."; since 4.19
  "oom-kill:constraint=CONSTRAINT_MEMCG|CONSTRAINT_NONE,...,oom_memcg=...,task_memcg=...,
  task=...,pid=...,uid=..."; "Memory cgroup out of memory: Killed process P (comm) ..." (memcg)
  or "Out of memory: Killed process P (comm) ..." (global); before 4.19 "... Kill process P
  (comm) score N or sacrifice child" (the selection) then a bare "Killed process P (comm)[, UID
  U], total-vm:..." (the kill: the same event, possibly of a child), the scope then given by the
  selection line, "Task in X killed as a result of limit of Y" (memcg only) or the call trace
  (mem_cgroup_out_of_memory, try_charge_memcg...); "memory: usage U, limit L, failcnt F" (memcg
  only: enough on its own when the report was cut before the kill line); "OOM victim P (comm) is
  already exiting".
- systemd-oomd: "Killed <cgroup> due to memory pressure for <cgroup> being X% > Y% for > Zs",
  "Marked <cgroup> for killing due to ...", "<unit>: systemd-oomd killed N process(es)".
- Kubernetes: "Reason: OOMKilled" (kubectl describe), "reason: OOMKilled" (pod YAML),
  "\"reason\": \"OOM Killed\"" (kubelet status JSON), a `kubectl get pods` row with status
  OOMKilled, "Exit Code: 137", "command terminated with exit code 137", "Error executing in Docker
  Container: 137"; docker events "container oom <id>".
- Slurm: "slurmstepd: error: Detected N oom-kill event(s) in step ..." / "... oom_kill event in
  StepId=...", "srun: error: <node>: task N: Out Of Memory", "State: OUT_OF_MEMORY", "... DUE TO
  TIME LIMIT".
- CI consoles: GitHub ("Process completed with exit code N", "failed with exit code N", "The
  runner has received a shutdown signal", "The operation was canceled", "has exceeded the maximum
  execution time"), GitLab ("Job failed: exit code 137", "execution took longer than"), CircleCI
  ("Exited with code exit status 137"), Buildkite ("Exited with status -1 (agent lost)"), Jenkins
  ("script returned exit code 137"), Travis ('The command "..." exited with 137.'), make and
  SCons ("*** [target] Error 137"), a shell's "line N: PID Killed  command", gcc's "Killed signal
  terminated program cc1plus", a shell's "Segmentation fault" / "Aborted (core dumped)".
- pytest and pytest-xdist: "FAILED nodeid" and "FAILED [0.09s] nodeid" (pytest 8.4 durations),
  "E   AssertionError" and "path.py:5: AssertionError" blocks, the final summary (failed or all
  passed; between ``=`` rules, or alone on its line under ``-q``; coloured or not), "worker
  'gw0' crashed while running 'nodeid'", "[gw0] node down: ...", "replacing crashed worker
  gw0"; pytest-timeout's "+++ Timeout +++", "Failed: Timeout >N s" (not when it is
  quoted inside an assertion's pattern) and its "~~~ Stack of MainThread (N) ~~~" dump.
- GPU engines: ``qualify.evidence.gpu_lines``.
"""

from __future__ import annotations

import re
from typing import Any

from qualify import cuts
from qualify.evidence.end_parts import KERNEL_KILLED, parse_end_parts
from qualify.evidence.evidence_line import LineSignal
from qualify.evidence.gpu_lines import parse_engine_line
from qualify.evidence.gpu_lines import parse_tensorrt_line as _parse_tensorrt
from qualify.evidence.oom_parts import handled_code, parse_oom_parts, supposes
from qualify.evidence.prefilter import guarded
from qualify.evidence.structure import names_memory, read_fields, spelled

__all__ = ["KB", "LineSignal", "parse_line"]

KB = 1024

_INVOKED = re.compile(r"(\S+) invoked oom-killer: gfp_mask=([^,\s]+).*?order=(-?\d+)")
_OOM_KILL = re.compile(r"oom-kill:(constraint=\S+)")
_KILLED = re.compile(
    r"(?:(Memory cgroup out of memory|Out of memory): )?Killed process (\d+)(?:, UID \d+,)?"
    r"(?: \(([^)]*)\)?)?"
)
"""The kill's line, with the victim's name after its pid (2.6.32's "Killed process 31343, UID
493, (influxd) total-vm:..." puts its uid between)."""
_KB_FIELD = re.compile(r"\b(total-vm|anon-rss|file-rss|shmem-rss):(\d+)kB")
_SELECT = re.compile(
    r"(Memory cgroup out of memory|Out of memory): Kill process (\d+) \((.*?)\) score (\d+)"
)
_VICTIM_EXITING = re.compile(
    r"(Memory cgroup out of memory|Out of memory): OOM victim (\d+) \((.*?)\) is already exiting"
)
_REAPED = re.compile(r"\boom_reaper: reaped process (\d+) \((.*?)\)")
"""The kernel's OOM reaper freeing a victim's memory after the kill (``oom_reaper: reaped process
22768 (cc1), now anon-rss:0kB, ...``): the kill, its scope said by the report around it."""
_TASKS_HEAD = re.compile(
    r"\[\s*pid\s*\]\s+uid\s+tgid\s+total_vm\s+rss\s+(?:\w+\s+){1,4}oom_score_adj\s+name\s*$"
)
"""The head of the task list the kernel prints as it picks an OOM victim (mm/oom_kill.c's
``dump_tasks``: ``[ pid ]   uid  tgid total_vm      rss nr_ptes nr_pmds swapents oom_score_adj
name``, ``pgtables_bytes`` since 4.15): printed only by the OOM killer, so a report pasted from it
(collectd's issue, cut after the task list, before the kill line) shows the killer ran."""
_MEMCG_USAGE = re.compile(r"\bmemory: usage (\d+)kB, limit (\d+)kB, failcnt (\d+)")
_TASK_IN = re.compile(r"Task in (\S+) killed as a result of limit of (\S+)")
_MEMCG_TRACE = ("mem_cgroup_out_of_memory", "mem_cgroup_oom", "try_charge_memcg", "charge_memcg")
_OOMD = re.compile(
    r"systemd-oomd\[\d+\]: (?:Killed|Marked) (\S+) (?:for killing )?due to (.+?)"
    r"(?: with reclaim activity)?\s*$"
)
_OOMD_UNIT = re.compile(r"(\S+): systemd-oomd killed (\d+) process")
_EXIT = re.compile(
    r"(?i)\b(?:exit(?:ed|s)?(?: with)?(?: (?:the |a )?(?:non-?zero |return )?(?:code|status))?"
    r"(?: exit status)?(?: of)?|exitcode\"?|return value)"
    r"\s*[:=(]?\s*['\"]?"
    r"(-?\d+)\b|Error executing in Docker Container: (\d+)|\*\*\* \[[^\]]*\] Error (\d+)"
    # the code before its name ("It crash loop with continuous 137 exit code.")
    r"|(?<![\w.-])(\d{1,3}) exit (?:code|status)\b"
)
_SIGNAL_NAMED = re.compile(r"\bsig(kill|term)\b")
"""A killing signal named on a line (lowercased)."""
_SIGNAL_EXIT = guarded(
    r"\(signal: (\d+),"  # Rust's ExitStatus: "(signal: 9, SIGKILL: kill)"
    r"|(?i:(?:killed|terminated|died|exited|ended|stopped|received|\bgot)(?: \w+){0,2}?"
    r" (?:by|due to|with|of|on|from)? ?(?:the )?'?signal)\W{0,2}(?:SIG)?"
    r"(\d+|KILL|TERM|(?i:killed|terminated|bus error|segmentation fault|aborted))\b"
    r"|[Ss]ignal (\d+) \(SIG\w+\) received"  # torch.distributed.elastic's failure record
    r"|\bthrew signal (\d+)\b"  # Verilator's driver: "%Error: Verilator threw signal 9."
    # a return code given as the signal's name (Airflow: "return code Negsignal.SIGKILL")
    r"|(?i:(?:return code|exit code|exit status|exited with|code)\W{1,3}(?:neg)?signal\.sig"
    r"([a-z]+))\b"
    # Go's ExitError ("Runtime exited with error: signal: killed"), a signal sent to a worker
    # ("Worker (pid:256) was sent SIGKILL!")
    r"|\bsignal: (killed|terminated)\b|(?i:(?:was|were|been) sent SIG([a-z]+))\b"
    # systemd's "Main process exited, code=killed, status=9/KILL"; loky's "The exit codes of
    # the workers are {SIGKILL(-9)}"
    r"|\bcode=(?:killed|dumped), status=(\d+)\b|(?i:exit codes?\b.{0,40}?\bSIG([a-z]+)\b)"
    # Python's subprocess: "Command '[...]' died with <Signals.SIGKILL: 9>."
    r"|(?i:died with <signals\.sig([a-z]+): \d+>)"
    # Python's subprocess: a negative status is the signal ("returned non-zero exit status -9")
    r"|(?i:non-zero exit status -(\d+))\b"
    # a signal as a field's value (Jest's "ChildProcessWorker exit: exitCode = null, pid = 1378,
    # signal = SIGKILL")
    r"|\bsignal\s?[=:]\s?SIG([A-Z]+)\b"
    # Julia's runtime, its signal's number and name ("signal (15): Terminated")
    r"|\bsignal \((\d+)\): [A-Z][a-z]"
)
"""A process said to have ended by a signal, as runtimes and runners word it."""
_SIGNAL_NUMBERS = {
    "KILL": 9, "TERM": 15, "SEGV": 11, "ABRT": 6, "BUS": 7, "INT": 2, "KILLED": 9, "TERMINATED": 15,
    "BUS ERROR": 7, "SEGMENTATION FAULT": 11, "ABORTED": 6,
}  # fmt: skip
"""Signals by the names a message gives them (a signal's own, or ``strsignal``'s: PyTorch's
"DataLoader worker (pid 2064) is killed by signal: Killed.", "... by signal: Bus error.")."""
_TERMINATE = re.compile(
    r"terminate called after throwing an instance of '([^']*(?:[Ee]rror|bad_alloc)[^']*)'"
)
"""The C++ runtime's abort (std::terminate) on an error: the process died of SIGABRT. (Only
an error's: the line then holds a needle of the scan, "error" or "bad_alloc", and costs the
scan no pass of its own.)"""
_AGENT_LOST = re.compile(
    r"(?i)exited with status -1 \(agent lost\)|lost communication with the server"
    r"|stopped hearing from agent"
)
"""A CI agent gone mid-job: Buildkite's "agent lost", Azure Pipelines' "The agent: X lost
communication with the server" and "We stopped hearing from agent X"."""
_EXTERNALLY = guarded(
    r"(?i)\b(?:terminated|killed|stopped) by (?:the |an |some )?(?:external|outside"
    r"|operating system|os\b|system\b|scheduler\b|host\b)"
    r"|(?i:\b(?:daemon|driver|worker|agent|runner|executor|process|instance|host|node|vm|machine"
    r"|container|pod|server|session|kernel)s?\b(?:(?!\bthread\b)[^.;:]){0,40}?\b(?:disappeared"
    r"|vanished|went away"
    r"|(?:stopped|terminated|shut down|restarted) unexpectedly"
    r"|is disrupted|was disrupted|(?:was |been )?(?<!\bbe )(?:pre-?empted|interrupted)))\b"
    r"|(?i:\bsignaled to exit\b)"
    # the same in the active voice, told of one process: "Then the system kill this nginx worker"
    r"|(?i:(?<!\blet )(?<!\bmake )(?<!\bhave )(?<!\bto )\bthe (?:operating system|os|system"
    r"|kernel) (?:(?:killed|terminated) (?:the|this|that|my|our|its|it|them)"
    r"|kill (?:this|that))\b)"
    # a person writing Chinese: killed (杀死, 杀掉, kill 掉, 干掉) or ended (终止) by the system,
    # the operating system or the kernel ("直到被系统杀死": until killed by the system)
    r"|\u88ab(?:\u7cfb\u7edf|\u64cd\u4f5c\u7cfb\u7edf|\u5185\u6838)(?:\u5f3a\u5236)?"
    r"(?:\u6740\u6b7b|\u6740\u6389|kill\s?\u6389?|\u5e72\u6389|\u7ec8\u6b62)"
)
"""A process said to be ended by something outside it, naming no reason (Nextflow's "Likely it
has been terminated by the external system"), or said to be gone without one: Gradle's "build
daemon disappeared unexpectedly (it may have been killed or may have crashed)", Databricks'
"The spark driver has stopped unexpectedly and is restarting", Cirrus CI's "Signaled to exit!",
a pod "disrupted" by an eviction, a preempted machine (not one that "can be preempted").
Whoever ended it said nothing of why; a line that also says the reason is read for it
(``parse_line``). A process that "died" or "exited" unexpectedly is not one: a crash says that
too (Ray's "The worker died unexpectedly while executing this task"); nor is a thread
interrupted (TorchServe's "Backend worker monitoring thread interrupted or backend worker process
died.", a Java thread's shutdown)."""
_CARRIED_ON = guarded(r"[^.;]*?\b(?:instead|falling back|fell back|falls back)\b")
"""The work said to go on another way in the same sentence as the end (sccache's "The server
looks like it shut down unexpectedly, compiling locally instead"): a fallback the program took,
a warning, not what ended the job."""
_HEDGED = re.compile(
    r"\b(?:if|when|whether|unless|may|might|could|can|means?|meaning|indicates?)\b[^.]*$"
)
"""A condition, a possibility or an explanation just before a kill's words ("if the process is
killed by the system", RQ's "Signal 4 is SIGILL, that means your job was terminated by the
OS."): not a kill that happened."""
_QUOTED_KILLED = re.compile(
    r"\b(?:get|gets|got|getting|output|outputs|print|prints|printed|printing|show|shows|showed"
    r"|return|returns|returned|say|says|said"
    # or as what a program ended with (Spidy's user: 'Spidy aborts with "Killed".')
    r"|(?:abort|exit|die|end|stop|quit|terminate|fail)(?:s|d|ed)? with)\b[^.\"`]{0,20}"
    r"[\"`\u201c]Killed\.?[\"`\u201d]"
)
"""The shell's word for a command killed by a signal, quoted as the output a person got (PDAL's
"am getting the output \"Killed\" in my terminal window") or as what a program ended or failed
with (golangci-lint's user: 'fails with "Killed" message after 40 seconds')."""
_KILLED_AS_OUTPUT = re.compile(
    r"^\W*(?:\d+ )?Killed[\"`\u201d]?\s+(?:is|was) (?:the |my )?(?:only |sole |whole |last )?"
    r"(?:error|output|message)\b"
)
"""The shell's job status, its pid before it as the shell prints it ("6835 Killed"), said first
by a person to be the error or output got (DyGIE++'s "6835 Killed is the only error"): the
status quoted as the subject of the sentence, a kill shown."""
_SUPPOSED_KILL = re.compile(r"\b(?:if|whether|unless|never|not|instead of)\b|n't\b")
"""A quoted "Killed" supposed or denied: no kill shown."""
_ASKED = re.compile(r"[^.!?]*\?")
"""The rest of a sentence, ending in a question mark ('Does it abort with "Killed"?')."""
_SHELL_KILLED = re.compile(
    r"(?:^|(?<![Oo][Oo][Mm])\s|Z\s|[.\d])Killed(?:\s{2,}(\S.*)|\s*(?:```)?\s*)$"
    r"|\bline \d+:\s+(\d+) Killed(?:: 9)?(?:\s+(\S.*)|\s*)$"
    r"|^\[\d+\]\s+[+-]?\s*(\d+) killed\s{2,}(\S.*)$"
    r"|(?<=\S\s)(?:zsh|bash|ksh|dash|fish): [Kk]illed\s+(\S.*)$"
    # the same status with the script's prefix left out, a pid first (Siconos' user: "7395
    # Killed OPEN_BLAS_NUM_THREADS=8 OMP_NUM_THREADS=8 python3 chute_con_rocas.py > ...")
    r"|^\s*(\d{3,}) Killed\s+(\S.*)$"
    # the status written over a progress line, its counter's rest after it (ruby-install's
    # "Killed94/962]  ext/date/date_core.c", the rdoc's "[ 94/962]")
    r"|^Killed(?=\d+/\d+\])"
)
"""The shell's job status for a command killed by a signal: alone (or after a progress line's
dots, "Loading database information...Killed", or a time stamp glued to it and a fence's end,
"2025-10-16 19:50:38.827315+00:00Killed```"), after the script's ``line N: PID`` (then
wherever the line quotes it, one space or many before the command, macOS's sh adding the
signal's number: "77877 Killed: 9"), zsh's job line
("[1]    75076 killed     python main.py"), or the shell's message after its name wherever
the output before it left the line ("... crc=388ABCA5 zsh: killed zip2john Test.zip")."""
_GCC_KILLED = re.compile(r"internal compiler error: Killed(?:: \d+)? \(program (\S+?)\)")
"""gcc's driver reporting its compiler killed by a signal (older than "Killed signal
terminated program")."""
_SHELL_CRASH = re.compile(
    r"(?:^|\s|line \d+:\s+(\d+) )(Segmentation fault|Aborted|Bus error)"
    r"(?: \(core dumped\))?(?:\s{2,}(\S.*)|\s*)$"
)
_CRASH_SIGNALS = {
    "Segmentation fault": "SIGSEGV",
    "Aborted": "SIGABRT",
    "Bus error": "SIGBUS",
}
_V8_LAST_GCS = re.compile(r"\s*(?:\[\d+:0x[0-9a-f]+\]\s*)?<--- Last few GCs --->\s*$")
"""V8's banner before the heap's last collections, printed only as it dies for its heap (nyc's
issue, whose log was cut after it: "I am getting the error" ... "<--- Last few GCs --->"):
JavaScript's heap refused, whatever line the fatal error would have followed on."""
_XDIST_CRASH = re.compile(r"worker '?(gw\d+)'? crashed while running(?: '([^']+)')?")
_NODE_DOWN = re.compile(r"\[(gw\d+)\] node down: (.*)")
_REPLACING = re.compile(r"[Rr]eplacing crashed worker (gw\d+)")
_FAILED_TEST = re.compile(r"(?:^|[\s*])FAILED (?:\[[\d.]+m?s\] )?(\S+::\S+)")
_SUMMARY = re.compile(r"=+ (.*?\b(\d+) (failed|errors?)\b.*?) in [\d.]+s")
_PASSED_SUMMARY = re.compile(r"=+ ((?:\d+ \w+(?:, )?)*?\b\d+ passed\b.*?) in [\d.]+s")
_COUNT = (
    r"\d+ (?:failed|passed|skipped|deselected|xfailed|xpassed|warnings?|errors?|rerun"
    r"|subtests (?:passed|failed|skipped|xfailed|xpassed))"
)
_QUIET_SUMMARY = re.compile(
    rf"^(?:[\dT:.,+Z-]+ )?({_COUNT}(?:, {_COUNT})*) in [\d.]+s(?: \(\d+:\d\d:\d\d\))?\s*$"
)
"""pytest's last line under ``-q``: the counts and the time, without the ``=`` rules around
(``841 failed, 8423 passed, 968 skipped, 16 errors in 1215.52s (0:20:15)``), alone on its
line after an optional CI timestamp."""
_FAILED_COUNT = re.compile(r"\b(\d+) (?:failed|errors?)\b")
_ANSI = re.compile(r"\x1b\[[\d;]*m")
_E_LINE = re.compile(r"^(?:\S+Z )?E {3,}(\w[\w.]*(?:Error|Exception)\b.*|assert\b.*)")
_E_LOCATION = re.compile(r"^\S+\.py:\d+: (\w+(?:Error|Exception))$")
_SLURM_CANCEL = re.compile(r"\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT \S+.* \*\*\*")
"""Slurm's own cancel line (``slurmstepd-<host>: error: *** JOB 5 ON n1 CANCELLED AT ... ***``)."""
_TIMEOUT = guarded(
    r"\+{3,} Timeout \+{3,}|~{3,} Stack of .+? \(\d+\) ~{3,}"
    r"|(?<![*'\"])Failed: Timeout (?:>[\d.]+s|\(>[\d.]+s\) from pytest-timeout)"
    r"|has exceeded the maximum execution time|execution took longer than|DUE TO TIME LIMIT"
    # a run's time said to reach its maximum (AppVeyor's "Build execution time has reached the
    # maximum allowed time for your plan (60 minutes)")
    r"|(?i:\btime\b(?: \w+){0,2} (?:has )?(?:reached|exceeded|hit) (?:the |its |your )?"
    r"(?:maximum|max|allowed|limit)\b)"
    r"|[Ww]atchdog caught collective operation timeout"
    # Python's subprocess.TimeoutExpired, whatever the command's arguments name (ArchiveBox's
    # "Command '['chromium', '--headless', ..., 'https://...']' timed out after 180 seconds")
    r"|\bCommand '.{1,4000}?' timed out after [\d.]+ seconds\b"
    r"|[Tt]est timeout expired|\*\*\*Timeout\b"  # libcheck, CTest
    # a unit of work said to have timed out (Airflow's "Process timed out, PID: N", a
    # function's "Task timed out after 3.00 seconds", a job's state hyphenated as a word,
    # "Job not requeued because: timed-out"); a connection's or a request's is not one
    r"|(?i:\b(?:process|task|job|step|test|execution|command|build|function|worker|stage"
    r"|script|activity|query|statement)\b(?: \S+){0,3}? (?:has )?timed[ -]out\b)"
    # a unit of work that reached its time limit, in its own words (Snowflake's "Statement
    # reached its statement or warehouse timeout of 120 second(s) and was canceled", Druid's
    # "QueryTimeoutException"), a watchdog's report of a hung program (Paper's "The server has
    # stopped responding!" from its watchdog thread)
    r"|(?i:\b(?:reached|exceeded|hit) (?:its |the |a )?(?:[\w-]+ ){0,4}?time ?out\b(?! \w+ing\b))"
    # a test's or a unit's timeout said crossed with its length (Playwright's "Test timeout of
    # 30000ms exceeded.")
    r"|(?i:\b(?:test|task|job|step|run|flow|build|query|statement) time ?out of [\d.,]+ ?\w* "
    r"(?:was )?exceeded\b)"
    # a run of a unit of work ended by a timeout exception (Prefect's "Flow run 'x' - Finished in
    # state Failed('Flow run encountered an exception. TimeoutError: ')")
    r"|\b(?:[Ff]low|[Tt]ask|[Jj]ob|[Ss]tep|[Ss]tage) run\b.{0,80}?"
    r"\bTime(?:out|dOut)(?:Error|Exception)\b"
    # a time limit said to be crossed, whatever ran: Travis CI's "The job exceeded the maximum
    # time limit for jobs, and has been terminated.", LSF's "TERM_RUNLIMIT: job killed after
    # reaching LSF run time limit.", "Time limit exceeded" (a time limit, not a timeout: a
    # connection's "Timeout exceeded while waiting" is not the run's time running out)
    r"|(?i:\b(?:exceeded|reached|reaching|hit) (?:the |its |their |your |a )?(?:[\w-]+ ){0,3}?"
    r"time ?limit\b|\btime ?limit (?:was |has been |is )?(?:exceeded|reached|hit)\b)"
    r"|(?i:(?:query|statement|task|job|step|execution|process)timeout(?:exception|error)\b)"
    r"|(?i:watchdog\b.{0,80}\b(?:stopped responding|not responding|is hung|hang detected)\b)"
    # a watchdog fired: what it watched did not report in time (ESP-IDF's "task_wdt: Task
    # watchdog got triggered. The following tasks/users did not reset the watchdog in time:")
    r"|(?i:\bwatchdog (?:got |was |has been )?(?:triggered|fired|expired)\b)"
    # systemd's unit jobs: "start operation timed out. Terminating.", "Failed with result
    # 'timeout'"
    r"|\b(?:start|stop|reload|restart)(?:-\w+)? operation timed out\b|with result 'timeout'"
    # an end with its reason in parentheses (Bitrise's "Abort via Bitrise DEN (timeout)"), a
    # test runner's state in brackets before what it ended (Tcl's "*** [TIMEOUT]: benchmark ...")
    r"|(?i:\b(?:abort\w*|cancel\w*|kill\w*|terminat\w*|stopped)\b[^()\n]{0,60}"
    r"\((?:timeout|timed out|time ?limit)\))|\[TIMEOUT\]:"
)
_TIMEOUT_PID = re.compile(
    r"(?i:\b(?:worker|process|task|job|step|build|test|child)\s+time ?out\s*\(pid\W{0,2}(\d+)\))"
)
"""A unit of work's timeout stated with the process it names, its pid in parentheses (a
pre-fork server's "[CRITICAL] WORKER TIMEOUT (pid:418)"): the run's time limit only when a kill
of that same pid follows (``qualify.triage.signals``); a kill of another pid is not its end."""
_TIMEOUT_KILLING = re.compile(
    r"(?i:\btime ?out \(\s*[\d.]+ ?m?s\s*>\s*[\d.]+ ?m?s\s*\),? (?:killing|terminating|aborting)\b)"
)
"""A timeout with its length crossed in numbers, then the kill that enforces it, on one line
(Unicorn's master: "worker=0 PID:3042 timeout (31s > 30s), killing"): a time limit's end."""
_PANIC_DEADLINE = re.compile(r"\s*panic: context deadline exceeded\s*$")
"""A Go program's panic whose value is its context's deadline passed, alone on its line (a CI
bot's "panic: context deadline exceeded" before its goroutines): the program ended because its
own time ran out. The same words as an error a request returned ("ERROR: context deadline
exceeded", "got: context deadline exceeded") are a call's timeout, which the program may
survive."""
_STATUS_PASSED = re.compile(
    r"\s*(?:build[ -]?)?status\s*[:=]\s*[\"']?(?:successful|succeeded|success|passed)[\"']?\s*$",
    re.IGNORECASE,
)
"""A run's summary field that states its outcome as a success, the field alone on its line (a
build farm's summary block: "Status: successful" between "Space: 2384" and "Version: ..."): the
run passed, when nothing in the artifact failed (``qualify.triage.signals``). A sentence that
says a status ("the status: successful, but ...") or a field with more after it is not one."""
_GO_OK = re.compile(
    r"\s*ok\s+[\w.-]+(?:/[\w.-]+)*\s+(?:[\d.]+s|\(cached\))(?:\s+coverage: .*)?\s*$"
)
"""``go test``'s summary of a package whose tests all passed ("ok      github.com/consensys/gnark/
std/recursion/plonk  293.693s"): the package's run passed, as a pytest summary says."""
_TIMEOUT_NODEID = re.compile(r"FAILED (?:\[[\d.]+m?s\] )?(\S+::\S+) - Failed: Timeout")
_K8S_OOMKILLED = re.compile(
    r"(?i)\breason[\"']?\s*[:=]\s*[\"']?OOM ?Killed\b|\s\d+/\d+\s+OOMKilled\s"
    r"|terminated with reason \"OOMKilled\""
)
_NOT_THE_REASON = re.compile(r"\b(?:rather than|instead of|not|never)\W{0,3}$", re.IGNORECASE)
"""The reason named as the one not given ("reported as terminated with `reason: Error` rather
than `reason: OOMKilled`")."""


def _oomkilled_reason(line: str) -> bool:
    """Whether ``line`` gives a container's reason as OOMKilled, not as the reason it was not."""
    return any(
        _NOT_THE_REASON.search(line, 0, match.start()) is None
        for match in _K8S_OOMKILLED.finditer(line)
    )


_DOCKER_EVENT_OOM = re.compile(r"\bcontainer oom ([0-9a-f]{12,64})")
_SLURM_EVENTS = re.compile(r"Detected (\d+) oom[-_]kill event")
_SLURM_TASK = re.compile(
    r"tasks? \d+(?:[,-]\d+)*: Out Of Memory"
    r"|(?:^\W*|\s)srun: error: (?:[\w.-]+: )?Out Of Memory\W*$"
)
"""A job step's task (or tasks, as a range) ended Out Of Memory, as srun reports the step's end
(``srun: error: tiger-i23g11: task 0: Out Of Memory``); srun's error that is that state alone,
no task named (``srun: error: Out Of Memory``), is the same report of the step: the launcher
speaks (behind whatever lead the line has), its whole message is the state."""
_SLURM_STATE = re.compile(r"(?<![A-Za-z_])OUT_OF_ME(?:MORY\b|\+)")
"""Slurm's job state, whole or as ``sacct`` prints it cut to its column's width (``OUT_OF_ME+``)."""
_SLURM_EXCEEDED = re.compile(
    r"exceeded (?:job|step) memory limit|exceeded memory limit .{0,60}kill"
)
"""Slurm's ``srun: Exceeded job memory limit`` and ``slurmstepd: Job N exceeded memory limit
(X > Y), being killed`` (the cgroup or its accounting enforcing ``--mem``)."""
_SCHEDULER_KILL = re.compile(
    r"job killed: (\w+)\b[^\d]{0,20}(\d+)\s*([kmgt]?b)?\s+exceeded limit\s+(\d+)\s*([kmgt]?b)?",
    re.IGNORECASE,
)
"""A batch server killing a job for one resource, named with its use and its limit (PBS and
Torque: ``=>> PBS: job killed: mem 38427376kb exceeded limit 33554432kb``, ``... vmem ...``,
``... walltime 86415 exceeded limit 86400``): the resource decides what the kill was."""
_USAGE_LIMIT = re.compile(
    r"exceeded (\w+) usage (hard|soft) limit(?: \((\d+) > (\d+)\))?", re.IGNORECASE
)
"""Moab's resource enforcement: ``job N exceeded MEM usage hard limit (2528 > 1126)`` (the job is
deleted) or ``... soft limit`` (a warning)."""
_HOLD_FOR_MEMORY = re.compile(
    r"(?:put on hold|\bheld\b|hold ?reason\w*)\b.{0,120}?\b(?:due to|because of|for|exceed\w*)"
    r" (?:its |the )?(?:memory|mem)\b",
    re.IGNORECASE,
)
"""A scheduler holding (stopping) a running job for its memory: HTCondor's ``Hold reason: Job in
status 2 put on hold by SYSTEM_PERIODIC_HOLD due to memory usage N``."""
_MEMORY_RESOURCES = frozenset({"mem", "vmem", "pmem", "pvmem", "rss", "memory", "swap"})
_TIME_RESOURCES = frozenset({"walltime", "cput", "cputime", "wallclock", "runtime"})
_UNIT_BYTES = {"": 1, "b": 1, "kb": KB, "mb": KB * KB, "gb": KB**3, "tb": KB**4}
_K8S_KILLING = re.compile(r"^\s*Normal\s+Killing\s.*\bStopping container\b")
"""The kubelet's Killing event in ``kubectl describe`` ("Normal  Killing  5s  kubelet  Stopping
container mm"): the container stopped from outside (an eviction, a deletion, a failed probe);
a line of its own says why when anything does."""
_JENKINS_ABORTED = re.compile(r"\s*(?:Aborted by \S|Finished: ABORTED\s*$|Build was aborted\s*$)")
"""Jenkins' build stopped by a person or an API call (``Aborted by admin``, ``Finished:
ABORTED``): canceled from outside, no resource said."""
_PROBE_KILL = re.compile(r"failed liveness probe|liveness probe failed")
"""Kubernetes restarting a container whose liveness probe failed (a kill, not for memory)."""


_VICTIM_SIZES = ("total_vm_bytes", "anon_rss_bytes", "file_rss_bytes", "shmem_rss_bytes")


def _kb_fields(line: str) -> dict[str, int]:
    return {
        f"{name.replace('-', '_')}_bytes": int(value) * KB
        for name, value in _KB_FIELD.findall(line)
    }


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


def _scope(prefix: str | None) -> str:
    return {"Memory cgroup out of memory": "memcg", "Out of memory": "global"}.get(
        prefix or "", "unknown"
    )


def parse_kernel_line(line: str, low: str | None = None) -> LineSignal | None:
    """One line of a kernel OOM report (or systemd-oomd's), or None."""
    low = line.lower() if low is None else low
    if "oom" in low:
        found = _kernel_oom(line, low)
        if found is not None:
            return found
    if "killed process" in low and (match := _KILLED.search(line)):
        fields: dict[str, Any] = {
            "scope": _scope(match.group(1)),
            "pid": int(match.group(2)),
            "comm": match.group(3) or None,
            **dict.fromkeys(_VICTIM_SIZES),
        }
        fields.update(_kb_fields(line))
        return LineSignal("kernel_killed", fields)
    if "memory: usage" in low and (match := _MEMCG_USAGE.search(line)):
        usage, limit = int(match.group(1)) * KB, int(match.group(2)) * KB
        return LineSignal(
            "kernel_memcg_usage",
            {"usage_bytes": usage, "limit_bytes": limit, "failcnt": int(match.group(3))},
        )
    if "task in " in low and (match := _TASK_IN.search(line)):
        return LineSignal("kernel_task_in", {"task_memcg": match[1], "oom_memcg": match[2]})
    if "kill process" in low and (match := _SELECT.search(line)):
        scope = "memcg" if match.group(1).startswith("Memory") else "global"
        fields = {"scope": scope, "pid": int(match[2]), "comm": match[3], "score": int(match[4])}
        return LineSignal("kernel_select", fields)
    if ("memcg" in low or "mem_cgroup" in low) and any(word in low for word in _MEMCG_TRACE):
        # The call trace of a memcg OOM (present even when nothing could be killed).
        return LineSignal("kernel_memcg_trace", {"scope": "memcg"})
    if "out of memory and no killable processes" in low:
        return LineSignal("kernel_no_killable")
    return None


def _kernel_oom(line: str, low: str) -> LineSignal | None:
    if "oom_score_adj name" in low and _TASKS_HEAD.search(low):
        return LineSignal("kernel_tasks", {"scope": "unknown"})
    if "invoked oom-killer" in low and (match := _INVOKED.search(line)):
        return LineSignal(
            "kernel_invoked",
            {"comm": match.group(1), "gfp_mask": match.group(2), "order": int(match.group(3))},
        )
    if "oom-kill:" in low and (match := _OOM_KILL.search(line)):
        fields = _kernel_kill_fields(match.group(1))
        fields["scope"] = "memcg" if fields.get("constraint") == "CONSTRAINT_MEMCG" else "global"
        return LineSignal("kernel_oom_kill", fields)
    if "oom victim" in low and (match := _VICTIM_EXITING.search(line)):
        fields = {"scope": _scope(match.group(1)), "pid": int(match[2]), "comm": match[3]}
        return LineSignal("kernel_victim_exiting", fields)
    if "oom_reaper" in low and (match := _REAPED.search(line)):
        fields = {"scope": "unknown", "pid": int(match[1]), "comm": match[2] or None}
        fields.update(dict.fromkeys(_VICTIM_SIZES))
        fields.update(_kb_fields(line))
        return LineSignal("kernel_killed", fields)
    if "systemd-oomd" in low:
        if match := _OOMD.search(line):
            return LineSignal("oomd_kill", {"cgroup": match[1], "reason": match[2]})
        if match := _OOMD_UNIT.search(line):
            return LineSignal("oomd_kill", {"cgroup": match[1], "processes": int(match[2])})
    if "mem_cgroup_oom" in low:
        return LineSignal("kernel_memcg_trace", {"scope": "memcg"})
    return None


def parse_orchestrator_line(line: str, low: str | None = None) -> LineSignal | None:
    """A container or job killed for memory as Kubernetes, docker events or Slurm report it."""
    low = line.lower() if low is None else low
    if "oom" in low:
        if ("oomkilled" in low or "oom killed" in low) and _oomkilled_reason(line):
            return LineSignal("k8s_oomkilled")
        if "container oom" in low and (match := _DOCKER_EVENT_OOM.search(line)):
            return LineSignal("docker_event_oom", {"container": match[1]})
        if "kill event" in low and (match := _SLURM_EVENTS.search(line)):
            return LineSignal("slurm_oom", {"events": int(match[1])})
    if "out of memory" in low and ("task" in low or "srun" in low) and _SLURM_TASK.search(line):
        return LineSignal("slurm_oom")
    if "exceeded" in low and _SLURM_EXCEEDED.search(low):
        if "at some point" in low:  # slurmstepd's warning (the cgroup's failcnt), no kill
            return LineSignal("memory_noted", {"ecosystem": "Slurm"})
        return LineSignal("slurm_oom")
    if "job killed" in low and (match := _SCHEDULER_KILL.search(line)):
        return _resource_kill(match)
    if "usage" in low and "limit" in low and (match := _USAGE_LIMIT.search(line)):
        return _usage_limit(match)
    if "hold" in low and "mem" in low and _HOLD_FOR_MEMORY.search(line):
        return LineSignal("limit_oom_kill", {"ecosystem": "the batch scheduler", "held": True})
    if "liveness probe" in low and _PROBE_KILL.search(low):
        return LineSignal("probe_kill")
    if "killing" in low and _K8S_KILLING.search(line):
        return LineSignal("terminated_externally")
    if "out_of_me" in low and _SLURM_STATE.search(line):
        return LineSignal("slurm_oom")
    return None


def _resource_kill(match: re.Match[str]) -> LineSignal | None:
    """A batch server's kill read by the resource it names: memory is a limit kill with its
    numbers, time a timeout; any other resource (a scratch quota) decides nothing here."""
    resource = match[1].lower()
    if resource in _TIME_RESOURCES:
        return LineSignal("timeout", {"resource": resource})
    if resource not in _MEMORY_RESOURCES:
        return None
    used = int(match[2]) * _UNIT_BYTES[(match[3] or "").lower()]
    limit = int(match[4]) * _UNIT_BYTES[(match[5] or "").lower()]
    fields = {"resource": resource, "allocated_bytes": used, "limit_bytes": limit}
    return LineSignal("limit_oom_kill", {**fields, "ecosystem": "the batch server"})


def _usage_limit(match: re.Match[str]) -> LineSignal | None:
    """Moab's ``exceeded MEM usage hard limit (used > limit)``, in MB: a hard memory limit is
    enforced by deleting the job; a soft one is a warning."""
    if match[1].lower() not in _MEMORY_RESOURCES:
        return None
    fields: dict[str, Any] = {"ecosystem": "the batch scheduler"}
    if match[3]:
        fields |= {
            "allocated_bytes": int(match[3]) * KB * KB,
            "limit_bytes": int(match[4]) * KB * KB,
        }
    if match[2].lower() == "soft":
        return LineSignal("memory_noted", fields)
    return LineSignal("limit_oom_kill", fields)


def parse_console_line(line: str, low: str | None = None) -> LineSignal | None:
    """One line of a CI console (GitHub Actions, GitLab, CircleCI, Buildkite, Jenkins, Travis, a
    shell), or None."""
    low = line.lower() if low is None else low
    if ("agent lost" in low or "lost communication" in low or "hearing from agent" in low) and (
        _AGENT_LOST.search(line)
    ):
        return LineSignal("agent_lost")
    ended = "exit" in low or "docker container:" in low or "*** [" in low or "return value" in low
    if ended and (match := _EXIT.search(line)):
        code = next(group for group in match.groups() if group is not None)
        named = _SIGNAL_NAMED.search(low)
        if named is not None and int(code) not in (128 + _SIGNAL_NUMBERS[named[1].upper()],):
            # the signal named beside a status that is its number or another's ("exit status 9
            # (SIGKILL)"): the signal ended it
            return LineSignal(
                "exit_code", {"code": -_SIGNAL_NUMBERS[named[1].upper()], "by_signal": True}
            )
        return LineSignal("exit_code", {"code": int(code)})
    if (signalled := _signal_exit(line, low)) is not None:
        return signalled
    if "terminate called" in low and (match := _TERMINATE.search(line)):
        cause = parse_oom_parts(line, low) if "bad_alloc" in match[1] else None
        if cause is not None and cause.kind in _MEMORY_CAUSES:  # an allocation refused
            return cause
        return LineSignal("shell_crash", {"signal": "SIGABRT", "command": match[1] or None})
    if "shutdown signal" in low and "runner has received a shutdown signal" in low:
        return LineSignal("runner_shutdown")
    if (outside := _ended_outside(line, low)) is not None:
        return outside
    if "the operation was canceled" in low:
        return LineSignal("canceled")
    if "abort" in low and _JENKINS_ABORTED.match(line):
        return LineSignal("canceled")
    if "cancelled at" in low and "due to time limit" not in low and _SLURM_CANCEL.search(line):
        return LineSignal("canceled")  # scancel, preemption, a node failure: not a time limit
    if "(pid" in low and (timed := _TIMEOUT_PID.search(line)):
        return LineSignal("timeout", {"pid": timed[1]})
    if "timeout (" in low and _TIMEOUT_KILLING.search(line):
        return LineSignal("timeout")
    if "panic" in low and _PANIC_DEADLINE.match(line):
        return LineSignal("timeout")
    if "status" in low and (stated := _STATUS_PASSED.match(line)):
        return LineSignal("run_passed", {"summary": stated[0].strip()})
    if low.lstrip().startswith("ok") and (stated := _GO_OK.match(line)):
        return LineSignal("run_passed", {"summary": " ".join(stated[0].split())})
    if _timeout_words(low) and (timed := _TIMEOUT.search(line)) and not _conditional(low, timed):
        nodeid = _TIMEOUT_NODEID.search(line)
        return LineSignal("timeout", {"nodeid": nodeid[1]} if nodeid else {})
    if "killed" in low and "killed process" not in low:
        if "killed signal terminated program" in low:
            return LineSignal("shell_killed", {"command": line.rsplit("program", 1)[-1].strip()})
        if "compiler error" in low and (match := _GCC_KILLED.search(line)):
            return LineSignal("shell_killed", {"command": match[1]})
        if _KILLED_AS_OUTPUT.match(line):
            return LineSignal("shell_killed", {})  # the shell's status named as what one got
        quoted = _QUOTED_KILLED.search(line)
        if quoted and not _SUPPOSED_KILL.search(low) and not _ASKED.match(line, quoted.end()):
            return LineSignal("shell_killed", {})  # the shell's word, quoted as what one got
        if match := _SHELL_KILLED.search(line):
            pid = match[2] or match[4] or match[7]
            command = match[1] or match[3] or match[5] or match[6] or match[8]
            fields = {"pid": int(pid) if pid else None, "command": command}
            return LineSignal("shell_killed", {k: v for k, v in fields.items() if v})
    if ("core dumped" in low or "segmentation fault" in low or "aborted" in low) and (
        match := _SHELL_CRASH.search(line)
    ):
        fields = {
            "signal": _CRASH_SIGNALS[match[2]],
            "pid": int(match[1]) if match[1] else None,
            "command": (match[3] or "").strip() or None,
        }
        if fields["signal"] == "SIGABRT":
            # an abort after the program's own report, on the same line, of an allocation it
            # was refused ("memory allocation of 2147483648 bytes failed ... Aborted (core
            # dumped)"): the refusal is why it ended, as after "terminate called"
            cause = parse_oom_parts(line, low)
            if cause is not None and cause.kind in _MEMORY_CAUSES:
                return cause
        return LineSignal("shell_crash", {k: v for k, v in fields.items() if v})
    if "last few gcs" in low and _V8_LAST_GCS.match(line):
        return LineSignal("host_alloc_failed", {"ecosystem": "Node.js", "memory_named": True})
    if "what():" in low:  # the C++ runtime's report of an exception, after "terminate called"
        # in any case ("WHAT():" lowers to it too)
        parts = re.split(r"(?i)what\(\):", line, maxsplit=1)
        text = parts[1].strip() if len(parts) > 1 else ""
        if text:
            return _by_memory(line.strip(), None) or LineSignal("exception_line", {"text": text})
    return None


def _ended_outside(line: str, low: str) -> LineSignal | None:
    """A process said to be ended from outside it, naming no reason (``_EXTERNALLY``)."""
    if (
        (
            " by " in low
            or ("the " in low and (" kill" in low or "terminated" in low))  # active voice
            or "\u88ab" in low  # Chinese's passive "bei" (by): "被系统杀死", killed by the system
            or "unexpectedly" in low
            or "signaled" in low
            or "disrupted" in low
            or "preempted" in low
            or "pre-empted" in low  # the hyphenated spelling: "Nodes of this job got pre-empted"
            or "interrupted" in low
            or "disappeared" in low
            or "vanished" in low
            or "went away" in low
        )
        and (match := _EXTERNALLY.search(line))
        and not _HEDGED.search(low[: match.start()])
        and not _CARRIED_ON.match(low, match.end())
    ):
        if KERNEL_KILLED.search(low):  # the kernel's own kill: its OOM killer's
            return LineSignal("node_oom_kill", {"parts": True})
        return LineSignal("terminated_externally")
    return None


def _ended(line: str, low: str) -> LineSignal | None:
    """How a unit of work ended when an exception's message says so: by a signal (PyTorch's
    "RuntimeError: DataLoader worker (pid 2064) is killed by signal: Killed."), by its time
    limit (Snowflake's "ProgrammingError: ... Statement reached its statement or warehouse
    timeout ..."), or ended from outside."""
    if (signalled := _signal_exit(line, low)) is not None:
        return signalled
    if _timeout_words(low) and (timed := _TIMEOUT.search(line)) and not _conditional(low, timed):
        return LineSignal("timeout")
    # (an error whose message says the machines were taken back: "PreemptionError: Nodes of
    # this job got pre-empted")
    return _ended_outside(line, low)


_CONDITIONAL = re.compile(
    r"\b(?:if|whether|unless|in case|may|might|could|would|should|will|can"
    r"|to avoid|to prevent)\b"
)
_CLAUSE_START = re.compile(r"[.!?;]\s|:\s")


def _conditional(low: str, timed: re.Match[str]) -> bool:
    """Whether a time limit's words come with a condition or a possibility before them in their
    clause ("If the step timed out, it is retried", Laravel's "The job may have previously timed
    out."): supposed, not reported. (Words after them, or a
    clause that introduces a paste, do not suppose it: Playwright's user, "getting 'Test
    timeout of 30000ms exceeded.' error although ... has the following timeout settings:".)"""
    if len(low) != len(timed.string):
        return False
    start = max((m.end() for m in _CLAUSE_START.finditer(low, 0, timed.start())), default=0)
    return _CONDITIONAL.search(low, start, timed.end()) is not None


def _signal_exit(line: str, low: str) -> LineSignal | None:
    """A process's death by a signal, as ``exit_code`` with the signal's negative number."""
    if ("sig" in low or "code=" in low or "status -" in low) and (
        match := _SIGNAL_EXIT.search(line)
    ):
        number = next(group for group in match.groups() if group is not None)
        code = -int(number) if number.isdigit() else -_SIGNAL_NUMBERS.get(number.upper(), 0)
        if code:
            return LineSignal("exit_code", {"code": code, "by_signal": True})
    return None


def _timeout_words(low: str) -> bool:
    return (
        "timeout" in low or "stack of" in low or "execution t" in low or "time limit" in low
        or "timed out" in low or "timed-out" in low or "time has" in low or "responding" in low
        or "time out" in low
        or "timeouterror" in low or "timeoutexception" in low or "watchdog" in low
    )  # fmt: skip


def parse_pytest_line(line: str, low: str | None = None) -> LineSignal | None:
    """One line of pytest / pytest-xdist output, or None."""
    low = line.lower() if low is None else low
    if "crashed while running" in low and (match := _XDIST_CRASH.search(line)):
        return LineSignal("xdist_crash", {"worker": match.group(1), "nodeid": match.group(2)})
    if "node down" in low and (match := _NODE_DOWN.search(line)):
        return LineSignal("xdist_node_down", {"worker": match.group(1), "why": match[2].strip()})
    if "crashed worker" in low and (match := _REPLACING.search(line)):
        return LineSignal("xdist_node_down", {"worker": match.group(1), "why": "replaced"})
    if "FAILED " in line and (match := _FAILED_TEST.search(line)):
        nodeid = match.group(1)
        message = line[match.end() :].partition(" - ")[2]
        return _by_memory(message, nodeid) or LineSignal("test_failed", {"nodeid": nodeid})
    plain = _ANSI.sub("", line) if "\x1b" in line else line  # (--color=yes)
    summary = _SUMMARY.search(plain) if (" failed" in low or " error" in low) else None
    if summary is not None and int(summary.group(2)) > 0:
        return LineSignal("pytest_summary", {"summary": summary.group(1)})
    if " passed" in low and (match := _PASSED_SUMMARY.search(plain)):
        return LineSignal("pytest_passed", {"summary": match.group(1)})
    if " in " in plain and (quiet := _quiet_summary(plain)) is not None:
        return quiet
    if "E   " in line and (match := _E_LINE.search(line)):
        text = match.group(1).strip()
        return _by_memory(text, None) or LineSignal("test_error_line", {"text": text})
    if ("fail" in low or "error" in low) and (match := _OTHER_RUNNER_FAILED.search(line)):
        name = next(group for group in match.groups() if group is not None)
        return LineSignal("test_failed", {"nodeid": name or None})  # (a result names none)
    # (an exception's line without "error" holds no needle, JUnit's ComparisonFailure and a
    # TimeoutException aside: the scanner never shows it)
    if ("error" in low or "comparisonfailure" in low or "timeoutexception" in low) and (
        match := _EXCEPTION.search(line)
    ):
        text = cuts.head(f"{match[1]}: {match[2]}", 500)
        if (found := _by_memory(text, None)) is not None:
            return found
        if (ended := _ended(line, low)) is not None:
            return ended  # an exception reporting a death by a signal, a time limit
        if _TIMED_OUT_CLASS.search(match[1]) and not _conditional(low, match):
            return LineSignal("timeout")
        timed = parse_end_parts(match[2]) if "time" in low or "within" in low else None
        if timed is not None and timed.kind == "timeout":
            # its message read by its parts ("RuntimeException: Alive checking failed! The job
            # didn't get run after 8000 ms!"), as the same words alone on their line are
            return timed
        if _NAMES_A_TEST.search(match[2]):  # raised about a test: a leak check, a harness
            return LineSignal("test_error_line", {"text": text})
        if _ASSERTION.search(match[1]) and _COMPARED.search(match[2]):
            return LineSignal("test_failed", {"nodeid": None, "assertion": text})
        return LineSignal("exception_line", {"text": text})
    if "error" in low and ".py:" in line and (match := _E_LOCATION.match(line.strip())):
        return LineSignal("test_error_line", {"text": match.group(1)})
    return None


_EXCEPTION = re.compile(
    r"(?:^|[\s:>\]$])((?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception)|ComparisonFailure)): (\S.*)"
)
"""An exception as Python, Java and most runtimes print its last line (and JUnit 3 and 4's
``junit.framework.ComparisonFailure``, an assertion's, named so)."""
_TIMED_OUT_CLASS = re.compile(r"(?:^|\.)\w*Time[dD]?[oO]ut\w*(?:Error|Exception)$")
"""An exception whose class names a time running out (``TimeoutError``,
``concurrent.futures.TimeoutException``, ``APITimeoutError``): the error raised was a time limit
reached, whatever waited (a request's, a read's)."""
_ASSERTION = re.compile(r"(?:^|\.)Assertion(?:Failed)?Error$|(?:^|\.)ComparisonFailure$")
_COMPARED = re.compile(r"\bexpected\b\W{0,3}.{0,120}?\bbut (?:was|got|found)\b", re.IGNORECASE)
"""An assertion's error whose message sets what was expected against what was found (JUnit's
"org.opentest4j.AssertionFailedError: expected: <0> but was: <1>"): an assertion library's check
of a test failing, in the words those libraries share; a program's own uncaught assertion
("AssertionError: assert x == y", "AssertionError: expected false to be truthy") states no
comparison so and stays an exception."""
_NAMES_A_TEST = re.compile(r"(?<![/\\])\btest_\w+(?![\w/\\])|\bTest\w*\.test\w*")
"""A test named in an exception's message (not a directory named so: "C:/test_kohya/...")."""
_MEMORY_CAUSES = frozenset(
    {"host_alloc_failed", "gpu_oom", "gpu_budget", "node_oom_kill", "limit_oom_kill", "oom_kill"}
)
_OTHER_RUNNER_FAILED = re.compile(
    r"^\s*--- FAIL: (\S+)"  # go test
    # unittest, after a timestamp or a build service's elapsed seconds ("[  111s] ", OBS's)
    r"|^(?:\S+Z |\[\s*\d+s\] )?(?:FAIL|ERROR)(?: \[[\d.]+m?s\])?: (\w+ \([\w.]+\))"
    r"|^test (\S+) \.\.\. FAILED\b"  # cargo test
    r"|\bTest +#\d+: (\S+) \.+\*+Failed\b"  # CTest
    r"|^\s*(\d+\) (?:[\w.]+\.)?Assertion(?:Failed)?Error)(?: \[\w+\])?: "  # mocha, TestCafe
    r"|\bTest Failed: (\w+) \(result was \w+"  # cocotb's regression manager
    r"|(?:^|\s)_{3,} ERROR at (?:setup|teardown) of (\S+) _{3,}\s*$"  # pytest: a fixture's error
    # Perl's Test::Harness summary report: a test file with failures, then the run's result
    r"|^\s*(\S+\.t)\s+\(Wstat: \d+ Tests: \d+ Failed: [1-9]\d*\)"
    r"|^()Result: FAIL\s*$"
)
"""Other test runners' line for one failed test; an assertion's error as an item of a numbered
failure list (TestCafe's and mocha's reporters: " 1) AssertionError: expected false to be
truthy"), which a program's own uncaught assertion never is; cocotb's "Test Failed: test_dff
(result was AssertionError)", the test and what ended it named together; pytest's section head
for a test whose fixture raised ("____ ERROR at setup of test_sum_on_dist ____"), a test errored
as unittest's "ERROR: name (class)" is; Perl's Test::Harness ("prove", "make test"), its summary
report's line for a test file that failed ("../cpan/File-Path/t/Path_root.t  (Wstat: 256 Tests:
11 Failed: 1)") and the run's "Result: FAIL"."""


def _by_memory(message: str, nodeid: str | None) -> LineSignal | None:
    """A test's failure message that reports memory running out (``FAILED t.py::x -
    numpy...._ArrayMemoryError: Unable to allocate 30.2 TiB``, ``E   ray.exceptions.
    OutOfMemoryError: Task was killed due to the node running low on memory``): the memory is
    the cause, not the test. An assertion's message is the test's own words."""
    stripped = message.lstrip()
    if not stripped or stripped.lower().startswith(("assert", "failed: ")):
        return None
    found = parse_oom_parts(stripped)
    if found is None or found.kind not in _MEMORY_CAUSES:
        return None
    if nodeid:
        found.fields["nodeid"] = nodeid
    return found


def _quiet_summary(line: str) -> LineSignal | None:
    """``pytest -q``'s summary line: failures when it counts any, else a pass when it counts
    passed tests."""
    match = _QUIET_SUMMARY.match(line.strip())
    if match is None:
        return None
    counts = match.group(1)
    if any(int(n) > 0 for n in _FAILED_COUNT.findall(counts)):
        return LineSignal("pytest_summary", {"summary": counts})
    if " passed" in counts:
        return LineSignal("pytest_passed", {"summary": counts})
    return None


def parse_tensorrt_line(line: str, low: str | None = None) -> LineSignal | None:
    """One TensorRT out-of-memory line (builder or runtime), or None."""
    return _parse_tensorrt(line, low)


PARSERS = (
    parse_kernel_line,
    parse_orchestrator_line,
    parse_tensorrt_line,
    parse_engine_line,
    parse_pytest_line,
    parse_console_line,
    parse_oom_parts,
    parse_end_parts,
)


_DIFF_LINE = re.compile(r"[+-](?: {2,}|\t)\S")
"""A line a diff adds or removes, indented as code is (a test's ``+        r.waitForMessage(
"Container jnlp was terminated (Exit Code: 137, Reason: OOMKilled)", b);``): source, not what a
program printed. (A Markdown list's ``- `` and a shell trace's ``+ `` have one space.)"""
_BARE_ENDS = frozenset({"exit_code", "shell_killed", "terminated_externally"})
"""How a process ended, without why: a line that also states the cause is read for it."""


_UNSPACED = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_SCRIPT_EDGE = re.compile(rf"(?<=[{_UNSPACED}])(?=[A-Za-z0-9])|(?<=[A-Za-z0-9])(?=[{_UNSPACED}])")
"""Where a Latin word meets a script written without spaces (KAMONOHASHI's "ステータスが
OOMKilledになる", "the status becomes OOMKilled"): a word edge (``\\b``) is not seen there,
both sides being letters, so the Latin word is read as if spaced."""


def parse_line(line: str) -> LineSignal | None:
    """The first parser that recognises ``line`` (the line is lowercased once for all); a bare
    exit or kill on a line that also says memory ran out (``Exit Code: 137, Exit Message: "OOM
    Killed"``) is read by the line's parts, which name the cause. A line that reads as nothing
    whole but holds a log escaped into a string (a JSON field's ``raise self._exception\\n
    numpy.core._exceptions._ArrayMemoryError: Unable to allocate 10.2 GiB ...\\n",``) is read
    by the lines it escapes: the first of them that reads as something."""
    found = _parse_whole(line)
    if found is None and "\\n" in line:
        for piece in line.split("\\n"):
            if (found := _parse_whole(piece.removesuffix("\\r"))) is not None:
                return found
    return found


def _parse_whole(line: str) -> LineSignal | None:
    if line[:1] in ("+", "-") and _DIFF_LINE.match(line):
        return None
    if not line.isascii():
        line = _SCRIPT_EDGE.sub(" ", line)
    found = _first(line, line.lower())
    if found is not None and found.kind != "exception_line":
        return found
    # Read again with its identifiers spelled as words ("OOMKilled", "InsufficientMemoryException",
    # "VK_ERROR_OUT_OF_DEVICE_MEMORY"), then by its fields (``status: DeadlineExceeded``). An
    # exception whose message is an identifier (Ryujinx's ``VulkanException: Unexpected API
    # error "ErrorOutOfDeviceMemory"``) is read by what the identifier says.
    words = spelled(line)
    if words is None or _handled_constant(line.lower()):
        return found
    respelled = _first(words, words.lower())
    if respelled is not None and respelled.kind in _MEMORY_CAUSES and not names_memory(words):
        respelled = None  # a status spelled as words ("ResourceExhausted") that names no memory
    if found is not None:
        return respelled if respelled is not None and respelled.kind in _MEMORY_CAUSES else found
    return respelled or read_fields(words)


_MEMORY_CONSTANT = re.compile(r"\w*(?:out_?of_?(?:\w+_)?memory|outof\w*memory|oom)\w*")
"""An identifier that says memory ran out (``UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY``)."""


def _handled_constant(low: str) -> bool:
    """Whether an identifier that says memory ran out is a value a change handles ("take into
    account UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY error"): not read again spelled as words."""
    return any(handled_code(low, m.start()) for m in _MEMORY_CONSTANT.finditer(low))


_MEMORY_WORD = re.compile(r"\b(?:oom\w*|out[ -]of[ -]memory|memory|ram)\b")
"""Where a line first speaks of memory."""
_CLAUSE_CUT = re.compile(r"[,;]\s|\s[-\u2013\u2014]\s")
"""Where a clause of a person's sentence ends (a comma, a semicolon, a dash)."""


def _end_before_memory(line: str, low: str) -> LineSignal | None:
    """A kill a line reports before it speaks of memory at all, supposing nothing (solc's user:
    "solc crashes saying SIGKILL 9, which I take means it runs out of memory"): the kill is what
    happened, the memory words after it are the person's reading of it (the file's story may
    still say memory ran out). A kill after the memory words (Jupyter's "having a kernel run out
    of memory, making the kernel process killed") or under a supposition ("it is possible a
    worker gets killed") stays a mention."""
    first = _MEMORY_WORD.search(low)
    if first is None:
        return None
    cuts = [m.start() for m in _CLAUSE_CUT.finditer(low, 0, first.start())]
    stop = cuts[-1] if cuts else first.start()  # the clause of the kill, before the reading
    head = low[:stop]
    ended = parse_end_parts(line[:stop], head)
    if ended is None or ended.kind not in _BARE_ENDS or supposes(head):
        return None
    return ended


def _first(line: str, low: str) -> LineSignal | None:
    for parser in PARSERS:
        if (found := parser(line, low)) is not None:
            if found.kind in _BARE_ENDS:
                cause = parse_oom_parts(line, low)
                if cause is not None and cause.kind in _MEMORY_CAUSES:
                    return cause
            elif found.kind == "memory_noted" and parser is parse_oom_parts:
                return _end_before_memory(line, low) or found
            return found
    return None
