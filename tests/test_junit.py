"""junit.xml: valid against the Jenkins junit-10 schema, counts consistent, escapes illegal XML."""

from __future__ import annotations

import random
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import junitparser
import junitparser.junitparser
import pytest
from lxml import etree

from qualify.evidence.junit import JUnitCase, parse_pytest_junit, split_nodeid
from qualify.judge.progress import progress_from_events
from qualify.report import junit as writer
from qualify.report.junit import provisional_junit, render_junit, xml_safe

SCHEMA = Path(__file__).resolve().parent / "data" / "schemas" / "junit-10.xsd"


@pytest.fixture(scope="module")
def schema() -> etree.XMLSchema:
    if not SCHEMA.exists():
        pytest.fail(f"the junit-10 schema is missing beside the checkout ({SCHEMA.name})")
    return etree.XMLSchema(etree.parse(str(SCHEMA)))


CASES = [
    JUnitCase("test_e2e", "test_ok", "passed", 1.25),
    JUnitCase("test_e2e", "test_bad", "failed", 0.5, "assert 1 == 2", "E   assert 1 == 2"),
    JUnitCase(
        "test_e2e",
        "test_oom",
        "error",
        0.0,
        "OOM_KILLED in phase build:decode",
        "peak 256 MiB",
        kind="OOM_KILLED",
    ),
    JUnitCase("test_e2e", "test_later", "skipped", message="not run: the run ended"),
    JUnitCase(
        "tiny.parity",
        "parity/p03",
        "failed",
        message="diverged at 7\x00\x1b[31m",
        text="bad \x08 bytes \ud800 here",
        kind="WRONG",
    ),
]


def test_valid_against_junit10_with_consistent_counts(schema: etree.XMLSchema) -> None:
    document = render_junit(
        "tiny", CASES, {"qualify.verdict": "OOM_KILLED"}, "2026-11-30T00:00:00Z"
    )
    tree = etree.fromstring(document)
    schema.assertValid(tree)
    suite = tree.find("testsuite")
    assert suite is not None
    assert (
        suite.get("tests"),
        suite.get("failures"),
        suite.get("errors"),
        suite.get("skipped"),
    ) == ("5", "2", "1", "1")
    assert tree.get("tests") == "5"


def test_illegal_characters_are_escaped() -> None:
    # As pytest writes them (#xNN, DEL too); but a surrogate standing for an undecodable byte
    # is that byte, another lone one \uXXXX (pytest cannot write such a name at all).
    assert xml_safe("a\x00b\x1bc\x7f\ud800\udcff") == "a#x00b#x1Bc#x7F\\ud800\\xff"
    document = render_junit("tiny", CASES, {}, "")
    failure = ET.fromstring(document).find(".//testcase[@name='parity/p03']/failure")
    assert failure is not None
    assert failure.get("message") == "diverged at 7#x00#x1B[31m"
    assert failure.text == "bad #x08 bytes \\ud800 here"


_HOSTILE = "ab &<>\"'\t\n\r\x00\x1b\x7f\ud800\ufffe\u2603\U0001d11e]]>"


def _text(rng: random.Random, most: int) -> str:
    return "".join(rng.choice(_HOSTILE) for _ in range(rng.randint(0, most)))


def _case(rng: random.Random) -> JUnitCase:
    return JUnitCase(
        _text(rng, 12),
        _text(rng, 12),
        rng.choice(["passed", "failed", "error", "skipped", "xpassed"]),
        rng.choice([0.0, 1.0, 0.0005, 0.0015, 2.5, rng.random() * 100, 1e-7, 12345.6789]),
        rng.choice([None, "", _text(rng, 30)]),
        rng.choice([None, "", _text(rng, 60)]),
        rng.choice([None, "", "tests/t.py", _text(rng, 8)]),
        rng.choice([None, 0, 17]),
        rng.choice([None, "", "OOM_KILLED", _text(rng, 6)]),
        rng.choice([(), ((_text(rng, 5), _text(rng, 9)), ("n", ""))]),
        rng.choice([(), (("system-out", _text(rng, 40)), ("system-err", ""))]),
    )


def test_the_direct_writer_writes_what_junitparser_writes_over_lxml() -> None:
    """render_junit builds the text itself; junitparser over lxml (what the dev install has)
    writes the same bytes for hostile names, messages, times and properties, with and without
    location, empty suites included; ElementTree's own quirks (``&#09;``, a raw CR in text)
    are not followed: the direct writer is the same whichever library is installed."""
    assert etree.__name__ == "lxml.etree"
    assert vars(junitparser.junitparser)["etree"] is etree
    rng = random.Random(20261201)
    for number in range(120):
        cases = [_case(rng) for _ in range(rng.choice([0, 1, 3, 12]))]
        properties = {_text(rng, 6): _text(rng, 20) for _ in range(rng.choice([0, 0, 2]))}
        suite, timestamp, located = (
            _text(rng, 8),
            rng.choice(["", "2026-12-01T10:00:00Z"]),
            bool(number % 2),
        )
        cases_xml = [writer.testcase(case, located) for case in cases]
        expected = writer.render(
            [writer.testsuite(suite, cases_xml, properties, timestamp, owned=True)]
        )
        assert render_junit(suite, cases, properties, timestamp, located) == expected, number


def test_a_passed_test_is_written_as_the_general_way_writes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A passed test's line, written at once when its names need no escape, is the line the
    general way writes (empty, bounded and hostile names, located or not)."""
    rng = random.Random(20261206)
    names = ["", "t", "a.b.C", "t[1-2]", "x" * 65_600, "x" * 65_700, *_HOSTILE]
    cases = [
        JUnitCase(
            rng.choice(names),
            rng.choice(names),
            rng.choice(["passed", "passed", "skipped", "xpassed"]),
            rng.choice([0.0, 1, 0.0005, 2.5, 12345.6789]),
            file=rng.choice([None, "t.py"]),
            line=rng.choice([None, 3]),
        )
        for _ in range(300)
    ]
    written = [render_junit("s", cases, {"k": "v"}, "", located) for located in (False, True)]
    monkeypatch.setattr(writer, "_attribute_plain", lambda value: False)
    assert [render_junit("s", cases, {"k": "v"}, "", located) for located in (False, True)] == (
        written
    )


@pytest.mark.parametrize(
    ("family", "message"),
    [
        ("tiny", "qualify did not finish (it was killed before it could write its report)"),
        ('a<&"b\x01', 'tab\tline\nreturn\r<&>"\x02 \u2603'),
        ("long", "x" * 70_000),
    ],
)
def test_provisional_junit_is_valid_and_written_without_junitparser(
    schema: etree.XMLSchema, family: str, message: str
) -> None:
    """The JUnit file written before the E2E starts: one error case, valid, its message kept
    (bounded), and junitparser never imported to write it."""
    code = (
        "import sys; from qualify.report.junit import provisional_junit; "
        "sys.stdout.buffer.write(provisional_junit(sys.argv[1], sys.argv[2])); "
        "assert 'junitparser' not in sys.modules"
    )
    written = subprocess.run(
        [sys.executable, "-c", code, family, message], capture_output=True, check=True
    ).stdout
    assert written == provisional_junit(family, message)
    assert schema.validate(etree.fromstring(provisional_junit(family, message)))
    error = ET.fromstring(provisional_junit(family, message)).find(".//testcase[@name='run']/error")
    assert error is not None and error.get("type") == "ERROR"
    assert error.text == xml_safe(message)


def test_xunit1_flavour_adds_location_only_on_request() -> None:
    case = JUnitCase("test_e2e", "test_ok", "passed", file="test_e2e.py", line=12)
    plain = ET.fromstring(render_junit("s", [case], {}, "")).find(".//testcase")
    located = ET.fromstring(render_junit("s", [case], {}, "", with_location=True)).find(
        ".//testcase"
    )
    assert plain is not None and "file" not in plain.attrib
    assert (
        located is not None and located.get("file") == "test_e2e.py" and located.get("line") == "11"
    )  # (0-based, as pytest writes it)


@pytest.mark.parametrize(
    ("nodeid", "expected"),
    [
        ("test_e2e.py::test_ok", ("test_e2e", "test_ok")),
        ("tests/unit/test_x.py::TestA::test_b[1-2]", ("tests.unit.test_x.TestA", "test_b[1-2]")),
        ("run", ("", "run")),
    ],
)
def test_split_nodeid_like_pytest(nodeid: str, expected: tuple[str, str]) -> None:
    assert split_nodeid(nodeid) == expected


def test_truncated_pytest_junit_is_not_used(tmp_path: Path) -> None:
    path = tmp_path / "pytest-junit.xml"
    path.write_text('<?xml version="1.0"?><testsuites><testsuite name="p"><testcase name="a"')
    assert parse_pytest_junit(path) is None
    assert parse_pytest_junit(tmp_path / "absent.xml") is None


def test_progress_names_the_running_test_and_the_never_started() -> None:
    events = [
        {"event": "collection", "nodeids": ["t.py::a", "t.py::b", "t.py::c"]},
        {"event": "test_phase", "state": "start", "nodeid": "t.py::a", "when": "setup"},
        {
            "event": "test_phase",
            "state": "end",
            "nodeid": "t.py::a",
            "when": "setup",
            "outcome": "passed",
        },
        {"event": "test_phase", "state": "start", "nodeid": "t.py::a", "when": "call"},
        {
            "event": "test_phase",
            "state": "end",
            "nodeid": "t.py::a",
            "when": "call",
            "outcome": "failed",
            "longrepr": "boom",
            "duration": 0.5,
        },
        {"event": "test_phase", "state": "start", "nodeid": "t.py::a", "when": "teardown"},
        {
            "event": "test_phase",
            "state": "end",
            "nodeid": "t.py::a",
            "when": "teardown",
            "outcome": "passed",
        },
        {"event": "test_phase", "state": "start", "nodeid": "t.py::b", "when": "setup"},
        {
            "event": "test_phase",
            "state": "end",
            "nodeid": "t.py::b",
            "when": "setup",
            "outcome": "passed",
        },
        {"event": "test_phase", "state": "start", "nodeid": "t.py::b", "when": "call"},
    ]
    progress = progress_from_events(events)
    assert progress.running == "t.py::b" and progress.running_when == "call"
    assert progress.not_run == ("t.py::c",)
    assert [(c.name, c.outcome, c.text) for c in progress.cases] == [("a", "failed", "boom")]
    assert progress.session_exitstatus is None


OUTCOMES_MODULE = """
import pytest

@pytest.fixture
def broken():
    raise RuntimeError("setup broke")

@pytest.fixture
def breaks_after():
    yield
    raise RuntimeError("teardown broke")

def test_passes():
    pass

def test_fails():
    assert 1 == 2, "one is not two"

def test_raises():
    raise ValueError("bad value 42")

def test_fails_explicitly():
    pytest.fail("explicit failure")

def test_setup_error(broken):
    pass

def test_teardown_error(breaks_after):
    pass

def test_fails_then_teardown_error(breaks_after):
    assert False, "failed first"

def test_skipped():
    pytest.skip("not here")

@pytest.mark.skip(reason="marked away")
def test_skip_marked():
    pass

@pytest.mark.xfail(reason="known bug")
def test_xfail():
    assert False

@pytest.mark.xfail(strict=True, reason="fixed now")
def test_xpass_strict():
    pass

@pytest.mark.xfail(reason="loosely broken")
def test_xpass():
    pass

def test_long_message():
    assert "x" * 6000 == "y", "long"

class TestGroup:
    @pytest.mark.parametrize("x", ["a<b", "c&d", "\u00fc"])
    def test_param(self, x):
        assert "&" not in x and x != "\u00fc"
"""
"""A pytest module with every outcome pytest's JUnit writer words its own way (also the
plugin's: ``tests/test_harness.py``)."""


def test_pytest_junit_is_read_as_junitparser_reads_it(tmp_path: Path) -> None:
    """A JUnit file pytest itself wrote, with every outcome it writes: the direct reading
    gives, case by case, what junitparser's objects give, and the outcomes decided here."""
    (tmp_path / "test_outcomes.py").write_text(OUTCOMES_MODULE)
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o",
         "junit_family=xunit1", "--junitxml=pytest-junit.xml", "test_outcomes.py"],
        cwd=tmp_path, capture_output=True, check=False,
    )  # fmt: skip
    path = tmp_path / "pytest-junit.xml"
    cases = parse_pytest_junit(path)
    assert cases is not None
    # A teardown error after a failure is a second testcase of the same name (pytest's way).
    assert [(case.name, case.outcome) for case in cases] == [
        ("test_passes", "passed"),
        ("test_fails", "failed"),
        ("test_raises", "failed"),
        ("test_fails_explicitly", "failed"),
        ("test_setup_error", "error"),
        ("test_teardown_error", "error"),
        ("test_fails_then_teardown_error", "failed"),
        ("test_fails_then_teardown_error", "error"),
        ("test_skipped", "skipped"),
        ("test_skip_marked", "skipped"),
        ("test_xfail", "skipped"),
        ("test_xpass_strict", "failed"),
        ("test_xpass", "passed"),
        ("test_long_message", "failed"),
        ("test_param[a<b]", "passed"),
        ("test_param[c&d]", "failed"),
        ("test_param[\\xfc]", "failed"),  # (pytest escapes what is not ASCII in ids)
    ]
    document = junitparser.JUnitXml.fromfile(str(path))
    expected = []
    for suite in document:
        for case in suite:
            kinds = (junitparser.Failure, junitparser.Error, junitparser.Skipped)
            first = [r for kind in kinds for r in case.result if isinstance(r, kind)][:1]
            expected.append(
                (
                    case.classname, case.name, case.time,
                    first[0].message if first else None, first[0].text if first else None,
                    case._elem.get("file"), case._elem.get("line"),
                )
            )  # fmt: skip
    # (pytest's line is 0-based; a case's is 1-based)
    read = [
        (c.classname, c.name, c.time_s, c.message, c.text, c.file, str(c.line - 1)) for c in cases
    ]
    assert read == expected
    assert all(case.file == "test_outcomes.py" and case.line for case in cases)


def test_qualifys_own_testcase_is_in_a_suite_of_its_own() -> None:
    """The family's suite counts the family's tests alone (as the audit and every report do);
    qualify's own testcase is in the ``qualify`` suite; the document's totals hold both."""
    from qualify.evidence.junit import JUnitCase, family_counts

    cases = [
        JUnitCase("test_e2e", "test_checkpoint", "failed", 1.0, "died", "E  died"),
        JUnitCase("test_e2e", "test_build", "skipped", 0.0, "not run: the run ended", None),
        JUnitCase("qualify", "run", "error", 0.0, "OOM_KILLED", "OOM_KILLED", kind="OOM_KILLED"),
    ]
    root = ET.fromstring(render_junit("tiny", cases, {"qualify.verdict": "OOM_KILLED"}, ""))
    family, own = root.findall("testsuite")
    counts = family_counts(cases)
    assert (family.get("name"), family.get("tests"), family.get("errors")) == ("tiny", "2", "0")
    assert family.get("failures") == str(counts["failed"]) == "1"
    assert family.find("properties/property").get("value") == "OOM_KILLED"  # type: ignore[union-attr]
    assert [case.get("classname") for case in own.iter("testcase")] == ["qualify"]
    assert (own.get("name"), own.get("tests"), own.get("errors")) == ("qualify", "1", "1")
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "1", "1")
