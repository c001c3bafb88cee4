"""The JUnit the events make, against pytest's own JUnit writer, case by case.

Each suite runs once, with the harness's plugin streaming events and pytest's writer asked for
its file (``--junitxml``): the same execution, two writers. The events are replayed as
``qualify run`` replays them and rendered by qualify's JUnit writer; both documents are then
read back into a canonical form per testcase (classname, name, time as a number, each child
element's tag, attributes and text) and compared, sorted (pytest-xdist's controller orders
testcases as the reports arrive, the events in collection order).

What qualify writes on purpose otherwise, and how the comparison treats it:
- A test that a plugin ran again is one testcase, its last attempt's (pytest writes one per
  attempt): pytest's earlier attempts are dropped before comparing (``last_attempts``).
- A test that failed and then failed its teardown is one testcase, its failure (pytest writes
  a second testcase for the teardown's error): pytest's second testcase is dropped.
- Per-test ``<properties>`` (``record_property``) are written in the xunit1 flavour only:
  junit-10 has no place for them (pytest warns that ``record_property`` is incompatible with
  xunit2 and writes them anyway); in xunit2 pytest's are dropped before comparing.
- The suite's own attributes (name, timestamp, hostname) are qualify's.
- Suite properties that a plugin adds through pytest's writer itself rather than through
  ``record_testsuite_property`` (hypothesis's statistics) exist only where pytest writes a
  file: they are left out of the comparison.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from harness._plugin import _MESSAGE_LIMIT
from qualify.evidence.junit import parse_pytest_junit
from qualify.judge.judgement import last_attempts
from qualify.judge.progress import progress_from_events
from qualify.report.junit import render_junit
from tests.test_junit import OUTCOMES_MODULE

ROOT = Path(__file__).resolve().parent.parent
PYTHON = os.environ.get("QUALIFY_JUNIT_PYTHON") or sys.executable
"""The interpreter whose pytest both writers run under: this one, or another pytest's
(``QUALIFY_JUNIT_PYTHON``, with pytest-xdist, pytest-rerunfailures, numpy and hypothesis)."""
SCHEMA = etree.XMLSchema(etree.parse(str(ROOT / "tests" / "data" / "schemas" / "junit-10.xsd")))

MORE_OUTCOMES = """
import logging, sys, time
import pytest

@pytest.fixture
def slow_breaking():
    yield
    time.sleep(0.02)
    raise RuntimeError("slow teardown broke")

def test_fails_then_slow_teardown_error(slow_breaking):
    assert False, "failed before its slow teardown"

@pytest.mark.parametrize("x", ["a::b", "c[d]", "snow\\u2603", "two\\nlines", "q\\"uote"])
def test_ids(x):
    assert x != "c[d]"

def test_properties(record_property):
    record_property("answer", 42)
    record_property("text", "a <b> & \\u00e9")
    print("out of the test")
    sys.stderr.write("err of the test\\n")
    logging.getLogger("t").warning("logged")

def test_suite_property(record_testsuite_property):
    record_testsuite_property("build", 42)
    record_testsuite_property("arch", "x86 <64> & \u00e9")

def test_loud_failure():
    print("before the fall")
    logging.getLogger("t").error("falling")
    assert 0, "fell"

def test_skip_with_output():
    print("said before skipping")
    pytest.skip("not today")

def test_illegal_xml():
    assert "\\x07" == "\\x08"
"""

BAD_MODULE = "import not_a_module_anywhere\n\ndef test_never():\n    pass\n"
SKIPPED_MODULE = "import pytest\n\npytest.skip('whole module', allow_module_level=True)\n"

UNITTEST_MODULE = """
import unittest

class Numbers(unittest.TestCase):
    def setUp(self):
        self.value = 2

    def test_equal(self):
        self.assertEqual(self.value, 2)

    def test_unequal(self):
        self.assertEqual(self.value, 3)

    @unittest.skip("not now")
    def test_skipped(self):
        pass

    @unittest.expectedFailure
    def test_expected(self):
        self.assertEqual(1, 0)

    def test_error(self):
        raise KeyError("missing")

class BrokenSetUp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("class setup broke")

    def test_unreached(self):
        pass
"""

DOCTEST_MODULE = '''
def double(x):
    """
    >>> double(2)
    4
    >>> double("a")
    'aa'
    """
    return x * 2

def wrong(x):
    """
    >>> wrong(1)
    3
    """
    return x
'''

XDIST_MODULE = """
import pytest

@pytest.mark.parametrize("n", range(40))
def test_n(n):
    assert n % 13 != 5

@pytest.mark.parametrize("n", range(6))
def test_skip(n):
    if n % 2:
        pytest.skip(f"odd {n}")
"""

RERUN_MODULE = """
import os, pathlib

def _attempt(name):
    marker = pathlib.Path(os.environ["RERUN_MARKS"]) / name
    count = int(marker.read_text()) if marker.exists() else 0
    marker.write_text(str(count + 1))
    return count

def test_flaky():
    assert _attempt("flaky") >= 2, "not yet"

def test_always_fails():
    _attempt("always")
    assert False, "never passes"

def test_passes():
    pass
"""


def _run(
    tmp_path: Path,
    files: dict[str, str],
    *args: str,
    ini: str = "",
    flavour: str = "xunit1",
    ci: bool = False,
) -> tuple[list[dict[str, Any]], Path, str]:
    """pytest on ``files`` with the plugin streaming and pytest's writer on (``flavour``): the
    events, the file pytest wrote, and the flavour."""
    for name, source in files.items():
        (tmp_path / name).write_text(source)
    (tmp_path / "pytest.ini").write_text(f"[pytest]\njunit_family = {flavour}\n{ini}")
    events, junit = tmp_path / "events.jsonl", tmp_path / "pytest.xml"
    marks = tmp_path / "marks"
    marks.mkdir(exist_ok=True)
    env = dict(
        os.environ,
        QUALIFY_EVENTS=str(events),
        PYTEST_PLUGINS="harness.pytest_plugin",
        PYTHONPATH=str(ROOT),
        RERUN_MARKS=str(marks),
    )
    for name in ("CI", "BUILD_NUMBER", "PYTEST_ADDOPTS"):  # (CI: pytest explains in full)
        env.pop(name, None)
    if ci:
        env["CI"] = "true"
    argv = [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
            f"--junitxml={junit}", *args]  # fmt: skip
    subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, check=False, timeout=600)
    from qualify.rundir.events import read_jsonl

    return list(read_jsonl(events)), junit, flavour


def _canonical(element: Any, with_properties: bool, pytests: bool = False) -> tuple[Any, ...]:
    """A testcase element as compared: its name, classname, time as a number, location (if
    any), and its children (tag, attributes, text) in order. In ``pytests``, a message past
    the events' bound is cut there (pytest before 9 writes it whole; 9 shortens it itself)."""
    children = []
    for child in element:
        if child.tag == "properties" and not with_properties:
            continue
        if child.tag == "properties":
            pairs = tuple((p.get("name"), p.get("value")) for p in child)
            children.append(("properties", pairs))
            continue
        attributes = tuple(
            sorted(
                (name, value[:_MESSAGE_LIMIT] if pytests and name == "message" else value)
                for name, value in child.attrib.items()
            )
        )
        children.append((child.tag, attributes, child.text or ""))
    return (
        element.get("classname"),
        element.get("name"),
        round(float(element.get("time")), 3),
        element.get("file"),
        element.get("line"),
        tuple(children),
    )


def _testcases(document: bytes) -> list[Any]:
    return list(etree.fromstring(document).iter("testcase"))


def _compare(events: list[dict[str, Any]], junit: Path, flavour: str) -> list[Any]:
    """Both writers' testcases, canonical and sorted; asserts that they are equal. Returns
    them."""
    progress = progress_from_events(events)
    assert progress.session_exitstatus is not None and not progress.running
    with_location = flavour == "xunit1"
    ours_document = render_junit(
        "suite", list(progress.cases), {}, "", with_location, progress.suite_properties
    )
    suite_properties = [
        [(p.get("name"), p.get("value")) for p in etree.fromstring(document).iter("property")
         if p.getparent().getparent().tag == "testsuite"
         and not p.get("name").startswith("hypothesis-")]
        for document in (ours_document, junit.read_bytes())
    ]  # fmt: skip
    assert suite_properties[0] == suite_properties[1]
    if not with_location:
        SCHEMA.assertValid(etree.fromstring(ours_document))
    theirs_elements = _testcases(junit.read_bytes())
    # pytest's testcases of the attempts a plugin ran again (one per attempt), by the events'
    # count; pytest's second testcase of a test that failed, then failed its teardown.
    cases = parse_pytest_junit(junit) or []
    kept = {id(case) for case in last_attempts(cases, progress)}
    seen: Counter[tuple[str, str]] = Counter()
    theirs = []
    for case, element in zip(cases, theirs_elements, strict=True):
        key = (case.classname, case.name)
        seen[key] += 1
        second = seen[key] > 1 and (case.message or "").startswith('failed on teardown with "')
        if id(case) in kept and not second:
            theirs.append(_canonical(element, with_location, pytests=True))
    ours = [_canonical(element, with_location) for element in _testcases(ours_document)]
    theirs.sort(key=repr)
    ours.sort(key=repr)
    assert len(ours) == len(theirs)
    for mine, pytests in zip(ours, theirs, strict=True):
        assert mine == pytests
    return ours


@pytest.mark.parametrize("flavour", ["xunit2", "xunit1"])
@pytest.mark.parametrize("logging", ["no", "all", "out-err", "log"])
def test_varied_outcomes_as_pytest_writes_them(tmp_path: Path, flavour: str, logging: str) -> None:
    """Every outcome pytest words its own way, ids with ``::``, brackets, unicode, quotes and
    newlines, ``record_property``, captured output under each ``junit_logging``, a module
    that fails to collect and one skipped whole."""
    files = {"test_outcomes.py": OUTCOMES_MODULE, "test_more.py": MORE_OUTCOMES,
             "test_bad.py": BAD_MODULE, "test_whole_skip.py": SKIPPED_MODULE}  # fmt: skip
    ini = f"junit_logging = {logging}\n"
    events, junit, _ = _run(
        tmp_path, files, "--continue-on-collection-errors", ini=ini, flavour=flavour
    )
    ours = _compare(events, junit, flavour)
    suite = etree.parse(str(junit)).find("testsuite/properties")
    assert suite is not None and len(suite) == 2
    names = {case[1] for case in ours}
    assert {"test_bad", "test_whole_skip", "test_param[c&d]", "test_ids[a::b]"} <= names
    outputs = [child for case in ours for child in case[5] if child[0].startswith("system-")]
    assert bool(outputs) is (logging != "no")
    assert any(child[0] == "properties" for case in ours for child in case[5]) is (
        flavour == "xunit1"
    )


def test_failures_explained_in_full_as_pytest_writes_them(tmp_path: Path) -> None:
    """Where ``CI`` is set, pytest explains an assertion in full: a failure's text past 64 KiB
    is the one place the events' account is shorter (its first and last 32 KiB, each cut at a
    line or word boundary, or 256 characters further where there is none)."""
    huge = "def test_huge():\n    assert 'x' * 200_000 == 'y' * 200_000\n"
    _compare(*_run(tmp_path, {"test_outcomes.py": OUTCOMES_MODULE}, ci=True))
    alone = tmp_path / "alone"
    alone.mkdir()
    (end,) = [e for e in _run(alone, {"test_huge.py": huge}, ci=True)[0] if e.get("longrepr")]
    kept = len(end["longrepr"]) - len("\n[... truncated ...]\n")
    assert 64 * 1024 - 2 * 256 <= kept <= 64 * 1024


def test_passing_tests_unlogged_as_pytest_writes_them(tmp_path: Path) -> None:
    """``junit_log_passing_tests = false``: output only where pytest writes it then."""
    files = {"test_more.py": MORE_OUTCOMES}
    ini = "junit_logging = all\njunit_log_passing_tests = false\n"
    _compare(*_run(tmp_path, files, ini=ini, flavour="xunit2"))


def test_unittest_classes_as_pytest_writes_them(tmp_path: Path) -> None:
    ours = _compare(*_run(tmp_path, {"test_numbers.py": UNITTEST_MODULE}))
    assert {case[1] for case in ours} >= {"test_equal", "test_unequal", "test_unreached"}


def test_doctests_as_pytest_writes_them(tmp_path: Path) -> None:
    files = {"doubling.py": DOCTEST_MODULE}
    ours = _compare(*_run(tmp_path, files, "--doctest-modules", "doubling.py"))
    assert {case[1] for case in ours} == {"doubling.double", "doubling.wrong"}


def test_xdist_workers_as_pytest_writes_them(tmp_path: Path) -> None:
    events, junit, flavour = _run(tmp_path, {"test_spread.py": XDIST_MODULE}, "-n", "2")
    assert len({event["pid"] for event in events if event.get("event") == "test_phase"}) == 2
    assert len(_compare(events, junit, flavour)) == 46


def test_reruns_as_pytest_writes_their_last_attempts(tmp_path: Path) -> None:
    ours = _compare(*_run(tmp_path, {"test_attempts.py": RERUN_MODULE}, "--reruns", "2"))
    assert [(case[1], [child[0] for child in case[5]]) for case in ours] == [
        ("test_always_fails", ["failure"]),
        ("test_flaky", []),
        ("test_passes", []),
    ]


@pytest.mark.slow
def test_numpy_modules_as_pytest_writes_them(tmp_path: Path) -> None:
    """Two of numpy's own test modules (about 2,100 tests: parametrized ids, skips, an xfail
    and an xpass, numpy's conftest and plugins)."""
    modules = ("numpy.lib.tests.test_arraypad", "numpy.lib.tests.test_function_base")
    assert len(_compare(*_run(tmp_path, {}, "--pyargs", *modules))) > 2000
