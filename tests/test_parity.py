"""Token parity: recorded parity.jsonl cases with known divergences, the gate, the command."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from qualify.commands.compare import compare
from qualify.parity import (
    CaseResult,
    DivergenceKind,
    ParityConfigError,
    ParityGate,
    ParityInputError,
    ParityReport,
    TokenRef,
    compare_files,
    junit_cases,
)
from qualify.parity.topk_bytes import find_topk_span, nth_element

Entry = tuple[int, float] | tuple[int, float, str]


def text_of(token_id: int) -> str:
    """The decoded text every test token has: ' t<id>'."""
    return f" t{token_id}"


def default_step(token_id: int) -> list[Entry]:
    """A confident step: the generated token is top-1 by 2 nats, then four others."""
    others: list[Entry] = [(9000 + rank, -2.1 - rank, text_of(9000 + rank)) for rank in range(4)]
    return [(token_id, -0.1, text_of(token_id)), *others]


def case(
    case_id: str,
    side: str,
    token_ids: Sequence[int],
    *,
    eos: bool = True,
    steps: Mapping[int, Sequence[Entry]] | None = None,
    token_texts: bool = True,
) -> dict[str, object]:
    """One parity.jsonl record in the harness's format and key order."""
    overrides = steps or {}
    texts = [text_of(token) for token in token_ids]
    return {
        "event": "case",
        "case_id": case_id,
        "side": side,
        "prompt": f"prompt of {case_id}",
        "token_ids": list(token_ids),
        "token_texts": texts if token_texts else None,
        "text": "".join(texts),
        "top_logprobs": [
            [list(entry) for entry in overrides.get(index, default_step(token))]
            for index, token in enumerate(token_ids)
        ],
        "eos": eos,
        "t": 1733.25,
        "mono": 12.5,
        "pid": 4242,
    }


def jsonl(records: Sequence[object], **dumps: Any) -> str:
    """Lines as the harness writes them: compact JSON, one object per line."""
    options = dumps or {"separators": (",", ":")}
    return "".join(json.dumps(record, **options) + "\n" for record in records)


def write(path: Path, *records: object, tail: str = "") -> Path:
    path.write_text(jsonl(records) + tail, encoding="utf-8")
    return path


def pair(
    case_id: str,
    native: Sequence[int],
    reference: Sequence[int],
    *,
    ref_steps: Mapping[int, Sequence[Entry]] | None = None,
    token_texts: bool = True,
) -> tuple[dict[str, object], dict[str, object]]:
    """(native record, reference record) of one case; ``ref_steps`` set the reference top-k."""
    return (
        case(case_id, "native", native, token_texts=token_texts),
        case(case_id, "reference", reference, steps=ref_steps, token_texts=token_texts),
    )


def run_one(tmp_path: Path, native: dict[str, object], reference: dict[str, object]) -> CaseResult:
    report = compare_files(write(tmp_path / "parity.jsonl", native, reference), None, ParityGate())
    assert len(report.per_case) == 1
    return report.per_case[0]


# -- the divergence table -------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One recorded case and what comparing it must give."""

    native: list[int]
    reference: list[int]
    kind: DivergenceKind
    first_divergence: int | None
    native_eos: bool = True
    reference_eos: bool = True
    reference_steps: dict[int, list[Entry]] = field(default_factory=dict)
    native_rank: int | None = None
    native_gap: float | None = None


TIE_STEP: list[Entry] = [(3, 0.0, " t3"), (9, -0.0001, " t9"), (8, -3.0, " t8")]
ROWS = {
    "exact": Row([1, 2, 3], [1, 2, 3], DivergenceKind.EXACT, None),
    "tie (gap exactly tie_nats)": Row(
        [1, 2, 9],
        [1, 2, 3],
        DivergenceKind.TIE,
        2,
        reference_steps={2: TIE_STEP},
        native_rank=2,
        native_gap=0.0001,
    ),
    "near tie": Row(
        [1, 2, 9],
        [1, 2, 3],
        DivergenceKind.NEAR_TIE,
        2,
        reference_steps={2: [(3, -0.5, " t3"), (9, -0.75, " t9")]},
        native_rank=2,
        native_gap=0.25,
    ),
    "wrong at exactly near_tie_nats": Row(
        [1, 2, 9],
        [1, 2, 3],
        DivergenceKind.WRONG,
        2,
        reference_steps={2: [(3, -0.5, " t3"), (9, -1.0, " t9")]},
        native_rank=2,
        native_gap=0.5,
    ),
    "wrong: rank 3 although top-1 and top-2 tie": Row(
        [1, 2, 8],
        [1, 2, 3],
        DivergenceKind.WRONG,
        2,
        reference_steps={2: TIE_STEP},
        native_rank=3,
        native_gap=3.0,
    ),
    "wrong: outside the top-k": Row([7, 2], [1, 2], DivergenceKind.WRONG, 0),
    "reference stops early at EOS": Row([1, 2, 3], [1, 2], DivergenceKind.EOS, 2),
    "native stops early at EOS": Row([1, 2], [1, 2, 3], DivergenceKind.EOS, 2),
    "native cut without EOS": Row(
        [1, 2, 3], [1, 2, 3, 4], DivergenceKind.LENGTH, 3, native_eos=False
    ),
    "reference cut without EOS": Row(
        [1, 2, 3], [1, 2], DivergenceKind.LENGTH, 2, reference_eos=False
    ),
    "same tokens, only one saw EOS": Row(
        [1, 2], [1, 2], DivergenceKind.EOS, 2, reference_eos=False
    ),
    "native empty": Row([], [5, 6], DivergenceKind.EOS, 0),
    "native empty without EOS": Row([], [5], DivergenceKind.LENGTH, 0, native_eos=False),
    "reference empty": Row([5], [], DivergenceKind.EOS, 0),
    "both empty": Row([], [], DivergenceKind.EXACT, None),
    "both empty, EOS differs": Row([], [], DivergenceKind.EOS, 0, native_eos=False),
}


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_divergence_table(tmp_path: Path, row: Row) -> None:
    native = case("c", "native", row.native, eos=row.native_eos)
    reference = case(
        "c", "reference", row.reference, eos=row.reference_eos, steps=row.reference_steps
    )
    result = run_one(tmp_path, native, reference)
    assert (result.kind, result.first_divergence) == (row.kind, row.first_divergence)
    assert result.exact is (row.kind is DivergenceKind.EXACT)
    assert result.native_rank == row.native_rank
    if row.native_gap is None:
        assert result.native_gap is None
    else:
        assert result.native_gap == pytest.approx(row.native_gap, abs=1e-12)
    index = row.first_divergence
    if index is not None:
        native_token = row.native[index] if index < len(row.native) else None
        reference_token = row.reference[index] if index < len(row.reference) else None
        assert (result.native_token and result.native_token.token_id) == native_token
        assert (result.reference_token and result.reference_token.token_id) == reference_token
        assert [token.token_id for token in result.context] == row.reference[
            max(0, index - 5) : index
        ]


def test_tie_records_the_reference_topk_with_gaps(tmp_path: Path) -> None:
    native, reference = pair("c", [1, 2, 9], [1, 2, 3], ref_steps={2: TIE_STEP})
    result = run_one(tmp_path, native, reference)
    assert [(e.token_id, e.logprob, e.text) for e in result.reference_topk] == [
        (3, 0.0, " t3"),
        (9, -0.0001, " t9"),
        (8, -3.0, " t8"),
    ]
    assert [e.gap for e in result.reference_topk] == [0.0, 0.0001, 3.0]
    assert result.top_gap == 0.0001
    assert result.native_in_ref_topk is True
    assert (result.native_token, result.reference_token) == (TokenRef(9, " t9"), TokenRef(3, " t3"))
    assert result.native is not None and result.reference is not None
    assert (result.native.length, result.native.eos, result.reference.length) == (3, True, 3)


def test_native_outside_topk_is_wrong_and_says_so(tmp_path: Path) -> None:
    result = run_one(tmp_path, *pair("c", [1, 777], [1, 2]))
    assert (result.kind, result.native_rank, result.native_in_ref_topk) == (
        DivergenceKind.WRONG,
        None,
        False,
    )
    assert result.native_token is not None and result.native_token.text == " t777"


def test_thresholds_come_from_the_gate(tmp_path: Path) -> None:
    steps = {0: [(3, -0.5, " t3"), (9, -0.75, " t9")]}  # gap 0.25
    path = write(tmp_path / "p.jsonl", *pair("c", [9], [3], ref_steps=steps))
    assert compare_files(path, None, ParityGate(near_tie_nats=0.25)).wrong == 1
    assert compare_files(path, None, ParityGate(near_tie_nats=0.3)).near_tie == 1
    assert compare_files(path, None, ParityGate(tie_nats=0.25, near_tie_nats=0.3)).tie == 1


def test_text_comes_from_the_topk_when_token_texts_is_null(tmp_path: Path) -> None:
    native, reference = pair(
        "c",
        [1, 9],
        [1, 3],
        token_texts=False,
        ref_steps={1: [(3, -0.5, " three"), (9, -0.6, " nine")]},
    )
    result = run_one(tmp_path, native, reference)
    assert result.native_token == TokenRef(9, " nine")
    assert result.reference_token == TokenRef(3, " three")
    assert [token.text for token in result.context] == [None]


def test_pairs_without_text_are_accepted(tmp_path: Path) -> None:
    native, reference = pair("c", [9], [3], ref_steps={0: [(3, -0.5), (9, -0.6)]})
    result = run_one(tmp_path, native, reference)
    assert result.kind is DivergenceKind.NEAR_TIE
    assert [entry.text for entry in result.reference_topk] == [None, None]
    assert result.native_token is not None and result.native_token.text == " t9"


# -- missing sides, duplicates, corpus order ------------------------------------------------


def test_missing_sides_and_corpus_order(tmp_path: Path) -> None:
    path = write(
        tmp_path / "p.jsonl",
        case("only-native", "native", [1]),
        case("b", "native", [1]),
        case("b", "reference", [1]),
        case("only-reference", "reference", [1]),
        case("a", "reference", [2]),
        case("a", "native", [2]),
    )
    report = compare_files(path, None, ParityGate())
    assert [(r.case_id, r.kind) for r in report.per_case] == [
        ("b", DivergenceKind.EXACT),
        ("only-reference", DivergenceKind.MISSING),
        ("a", DivergenceKind.EXACT),
        ("only-native", DivergenceKind.MISSING),
    ]
    missing = {r.case_id: r for r in report.per_case if r.kind is DivergenceKind.MISSING}
    assert missing["only-reference"].native is None and missing["only-native"].reference is None
    assert (report.cases, report.reference_cases, report.exact, report.missing) == (4, 3, 2, 2)
    assert report.warnings == (
        "case 'only-native' was recorded by the native side only: the gate does not count it",
    )
    assert not report.passed


def test_duplicate_case_id_last_wins_with_warning(tmp_path: Path) -> None:
    path = write(
        tmp_path / "p.jsonl",
        case("c", "native", [1, 7]),
        case("c", "reference", [1, 2]),
        case("c", "native", [1, 2]),
    )
    report = compare_files(path, None, ParityGate())
    assert [r.kind for r in report.per_case] == [DivergenceKind.EXACT]
    native = report.per_case[0].native
    assert native is not None and native.record.line == 3
    assert report.warnings == (
        f"{path}:3: case 'c' (native) recorded again (first at line 1); the last record wins",
    )


def test_other_events_and_blank_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(
        '{"event":"meta","engine":"x"}\n\n' + jsonl(pair("c", [1], [1])) + "   \n",
        encoding="utf-8",
    )
    report = compare_files(path, None, ParityGate())
    assert (report.exact, report.warnings) == (1, ())


def test_record_location_reads_the_line_back(tmp_path: Path) -> None:
    path = write(tmp_path / "p.jsonl", *pair("a", [1], [1]), *pair("b", [1, 2], [1, 3]))
    result = compare_files(path, None, ParityGate()).per_case[1]
    assert result.reference is not None
    location = result.reference.record
    with path.open("rb") as handle:
        handle.seek(location.offset)
        line = handle.read(location.length)
    assert line.endswith(b"\n") and location.line == 4
    assert json.loads(line)["token_ids"] == [1, 3]


# -- bad input --------------------------------------------------------------------------------


def test_malformed_json_in_the_middle_names_the_line(tmp_path: Path) -> None:
    native, reference = pair("c", [1], [1])
    path = write(tmp_path / "p.jsonl", native)
    with path.open("a") as handle:
        handle.write('{"event":"case","case_id":"x" "side":"native"}\n' + jsonl([reference]))
    with pytest.raises(ParityInputError) as raised:
        compare_files(path, None, ParityGate())
    assert str(raised.value) == f"{path}:2: not valid JSON (Expecting ',' delimiter)"


def test_a_line_nested_deeper_than_json_goes_names_the_line(tmp_path: Path) -> None:
    """json raises RecursionError near a thousand levels: the same one-line error as any line
    that is not JSON, in the record and in its top-k read on demand."""
    native, reference = pair("c", [1], [1])
    path = write(tmp_path / "p.jsonl", native)
    with path.open("a") as handle:
        handle.write('{"event": "case", "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
        handle.write(jsonl([reference]))
    with pytest.raises(ParityInputError) as raised:
        compare_files(path, None, ParityGate())
    assert str(raised.value) == f"{path}:2: not valid JSON (nested deeper than the decoder goes)"
    native, reference = pair("c", [9], [3])  # the reference's top-k is read where they diverge
    first_step = '"top_logprobs":[[[3,'
    assert first_step in jsonl([reference])
    deep_step = "[" * 100_000 + "]" * 100_000
    deep = jsonl([reference]).replace(first_step, '"top_logprobs":[' + deep_step + ",[[3,", 1)
    path = tmp_path / "q.jsonl"
    path.write_text(jsonl([native]) + deep)
    with pytest.raises(ParityInputError) as raised:
        compare_files(path, None, ParityGate())
    expected = "field 'top_logprobs' is not valid JSON (nested deeper than the decoder goes)"
    assert str(raised.value) == f"{path}:2: {expected}"


def test_malformed_topk_in_the_middle_names_the_line(tmp_path: Path) -> None:
    native, reference = pair("c", [1, 2], [1, 2])
    broken = jsonl([native]).replace("]],[[", "]],[", 1)  # a bracket lost in top_logprobs
    path = tmp_path / "p.jsonl"
    path.write_text(jsonl([reference]) + broken + jsonl([case("d", "native", [1])]))
    with pytest.raises(ParityInputError, match=r"p\.jsonl:2: not valid JSON \("):
        compare_files(path, None, ParityGate())


def test_truncated_last_line_is_tolerated_with_a_warning(tmp_path: Path) -> None:
    native, reference = pair("c", [1, 2], [1, 2])
    cut = jsonl([case("d", "native", [1, 2, 3])])[:150]
    path = write(tmp_path / "p.jsonl", native, reference, tail=cut)
    report = compare_files(path, None, ParityGate())
    assert (report.exact, report.cases, report.passed) == (1, 1, True)
    assert len(report.warnings) == 1
    assert report.warnings[0].startswith(f"{path}:3: not valid JSON (")
    assert report.warnings[0].endswith("the last line is truncated and was ignored")


BAD_FIELDS = {
    "token_ids strings": ({"token_ids": ["a"]}, "field 'token_ids' must be a list of integers"),
    "token_ids bools": ({"token_ids": [True]}, "field 'token_ids' must be a list of integers"),
    "token_ids not a list": ({"token_ids": 3}, "field 'token_ids' must be a list of integers"),
    "side": ({"side": "nativ"}, "field 'side' must be 'native' or 'reference', not 'nativ'"),
    "eos": ({"eos": "yes"}, "field 'eos' must be true or false"),
    "case_id": ({"case_id": 5}, "field 'case_id' must be a non-empty string"),
    "missing eos": ({"eos": None}, "field 'eos' is missing"),
    "token_texts length": (
        {"token_texts": [" a"]},
        "field 'token_texts' has 1 entries for 2 token ids",
    ),
    "top_logprobs not a list": ({"top_logprobs": {}}, "field 'top_logprobs' must be a list"),
    "prompt": ({"prompt": 3}, "field 'prompt' must be a string or null"),
    "not an object": (None, "not a JSON object"),
}


@pytest.mark.parametrize(("change", "message"), BAD_FIELDS.values(), ids=BAD_FIELDS.keys())
def test_wrong_field_types_name_file_line_and_field(
    tmp_path: Path, change: dict[str, object] | None, message: str
) -> None:
    native, reference = pair("c", [1, 2], [1, 2])
    bad: Any = [1, 2]
    if change is not None:
        bad = {**reference, **change}
        if change.get("eos", 0) is None:
            del bad["eos"]
    path = write(tmp_path / "p.jsonl", native, bad, case("d", "native", [1]))
    with pytest.raises(ParityInputError) as raised:
        compare_files(path, None, ParityGate())
    assert str(raised.value) == f"{path}:2: {message}"


def test_bad_topk_entry_at_the_divergence_step(tmp_path: Path) -> None:
    string_id: Any = ("3", -0.1)
    native, reference = pair("c", [9], [3], ref_steps={0: [string_id]})
    path = write(tmp_path / "p.jsonl", native, reference)
    with pytest.raises(ParityInputError) as raised:
        compare_files(path, None, ParityGate())
    assert str(raised.value) == (
        f"{path}:2: field 'top_logprobs' step 0 must be a list of [token_id, logprob] or "
        "[token_id, logprob, text] entries"
    )


def test_missing_topk_step_at_a_token_divergence(tmp_path: Path) -> None:
    native, reference = pair("c", [1, 9], [1, 3])
    reference["top_logprobs"] = [[list(entry) for entry in default_step(1)]]
    path = write(tmp_path / "p.jsonl", native, reference)
    with pytest.raises(ParityInputError, match=r"p\.jsonl:2: field 'top_logprobs' has no step 1"):
        compare_files(path, None, ParityGate())


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ParityInputError) as raised:
        compare_files(tmp_path / "absent.jsonl", None, ParityGate())
    assert (
        str(raised.value)
        == f"{tmp_path / 'absent.jsonl'}: cannot be read (No such file or directory)"
    )


# -- the byte-level shortcut must never change a result ------------------------------------

TRICKY_TEXTS = [']]],"eos":true}', '"\\', ":", '"top_logprobs":[', "}", '\\":']


@pytest.mark.parametrize(
    "dumps",
    [{"separators": (",", ":")}, {}, {"indent": None, "separators": (" , ", " : ")}],
    ids=["harness-compact", "json-default", "spaced"],
)
@pytest.mark.parametrize("order", ["harness", "topk-last", "topk-first"])
def test_serialization_and_hostile_texts_do_not_change_results(
    tmp_path: Path, dumps: dict[str, object], order: str
) -> None:
    step: list[Entry] = [(3, -0.5, TRICKY_TEXTS[0]), (9, -0.75, TRICKY_TEXTS[1])]
    records = []
    for side, tokens in (("native", [1, 9]), ("reference", [1, 3])):
        record = case("c", side, tokens, steps={1: step})
        record["token_texts"] = TRICKY_TEXTS[2:4]
        topk = record.pop("top_logprobs")
        if order == "topk-first":
            record = {"top_logprobs": topk, **record}
        else:
            record["top_logprobs"] = topk
            if order == "harness":
                record["eos"] = record.pop("eos")
        records.append(record)
    path = tmp_path / "p.jsonl"
    path.write_text(jsonl(records, **dumps), encoding="utf-8")
    result = compare_files(path, None, ParityGate()).per_case[0]
    assert (result.kind, result.first_divergence, result.native_rank) == (
        DivergenceKind.NEAR_TIE,
        1,
        2,
    )
    assert [entry.text for entry in result.reference_topk] == TRICKY_TEXTS[:2]
    assert result.context[0].text == TRICKY_TEXTS[2]


def test_find_topk_span_is_exact_or_declines() -> None:
    line = jsonl([case("c", "native", [1, 2])]).encode()
    span = find_topk_span(line)
    assert span is not None
    assert json.loads(line[span[0] : span[1]]) == json.loads(line)["top_logprobs"]
    # A token text that looks like the array's end followed by a key: the scan declines (the
    # caller then parses the whole line) rather than guess.
    hostile = line.replace(b'" t9000"', b'"]]],\\"k\\":"', 1)
    assert hostile != line and json.loads(hostile)["top_logprobs"][0][1][2] == ']]],"k":'
    assert find_topk_span(hostile) is None
    # Brackets inside a text that no key follows: they unbalance the count, so it declines too.
    inside = line.replace(b'" t9001"', b'"x]]]y"', 1)
    assert inside != line and find_topk_span(inside) is None
    assert find_topk_span(b'{"top_logprobs": [[[1, -0.5]], [[2') is None
    assert find_topk_span(b'{"top_logprobs":[],"eos":true}') == (16, 18)


def test_nth_element_parses_only_up_to_the_step() -> None:
    array = b"[[1], [2] ,[3]  ]"
    assert [nth_element(array, index) for index in range(4)] == [[1], [2], [3], None]
    assert nth_element(b"[ ]", 0) is None
    # Whatever lies past the step asked for is not read.
    assert nth_element(b"[[1], not json", 0) == [1]


# -- the gate -----------------------------------------------------------------------------------


def corpus(tmp_path: Path, exact: int, near_tie: int = 0, wrong: int = 0, tie: int = 0) -> Path:
    """A parity.jsonl with that many cases of each kind (ids e0.., n0.., w0.., t0..)."""
    records: list[dict[str, object]] = []
    near = {0: [(3, -0.5, " t3"), (9, -0.75, " t9")]}
    for index in range(exact):
        records += pair(f"e{index}", [1, 2], [1, 2])
    for index in range(near_tie):
        records += pair(f"n{index}", [9], [3], ref_steps=near)
    for index in range(tie):
        records += pair(f"t{index}", [9], [3], ref_steps={0: TIE_STEP})
    for index in range(wrong):
        records += pair(f"w{index}", [9], [3])
    return write(tmp_path / "p.jsonl", *records)


@pytest.mark.parametrize(
    ("exact", "gate", "passed"),
    [
        (9, ParityGate(min_exact=9), True),
        (8, ParityGate(min_exact=9), False),
        (8, ParityGate(min_exact=9, count_near_ties=True), True),
        (7, ParityGate(min_exact=9, count_near_ties=True), False),
        (10, ParityGate(), True),
        (9, ParityGate(), False),
        (9, ParityGate(min_exact=0), True),
    ],
)
def test_gate_at_min_exact_and_one_below(
    tmp_path: Path, exact: int, gate: ParityGate, passed: bool
) -> None:
    # Ten reference cases: `exact` exact, one near tie (when there is room), the rest wrong.
    near_tie = min(1, 10 - exact)
    report = compare_files(corpus(tmp_path, exact, near_tie, 10 - exact - near_tie), None, gate)
    assert (report.reference_cases, report.exact, report.near_tie) == (10, exact, near_tie)
    assert report.passed is passed and bool(report) is passed


@pytest.mark.parametrize(("count_near_ties", "passed"), [(False, False), (True, True)])
def test_count_near_ties_counts_ties_too(
    tmp_path: Path, count_near_ties: bool, passed: bool
) -> None:
    gate = ParityGate(min_exact=10, count_near_ties=count_near_ties)
    report = compare_files(corpus(tmp_path, 8, near_tie=1, tie=1), None, gate)
    assert (report.exact, report.tie, report.near_tie) == (8, 1, 1)
    assert (report.acceptable, report.passed) == (10 if count_near_ties else 8, passed)


def test_gate_reason_lines(tmp_path: Path) -> None:
    path = corpus(tmp_path, 8, 1, 1)
    assert compare_files(path, None, ParityGate(min_exact=9)).reason == (
        "8 of 10 reference cases exact (need 9)"
    )
    assert compare_files(path, None, ParityGate(min_exact=9, count_near_ties=True)).reason == (
        "9 of 10 reference cases exact or tied (need 9)"
    )
    assert compare_files(path, None, ParityGate(min_exact=11)).reason == (
        "8 of 10 reference cases exact (need 11): min_exact 11 exceeds the cases recorded"
    )


def test_gate_fails_without_reference_cases(tmp_path: Path) -> None:
    path = write(tmp_path / "p.jsonl", case("c", "native", [1]))
    report = compare_files(path, None, ParityGate(min_exact=0))
    assert not report.passed
    assert report.reason == "no reference cases were recorded: nothing to compare against"
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert not compare_files(empty, None, ParityGate(min_exact=0)).passed


def test_report_counts_and_to_dict(tmp_path: Path) -> None:
    steps = {0: TIE_STEP}
    path = write(
        tmp_path / "p.jsonl",
        *pair("exact", [1], [1]),
        *pair("tie", [9], [3], ref_steps=steps),
        *pair("wrong", [7], [3]),
        *pair("eos", [1, 2], [1]),
        case("gone", "reference", [1]),
    )
    report = compare_files(path, None, ParityGate(min_exact=1))
    audit: Any = report.to_dict()
    assert json.loads(json.dumps(audit, allow_nan=False)) == audit
    counts = ("cases", "reference_cases", "exact", "tie", "near_tie", "wrong", "length_or_eos")
    assert [audit[key] for key in counts] == [5, 5, 1, 1, 0, 1, 1]
    assert [audit[key] for key in ("missing", "acceptable", "required", "passed")] == [
        1, 1, 1, True
    ]  # fmt: skip
    assert audit["gate"] == {
        "min_exact": 1,
        "near_tie_nats": 0.5,
        "count_near_ties": False,
        "tie_nats": 0.0001,
        "false_fail_probability": None,
        "suggested_min_exact": None,
    }
    assert audit["noise"] is None
    lines = path.read_bytes().splitlines(keepends=True)
    per_case = {entry["case_id"]: entry for entry in audit["per_case"]}
    assert per_case["tie"] == {
        "case_id": "tie",
        "exact": False,
        "kind": "tie",
        "first_divergence": 0,
        "native_token": {"id": 9, "text": " t9"},
        "reference_token": {"id": 3, "text": " t3"},
        "native_in_ref_topk": True,
        "native_rank": 2,
        "native_gap": 0.0001,
        "top_gap": 0.0001,
        "reference_topk": [
            {"token_id": 3, "logprob": 0.0, "text": " t3", "gap": 0.0},
            {"token_id": 9, "logprob": -0.0001, "text": " t9", "gap": 0.0001},
            {"token_id": 8, "logprob": -3.0, "text": " t8", "gap": 3.0},
        ],
        "context": [],
        "native": {
            "length": 1,
            "eos": True,
            "record": {
                "file": str(path),
                "line": 3,
                "offset": len(lines[0]) + len(lines[1]),
                "length": len(lines[2]),
            },
        },
        "reference": {
            "length": 1,
            "eos": True,
            "record": {
                "file": str(path),
                "line": 4,
                "offset": len(b"".join(lines[:3])),
                "length": len(lines[3]),
            },
        },
        "teacher_forced": None,
        "divergence_probability": None,
    }
    assert (per_case["exact"]["kind"], per_case["exact"]["first_divergence"]) == ("exact", None)
    assert per_case["gone"]["native"] is None and per_case["gone"]["kind"] == "missing"
    assert per_case["eos"]["kind"] == "eos" and per_case["eos"]["native_in_ref_topk"] is None


def test_non_finite_logprobs_become_null_in_the_audit(tmp_path: Path) -> None:
    steps = {0: [(3, -0.1, " t3"), (9, float("-inf"), " t9")]}
    report = compare_files(
        write(tmp_path / "p.jsonl", *pair("c", [9], [3], ref_steps=steps)), None, ParityGate()
    )
    entry = json.loads(json.dumps(report.to_dict()))["per_case"][0]
    assert entry["kind"] == "wrong" and entry["native_gap"] is None
    assert entry["reference_topk"][1]["logprob"] is None


# -- ParityGate.from_table --------------------------------------------------------------------


def test_gate_from_table() -> None:
    assert ParityGate.from_table({}) == ParityGate()
    assert ParityGate.from_table(
        {"min_exact": 9, "near_tie_nats": 1, "count_near_ties": True, "tie_nats": 0.001}
    ) == ParityGate(9, 1.0, True, 0.001)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            {"min_exakt": 9},
            "unknown key 'min_exakt' (valid keys: min_exact, near_tie_nats, count_near_ties, "
            "tie_nats)",
        ),
        ({"min_exact": "9"}, "min_exact = '9' must be an integer"),
        ({"min_exact": True}, "min_exact = True must be an integer"),
        ({"min_exact": 9.0}, "min_exact = 9.0 must be an integer"),
        ({"min_exact": -1}, "min_exact = -1 must not be negative"),
        ({"near_tie_nats": "0.5"}, "near_tie_nats = '0.5' must be a number (nats)"),
        ({"near_tie_nats": -0.5}, "near_tie_nats = -0.5 must be a finite number >= 0"),
        ({"tie_nats": float("nan")}, "tie_nats = nan must be a finite number >= 0"),
        ({"count_near_ties": 1}, "count_near_ties = 1 must be true or false"),
        ({"tie_nats": 1.0}, "tie_nats = 1.0 must not exceed near_tie_nats = 0.5"),
    ],
)
def test_gate_from_table_errors(table: dict[str, object], message: str) -> None:
    with pytest.raises(ParityConfigError) as raised:
        ParityGate.from_table(table)
    assert str(raised.value) == message
    assert isinstance(raised.value, ValueError)


# -- two files --------------------------------------------------------------------------------


def test_two_file_mode_takes_the_side_the_position_names(tmp_path: Path) -> None:
    native_path = write(
        tmp_path / "native.jsonl",
        case("a", "native", [1, 2]),
        case("a", "reference", [5, 5]),  # ignored: this file gives the native side
        case("b", "native", [1, 9]),
    )
    reference_path = write(
        tmp_path / "reference.jsonl",
        case("a", "reference", [1, 2]),
        case("b", "native", [0]),  # ignored
        case("b", "reference", [1, 3]),
    )
    report = compare_files(native_path, reference_path, ParityGate(min_exact=1))
    assert [(r.case_id, r.kind.value) for r in report.per_case] == [("a", "exact"), ("b", "wrong")]
    wrong = report.per_case[1].reference
    assert wrong is not None and wrong.record.path == reference_path
    assert report.warnings == (
        f"{native_path}: 1 record(s) of the other side ignored: this file gives the native side",
        f"{reference_path}: 1 record(s) of the other side ignored: this file gives the "
        "reference side",
    )
    assert report.passed


# -- failure message --------------------------------------------------------------------------


def test_failure_message(tmp_path: Path) -> None:
    steps = {6: [(3, -0.25, " Paris"), (9, -1.75, " London"), (8, -4.0, "\n")]}
    native, reference = pair(
        "p03-chat", [10, 11, 12, 13, 14, 15, 9], [10, 11, 12, 13, 14, 15, 3], ref_steps=steps
    )
    native["token_texts"] = [" a", " b", " c", " d", " e", " f", " London"]
    reference["token_texts"] = [" a", " b", " c", " d", " e", " f", " Paris"]
    result = run_one(tmp_path, native, reference)
    repro = "qualify compare run/parity.jsonl"
    assert result.failure_message(repro) == "\n".join(
        [
            "case 'p03-chat': first divergence at token 6, WRONG (native token 1.5 nats below "
            "the reference top-1)",
            "  native:    ' London' (id 9)",
            "  reference: ' Paris' (id 3)",
            "  reference top-3 at token 6 (gap = nats below top-1):",
            "    1. ' Paris' (id 3) logprob -0.25 gap 0",
            "    2. ' London' (id 9) logprob -1.75 gap 1.5  <- native",
            "    3. '\\n' (id 8) logprob -4 gap 3.75",
            "  context (5 tokens before): ' b' ' c' ' d' ' e' ' f'",
            f"  reproduce: {repro}",
        ]
    )


def test_failure_messages_of_other_kinds(tmp_path: Path) -> None:
    exact = run_one(tmp_path, *pair("c", [1], [1]))
    assert exact.failure_message("x") is None
    eos = run_one(tmp_path, *pair("c", [1, 2, 3], [1, 2]))
    assert eos.failure_message("R") == "\n".join(
        [
            "case 'c': first divergence at token 2, EOS (native 3 tokens with EOS, "
            "reference 2 tokens with EOS)",
            "  native:    ' t3' (id 3)",
            "  reference: (ended at EOS)",
            "  reference top-k: not recorded at this step",
            "  context (2 tokens before): ' t1' ' t2'",
            "  reproduce: R",
        ]
    )
    outside = run_one(tmp_path, *pair("c", [7], [3]))
    message = outside.failure_message("R")
    assert message is not None
    assert message.splitlines()[0] == (
        "case 'c': first divergence at token 0, WRONG (native token not in the reference top-k)"
    )
    assert "    (native token not among them)" in message
    assert "  context: (divergence at the first generated token)" in message
    missing = compare_files(
        write(tmp_path / "m.jsonl", case("c", "reference", [1])), None, ParityGate()
    ).per_case[0]
    assert missing.failure_message("R") == (
        "case 'c' was recorded by the reference side only (no native record)\n  reproduce: R"
    )


# -- the compare command ----------------------------------------------------------------------


def run_compare(
    native: Path, reference: Path | None = None, gate: ParityGate | None = None, fmt: str = "text"
) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = compare(
        native=native,
        reference=reference,
        gate=gate or ParityGate(),
        output_format=fmt,
        stdout=stdout,
        stderr=stderr,
    )
    return code, stdout.getvalue(), stderr.getvalue()


def test_compare_command_exit_codes_and_table(tmp_path: Path) -> None:
    path = corpus(tmp_path, 8, 1, 1)
    code, out, err = run_compare(path, gate=ParityGate(min_exact=8))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == [
        "case", "kind", "diverges", "at", "native", "reference", "fed", "the", "reference's",
        "tokens",
    ]  # fmt: skip
    assert lines[1].split() == ["e0", "exact", "-"]
    assert lines[9].split() == [
        "n0",
        "near_tie",
        "0",
        "'",
        "t9'",
        "(id",
        "9)",
        "'",
        "t3'",
        "(id",
        "3)",
        "-",  # no teacher-forced view recorded
    ]
    assert lines[-1] == (
        "parity PASSED: 8 of 10 reference cases exact (need 8); exact 8, tie 0, noise 0, "
        "near-tie 1, wrong 1, length/eos 0, missing 0, drift 0"
    )
    code, out, _ = run_compare(path, gate=ParityGate(min_exact=9))
    assert code == 1 and out.splitlines()[-1].startswith("parity FAILED: 8 of 10")


def test_compare_command_json(tmp_path: Path) -> None:
    path = corpus(tmp_path, 1, 0, 1)
    code, out, _ = run_compare(path, fmt="json")
    assert code == 1
    audit = json.loads(out)
    assert (audit["cases"], audit["exact"], audit["wrong"], audit["passed"]) == (2, 1, 1, False)
    assert [entry["kind"] for entry in audit["per_case"]] == ["exact", "wrong"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"event":"case",\n{}\n', "p.jsonl:1: not valid JSON (Expecting property name"),
        ('{"event":"case","case_id":"c","side":"x"}\n', "p.jsonl:1: field 'token_ids' is missing"),
    ],
)
def test_compare_command_bad_input_is_one_line(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(content, encoding="utf-8")
    code, out, err = run_compare(path)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"qualify compare: error: {tmp_path}/{expected}")


def test_compare_command_missing_file_and_bad_format(tmp_path: Path) -> None:
    code, _, err = run_compare(tmp_path / "none.jsonl")
    assert code == 2 and err == (
        f"qualify compare: error: {tmp_path / 'none.jsonl'}: cannot be read "
        "(No such file or directory)\n"
    )
    code, _, err = run_compare(corpus(tmp_path, 1), fmt="xml")
    assert code == 2 and err == (
        "qualify compare: error: --format 'xml' is not one of ('text', 'json')\n"
    )


def test_compare_command_prints_warnings_on_stderr(tmp_path: Path) -> None:
    path = write(tmp_path / "p.jsonl", *pair("c", [1], [1]), tail='{"event":"ca')
    code, _, err = run_compare(path)
    assert code == 0
    assert err.startswith(f"qualify compare: warning: {path}:3: not valid JSON (")
    assert err.count("\n") == 1


def test_empty_report() -> None:
    assert ParityReport(ParityGate(), ()).to_dict()["per_case"] == []


# -- JUnit --------------------------------------------------------------------------------------


def test_junit_cases_when_the_gate_fails(tmp_path: Path) -> None:
    report = compare_files(corpus(tmp_path, 1, 0, 1), None, ParityGate())
    cases = junit_cases(report, "tiny", "qualify compare p.jsonl")
    assert [(c.classname, c.name, c.outcome, c.kind) for c in cases] == [
        ("tiny.parity", "e0", "passed", None),
        ("tiny.parity", "w0", "failed", "WRONG"),
        ("tiny.parity", "parity-gate", "failed", "PARITY_FAILED"),
    ]
    wrong, gate = cases[1], cases[2]
    failure = report.per_case[1].failure_message("qualify compare p.jsonl")
    assert failure is not None
    assert (wrong.message, wrong.text) == (failure.splitlines()[0], failure)
    assert gate.message == "parity gate not met: 1 of 2 reference cases exact (need 2)"
    assert gate.text is not None and gate.text.splitlines()[2:] == [
        "gate: min_exact=None, near_tie_nats=0.5, count_near_ties=False, tie_nats=0.0001",
        "reproduce: qualify compare p.jsonl",
    ]


def test_junit_cases_when_the_gate_tolerates_a_divergence(tmp_path: Path) -> None:
    report = compare_files(corpus(tmp_path, 1, 0, 1), None, ParityGate(min_exact=1))
    cases = junit_cases(report, "tiny", "R")
    assert [c.outcome for c in cases] == ["passed", "skipped", "passed"]
    assert cases[1].message is not None and cases[1].message.startswith(
        "tolerated by the parity gate (1 of 2 reference cases exact (need 1)): case 'w0': "
    )
    assert cases[1].text is not None and cases[1].text.endswith("  reproduce: R")


# -- the harness's own writer -------------------------------------------------------------------


def test_records_written_by_the_harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    harness = pytest.importorskip("harness")
    path = tmp_path / "parity.jsonl"
    monkeypatch.setenv("QUALIFY_PARITY", str(path))
    monkeypatch.delenv("QUALIFY_EVENTS", raising=False)
    top = [[(5, -0.25), (6, -0.5)], [(7, -0.1), (8, -0.3)]]
    harness.record_case("h", side="native", token_ids=[5, 8], text="ab", top_logprobs=top)
    harness.record_case(
        "h", side="reference", token_ids=[5, 7], text="ac", top_logprobs=top, eos=True
    )
    result = compare_files(path, None, ParityGate()).per_case[0]
    assert (result.kind, result.first_divergence, result.native_rank) == (
        DivergenceKind.NEAR_TIE,
        1,
        2,
    )
    assert result.native_gap == pytest.approx(0.2)


# --- the parity gate's edges (each test kills a mutant of qualify/parity or parity_gate)


def test_gate_accepts_zero_and_equal_thresholds() -> None:
    assert ParityGate(near_tie_nats=0.0, tie_nats=0.0).near_tie_nats == 0.0
    assert ParityGate(near_tie_nats=0.25, tie_nats=0.25).tie_nats == 0.25


def test_a_case_with_one_side_only_keeps_that_sides_summary(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(jsonl([case("only", "native", [1, 2, 3])]), encoding="utf-8")
    result = compare_files(path, None, ParityGate()).per_case[0]
    assert result.kind is DivergenceKind.MISSING
    assert result.reference is None
    assert result.native is not None and (result.native.length, result.native.eos) == (3, True)


def test_texts_at_the_divergence_come_from_the_topk_when_not_recorded(tmp_path: Path) -> None:
    # No token_texts on either side: the reference token's text is found in its top-k, the
    # native token (not in the top-k) has none, and the context has ids only.
    step: list[Entry] = [(3, -0.1, " three"), (4, -0.2, " four")]
    native = case("c", "native", [1, 5], steps={1: step}, token_texts=False)
    reference = case("c", "reference", [1, 3], steps={1: step}, token_texts=False)
    path = tmp_path / "p.jsonl"
    path.write_text(jsonl([native, reference]), encoding="utf-8")
    result = compare_files(path, None, ParityGate()).per_case[0]
    assert result.first_divergence == 1 and result.kind is DivergenceKind.WRONG
    assert (result.reference_token.token_id, result.reference_token.text) == (3, " three")  # type: ignore[union-attr]
    assert (result.native_token.token_id, result.native_token.text) == (5, None)  # type: ignore[union-attr]
    assert [(t.token_id, t.text) for t in result.context] == [(1, None)]


def test_context_texts_fall_back_to_the_native_side(tmp_path: Path) -> None:
    native = case("c", "native", [1, 2, 9], steps={2: default_step(2)})
    reference = case("c", "reference", [1, 2, 7], token_texts=False)
    path = tmp_path / "p.jsonl"
    path.write_text(jsonl([native, reference]), encoding="utf-8")
    result = compare_files(path, None, ParityGate()).per_case[0]
    assert [(t.token_id, t.text) for t in result.context] == [(1, " t1"), (2, " t2")]
    # and the reference's own texts win when it has them
    reference = case("c", "reference", [1, 2, 7])
    reference["token_texts"] = [" r1", " r2", " r7"]
    path.write_text(jsonl([native, reference]), encoding="utf-8")
    result = compare_files(path, None, ParityGate()).per_case[0]
    assert [(t.token_id, t.text) for t in result.context] == [(1, " r1"), (2, " r2")]


def test_the_report_dict_carries_reason_warnings_and_context(tmp_path: Path) -> None:
    native = case("c", "native", [1, 2, 9])
    reference = case("c", "reference", [1, 2, 7])
    path = tmp_path / "p.jsonl"
    path.write_text(jsonl([native, reference]), encoding="utf-8")
    report = compare_files(path, None, ParityGate())
    data = report.to_dict()
    assert data["reason"] == report.reason and data["warnings"] == list(report.warnings)
    case_dict = report.per_case[0].to_dict()
    assert case_dict["context"] == [{"id": 1, "text": " t1"}, {"id": 2, "text": " t2"}]


def test_compare_of_a_run_directory_applies_the_runs_gate(tmp_path: Path) -> None:
    """A run judged 9 of 10 against the family's gate of 9 passes in ``qualify run``; compare
    of that run directory applies the gate its audit records, and a flag still overrides it."""
    from qualify.rundir import Audit, RunDir
    from qualify.rundir.audit import ParityGateRecord, ParityRecord

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    corpus(run_dir, 9, 0, 1).rename(run_dir / "parity.jsonl")
    audit = Audit(verdict="PASSED", parity=ParityRecord(gate=ParityGateRecord(min_exact=9)))
    RunDir(run_dir).write_audit(audit)
    stdout, stderr = io.StringIO(), io.StringIO()
    code = compare(native=run_dir, reference=None, gate={}, stdout=stdout, stderr=stderr)
    assert code == 0, stdout.getvalue() + stderr.getvalue()
    assert "9 of 10 reference cases exact (need 9)" in stdout.getvalue()
    code = compare(native=run_dir, reference=None, gate={"min_exact": 10}, stdout=stdout)
    assert code == 1
