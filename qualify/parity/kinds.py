"""The two enums of a parity comparison: which side recorded a case, and how it diverged."""

from __future__ import annotations

import enum


class Side(enum.Enum):
    """Which engine produced a record."""

    NATIVE = "native"
    REFERENCE = "reference"


class DivergenceKind(enum.Enum):
    """How a case's native tokens relate to its reference tokens."""

    EXACT = "exact"
    """Same token ids and the same stop reason (EOS or not)."""
    TIE = "tie"
    """Different token where the reference's own gap is float rounding (<= tie_nats)."""
    NOISE = "noise"
    """Different token within the reference's own precision noise of its top-1 (z * sigma of
    the noise floor), or the token the reference itself picked in the engine's precision."""
    NEAR_TIE = "near_tie"
    """Different token the reference rated within near_tie_nats of its top-1."""
    WRONG = "wrong"
    """Different token, clearly worse in the reference's view or outside its top-k."""
    LENGTH = "length"
    """One side ended without EOS where the other went on (a length limit, a truncation)."""
    EOS = "eos"
    """One side stopped at EOS where the other went on or stopped for another reason."""
    MISSING = "missing"
    """The case was recorded on one side only."""

    @property
    def is_token_mismatch(self) -> bool:
        """Both sides produced a token at the divergence and the tokens differ."""
        return self in (
            DivergenceKind.TIE,
            DivergenceKind.NOISE,
            DivergenceKind.NEAR_TIE,
            DivergenceKind.WRONG,
        )


class Continuation(enum.Enum):
    """What the engine does after a divergence when fed the reference's tokens."""

    SINGLE_FLIP = "single_flip"
    """It disagrees at no more positions than the noise floor explains."""
    DRIFT = "drift"
    """It disagrees at more positions than noise explains: a defect, not a tie-break."""
