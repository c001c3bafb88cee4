"""Result objects of a parity comparison: one CaseResult per case id, one ParityReport."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from qualify.parity.failure_text import failure_text
from qualify.parity.kinds import Continuation, DivergenceKind
from qualify.parity.noise_text import odds_text
from qualify.plan.parity_gate import ParityGate
from qualify.records import frozen_record

if TYPE_CHECKING:
    from qualify.parity.noise import NoiseFloor


@frozen_record
class TokenRef:
    """One generated token: its id and, when recorded, its decoded text."""

    token_id: int
    text: str | None


@frozen_record
class TopKEntry:
    """One candidate of the reference's top-k at the divergence step."""

    token_id: int
    logprob: float
    text: str | None
    gap: float
    """Nats below the reference's top-1 at that step (0 for the top-1 itself)."""


@frozen_record
class RecordLocation:
    """Where a record lies, so that a later (teacher-forced) view can read it again whole."""

    path: Path
    line: int
    """1-based line number."""
    offset: int
    """Byte offset of the line's first byte."""
    length: int
    """Bytes in the line, newline included."""


@frozen_record
class SideSummary:
    """What one side generated for a case, without its tokens."""

    length: int
    """Number of generated tokens."""
    eos: bool
    """Generation stopped at EOS."""
    record: RecordLocation


@frozen_record
class TeacherForced:
    """The engine fed the reference's tokens after a case's first divergence."""

    agree_after: int
    """Positions after the divergence where the engine's top-1 is the reference's token."""
    of: int
    """Positions after the divergence (the reference's tokens after it)."""
    allowed: int
    """The most disagreements the noise floor explains there (odds ``noise.ALPHA``)."""
    kind: Continuation

    def describe(self) -> str:
        """``single flip (28 of 29 agree after)``."""
        name = self.kind.value.replace("_", " ")
        if self.of == 0:
            return f"{name} (at the last token: nothing after it to compare)"
        return (
            f"{name} ({self.agree_after} of {self.of} agree after; noise explains {self.allowed})"
        )

    def to_dict(self) -> dict[str, object]:
        """The per-case ``teacher_forced`` entry of the audit."""
        return {
            "agree_after": self.agree_after,
            "of": self.of,
            "allowed_disagreements": self.allowed,
            "kind": self.kind.value,
        }


@frozen_record
class CaseResult:
    """The comparison of one case id; small: no full token lists are kept."""

    case_id: str
    kind: DivergenceKind
    first_divergence: int | None = None
    """Index of the first generated token that differs; None when exact or missing."""
    native_token: TokenRef | None = None
    """Native token at the divergence; None when native ended there."""
    reference_token: TokenRef | None = None
    """Reference token at the divergence; None when the reference ended there."""
    reference_topk: tuple[TopKEntry, ...] = ()
    """Reference top-k at the divergence step, best first (empty when not recorded)."""
    native_rank: int | None = None
    """1-based rank of the native token in ``reference_topk``; None when not in it."""
    context: tuple[TokenRef, ...] = ()
    """Up to a few tokens both sides generated just before the divergence."""
    native: SideSummary | None = None
    reference: SideSummary | None = None
    teacher_forced: TeacherForced | None = None
    """The forced continuation after the divergence; None without one (or a teacher view)."""
    divergence_probability: float | None = None
    """``p_i``: the chance an engine as noisy as the reference's low-precision run diverges in
    this case (``qualify.parity.noise``); None without a noise floor."""

    @property
    def exact(self) -> bool:
        """True when the native tokens equal the reference tokens, stop reason included."""
        return self.kind is DivergenceKind.EXACT

    @property
    def native_in_ref_topk(self) -> bool | None:
        """Whether the native token is a reference top-k candidate; None when not applicable."""
        if self.native_token is None or not self.reference_topk:
            return None
        return self.native_rank is not None

    @property
    def native_gap(self) -> float | None:
        """Nats the reference rated the native token below its top-1 (None: not in top-k)."""
        if self.native_rank is None:
            return None
        return self.reference_topk[self.native_rank - 1].gap

    @property
    def top_gap(self) -> float | None:
        """The reference's own margin at the divergence: top-1 minus top-2, in nats."""
        return self.reference_topk[1].gap if len(self.reference_topk) > 1 else None

    def failure_message(self, repro: str) -> str | None:
        """JUnit failure text for this case (None when exact); ``repro`` reproduces it."""
        return None if self.exact else failure_text(self, repro)

    def to_dict(self) -> dict[str, object]:
        """One entry of the audit's ``parity.per_case`` list (see ParityReport.to_dict)."""
        return {
            "case_id": self.case_id,
            "exact": self.exact,
            "kind": self.kind.value,
            "first_divergence": self.first_divergence,
            "native_token": _token_dict(self.native_token),
            "reference_token": _token_dict(self.reference_token),
            "native_in_ref_topk": self.native_in_ref_topk,
            "native_rank": self.native_rank,
            "native_gap": _finite(self.native_gap),
            "top_gap": _finite(self.top_gap),
            "reference_topk": [
                {
                    "token_id": entry.token_id,
                    "logprob": _finite(entry.logprob),
                    "text": entry.text,
                    "gap": _finite(entry.gap),
                }
                for entry in self.reference_topk
            ],
            "context": [_token_dict(token) for token in self.context],
            "native": _side_dict(self.native),
            "reference": _side_dict(self.reference),
            "teacher_forced": None
            if self.teacher_forced is None
            else self.teacher_forced.to_dict(),
            "divergence_probability": self.divergence_probability,
        }


@frozen_record
class ParityReport:
    """Every case's result and the corpus gate's decision."""

    gate: ParityGate
    per_case: tuple[CaseResult, ...]
    """Reference cases in the order first recorded, then native-only cases."""
    warnings: tuple[str, ...] = ()
    noise: NoiseFloor | None = None
    """The reference's own precision noise; None when no noise view was recorded."""
    false_fail_probability: float | None = None
    """The chance an engine as noisy as the reference's low-precision run fails this gate."""
    suggestion: tuple[int, float] | None = None
    """``(min_exact, its false-fail probability)``: the smallest gate change that brings the
    false-fail probability to at most 1%, when it is above."""

    def __bool__(self) -> bool:
        return self.passed

    def _count(self, *kinds: DivergenceKind) -> int:
        return sum(1 for result in self.per_case if result.kind in kinds)

    @property
    def cases(self) -> int:
        """Distinct case ids seen on either side; the kind counts below add up to it."""
        return len(self.per_case)

    @property
    def reference_cases(self) -> int:
        """Cases the reference recorded: n, the gate's denominator."""
        return sum(1 for result in self.per_case if result.reference is not None)

    @property
    def exact(self) -> int:
        """Cases whose tokens and stop reason match exactly."""
        return self._count(DivergenceKind.EXACT)

    @property
    def tie(self) -> int:
        """Cases that diverged on a float-rounding tie of the reference (<= tie_nats)."""
        return self._count(DivergenceKind.TIE)

    @property
    def within_noise(self) -> int:
        """Cases that diverged within the reference's own precision noise (NOISE)."""
        return self._count(DivergenceKind.NOISE)

    @property
    def drift(self) -> int:
        """Diverging cases whose teacher-forced continuation drifts."""
        return sum(
            1
            for result in self.per_case
            if result.teacher_forced is not None
            and result.teacher_forced.kind is Continuation.DRIFT
        )

    @property
    def near_tie(self) -> int:
        """Cases that diverged to a token the reference rated below near_tie_nats."""
        return self._count(DivergenceKind.NEAR_TIE)

    @property
    def wrong(self) -> int:
        """Cases that diverged to a token the reference clearly did not prefer."""
        return self._count(DivergenceKind.WRONG)

    @property
    def length_or_eos(self) -> int:
        """Cases where one side stopped (EOS or a length limit) and the other did not."""
        return self._count(DivergenceKind.LENGTH, DivergenceKind.EOS)

    @property
    def missing(self) -> int:
        """Case ids recorded on one side only."""
        return self._count(DivergenceKind.MISSING)

    @property
    def acceptable(self) -> int:
        """Exact cases, plus TIE, NOISE and NEAR_TIE ones when the gate counts near ties."""
        if self.gate.count_near_ties:
            return self.exact + self.tie + self.within_noise + self.near_tie
        return self.exact

    @property
    def required(self) -> int:
        """Acceptable cases the gate needs: min_exact, or every reference case."""
        return self.reference_cases if self.gate.min_exact is None else self.gate.min_exact

    @property
    def passed(self) -> bool:
        """The gate is met; a corpus without reference cases never passes."""
        return self.reference_cases > 0 and self.acceptable >= self.required

    @property
    def reason(self) -> str:
        """One line explaining the gate's decision."""
        if self.reference_cases == 0:
            return "no reference cases were recorded: nothing to compare against"
        what = "exact or tied" if self.gate.count_near_ties else "exact"
        line = (
            f"{self.acceptable} of {self.reference_cases} reference cases {what} "
            f"(need {self.required})"
        )
        if self.required > self.reference_cases:
            line += f": min_exact {self.required} exceeds the cases recorded"
        return line

    @property
    def odds_line(self) -> str | None:
        """The noise floor and the gate's false-fail odds in one line; None without them."""
        if self.noise is None:
            return None
        suggested = None if self.suggestion is None else self.suggestion[0]
        return odds_text(self.noise.to_dict(), self.false_fail_probability, suggested)

    def to_dict(self) -> dict[str, object]:
        """The audit's ``parity`` section. Stable keys:

        ``cases`` (int, case ids on either side), ``reference_cases`` (int, n),
        ``exact``, ``tie``, ``within_noise``, ``near_tie``, ``wrong``, ``length_or_eos``,
        ``missing`` (ints that add up to ``cases``), ``drift`` (diverging cases whose forced
        continuation drifts), ``acceptable`` and ``required`` (ints), ``gate`` (the
        ``[parity]`` keys, plus ``false_fail_probability`` (null without a noise floor) and
        ``suggested_min_exact`` (null unless it is above 1%)), ``noise`` (the noise floor:
        ``qualify.parity.noise.NoiseFloor.to_dict``, or null), ``passed`` (bool), ``reason``
        (str), ``warnings`` (list of str), ``per_case`` (list of dicts with ``case_id``,
        ``exact``, ``kind`` (a DivergenceKind value), ``first_divergence`` (int or null),
        ``native_token`` and ``reference_token``
        (``{"id", "text"}`` or null), ``native_in_ref_topk`` (bool or null), ``native_rank``
        (1-based or null), ``native_gap`` and ``top_gap`` (nats or null), ``reference_topk``
        (list of ``{"token_id", "logprob", "text", "gap"}``), ``context`` (list of
        ``{"id", "text"}``), and ``native`` / ``reference`` (``{"length", "eos", "record":
        {"file", "line", "offset", "length"}}`` or null), ``teacher_forced``
        (``{"agree_after", "of", "allowed_disagreements", "kind"}`` or null) and
        ``divergence_probability`` (p_i or null)). Non-finite numbers become null.
        """
        suggestion = None if self.suggestion is None else self.suggestion[0]
        return {
            "cases": self.cases,
            "reference_cases": self.reference_cases,
            "exact": self.exact,
            "tie": self.tie,
            "within_noise": self.within_noise,
            "near_tie": self.near_tie,
            "wrong": self.wrong,
            "length_or_eos": self.length_or_eos,
            "missing": self.missing,
            "drift": self.drift,
            "acceptable": self.acceptable,
            "required": self.required,
            "gate": {
                **self.gate.to_dict(),
                "false_fail_probability": self.false_fail_probability,
                "suggested_min_exact": suggestion,
            },
            "noise": None if self.noise is None else self.noise.to_dict(),
            "passed": self.passed,
            "reason": self.reason,
            "warnings": list(self.warnings),
            "per_case": [result.to_dict() for result in self.per_case],
        }


def _finite(value: float | None) -> float | None:
    # A top-k may hold -inf for masked tokens; strict JSON has no such number.
    return value if value is not None and math.isfinite(value) else None


def _token_dict(token: TokenRef | None) -> dict[str, object] | None:
    return None if token is None else {"id": token.token_id, "text": token.text}


def _side_dict(side: SideSummary | None) -> dict[str, object] | None:
    if side is None:
        return None
    record = side.record
    return {
        "length": side.length,
        "eos": side.eos,
        "record": {
            "file": str(record.path),
            "line": record.line,
            "offset": record.offset,
            "length": record.length,
        },
    }
