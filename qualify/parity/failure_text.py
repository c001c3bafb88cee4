"""The failure text of a diverging case, as a JUnit failure message shows it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from qualify.parity.kinds import DivergenceKind
from qualify.parity.noise_text import percent

if TYPE_CHECKING:
    from qualify.parity.results import CaseResult, SideSummary, TokenRef


def show_token(token: TokenRef | None, side: SideSummary | None) -> str:
    """A token as ``' Paris' (id 3681)``; a side that ended there says how it ended."""
    if token is None:
        if side is None:
            return "(no record)"
        return "(ended at EOS)" if side.eos else "(ended without EOS)"
    text = "<text not recorded>" if token.text is None else repr(token.text)
    return f"{text} (id {token.token_id})"


def failure_text(result: CaseResult, repro: str) -> str:
    """Render why ``result`` is not exact, ending with the command that reproduces it."""
    headline = _headline(result)
    if result.teacher_forced is not None:
        headline += f"; fed the reference's tokens: {result.teacher_forced.describe()}"
    lines = [headline]
    if result.divergence_probability is not None:
        lines.append(
            "  noise odds: an engine as noisy as the reference's own low-precision run "
            f"diverges in this case with probability {percent(result.divergence_probability)}"
        )
    if result.kind is not DivergenceKind.MISSING:
        lines.append(f"  native:    {show_token(result.native_token, result.native)}")
        lines.append(f"  reference: {show_token(result.reference_token, result.reference)}")
        lines.extend(_topk_lines(result))
        lines.extend(_context_lines(result))
    lines.append(f"  reproduce: {repro}")
    return "\n".join(lines)


def _headline(result: CaseResult) -> str:
    case = f"case {result.case_id!r}"
    index = result.first_divergence
    if result.kind is DivergenceKind.MISSING:
        present = "native" if result.native is not None else "reference"
        absent = "reference" if result.native is not None else "native"
        return f"{case} was recorded by the {present} side only (no {absent} record)"
    if result.kind.is_token_mismatch:
        if result.native_rank is None:
            detail = "native token not in the reference top-k"
        else:
            detail = f"native token {result.native_gap:.6g} nats below the reference top-1"
        if result.kind is DivergenceKind.NOISE:
            detail += ", within the reference's own precision noise"
        return f"{case}: first divergence at token {index}, {result.kind.name} ({detail})"
    return f"{case}: first divergence at token {index}, {result.kind.name} ({_stop_detail(result)})"


def _stop_detail(result: CaseResult) -> str:
    return f"{_ending('native', result.native)}, {_ending('reference', result.reference)}"


def _ending(name: str, side: SideSummary | None) -> str:
    if side is None:
        return f"no {name} record"
    return f"{name} {side.length} tokens {'with' if side.eos else 'without'} EOS"


def _topk_lines(result: CaseResult) -> list[str]:
    if not result.reference_topk:
        return ["  reference top-k: not recorded at this step"]
    lines = [
        f"  reference top-{len(result.reference_topk)} at token {result.first_divergence} "
        "(gap = nats below top-1):"
    ]
    for rank, entry in enumerate(result.reference_topk, start=1):
        text = "<text not recorded>" if entry.text is None else repr(entry.text)
        marker = "  <- native" if rank == result.native_rank else ""
        lines.append(
            f"    {rank}. {text} (id {entry.token_id}) logprob {entry.logprob:.6g} "
            f"gap {entry.gap:.6g}{marker}"
        )
    if result.native_token is not None and result.native_rank is None:
        lines.append("    (native token not among them)")
    return lines


def _context_lines(result: CaseResult) -> list[str]:
    if not result.context:
        return ["  context: (divergence at the first generated token)"]
    shown = " ".join(
        f"<id {token.token_id}>" if token.text is None else repr(token.text)
        for token in result.context
    )
    return [f"  context ({len(result.context)} tokens before): {shown}"]
