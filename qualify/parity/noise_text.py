"""How every report says the noise floor, the gate's odds and a forced continuation: the
terminal, JUnit, the report page, the step summary and ``qualify compare`` use these words."""

from __future__ import annotations

from collections.abc import Mapping


def odds_text(
    noise: Mapping[str, object], probability: float | None, suggested_min_exact: int | None
) -> str:
    """The noise floor (``NoiseFloor.to_dict``) and the gate's odds, as every report says it."""
    sigma, nats = noise.get("gap_sigma_nats"), noise.get("noise_nats")
    line = (
        f"noise floor: low-precision reference vs FP32, top-2 gap sigma {_number(sigma)} nats "
        f"over {noise.get('positions')} positions, {noise.get('self_flip_count')} self-flip(s); "
        f"NOISE below {_number(nats)} nats"
    )
    if probability is not None:
        line += f"; false-fail probability of the gate {percent(probability)}"
    if suggested_min_exact is not None:
        line += (
            f" (over 1%: WARNING, an engine as good as the reference's own low-precision run "
            f"fails it; min_exact = {suggested_min_exact} brings it under 1%)"
        )
    return line


def forced_text(forced: object) -> str | None:
    """A case's audit ``teacher_forced`` entry as ``single flip (24 of 24 agree after)``."""
    if not isinstance(forced, Mapping):
        return None
    kind = str(forced.get("kind")).replace("_", " ")
    if forced.get("of") == 0:
        return f"{kind} (at the last token)"
    return f"{kind} ({forced.get('agree_after')} of {forced.get('of')} agree after)"


def _number(value: object) -> str:
    return f"{value:.3g}" if isinstance(value, int | float) else "?"


def percent(probability: float) -> str:
    """A probability as a percentage a reader can act on (``<0.01%`` for the negligible)."""
    if probability < 1e-4:  # 0 too: the model's tails are not that sure
        return "<0.01%"
    return f"{probability * 100:.2g}%"
