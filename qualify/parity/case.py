"""Compare one case: native tokens against reference tokens, then classify the divergence."""

from __future__ import annotations

from qualify.parity import noise
from qualify.parity.kinds import Continuation, DivergenceKind
from qualify.parity.noise import NoiseFloor
from qualify.parity.records import ParityInputError, Record, all_topk
from qualify.parity.results import CaseResult, SideSummary, TeacherForced, TokenRef, TopKEntry
from qualify.plan.parity_gate import ParityGate
from qualify.records import frozen_record

CONTEXT_TOKENS = 5
"""Tokens shown before the divergence in a failure message."""


@frozen_record
class ForcedViews:
    """What the noise floor and the forced views give one case's comparison."""

    floor: NoiseFloor | None = None
    noise: Record | None = None
    """The low-precision reference fed this case's reference tokens."""
    teacher: Record | None = None
    """The engine fed this case's reference tokens."""


NO_VIEWS = ForcedViews()
"""The empty views (frozen: one shared value is safe)."""


def compare_case(
    case_id: str,
    native: Record | None,
    reference: Record | None,
    gate: ParityGate,
    views: ForcedViews = NO_VIEWS,
) -> CaseResult:
    """The result of one case; either record may be None (a MISSING case)."""
    native_side, reference_side = _summary(native), _summary(reference)
    if native is None or reference is None:
        return CaseResult(
            case_id, DivergenceKind.MISSING, native=native_side, reference=reference_side
        )
    probability = None
    if views.floor is not None:
        probability = noise.divergence_probability(views.floor, noise.reference_gaps(reference))
    index = first_difference(native.token_ids, reference.token_ids)
    if index is None:
        if native.eos == reference.eos:
            return CaseResult(
                case_id,
                DivergenceKind.EXACT,
                native=native_side,
                reference=reference_side,
                divergence_probability=probability,
            )
        # Same tokens, different stop reason: one side saw EOS where the other did not.
        index = len(native.token_ids)
    topk = reference.topk_at(index)
    native_token = _with_text(native.token_at(index), topk)
    reference_token = _with_text(reference.token_at(index), topk)
    rank = None if native_token is None else _rank(topk, native_token.token_id)
    if native_token is not None and reference_token is not None:
        if not topk:
            raise ParityInputError(
                f"{reference.where}: field 'top_logprobs' has no step {index} for token "
                f"{index} (one step per generated token is required)"
            )
        kind = classify(topk, native_token.token_id, gate, _noise_nats(views, index))
    else:
        kind = _stop_kind(native, reference, index)
    return CaseResult(
        case_id,
        kind,
        first_divergence=index,
        native_token=native_token,
        reference_token=reference_token,
        reference_topk=topk,
        native_rank=rank,
        context=_context(native, reference, index),
        native=native_side,
        reference=reference_side,
        teacher_forced=_continuation(reference, index, views),
        divergence_probability=probability,
    )


def _noise_nats(views: ForcedViews, index: int) -> tuple[float, int | None] | None:
    """The NOISE threshold and the low-precision reference's own pick at ``index``."""
    if views.floor is None:
        return None
    own = views.noise.topk_at(index) if views.noise is not None else ()
    return views.floor.noise_nats, own[0].token_id if own else None


def _continuation(reference: Record, index: int, views: ForcedViews) -> TeacherForced | None:
    """How the engine fed the reference's tokens agrees after the divergence at ``index``."""
    teacher = views.teacher
    if teacher is None:
        return None
    noise.check_forced(reference, teacher)
    after = range(index + 1, len(reference.token_ids))
    steps = all_topk(teacher)
    agree = 0
    for position in after:
        topk = noise.step_of(teacher, steps, position)
        agree += topk[0].token_id == reference.token_ids[position]
    flips: list[float] = []
    if views.floor is not None:
        gaps = noise.reference_gaps(reference)
        flips = [views.floor.flip_probability(gaps[position]) for position in after]
    allowed = noise.allowed_disagreements(flips)
    kind = Continuation.SINGLE_FLIP if len(after) - agree <= allowed else Continuation.DRIFT
    return TeacherForced(agree, len(after), allowed, kind)


def first_difference(native: list[int], reference: list[int]) -> int | None:
    """First index where the tokens differ, the shorter length for a prefix, None if equal."""
    if native == reference:
        return None
    pairs = zip(native, reference, strict=False)  # pragma: no mutate (strict=None is the same)
    for index, (native_id, reference_id) in enumerate(pairs):
        if native_id != reference_id:
            return index
    return min(len(native), len(reference))


def classify(
    topk: tuple[TopKEntry, ...],
    native_id: int,
    gate: ParityGate,
    noise_floor: tuple[float, int | None] | None = None,
) -> DivergenceKind:
    """TIE, NOISE, NEAR_TIE or WRONG for a native token, judged by the reference's top-k.

    The gap is the reference's top-1 log-probability minus the native token's: top-1 minus
    top-2 when the native engine picked the reference's runner-up. A native token outside
    the reference's top-k is WRONG. ``noise_floor`` is ``(noise_nats, own_pick)``: a gap at
    most ``noise_nats``, or the token the low-precision reference itself picked there, is
    NOISE.
    """
    rank = _rank(topk, native_id)
    if rank is None:
        return DivergenceKind.WRONG
    gap = topk[rank - 1].gap
    if gap <= gate.tie_nats:
        return DivergenceKind.TIE
    if noise_floor is not None and (gap <= noise_floor[0] or native_id == noise_floor[1]):
        return DivergenceKind.NOISE
    if gap < gate.near_tie_nats:
        return DivergenceKind.NEAR_TIE
    return DivergenceKind.WRONG


def _rank(topk: tuple[TopKEntry, ...], token_id: int) -> int | None:
    """1-based rank of ``token_id`` in the top-k, None when it is not there."""
    return next(
        (rank for rank, entry in enumerate(topk, start=1) if entry.token_id == token_id), None
    )


def _stop_kind(native: Record, reference: Record, index: int) -> DivergenceKind:
    """EOS when the side that stopped at ``index`` saw EOS, else LENGTH (a limit, a cut)."""
    stopped = [record for record in (native, reference) if len(record.token_ids) == index]
    return DivergenceKind.EOS if any(record.eos for record in stopped) else DivergenceKind.LENGTH


def _summary(record: Record | None) -> SideSummary | None:
    if record is None:
        return None
    return SideSummary(len(record.token_ids), record.eos, record.location)


def _with_text(token: TokenRef | None, topk: tuple[TopKEntry, ...]) -> TokenRef | None:
    """Fill a token's text from the top-k when the record has no token_texts."""
    if token is None or token.text is not None:
        return token
    text = next((entry.text for entry in topk if entry.token_id == token.token_id), None)
    return TokenRef(token.token_id, text)


def _context(native: Record, reference: Record, index: int) -> tuple[TokenRef, ...]:
    """The tokens both sides generated just before ``index`` (identical by construction)."""
    texts = reference.token_texts if reference.token_texts is not None else native.token_texts
    start = max(0, index - CONTEXT_TOKENS)
    return tuple(
        TokenRef(reference.token_ids[position], texts[position] if texts is not None else None)
        for position in range(start, index)
    )
