"""Compare one case: native tokens against reference tokens, then classify the divergence."""

from __future__ import annotations

from qualify.parity.kinds import DivergenceKind
from qualify.parity.records import ParityInputError, Record
from qualify.parity.results import CaseResult, SideSummary, TokenRef, TopKEntry
from qualify.plan.parity_gate import ParityGate

CONTEXT_TOKENS = 5
"""Tokens shown before the divergence in a failure message."""


def compare_case(
    case_id: str, native: Record | None, reference: Record | None, gate: ParityGate
) -> CaseResult:
    """The result of one case; either record may be None (a MISSING case)."""
    native_side, reference_side = _summary(native), _summary(reference)
    if native is None or reference is None:
        return CaseResult(
            case_id, DivergenceKind.MISSING, native=native_side, reference=reference_side
        )
    index = first_difference(native.token_ids, reference.token_ids)
    if index is None:
        if native.eos == reference.eos:
            return CaseResult(
                case_id, DivergenceKind.EXACT, native=native_side, reference=reference_side
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
        kind = classify(topk, native_token.token_id, gate)
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
    )


def first_difference(native: list[int], reference: list[int]) -> int | None:
    """First index where the tokens differ, the shorter length for a prefix, None if equal."""
    if native == reference:
        return None
    pairs = zip(native, reference, strict=False)  # pragma: no mutate (strict=None is the same)
    for index, (native_id, reference_id) in enumerate(pairs):
        if native_id != reference_id:
            return index
    return min(len(native), len(reference))


def classify(topk: tuple[TopKEntry, ...], native_id: int, gate: ParityGate) -> DivergenceKind:
    """TIE, NEAR_TIE or WRONG for a native token, judged by the reference's top-k.

    The gap is the reference's top-1 log-probability minus the native token's: top-1 minus
    top-2 when the native engine picked the reference's runner-up. A native token outside
    the reference's top-k is WRONG.
    """
    rank = _rank(topk, native_id)
    if rank is None:
        return DivergenceKind.WRONG
    gap = topk[rank - 1].gap
    if gap <= gate.tie_nats:
        return DivergenceKind.TIE
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
