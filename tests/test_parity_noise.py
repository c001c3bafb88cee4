"""The reference's noise floor, teacher-forced continuation and the gate's odds
(``qualify.parity.noise``), from hand-built parity files whose answers are worked out here."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from statistics import NormalDist

import pytest

from qualify.parity import ParityGate, ParityInputError, compare_files, junit_cases
from qualify.parity.noise import (
    ALPHA,
    NoiseFloor,
    allowed_disagreements,
    false_fail_probability,
    gate_suggestion,
    poisson_binomial,
)
from tests.test_parity import Entry, case, default_step, write

NORMAL = NormalDist()
REFERENCE = list(range(1, 11))  # ten tokens, each the top-1 by 2 nats (default_step)
NEAR = {4: [(5, -0.6, " t5"), (77, -0.8, " t77"), (9001, -3.1, " t9001")]}  # gap 0.2 at 4


def binomial_tail(n: int, p: float, at_least: int) -> float:
    """P(X >= at_least) for X ~ Binomial(n, p), written out independently of the code."""
    return sum(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(at_least, n + 1))


def forced(
    case_id: str, role: str, steps: Sequence[Sequence[Entry]], **extra: object
) -> dict[str, object]:
    """One forced view in the harness's format."""
    return {
        "event": "forced",
        "case_id": case_id,
        "role": role,
        "forced_ids": REFERENCE,
        "top_logprobs": [[list(entry[:2]) for entry in step] for step in steps],
        "logit_noise": [0.02] * len(REFERENCE) if role == "noise" else None,
        **extra,
    }


def reference_steps(overrides: dict[int, list[Entry]] | None = None) -> list[list[Entry]]:
    return [(overrides or {}).get(i, default_step(token)) for i, token in enumerate(REFERENCE)]


def noisy(steps: list[list[Entry]], start: int) -> list[list[Entry]]:
    """The steps with the runner-up moved by +-0.1 nats, alternating: the gap differs by
    exactly 0.1 at every position, so sigma is 0.1."""
    moved = []
    for index, step in enumerate(steps):
        sign = 1 if (index + start) % 2 == 0 else -1
        runner_up = (step[1][0], step[1][1] + 0.1 * sign)
        moved.append([step[0][:2], runner_up, *(entry[:2] for entry in step[2:])])
    return moved


def teacher(steps: list[list[Entry]], top1: dict[int, int]) -> list[list[Entry]]:
    """The engine's view: the reference's steps with another top-1 where ``top1`` says."""
    return [[(top1.get(i, step[0][0]), -0.1), *step[1:]] for i, step in enumerate(steps)]


def corpus(tmp_path: Path) -> Path:
    """Three cases, noise sigma 0.1 nats over 30 positions:

    - ``flip``: the engine picks the reference's runner-up at token 4 (gap 0.2, within
      z * sigma = 0.34) and, fed the reference's tokens, agrees at all 5 positions after;
    - ``wrong``: it picks a token 3 nats down at token 2 and, fed the reference's tokens,
      disagrees at 2 of the 7 positions after (noise explains none at gaps of 20 sigma);
    - ``exact``.
    """
    near = reference_steps(NEAR)
    plain = reference_steps()
    records = [
        case("flip", "reference", REFERENCE, steps=dict(enumerate(near))),
        case("flip", "native", [1, 2, 3, 4, 77, 100, 101, 102, 103, 104]),
        case("wrong", "reference", REFERENCE),
        case("wrong", "native", [1, 2, 9001, 105, 106, 107, 108, 109, 110, 111]),
        case("exact", "reference", REFERENCE),
        case("exact", "native", REFERENCE),
        forced("flip", "noise", noisy(near, 0)),
        forced("wrong", "noise", noisy(plain, 0)),
        forced("exact", "noise", noisy(plain, 0)),
        forced("flip", "teacher", teacher(near, {4: 77})),
        forced("wrong", "teacher", teacher(plain, {2: 9001, 5: 500, 7: 700})),
    ]
    return write(tmp_path / "parity.jsonl", *records)


def test_poisson_binomial_and_the_gate_odds_match_the_binomial_written_out() -> None:
    assert poisson_binomial([0.5, 0.5]) == [0.25, 0.5, 0.25]
    # Ten cases each diverging with 5%: a 9-of-10 gate fails when 2 or more diverge.
    assert false_fail_probability([0.05] * 10, 9) == pytest.approx(binomial_tail(10, 0.05, 2))
    assert false_fail_probability([0.05] * 10, 9) > ALPHA
    # 8 of 10 still fails 1.2% of the time; 7 of 10 is the largest gate under 1%.
    assert binomial_tail(10, 0.05, 3) > ALPHA > binomial_tail(10, 0.05, 4)
    suggestion = gate_suggestion([0.05] * 10, 9)
    assert suggestion is not None and suggestion[0] == 7
    assert suggestion[1] == pytest.approx(binomial_tail(10, 0.05, 4))
    assert gate_suggestion([0.0001] * 10, 9) is None


@pytest.mark.parametrize(
    ("flips", "allowed"),
    [
        ([], 0),
        ([1e-9] * 29, 0),  # tiny's gaps: no disagreement is noise
        ([0.5] * 4, 4),  # P(X > 3) = 1/16 > 1%
        ([0.1] * 20, 6),  # P(X > 5) = 1.1%, P(X > 6) = 0.24%
    ],
)
def test_allowed_disagreements_is_the_one_percent_quantile(
    flips: list[float], allowed: int
) -> None:
    assert allowed_disagreements(flips) == allowed
    if flips:
        p = flips[0]
        assert binomial_tail(len(flips), p, allowed + 1) <= ALPHA
        if allowed:
            assert binomial_tail(len(flips), p, allowed) > ALPHA


def test_noise_floor_odds() -> None:
    floor = NoiseFloor(10, 100, 0.1, 0.3, 0.02, 0.03, 0, ())
    assert floor.flip_probability(0.0) == pytest.approx(0.5)
    assert floor.flip_probability(0.1) == pytest.approx(NORMAL.cdf(-1))
    assert floor.z == pytest.approx(NORMAL.inv_cdf(1 - 0.01 / 100))
    assert floor.noise_nats == pytest.approx(0.1 * floor.z)


def test_noise_kind_single_flip_and_drift(tmp_path: Path) -> None:
    report = compare_files(corpus(tmp_path), None, ParityGate(min_exact=1))
    floor = report.noise
    assert floor is not None
    assert (floor.cases, floor.positions, floor.self_flip_count) == (3, 30, 0)
    assert floor.gap_sigma == pytest.approx(0.1)
    assert floor.logit_noise_mean == pytest.approx(0.02)
    z = NORMAL.inv_cdf(1 - 0.01 / 30)
    assert floor.noise_nats == pytest.approx(0.1 * z)  # about 0.34 nats
    by_id = {result.case_id: result for result in report.per_case}
    flip, wrong = by_id["flip"], by_id["wrong"]
    assert (flip.kind.value, flip.first_divergence) == ("noise", 4)
    assert flip.teacher_forced is not None
    assert flip.teacher_forced.to_dict() == {
        "agree_after": 5, "of": 5, "allowed_disagreements": 0, "kind": "single_flip"
    }  # fmt: skip
    assert (wrong.kind.value, wrong.first_divergence) == ("wrong", 2)
    assert wrong.teacher_forced is not None
    assert wrong.teacher_forced.to_dict() == {
        "agree_after": 5, "of": 7, "allowed_disagreements": 0, "kind": "drift"
    }  # fmt: skip
    assert by_id["exact"].teacher_forced is None
    # p_i: the one gap of 0.2 nats flips with Phi(-2); gaps of 2 nats (20 sigma) never do.
    assert flip.divergence_probability == pytest.approx(NORMAL.cdf(-2.0), rel=1e-6)
    assert wrong.divergence_probability == pytest.approx(0.0, abs=1e-12)
    assert report.within_noise == 1 and report.drift == 1
    audit = report.to_dict()
    assert audit["gate"]["false_fail_probability"] == pytest.approx(0.0, abs=1e-12)  # type: ignore[index]
    assert audit["noise"]["positions"] == 30  # type: ignore[index]


def test_the_gate_warns_and_suggests_when_its_odds_are_over_one_percent(tmp_path: Path) -> None:
    # All three exact required: "flip" alone diverges by noise 2.3% of the time.
    report = compare_files(corpus(tmp_path), None, ParityGate(min_exact=3))
    assert report.false_fail_probability == pytest.approx(NORMAL.cdf(-2.0), rel=1e-6)
    assert report.suggestion is not None and report.suggestion[0] == 2
    odds = report.odds_line or ""
    assert "false-fail probability of the gate 2.3%" in odds and "min_exact = 2" in odds
    gate_case = junit_cases(report, "fam", "qualify compare x")[-1]
    assert gate_case.outcome == "failed" and "min_exact = 2" in (gate_case.text or "")
    flip_case = next(c for c in junit_cases(report, "fam", "r") if c.name == "flip")
    assert "NOISE" in (flip_case.message or "")
    assert "single flip (5 of 5 agree after" in (flip_case.message or "")


def test_a_token_the_reference_itself_picked_in_low_precision_is_noise(tmp_path: Path) -> None:
    plain = reference_steps()
    lowp = [[entry[:2] for entry in step] for step in plain]
    lowp[3] = [(9001, -0.1), (4, -0.2), (9000, -2.1)]  # the bf16 reference picks 9001 at 3
    path = write(
        tmp_path / "parity.jsonl",
        case("c", "reference", REFERENCE),
        case("c", "native", [1, 2, 3, 9001]),
        forced("c", "noise", lowp),
    )
    report = compare_files(path, None, ParityGate(min_exact=0))
    assert report.noise is not None and report.noise.self_flips == (("c", 3),)
    assert report.per_case[0].kind.value == "noise"  # 3 nats down, yet the reference's own pick


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"role": "judge"}, "field 'role' must be one of teacher, noise, not 'judge'"),
        ({"forced_ids": [1, True]}, "field 'forced_ids' must be a list of integers"),
        ({"logit_noise": [0.1]}, "field 'logit_noise' must be null or a list of 10 finite"),
        ({"logit_noise": [-1.0] * 10}, "field 'logit_noise' must be null or a list of 10"),
        ({"case_id": ""}, "field 'case_id' must be a non-empty string"),
        ({"forced_ids": [1, 2, 3]}, "field 'logit_noise' must be null or a list of 3 finite"),
        ({"forced_ids": list(range(2, 12))}, "field 'forced_ids' is not the reference's"),
        ({"top_logprobs": [[[1, -0.1]]]}, "field 'top_logprobs' has no step 1"),
    ],
)
def test_hostile_forced_views_get_one_line(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    view = {**forced("c", "noise", noisy(reference_steps(), 0)), **change}
    path = write(
        tmp_path / "parity.jsonl",
        case("c", "reference", REFERENCE),
        case("c", "native", REFERENCE),
        view,
    )
    with pytest.raises(ParityInputError) as error:
        compare_files(path, None, ParityGate())
    assert message in str(error.value) and "\n" not in str(error.value)
    assert str(path) in str(error.value)


def test_compare_report_page_and_step_summary_say_the_same(tmp_path: Path) -> None:
    """``qualify compare``'s table, the report page's parity section and the step summary all
    give the forced continuation and the gate's odds, from the same records."""
    from qualify.commands.compare import render_table
    from qualify.report.github_summary import render_summary
    from qualify.report.html_sections import parity_section
    from qualify.rundir import Audit
    from qualify.rundir.audit import ParityRecord
    from qualify.rundir.typed_json import from_json

    report = compare_files(corpus(tmp_path), None, ParityGate(min_exact=3))
    table = render_table(report)
    assert "single flip (5 of 5 agree after; noise explains 0)" in table
    assert "drift (5 of 7 agree after; noise explains 0)" in table
    assert "false-fail probability of the gate 2.3%" in table.splitlines()[-1]
    record, problems = from_json(ParityRecord, report.to_dict(), "parity")
    assert problems == []
    assert record.gate.false_fail_probability == pytest.approx(NORMAL.cdf(-2.0), rel=1e-6)
    assert (record.gate.suggested_min_exact, record.within_noise, record.drift) == (2, 1, 1)
    audit = Audit(verdict="PARITY_FAILED", parity=record)
    page = parity_section(audit)
    assert "single flip (5 of 5 agree after)" in page and "drift (5 of 7 agree after)" in page
    assert "false-fail probability of the gate 2.3%" in page and "min_exact = 2" in page
    summary = render_summary(audit, [], str(tmp_path), 20000)
    assert "| parity odds |" in summary and "false-fail probability of the gate 2.3%" in summary


def test_a_divergence_at_the_last_token_has_nothing_after_it(tmp_path: Path) -> None:
    plain = reference_steps()
    path = write(
        tmp_path / "parity.jsonl",
        case("c", "reference", REFERENCE),
        case("c", "native", [*REFERENCE[:9], 9001]),
        forced("c", "noise", noisy(plain, 0)),
        forced("c", "teacher", teacher(plain, {9: 9001})),
    )
    result = compare_files(path, None, ParityGate(min_exact=0)).per_case[0]
    assert result.teacher_forced is not None
    assert (result.teacher_forced.agree_after, result.teacher_forced.of) == (0, 0)
    assert result.teacher_forced.describe() == (
        "single flip (at the last token: nothing after it to compare)"
    )


def test_two_files_take_the_teacher_views_from_the_native_one(tmp_path: Path) -> None:
    """Two-file mode: the engine's file gives its teacher views, the reference's file its
    noise views; the result is the one-file result, and a view in the wrong file is ignored."""
    both = compare_files(corpus(tmp_path), None, ParityGate(min_exact=1)).to_dict()
    records = [json.loads(line) for line in corpus(tmp_path).read_text().splitlines()]
    native_side = [r for r in records if r.get("side") == "native" or r.get("role") == "teacher"]
    reference_side = [r for r in records if r not in native_side]
    native = write(tmp_path / "native.jsonl", *native_side, *reference_side)  # noise ignored
    reference = write(tmp_path / "reference.jsonl", *reference_side)
    split = compare_files(native, reference, ParityGate(min_exact=1)).to_dict()
    strip = ("native", "reference", "warnings")  # record locations and the ignored-side note
    for report in (both, split):
        for entry in report["per_case"]:  # type: ignore[union-attr]
            for key in strip[:2]:
                entry.pop(key)
        report.pop("warnings")
    assert split == both
    alone = compare_files(write(tmp_path / "n.jsonl", *native_side), reference, ParityGate())
    assert alone.noise is not None and alone.per_case[0].teacher_forced is not None
    no_noise = compare_files(native, write(tmp_path / "r.jsonl", *records[:6]), ParityGate())
    assert no_noise.noise is None and no_noise.false_fail_probability is None
