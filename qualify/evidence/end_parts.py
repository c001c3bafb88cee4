"""How a unit of work ended, read by the parts of any sentence that says so: the reader of last
resort for kills and time limits, as :mod:`qualify.evidence.oom_parts` is for memory.

The named parsers (:mod:`qualify.evidence.lines`) know the wordings of the CI systems, shells
and schedulers they were written from. A line none of them knows is read here for:

- **what ended**: a unit of work (a process, task, job, step, build, test, worker, command,
  container, session...) or the shell's status word (``Killed``, ``zsh: killed``);
- **how**: killed (``was killed``, ``got killed``, ``SIGKILL``, ``signal 9``), evicted, or
  ended with the code a shell gives a process killed by SIGKILL or SIGTERM (``returned a
  non-zero code: 137``);
- **why**: its time running out, in any words that pair a time limit with its end (``timeout``,
  ``time limit``, ``deadline``, ``walltime``, ``maximum execution time``, ``ran longer than``)
  with a unit of work or a crossing (``exceeded``, ``after``, ``reached``), or given as a
  failure's reason or a state (``failed due to timeout``, ``completed with status "TIMEOUT"``);
  anything said to have "timed out" on a line that names no network's part.
  A network's time running out (a connection, a request, a read, a lock) is not a unit of
  work's and decides nothing.

A sentence that only supposes an end ("if the process is killed", "may time out", "to avoid
timeouts", a question) is not one. Memory as the cause is read by the memory reader, which runs
first.
"""

from __future__ import annotations

import re

from qualify.evidence.evidence_line import LineSignal
from qualify.evidence.prefilter import guarded

_UNIT = (
    r"process(?:es)?|task|job|step|build|test(?: case)?|worker|command|container|pod|run"
    r"|program|script|stage|session|instance|executor|daemon|child|subprocess|service|pipeline"
    r"|action|compiler|linker|suite|runner|agent|workflow|query|statement|function|tool|binary"
    r"|application|app|server|training|benchmark|simulation|solver|check|hook|spec"
)
_UNIT_WORD = re.compile(rf"\b(?:{_UNIT})\b")
_KILL = guarded(
    r"\b(?:was|were|been|being|got|get|gets|is|are) (?:\w+ly )?killed\b"
    r"|^\W*(?:[\w.-]+: )?killed\b(?!\s+\d+\s+(?:\w+ ){0,2}\w+s\b)|\b(?:"
    + _UNIT
    + r")(?: \S+)? killed\b"
    r"|\b(?:by|with|received|got|due to|from|on)\W+(?:a |the )?(?:signal\W+(?:some\()?)?"
    r"(?:sigkill|9\b(?![ \t]+[a-z]))"
    r"|\(sigkill\)|\bkill -9\b"
    # an end with its signal in parentheses (a terminal emulator's "[Process completed (signal 9)
    # - press Enter]"); a signal sent to a process by its number (Android's "Sending signal. PID:
    # 19752 SIG: 9")
    r"|\b(?:completed|exited|ended|finished|terminated|died)\s*\((?:with |by )?(?:signal\W*)?"
    r"(?:9|sigkill)\)"
    # or its code and signal as fields (runit's supervisor, as Spilo logs it: "/run/service/patroni:
    # finished with code=-1 signal=9"; supercolliderjs' "Server exited. Exit code: null signal:
    # SIGKILL")
    r"|\b(?:exited|ended|finished|terminated|died)\b[^;]{0,40}?\bsignal\s?[=:]\s?(?:9|sigkill)\b"
    r"|\bsend(?:ing|s)? signal\b.{0,40}?\bsig(?:nal)?\W{1,3}(?:9|kill)\b"
    r"|\b(?:saying|says|said|reports?|reported|reporting)\W+(?:a |the )?sigkill\b"
    r"|\b(?:received|receive|see|saw|seeing|shows?|showed|printed|prints|outputs?|outputted"
    r"|displays?|displayed)\W+(?:an? |the |just )?"
    r"\W?killed\b"
)
"""A unit of work killed, in words or by SIGKILL said as what ended it ("received SIGKILL",
"died with signal 9", "(SIGKILL)"; Rust's ``Option`` around the number, as delta-rs logs it:
"Command exited with signal: Some(9)"; a setting that names the signal is not an end); the shell's
status word after the shell's name (zsh's ``zsh: killed     python train.py``) or as what a person
saw ("On my terminal i received a Killed at the end"); not a count of things a program killed
("Killed 3 idle connections"). (A program's
own "Killing subprocess 12" is its cleanup after another end, which is the cause: not read as
one.)"""
_KILL_TO_FREE = re.compile(r"\bkill(?:s|ed|ing)?\b.{0,120}?\bto (?:free|reclaim|release)\b")
"""A kill whose purpose is to free memory (Android's low-memory killer: "Kill 'com.x' (1234),
uid 10123, adj 900 to free 51234kB"): the machine ran short."""
KERNEL_KILLED = re.compile(
    r"\b(?:until|till|then|and|when|before|after|so) (?:the |linux'?s? )?kernel (?:\w+ly )?"
    r"(?:killed|kills|killing|terminated) (?:the |my |our |a |an )?(?:process|program|app\w*"
    r"|\w+ process)\b"
)
"""The kernel told, in a person's narration, as what killed a process (git-cola's user: "the
system hangs over 10min. until the kernel killed the process"): the one kill the kernel makes
of a running process on its own is its OOM killer's, for the machine's memory."""
_TRIED_KILL = re.compile(
    r"\b(?:tried|try|trying|attempted|attempting)(?: to)? kill(?:ing)?\b(?! by\b)"
)
"""A kill the person tried themselves (olmOCR's user: "Even tried killing the GUI to release more
VRAM"): a remedy attempted, not how the run ended."""
_KILL_CODE = re.compile(
    r"\bexit\w*\b[^\d\n]{0,30}?(?<![\w.-])(137|143|-9|-15)\b(?!\.?\d)"
    r"|\b(?:code|status|errno)(?:: |:|=| )(137)\b(?!\.?\d)"
)
"""An end with the code a shell gives a process killed by SIGKILL (137) or SIGTERM (143), or the
signal's negative number a runtime gives (``exit status -9``); after "code" or "status" alone,
137 (``returned a non-zero code: 137``, the scanner's needles for it)."""
_FAILED_TESTS = guarded(
    r"^\s*\[ +failed +\] \S"  # GoogleTest
    r"|^\s*fail\s+\S+\.(?:test|spec)\.\w+\b|^\s*fail\t\S+\t"  # Jest; go test's package line
    r"|^\s*(?!0\b)\d+ failing\s*$"  # mocha
    r"|\bfailures: (?!0\b)\d+|\btests run:.*\berrors: (?!0\b)\d+"  # Maven Surefire
    r"|^\s*failed \((?:failures|errors)=\d+"  # unittest
    r"|\b\d+ examples?, (?!0\b)\d+ failures?\b"  # RSpec
    r"|^[\s`>]*tests?:\s+(?!0\b)\d+ failed\b"  # Jest's summary
    r"|^\s*the following tests failed:"  # CTest
    # an assertion's own error, first on its line: Python's, Node's "AssertionError
    # [ERR_ASSERTION]: Expected values to be strictly equal", JUnit's AssertionFailedError
    r"|^[\s>]*(?:[\w.]+\.)?assertion(?:failed)?error\b"
    # Rust's failed assertion, as its panic says it (``thread 'test_hello' panicked at
    # 'assertion failed: `(left == right)`'``, since 1.73 ``assertion `left == right` failed``),
    # and libtest's summary (``test result: FAILED. 0 passed; 1 failed``)
    r"|\bthread '[^']*' panicked at '?assertion\b|^\W*assertion `[^`]+` failed\b"
    r"|\btest result: failed\b|\btest failed, to rerun pass\b"
    # unittest's verbose line (``test_foo (tests.test_x.TestFoo) ... FAIL``)
    r"|^\s*\S+ \([\w.]+\) \.\.\. (?:fail|error)\s*$"
    # a check's location, then its verdict alone (Catch2's "tests.cpp(281): FAILED:",
    # GoogleTest's "my_test.cpp:6: Failure"); GoogleTest's "Expected equality of these values:";
    # the Tcl test suite's "[exception]: Executing test client: ..." (Redis, Valkey)
    r"|^\s*\S+(?:\(\d+\)|:\d+): (?:failed|failure):?\s*$|^\s*expected equality of these values:"
    r"|^\s*\[(?:exception|err)\]: \S"
    # TAP's "not ok 3 - should be equal" (Perl, node-tap, bats); a runner's "[FAIL] test_foo";
    # counts of failed and passed tests ("1 failed, 3 passed", "✗ 2 tests failed", Jest's "Test
    # Suites: 1 failed")
    r"|^\s*not ok \d+\b|^\s*\[\s*fail(?:ed|ure)?\s*\][\s:]+\S"
    r"|^(?!.*\b(?:jobs?|steps?|checks?|builds?|tasks?|workflows?|pipelines?|stages?)\b)"
    r".*?\b(?!0\b)\d+ (?:tests? )?failed,\s*\d+ (?:tests? )?passed\b"
    r"|^[^\w\s]*\s*(?!0\b)\d+ (?:tests?|specs?|examples?|test cases?) failed\b"
    r"|^\s*test suites:\s+(?!0\b)\d+ failed\b"
    # a CI's test result with its count of failures (Jenkins' "Test Result (1 failure / +1)")
    r"|^\W*test results?\W{1,3}\(?(?!0\b)\d+ failures?\b"
    # a test method's name, then the exception that ended it, joined by a colon, as a test
    # report's failure list writes them ("testTraceSource:componenttest.exception.Topology
    # Exception: ... Timed out waiting for application [TestApp] to start.")
    r"|^\s*test\w*:(?:[a-z_][\w$]*\.)+[a-z_][\w$]*(?:exception|error)\b:"
)
"""Other test runners' own words for failed tests, each with a count above zero where it has
one."""
_TIME_LIMIT = re.compile(
    r"\btime[ -]?outs?\b|\btimed[ -]?out\b|\btimes out\b|\btiming out\b|\btime ?limit\b"
    r"|\bdeadline\b|\bwall ?time\b|\bwall[- ]clock\b"
    r"|\bmax(?:imum)? (?:\w+ )?(?:time|duration|run ?time)\b|\bruntime limit\b"
    r"|\b(?:requested|allotted|allowed|allocated) (?:run ?time|wall ?time|time)\b"
    r"|\b(?:ran|running|took|taking|runs) (?:\w+ )?longer than\b|\btoo long\b"
    r"|\bno output\b|\binactivity\b|\bstalled\b"
    r"|\b(?:due (?:to )?|ran |run |went |goes )over ?time\b"
)
"""Words that name a time limit or its crossing, spelled apart, joined or hyphenated (cspell's
"Atomics.wait() failed: timed-out"); "over time" only as what a thing ran or failed due to
(vcpkg's "osx ci is failed lately due over time after 2 days"), not a change "over time"."""
_CROSSED = re.compile(
    r"\b(?:exceed\w*|reached|reaches|reaching|hit|expired|after|elapsed|timed[ -]?out|longer than"
    r"|killed|cancel+ed|stopped|aborted|terminated|interrupted)\b"
)
"""Words that say the limit was crossed or the work ended for it."""
_AFTER_DURATION = re.compile(
    r"(?<![\"'`])\b(?:killed|cancel+ed|stopped|aborted|terminated|interrupted)\b"
    r"(?![\"'`])(?!\s+(?:message|error|status)\b)"
    r".{0,40}?\bafter (?:\w+ )?"
    r"[\d.]+ ?(?:ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?)\b"
    r"(?!,? (?:with|due to|because|from)\b)"
)
"""Work ended after a stated duration (``Process killed after 3600 seconds``, ``Build cancelled
after 60 minutes``): its time ran out; not a message quoted (golangci-lint's user: 'fails with
"Killed" message after 40 seconds': the shell's word for a SIGKILL, and when it came); unless the
end's reason follows (Lightdash's "A compile ... aborted after 167 s with" and, on the next
line, "`FATAL ERROR: Ineffective mark-compacts near heap limit`": the duration tells when, the
reason why)."""
_TOOK_THEN_KILLED = re.compile(
    r"\b(?:taking|took|takes|running|ran|runs) (?:over|more than|longer than) [\d.]+ ?"
    r"(?:s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?) and (?:then )?(?:gets?|got|are|were"
    r"|is|was) (?:\w+ )?(?:killed|terminated|cancel+ed|aborted)\b"
)
"""Work that ran past a stated duration, then was ended (Machinekit's "They're taking over 30
minutes and get killed"): its time ran out."""
_NETWORK = re.compile(
    r"(?<![.\w])(?:connect\w*|socket|request|http\w*|https|read|write|handshake|dns|lock"
    r"|poll\w*|ping|heartbeat|rpc|grpc|curl|wget|fetch\w*|download\w*"
    r"|upload\w*|ssh|tcp|udp|tls|ssl|url|proxy|network|navigation|selector|element|locator"
    r"|response|acquire|mutex|semaphore|receive|recv|send|i/o|io|port|address|host"
    r"|registry|pull\w*|push\w*|clone|git|npm|pip|apt|repository)\b"
)
"""A network's time running out (a connection, a request, a read, a lock): not the run's own
time limit. (A word of a dotted name is the name's: Celery's task ``email_reports.send`` sends
nothing.) A wait's is the waiter's: it gave up (Helm's "Error: UPGRADE FAILED: timed out waiting
for the condition"), unless what it waited on is a network's."""
_SUPPOSED = re.compile(
    r"\b(?:if|when|whether|unless|in case|may|might|could|can|would|should|will|to avoid"
    r"|to prevent|prevent\w*|avoid\w*|how to|how do|why|config\w*|set(?:ting)?|increas\w*"
    r"|rais\w*|bump\w*|tighten\w*|shorten\w*|decreas\w*"
    r"|expect(?:s|ed|ing)?"
    r"|default"
    r"|option|flag|parameter|environment variable|invalid|must be|possibly|clean(?:ing)? ?up"
    # a time limit given that exceeds what is allowed, refused as a setting (Flank's "Given test
    # timeout of 60 min exceeds limit of 30 min.")
    r"|exceeds (?:the )?(?:max(?:imum)? |allowed )?limit of"
    r"|looks? like|seems?|appears? to be"
    # a person's guess at the cause (VFS for Git's user: "I guess it is due to timeout value in
    # WaitUntilMounted function")
    r"|(?:i|we) (?:guess|presume|assume|suspect))\b"
)
"""A sentence that supposes, asks or advises rather than reports, names a setting or refuses one
(``invalid value for 'build.steps[1].timeout'``), changes one (kcov's CI: "tighten per-test
timeout cap 120s -> 30s"), expects ("I'd expect the test to be cancelled
after 1 second"), tells of a cleanup after another end
("processes killed (some possibly by mpiexec during cleanup)"), or guesses at what an end was
("the backup failed with what looks like a timeout")."""
_TOLD_WHEN = re.compile(r"\bwhen (?:i|we) [^,]{1,80},")
"""A person's own circumstance before what happened to them (solc's user: "but when I try to run
forge build, solc crashes saying SIGKILL 9"): a time told, not a supposition; the clause after
its comma reports. (A "when" of anyone else, "when the limit is reached, the job is killed",
still supposes.)"""
_EVICTED = re.compile(
    r"\b(?:was|were|been|is|are|being|got) evicted\b|^\W*(?:warning\s+)?evicted\s"
)
"""A pod evicted (for memory, the memory reader has said so first: here, for another resource or
none said)."""
_BOUNDARY = re.compile(r"[.!?;]\s|:\s|\s-\s|`")
"""Where a clause ends: a sentence's end, a colon before what it introduces, a dash, a quoted
span's edge (minimap2's pasted log ending in "Killed`,so could anyone give some advice?": the
question is the person's, after the paste)."""


def _clause(low: str, match: re.Match[str]) -> tuple[int, int]:
    """The span of the clause of ``low`` that holds ``match``."""
    start = max((m.end() for m in _BOUNDARY.finditer(low, 0, match.start())), default=0)
    after = _BOUNDARY.search(low, match.end())
    return start, after.start() if after is not None else len(low)


_YOU_MAY_NOTICE = re.compile(
    r"\byou (?:might|may|will|could|would)(?: \w+)? (?:see|get|notice|encounter|receive"
    r"|run into)\b[^.;!?\"`]{0,30}[\"`][^\"`]*$"
)
"""A message quoted as what the reader may see (MailPoet's QA notes: 'you may notice a lot of
"MailPoet.ERROR: Maximum execution time has been reached." errors are logged'): a possibility,
whatever the quote's own words."""
_NO_LONGER = re.compile(
    r"[^\"`]{0,80}?[\"`][^.;!?\"`]{0,40}?\b(?:is|are|will be|gets?) no longer (?:logged|thrown"
    r"|raised|shown|printed|reported|emitted)\b"
)
"""A message quoted as one a change stops (MailPoet's PR: "the `Maximum execution time has been
reached` exception is no longer logged"): the change described, not an end."""


def _quoted_as_possible_or_stopped(low: str, match: re.Match[str]) -> bool:
    """Whether the words stand in a quote that the line says the reader may see, or that a
    change no longer logs (:data:`_YOU_MAY_NOTICE`, :data:`_NO_LONGER`)."""
    return (
        _YOU_MAY_NOTICE.search(low, 0, match.start()) is not None
        or _NO_LONGER.match(low, match.end()) is not None
    )


def _supposed(low: str, match: re.Match[str]) -> bool:
    """Whether the clause of ``match`` supposes, asks, advises or sets rather than reports, or
    introduces the paste that follows it (Helm's issue: "timeout occurs after five minutes:",
    then the log that says so); a structured line's other fields, such as
    ``Namespace:"default"``, are other clauses."""
    start, stop = _clause(low, match)
    clause = low[start:stop].rstrip()
    if ('"' in low or "`" in low) and _quoted_as_possible_or_stopped(low, match):
        return True
    if clause.endswith(("?", ":")) or (stop == len(low) and low.rstrip().endswith("?")):
        return True  # a question, or a sentence introducing what follows it ("... after 5 min:")
    told = _TOLD_WHEN.search(low, start, match.start())
    if told is not None:  # the person's own circumstance, told: the rest of the clause is read
        before = _SUPPOSED.search(low, start, told.start())
        return before is not None or _SUPPOSED.search(low, told.end(), stop) is not None
    return _SUPPOSED.search(low, start, stop) is not None


_IF_OPENED = re.compile(r"\W*(?:if|unless|in case)\b")
"""A sentence opened by a condition (Judge0's answer: "if you get status as `Runtime Error
(NZEC)` ... and message as `Exited with error status 137` then u can consider that it is MLE"):
the code it names is supposed."""
_HUNG_KILLED = re.compile(
    r"\b(?:is|was|are|were|seems?|appears?|looks?|got|gets|became) (?:to be )?"
    r"(?:frozen|hung|hanging|stuck|unresponsive|deadlocked)\W{1,3}(?:\w+ ){0,2}?"
    r"(?:killing|terminating|aborting|stopping|restarting) (?:the |its |a )?(?:" + _UNIT + r")\b"
    # or a hang told, then the kill that ended it (kcov's user: "kcov hang without output for a
    # long time, and finally killed by travis"), but not a hang in memory's swap (jj's user:
    # "Gets stuck in swap and then gets killed": memory ran out)
    r"|\b(?:hangs?|hung|hanging|stuck|freezes|froze|frozen)\b"
    r"(?:(?!swap|memory|\bram\b|oom)[^.;!?]){0,60}?\b(?:and|then|until)"
    r"(?: (?:finally|eventually|then))? (?:(?:gets?|got|was|is|were|being) )?"
    r"(?:killed|terminated|aborted)\b"
)
"""A watchdog's verdict that a program hung, then its kill of a unit of work (CASM's "VASP is
frozen, killing job"): the program ran past the time the watchdog allows it without progress, a
time limit. (A person's "the UI is frozen, killing it does nothing" kills no unit of work.)"""
_WENT_ON = re.compile(
    r"\bbut\b[^.;]{0,60}?\b(?:still|eventually|nevertheless)\s+"
    r"(?:succeed\w*|works?|worked|complet\w*|finish\w*|pass\w*)\b"
)
"""The work said to go on after the time ran out (VFS for Git's maintainer: "the foreground
process is timing out, but the mount still succeeds"): the time limit ended nothing."""
_FELL_BACK = re.compile(r"[^.;]{0,40}?\b(?:and|then) (?:\w+ )?(?:falling|fell|falls|fall) back\b")
"""The work said to go another way just after its time ran out (Filament Profiles' "the My
Spools list was timing out on larger collections and quietly falling back to an empty list"):
the time limit ended nothing."""
_NOW_HANDLED = re.compile(
    r"[^.;]{0,60}?\b(?:are|is|were|was|have been|has been) (?:now )?(?:\w+ly )?"
    r"(?:handled|fixed|resolved|caught|avoided)\b"
)
"""The time limit's issues said to be handled now (kitodo-presentation's changelog: "timeout
issues that occurred with large scores are now properly handled"): a change told, no end."""
_TIMES_OUT = re.compile(r"times out\b(?! of\b)")
""""times out" as a verb, not a count ("4 times out of 5")."""
_UNITS_TIME_OUT = re.compile(
    r"\b(?:tests|jobs|tasks|steps|builds|runs|processes|workers|suites|benchmarks|workflows"
    r"|pipelines)(?: (?:\w+ly|still|now|all|also|often|always|sometimes|then|just)){0,2}"
    r" time[ -]?out\b(?! (?:value|setting|option|of|problems?|issues?|errors?)\b)"
)
"""Units of work that time out, the verb in the plural's present (wgpu's title "Several tests
time out in CI"): their time limit ended them, as "the test times out" says of one."""


def _units_time_out(low: str, start: int, timed: re.Match[str]) -> bool:
    """Whether the time limit's words ``timed`` are the verb of units of work (``_UNITS_TIME_OUT``)
    in the clause that starts at ``start``."""
    units = _UNITS_TIME_OUT.search(low, start)
    return units is not None and units.end() == timed.end()


_ALARM_KILL = re.compile(
    r"\bsigalrm\b[^.;!?]{0,60}?\bkill(?:s|ed|ing)?\b"
    r"|\b(?:killed|terminated|ended|died)\b[^.;!?]{0,30}?\b(?:by|with|from|on) (?:a |the )?"
    r"sigalrm\b"
)
"""A kill by SIGALRM, the signal a timer's alarm sends (coffea's issue: "The timeout decorator
... is resulting in a SIGALRM being raised which kills the worker running the task"): a time
limit's end."""
_ALARM_SUPPOSED = re.compile(
    r"\b(?:if|whether|unless|when|in case|may|might|could|would|should|will|can|not|never)\b"
    r"|n't\b|\?"
)
"""Words before the alarm's kill that suppose or deny it rather than report it."""
_ALARM_STATUS = re.compile(r"(?:^\s*|\bline \d+:\s+\d+ )Alarm clock(?:\s{2,}\S.*|\s*)$")
"""The shell's job status for a command ended by SIGALRM, alone or after the script's
``line N: PID`` (as it prints "Killed" for SIGKILL): its alarm's time ran out."""
_NOT_ENDED = re.compile(
    r"(?:\bnot|n't|\bnever)\s+(?:get\s+|gets\s+|got\s+|be\s+|been\s+)?"
    r"(?:terminated|killed|stopped|cancel+ed|aborted|interrupted)\b"
)
"""An end denied ("this submission doesn't get terminated due to timeout", DOMjudge's user):
none happened, whatever limit it names."""


def _denied_end(low: str, match: re.Match[str]) -> bool:
    """Whether the clause of ``match`` denies the end it names (:data:`_NOT_ENDED`)."""
    return _NOT_ENDED.search(low, *_clause(low, match)) is not None


_ATTEMPT = re.compile(r"\battempt (\d+) ?(?:/|of) ?(\d+)\b")
"""An attempt's number among those allowed (OpenHands' benchmark runner: "Instance ... failed
(attempt 2/3): ... Run timed out after 3600.0 seconds."): with attempts left, the work is retried,
and what ended this one did not end the run."""


def _attempts_left(low: str) -> bool:
    """Whether the line numbers its attempt below those allowed (:data:`_ATTEMPT`)."""
    attempt = _ATTEMPT.search(low) if "attempt" in low else None
    return attempt is not None and int(attempt[1]) < int(attempt[2])


_LINK = re.compile(r"\]\([a-z][a-z0-9+.-]*://[^\s)]+\)")
"""A Markdown link's target, blanked before the line is read (Macaulay2's "two recent Github
Actions builds, one on [autotools](https://github.com/...) and one on [cmake](https://
github.com/...), timed out": a page linked from prose is no network the time limit's clause
names; a request's address, Go's 'Get "https://registry.example.com/v2/": context deadline
exceeded', stays)."""


def _networked(low: str, match: re.Match[str]) -> bool:
    """Whether the clause of ``match`` (or the one before, when the time words are all of it)
    names a network's time (a path elsewhere on the
    line, ``E:\\Git\\...``, is another clause; so are the words after a quote that holds
    ``match``: nginx's 'FastCGI sent in stderr: "PHP message: PHP Fatal error:  Maximum
    execution time of 30 seconds exceeded in ..." while reading response head' tells when nginx
    read PHP's message, not what timed out)."""
    start, stop = _clause(low, match)
    if not low[start:stop].strip(" \t'\"`.!").replace(match[0], "", 1).strip(" \t'\"`.!"):
        # the time words are their clause whole, a failure's reason after its colon ("Error:
        # request to registry failed: timed-out"): what failed is in the clause before
        start = max((m.end() for m in _BOUNDARY.finditer(low, 0, max(0, start - 2))), default=0)
    inside = low.count('"', 0, match.start()) % 2 == 1  # the match stands in a quote
    closed = low.find('"', match.end(), stop) if inside else -1
    return _NETWORK.search(low, start, closed if closed >= 0 else stop) is not None


_WORDS = re.compile(
    r"kill|term|sig|137|143|-9|-15|time|timing|deadline|output|longer|inactiv|stall|after|fail"
    r"|evict|alarm|within"
    r"|assertion|expected equality|\[e|not ok|duration"
)
_TIMED_AFTER = re.compile(
    r"\btimed out after (?:\w+ )?[\d.]+ ?(?:ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?"
    r"|h|hrs?|hours?)\b"
)
"""Something timed out after a stated duration (Hugo's 'partial "head/head.html" timed out after
30s'): its time limit, whatever it names (a network's is excluded first)."""
_ERROR_LEADS = frozenset({"error", "fatal", "fatal error", "failed"})
"""What may come before the time limit's words on a line that reports it."""
_LEAD = re.compile(r"(?:^|[\s>])(error|fatal|fatal error|failed)$")
"""Those words last before it, after a runner's prefixes (pytest's ``INTERNALERROR> E   Failed:
Timeout (>10.0s) from pytest-timeout.``)."""
_DURATION = (
    r"(?:(?:\d+h)?(?:\d+m)?[\d.]+ ?(?:ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?"
    r"|hours?)\b|\d+:\d\d:\d\d\b)"
)
_LIMIT_OF = re.compile(rf"\bof {_DURATION}|\(>?{_DURATION}\)|\bin the last {_DURATION}|\(\w+=\d+\)")
"""The limit's own duration said with it ("exceeded maximum runtime of 5m0s", Celery's "Hard
time limit (1200s) exceeded", SGE's "exceeded the requested runtime (h_rt=3600)", Travis' "No
output has been received in the last 10m0s"): a limit crossed as a fact, not a setting talked
about."""
_AFTER_ITS = re.compile(rf"\bafter (?:\w+ )?{_DURATION}")
"""The duration after which what the time limit's words name ran out, said after them in its
clause (jsreport's "bigger tables timeouts on chrome-page-eval after 10s", Lightdash's "so
Playwright times out after 180s"): the limit crossed, as its own duration said with it is. Not
after the noun alone, which a setting names ("this PR makes it timeout after 1 hr")."""
_CAUSED_TO = re.compile(
    r"(?<!this pr )(?<!this change )(?<!this commit )(?<!this patch )"
    r"\b(?:causes?|caused|causing|makes|made|making)\b(?: [\w-]+){1,5}? to time[ -]?out\b"
    r"|(?<!this pr )(?<!this change )(?<!this commit )(?<!this patch )"
    r"\b(?:makes|made|making)\b(?: [\w-]+){1,4}? time[ -]?out\b"
)
"""What made a unit of work run out of its time, told (FAC's "Submitting a non workbook excel
spreadsheet with a lot of filled in cells causes the validation process to timeout."): the
time limit ended it. A setting's "how to make it timeout after 5 s" is supposed, read before; a
change's "this PR makes it timeout after 1 hr" sets a limit (pyvista's CI)."""
_OTHER_CAUSE = re.compile(r"\bexceed\w*\b|\bover (?:the |its )?limit\b|\bdue to\b|\bbecause\b")
"""A kill that says why: a cause other than time or memory (those are read first), such as PBS'
"job killed: ncpus 9.3 exceeded limit 8"."""
_REASON_FOR = frozenset({"because", "due to"})


def _other_cause(low: str) -> bool:
    """Whether a kill on ``low`` is said to have a cause of its own (:data:`_OTHER_CAUSE`). A
    "because" before the kill gives the kill as the reason of something else (Semgrep's "You are
    seeing this because the engine was killed."): the kill is what is reported, not caused."""
    killed = _KILL.search(low)
    for cause in _OTHER_CAUSE.finditer(low):
        if killed is not None and cause.end() <= killed.start() and cause[0] in _REASON_FOR:
            continue
        return True
    return False


_FAILED_FOR = re.compile(
    r"\b(?:fail\w*|due to|because of)\b|\b(?:status|state|result|reason)\W{1,4}(?:time|dead)"
)
"""A unit of work's failure, with a time limit as its reason or its state (``failed due to
timeout``, ``completed with status "TIMEOUT"``, ``state: TIMEOUT``)."""
_ENDED = re.compile(r"\b(?:killed|cancel+ed|stopped|aborted|terminated|interrupted)\b")
_STATED_CROSSED = re.compile(
    r"(?:deadline|time[ -]?out|time ?limit|wall ?time|max(?:imum)? (?:\w+ )?time)"
    r" (?:was |has been |is )?(?:exceeded|reached|expired|hit)\b"
)
"""A time limit and its crossing said together, as an error's words are (Go's "context deadline
exceeded", "time limit exceeded", "timeout expired"): a fact stated, whatever the line names."""
_GOT_BEFORE = re.compile(r"\b(?:got|received|actual|returned)\W{0,3}(?:\w+\W{1,3}){0,2}$")
"""What a test compared, just before: its assertion's "was expecting SQLError 2013 ... but got:
context deadline exceeded" (Vitess) names the error the test got, not how the run ended."""
_STATE_COLUMN = re.compile(
    r"(?:\s{2,}time ?out\s+|\btime ?out\s{2,})[\d.]+ ?(?:ms|s|sec|secs|seconds)\b(?!\S)"
)
"""A time limit as a result's state in a test runner's columns, its duration next (Meson's
``1/5 Boost linktest      TIMEOUT        30.16s`` and ``1/1 Test exe      TIMEOUT 30.02 s``)."""

_FAILED_WITHIN = re.compile(
    r"\b(?:failed|did not manage|was unable|could not) to (?:start|finish|complete|launch|boot)"
    rf"\b(?: \w+)? (?:in|within) (?:the allotted |the allowed )?{_DURATION}"
)
"""Work that failed to start or finish in a stated duration (a test runner's "Test failed to start
in 0.3 minutes", after it killed what it had launched): its time ran out. (A connection or a
response that failed in a time is a network's, and names neither verb.)"""
_NOT_DONE_IN = re.compile(
    r"\b(?:did not|didn't|never) (?:get )?(?:run|ran|start|started|finish|finished|complete"
    r"|completed|launch|launched|boot|booted)\b(?: \w+)?"
    rf" (?:in|within|after) (?:the allotted |the allowed )?{_DURATION}"
)
"""Work that did not run, start or finish in a stated duration, as a check that gave up on it
says (fcitx5-android's "java.lang.RuntimeException: Alive checking failed! The job didn't get
run after 8000 ms!"): its time ran out; unless a default is taken instead (``_TOOK_DEFAULT``).
A call that did not respond or return in a time is a wait's, which a program may survive."""
_TOOK_DEFAULT = re.compile(
    r"[^;]{0,40}?\b(?:returning|returned|using|used|falling back to|fell back to|defaulting to)"
    r" (?:the |a |its )?(?:default|fallback|cached)\b"
)
"""A default taken just after a wait gave up (Android's "requestUpdateCursorAnchorInfo() didn't
respond in 2000 msec. Returning default: 0"): the time ran out and nothing ended."""
_RECORD_LEAD = re.compile(
    r"\[?\d{4}-\d\d-\d\d[t ][\d:.,]+\]?(?:\s*[-|]\s*[\w.]+)*\s*[-|]\s*"
    r"(?:debug|info|notice|warn\w*|error|critical|fatal)$"
)
"""A log record's prefix before the words, its time, its logger and its level (twister's
"2022-01-18 20:29:53,541 - twister - DEBUG - Timed out while monitoring serial output on
nucleo_l073rz"): the record's message starts after it, as a line of its own would."""


def parse_end_parts(line: str, low: str | None = None) -> LineSignal | None:
    """The end a line reports, read by its parts: ``timeout`` (a unit of work's time limit
    reached), ``terminated_externally`` (killed or signalled from outside, no cause said),
    ``exit_code`` (137 or 143 as a code), or None."""
    low = line.lower() if low is None else low
    if not _WORDS.search(low):
        return None
    if "](" in low:  # a link's target is no part of the sentence (its "https" no network's)
        low = _LINK.sub(lambda link: " " * len(link[0]), low)
    if _FAILED_TESTS.search(low) and not _TIMED_AFTER.search(low):
        # (a failure whose reason is a time limit run out after its duration, Ginkgo's
        # "[FAILED] Timed out after 120.000s.", is read for that time limit below)
        return LineSignal("test_failed", {"parts": True})
    alarm = _ALARM_KILL.search(low) or _ALARM_STATUS.search(line)
    if alarm is not None and not _ALARM_SUPPOSED.search(low, 0, alarm.end()):
        return LineSignal("timeout", {"parts": True})
    # (a stated duration, then the kill, before any other time words on the line)
    timed = _TOOK_THEN_KILLED.search(low) or _TIME_LIMIT.search(low) or _AFTER_DURATION.search(low)
    if timed is not None and (
        _supposed(low, timed)
        or _attempts_left(low)
        or _denied_end(low, timed)
        or _WENT_ON.search(low, timed.end()) is not None
        or _FELL_BACK.match(low, timed.end()) is not None
        or _NOW_HANDLED.match(low, timed.end()) is not None
    ):
        return None
    if timed is not None and not _networked(low, timed):
        lead = low[: timed.start()].strip(" \t:*>#-[]")
        lead = "" if _RECORD_LEAD.match(lead) else lead  # a log record's prefix, its message next
        led = lead in _ERROR_LEADS or _LEAD.search(lead) is not None
        start, stop = _clause(low, timed)
        following = _BOUNDARY.search(low, stop + 1)
        stop = following.start() if following is not None else len(low)  # and the next clause
        crossed = _CROSSED.search(low, start, stop) is not None
        ended = _ENDED.search(low, start, stop) is not None
        unit = _UNIT_WORD.search(low, start, stop) is not None
        timed_after = _TIMED_AFTER.search(low) is not None
        limit_of = _LIMIT_OF.search(low, start, stop) is not None or (
            timed[0] not in ("timeout", "time out", "time-out")  # a setting's noun
            and _AFTER_ITS.search(low, timed.end(), stop) is not None
        )
        quiet = limit_of and timed[0] in ("no output", "inactivity")  # silent for a duration
        stated = (
            _STATED_CROSSED.match(low, timed.start()) is not None
            and _GOT_BEFORE.search(low, 0, timed.start()) is None
            and _NETWORK.search(low, 0, timed.start()) is None
        )  # (a network's, said before it on the line: "Get \"https://...\": context deadline")
        if (
            timed_after
            or quiet
            or stated
            # whatever it names timed out, on a line that names no network's part (Azure's
            # "Provisioning of VM extension 'mrpsetup' has timed out."): a time limit ended it
            or (
                (
                    timed[0].startswith(("timed", "timing"))
                    or _TIMES_OUT.match(low, timed.start())
                    or _units_time_out(low, start, timed)
                )
                and _NETWORK.search(low) is None
            )
            or (crossed and (ended or unit or lead == "" or led or limit_of))
            or _CAUSED_TO.search(low, start, stop) is not None
        ):
            return LineSignal("timeout", {"parts": True})
        failed_for = _FAILED_FOR.search(low, start, stop) is not None
        overtime = timed[0].endswith(("over time", "overtime"))  # "failed due over time"
        if failed_for and (timed[0].startswith(("time", "dead")) or overtime):
            return LineSignal("timeout", {"parts": True})
        if _STATE_COLUMN.search(low, max(0, timed.start() - 2)):
            return LineSignal("timeout", {"parts": True})  # Meson's "1/5 linktest  TIMEOUT  30.16s"
        if led and timed[0].startswith("time"):
            return LineSignal("timeout", {"parts": True})  # "Error: Timeout - Async callback ..."
    within = _FAILED_WITHIN.search(low) or _NOT_DONE_IN.search(low)
    if (
        within is not None
        and not _supposed(low, within)
        and _TOOK_DEFAULT.match(low, within.end()) is None
        and not _networked(low, within)
    ):
        return LineSignal("timeout", {"parts": True})
    evicted = _EVICTED.search(low)
    if evicted is not None and not _supposed(low, evicted):
        return LineSignal("terminated_externally", {"parts": True, "evicted": True})
    if _other_cause(low):
        return None  # killed for another resource (a CPU limit): not ours to call
    tried = _TRIED_KILL.search(low)  # the person's own remedy, not an end: read past it
    past = tried.end() if tried is not None else 0
    if _KILL_TO_FREE.search(low, past) or KERNEL_KILLED.search(low, past):
        return LineSignal("node_oom_kill", {"parts": True})
    hung = _HUNG_KILLED.search(low, past)
    if hung is not None and not _supposed(low, hung):
        return LineSignal("timeout", {"parts": True, "hung": True})
    killed = _KILL.search(low, past)
    if killed is not None and not _supposed(low, killed):
        return LineSignal("terminated_externally", {"parts": True})
    if (match := _KILL_CODE.search(low)) is not None and not _IF_OPENED.match(low):
        return LineSignal("exit_code", {"code": int(match[1] or match[2]), "parts": True})
    return None
