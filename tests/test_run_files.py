"""Reading the run's JSON-lines files fast without reading them differently.

``read_jsonl`` decodes whole chunks of lines in one parse and falls back to line by line where a
line is cut or garbled; the sanitizer's harvest reads a JSON-lines file as its distinct fields.
Each test states the records (or values) a line-by-line reading gives, and checks the fast path
gives exactly those.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from qualify.publish.bundle import JsonlFields, _jsonl_fields, learn_from_run
from qualify.publish.sanitize import Identities, Sanitizer
from qualify.rundir.events import read_all, read_jsonl

# A GitHub token shape (not a real one), built so that no scanner reads this file as a leak.
TOKEN = "ghp_" + "Zq7Lk2Wm9Xr4Tn6Vb1Hs8Jd3Fc5Gp0Ya2Ue7"


def test_garbled_blank_and_cut_lines_are_skipped_in_place(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(
        b'{"event": "a", "n": 1}\n'
        b"[1, 2]\n"  # valid JSON, not a record
        b'{"event": "b", \n'  # garbled
        b"\n"
        b'{"event": "c", "n": 3}\n'
        b'{"event": "d", "n"'  # the cut last line of a killed writer
    )
    assert [record["event"] for record in read_jsonl(path)] == ["a", "c"]


def test_a_garbled_line_deep_in_a_long_file_costs_only_itself(tmp_path: Path) -> None:
    lines = [json.dumps({"event": "test_phase", "i": i}) for i in range(20_000)]
    lines[12_345] = '{"event": "test_phase", "i": '
    (tmp_path / "events.jsonl").write_text("\n".join(lines) + "\n")
    indices = [record["i"] for record in read_jsonl(tmp_path / "events.jsonl")]
    assert indices == [i for i in range(20_000) if i != 12_345]


def test_containing_decodes_only_the_lines_that_hold_the_bytes(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(
        '{"event": "test_phase", "nodeid": "t::a"}\n'
        '{"event": "cuda_oom", "t": 3.0}\n'
        '{"event": "cuda_oom", \n'  # garbled: still skipped
        '{"event": "test_phase", "nodeid": "t::cuda_oom_case"}\n'
    )
    found = list(read_jsonl(path, containing=b"cuda_oom"))
    assert found == [
        {"event": "cuda_oom", "t": 3.0},
        {"event": "test_phase", "nodeid": "t::cuda_oom_case"},
    ]
    assert list(read_jsonl(tmp_path / "missing.jsonl")) == []


def _learnt(tmp_path: Path, events: str) -> set[str]:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "events.jsonl").write_text(events)
    sanitizer = Sanitizer({}, Identities())
    learn_from_run(run_dir, sanitizer)
    return {secret.value for secret in sanitizer.known}


def test_a_token_in_an_escaped_test_id_is_learnt_decoded(tmp_path: Path) -> None:
    escaped = TOKEN.replace("Z", "\\u005a", 1)  # JSON's escape of its first "Z"
    events = "".join(
        f'{{"event": "test_phase", "nodeid": "t::test_x[{escaped}]", "t": {t}}}\n'
        for t in (1.5, 2.5, 3.5)
    )
    assert TOKEN in _learnt(tmp_path, events)


def test_a_token_in_a_cut_line_is_learnt(tmp_path: Path) -> None:
    events = '{"event": "a"}\n{"event": "test_phase", "nodeid": "t::x[' + TOKEN + "]"
    assert TOKEN in _learnt(tmp_path, events)


def test_a_key_value_secret_split_over_fields_keeps_its_key(tmp_path: Path) -> None:
    # The key-value rules read the key before the value: the field keeps both.
    events = '{"event": "case", "password": "Xk2-rT9-wQ4-zL7"}\n'
    assert "Xk2-rT9-wQ4-zL7" in _learnt(tmp_path, events)


def test_fields_are_written_as_json_writes_them(tmp_path: Path) -> None:
    values = ["plain", 'quote " and \\ back', "tab\tnew\nline", "ünïcode ✓", "\x00\x1f\x7f", "🎉"]
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps({"event": "x", "nodeid": v}) + "\n" for v in values))
    expected = [json.dumps({"event": "x"}, ensure_ascii=False)]
    expected += [json.dumps({"nodeid": v}, ensure_ascii=False) for v in values]
    assert _jsonl_fields(read_all(path)).split("\n") == expected


def test_a_file_read_is_kept_while_it_is_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"event": "a"}\n{"event": "b", "n"')  # a writer killed mid-line
    first = read_all(path)
    assert [record["event"] for record in first.records()] == ["a"]
    assert first.garbled == (b'{"event": "b", "n"',)
    other = tmp_path / "timeline.jsonl"  # the report reads the timeline in between
    other.write_text('{"t": 1}\n')
    assert list(read_all(other).records()) == [{"t": 1}]
    assert read_all(path) is first
    with path.open("a") as handle:
        handle.write(': 2}\n{"event": "c"}\n')  # the same file, grown
    assert [record["event"] for record in read_all(path).records()] == ["a", "b", "c"]


def _file_bytes(rng: random.Random, count: int) -> bytes:
    """Lines of every kind a run's JSON-lines file holds: records (nested too), values that
    are not records, garbled and blank lines, CRLF endings; sometimes a cut last line."""
    lines = []
    for index in range(count):
        kind = rng.randrange(8)
        if kind == 0:
            lines.append(b'{"event": "test_phase", "nodeid": "t::x[')  # garbled
        elif kind == 1:
            lines.append(b"")
        elif kind == 2:
            lines.append(b"[1, 2]")
        elif kind == 3:
            lines.append(json.dumps({"event": "case", "top": [[index, "é"]]}).encode() + b"\r")
        else:
            record = {"event": "test_phase", "nodeid": f"t::test_{index}[✓]", "t": index / 3}
            lines.append(json.dumps(record, ensure_ascii=rng.random() < 0.5).encode())
    data = b"\n".join(lines) + b"\n"
    return data[: -rng.randrange(1, 12)] if rng.random() < 0.5 else data


def test_fields_gathered_in_parts_are_those_of_the_whole_file(tmp_path: Path) -> None:
    rng = random.Random(7)
    path = tmp_path / "events.jsonl"
    path.write_bytes(_file_bytes(rng, 400) + b'{"event": "x", "nodeid": "' + TOKEN.encode())
    content = read_all(path)
    whole = _jsonl_fields(content)
    assert TOKEN in whole  # the cut last line, whole
    for cut in (0, 1, 57, len(content.values)):
        fields = JsonlFields()
        fields.feed(content.values[:cut])
        fields.feed(content.values[cut:])
        assert fields.text(content.garbled) == whole


def test_a_line_nested_deeper_than_the_decoder_goes_is_garbled(tmp_path: Path) -> None:
    """json gives up near a thousand levels with RecursionError, not ValueError: such a line
    is garbled like a cut one, in the readers after the run and in the monitor's decoding of
    single lines."""
    from harness.contract import decode_line

    deep = b'{"event": "test_phase", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    data = b'{"event": "a"}\n' + deep + b'\n{"event": "b"}\n'
    path = tmp_path / "events.jsonl"
    path.write_bytes(data)
    content = read_all(path)
    assert (list(content.values), content.garbled) == ([{"event": "a"}, {"event": "b"}], (deep,))
    assert decode_line(deep) is None


def test_fields_of_a_value_of_any_depth(tmp_path: Path) -> None:
    value: object = TOKEN
    for _ in range(20_000):
        value = [value]
    fields = JsonlFields()
    fields.feed([{"event": "x", "nested": value}])
    assert fields.text().split("\n") == ['{"event": "x"}', json.dumps({"nested": TOKEN})]


def test_run_files_and_artifacts_nested_too_deep_read_as_not_json(tmp_path: Path) -> None:
    """The other readers of JSON a family or an artifact can hold: a run directory's JSON
    files, a pytest report log (one deep line among good ones) and the detection of one."""
    from qualify.evidence.detect import detect
    from qualify.evidence.pytest_reports import read_report_log
    from qualify.rundir import RunDir

    deep = "[" * 100_000 + "]" * 100_000
    (tmp_path / "gpu-nvml.json").write_text(deep)
    (tmp_path / "other.json").write_text(deep)
    assert RunDir(tmp_path).gpu_summary() is None
    assert RunDir(tmp_path).read_json("other.json") is None
    report = tmp_path / "report.jsonl"
    finish = '{"$report_type": "SessionFinish", "exitstatus": 1}\n'
    failed = '{"$report_type": "TestReport", "when": "call", "outcome": "failed", "nodeid": "t::x"}'
    report.write_text(failed + "\n" + '{"$report_type": ' + deep + "}\n" + finish)
    outcomes = read_report_log(report)
    assert (outcomes.tests, outcomes.exitstatus, outcomes.problem) == (1, 1, None)
    first = tmp_path / "first.jsonl"
    first.write_text('{"$report_type": ' + "[" * 5_000 + "]" * 5_000 + "}\n" + finish)
    assert detect(first) == "log"  # its first line is not a record


_PIECES = (
    "plain", "TestX::test_y[1-2]", "x", "", "Key", "pass", "tok", "en", "secret", "pwd:", "=>",
    '"', "'", "\\", "%41", "&amp;", "&#10;", "#x1B", "\x1b[31m", "\n", "\t", "\x00", "\xff",
    "\uffff", "é", "ghp_", "gl" "ab-", "://", "-----begin", "eyJ", "AKIA", "authoriz", "x-a",
    ": ", "{", "}", TOKEN, "password=hunter2hunter2", "api_key", "10.1.2.3", "fd12:3456::1",
)  # fmt: skip


def _texts(rng: random.Random, count: int) -> list[str]:
    return ["".join(rng.choices(_PIECES, k=rng.randint(0, 4))) for _ in range(count)]


def test_the_rules_conditions_touch_a_text_as_they_touch_it_alone() -> None:
    """What ``quiet_among`` finds of texts searched together (each search only where its
    start is) is what every condition's whole expression finds in each text alone, whatever its
    neighbours (the separators match no condition)."""
    from qualify.publish import sanitize, views

    def touched(text: str) -> bool:
        lowered = sanitize._lowered(text)
        return any(part.search(lowered) for part in sanitize._TRIGGER.parts) or any(
            pattern.search(haystack)
            for pattern, haystack in (
                (sanitize._KEY_WORD, lowered),
                (views.ESCAPE_START, text),
                (views.BREAK_HINT, text),
            )
        )

    rng = random.Random(20261206)
    for _ in range(300):
        texts = _texts(rng, rng.randint(1, 8))
        together = sanitize._rule_touched(texts)
        assert together == {number for number, text in enumerate(texts) if touched(text)}, texts
        sanitizer = Sanitizer({}, Identities())
        quiet = sanitizer.quiet_among(texts)
        assert quiet == {text for text in texts if not touched(text)}


def test_a_field_of_quiet_strings_holds_no_trigger_and_no_escape() -> None:
    """The harvest leaves out the fields whose key and value no condition of the rules touches
    (and that hold no quote): written as a line, such a field is one the harvest skips."""
    from qualify.publish import sanitize, views

    rng = random.Random(20261207)
    sanitizer = Sanitizer({}, Identities())
    for _ in range(2000):
        key, value = _texts(rng, 2)
        quiet = sanitizer.quiet_among([key, value])
        if key in quiet and value in quiet and '"' not in key + value:
            fields = JsonlFields()
            fields.feed([{key: value}])
            line = fields.text()
            assert sanitize._TRIGGER.search(sanitize._lowered(line)) is None, line
            assert views.ESCAPE_START.search(line) is None, line


def test_the_harvest_of_quiet_fields_left_out_learns_the_same() -> None:
    rng = random.Random(20261208)
    keys = ["event", "nodeid", "api_key", "password", "msg", 'k"q', "Authorization", "t"]
    for _ in range(40):
        records = [
            {rng.choice(keys): rng.choice([*_texts(rng, 1), 1, 2.5, None, [TOKEN, "x"]])}
            for _ in range(rng.randint(1, 12))
        ]
        fields = JsonlFields()
        fields.feed(records)
        learnt = []
        for reduced in (False, True):
            sanitizer = Sanitizer({}, Identities())
            quiet = sanitizer.quiet_among(fields.strings()) if reduced else ()
            sanitizer.harvest_records(fields.text((), quiet), "events.jsonl")
            learnt.append([(secret.value, secret.origin) for secret in sanitizer.known])
        assert learnt[0] == learnt[1], records


def test_only_the_lines_holding_the_bytes_are_read(tmp_path: Path) -> None:
    """``read_jsonl`` with ``containing``: a chunk that holds the bytes nowhere is not split;
    the records are those of the lines that hold them, a line cut at a chunk's end included."""
    path = tmp_path / "events.jsonl"
    lines = [json.dumps({"event": "x", "n": n, "pad": "p" * (n % 977)}) for n in range(6000)]
    lines[5999] = json.dumps({"event": "cuda_oom", "n": 5999})
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size > 2 << 20  # (several chunks)
    assert [r["n"] for r in read_jsonl(path, b"cuda_oom")] == [5999]
    assert list(read_jsonl(path, b"nowhere")) == []
    every = [r["n"] for r in read_jsonl(path, b'"pad"')]
    assert every == list(range(5999))


def test_phase_lines_are_read_within_the_limit_and_kept_while_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``read_events`` reads at most the limit, as ``read_all`` does (a file cut at the limit
    has a cut last line, and is read as ``read_all`` reads it), and keeps what it read while the
    file is unchanged; a file grown since is read again."""
    from harness import contract
    from qualify.rundir import events
    from qualify.rundir.events import PhaseLines, read_events

    stamp = (1796562007.246274, 23537.24671, 10240)
    line = contract.encode_test_start("call", "t.py::test_a", stamp)
    short = tmp_path / "short.jsonl"  # (under PHASES_FROM: read as read_all reads it)
    short.write_bytes(line * 40)
    assert repr(read_events(short)) == repr(read_all(short))
    monkeypatch.setattr(events, "PHASES_FROM", 0)  # (short files from here on)
    path = tmp_path / "events.jsonl"
    path.write_bytes(line * 40)
    cut = read_events(path, limit=len(line) * 10 + 5)
    assert not isinstance(cut, PhaseLines)
    assert repr(cut) == repr(read_all(path, limit=len(line) * 10 + 5))
    assert len(cut.values) == 10 and len(cut.garbled) == 1
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(line * 40)
    first = read_events(whole)
    assert isinstance(first, PhaseLines) and len(first.rows) == 40 and not first.others
    assert read_events(whole) is first
    with whole.open("ab") as handle:
        handle.write(b'{"event": "c"}\n')
    again = read_events(whole)
    assert isinstance(again, PhaseLines) and again.others == [{"event": "c"}]
