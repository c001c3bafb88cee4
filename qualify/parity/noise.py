"""The reference's own noise floor, and what it implies for a divergence and for the gate.

The noise view of a case (``role="noise"``, phase ``reference:noise``) is the reference run
again in the engine's precision, fed the FP32 reference's tokens. At every position ``t`` of
every case, the FP32 reference's top-2 gap ``g_t`` (nats from its top-1 to its runner-up) is
compared with the low-precision run's gap between the same two tokens: their difference
``d_t`` is precision noise. The model, stated in docs/parity.md:

- an engine exactly as noisy as the reference's own low-precision run sees ``g_t + e`` with
  ``e ~ Normal(0, sigma^2)``, ``sigma`` the root mean square of every ``d_t``; it flips
  position ``t`` with probability ``q_t = Phi(-g_t / sigma)``;
- a divergence is NOISE when the engine's token is within ``z * sigma`` of the reference's
  top-1, ``z = Phi^-1(1 - ALPHA / N)`` over the ``N`` positions measured (Bonferroni: noise
  alone exceeds that anywhere in the corpus with probability at most ``ALPHA``), or when the
  low-precision reference itself picked that token there;
- case ``i`` diverges with ``p_i = 1 - prod_t (1 - q_t)`` over its reference tokens; the gate
  fails such an engine when fewer than ``min_exact`` cases are exact (Poisson binomial);
- after a divergence the engine fed the reference's tokens should disagree at no more
  positions than noise explains: at most the smallest ``k`` with ``P(X > k) <= ALPHA``, ``X``
  the Poisson-binomial count of the ``q_t`` after it. More is ``drift``; else ``single_flip``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from statistics import NormalDist

from qualify import records
from qualify.parity.records import ParityInputError, Record, all_topk
from qualify.parity.results import TopKEntry
from qualify.records import frozen_record

ALPHA = 0.01
"""The odds a numbers-only decision may be wrong: a NOISE call, a drift call, the gate."""
SELF_FLIPS_SHOWN = 20
"""Positions where the low-precision reference disagreed with itself, kept for the report."""
_NORMAL = NormalDist()


@frozen_record
class NoiseFloor:
    """The low-precision reference against the FP32 reference, over every noise view."""

    cases: int
    """Cases with a noise view."""
    positions: int
    """Positions where both of the FP32 reference's top-2 tokens were in the low-precision
    top-k, so that the gap difference is known."""
    gap_sigma: float
    """Root mean square of the low-precision minus FP32 top-2 gap, in nats (0 when none)."""
    gap_max: float
    """Largest absolute gap difference seen, in nats."""
    logit_noise_mean: float | None
    """Mean over positions of the spread (standard deviation over the vocabulary) of the
    low-precision minus FP32 log-probabilities; None when not recorded."""
    logit_noise_max: float | None
    self_flip_count: int
    """Positions where the low-precision reference's top-1 is not the FP32 reference's."""
    self_flips: tuple[tuple[str, int], ...]
    """The first ``SELF_FLIPS_SHOWN`` of them, as (case id, position)."""

    @property
    def z(self) -> float:
        """Standard deviations of noise beyond which a flip is a defect at odds ``ALPHA``."""
        return _NORMAL.inv_cdf(1 - ALPHA / max(1, self.positions))

    @property
    def noise_nats(self) -> float:
        """A divergence to a token at most this far below the top-1 is NOISE."""
        return self.z * self.gap_sigma

    def flip_probability(self, gap: float) -> float:
        """``q``: the chance noise flips a position whose reference top-2 gap is ``gap``."""
        if self.gap_sigma <= 0:
            return 0.5 if gap <= 0 else 0.0
        return _NORMAL.cdf(-gap / self.gap_sigma)

    def to_dict(self) -> dict[str, object]:
        """The audit's ``parity.noise``."""
        return {
            "cases": self.cases,
            "positions": self.positions,
            "gap_sigma_nats": self.gap_sigma,
            "gap_max_nats": self.gap_max,
            "logit_noise_mean": self.logit_noise_mean,
            "logit_noise_max": self.logit_noise_max,
            "self_flip_count": self.self_flip_count,
            "self_flips": [
                {"case_id": case_id, "position": position} for case_id, position in self.self_flips
            ],
            "alpha": ALPHA,
            "z": self.z,
            "noise_nats": self.noise_nats,
        }


@records.record
class NoiseAccumulator:
    """Builds a NoiseFloor one case at a time (memory does not grow with the cases)."""

    cases: int = 0
    positions: int = 0
    square_sum: float = 0.0
    gap_max: float = 0.0
    spread_sum: float = 0.0
    spread_count: int = 0
    spread_max: float = 0.0
    self_flip_count: int = 0
    self_flips: list[tuple[str, int]] = records.field(default_factory=list)

    def add(self, case_id: str, reference: Record, noise: Record) -> None:
        """Compare one case's noise view with its FP32 reference record."""
        check_forced(reference, noise)
        self.cases += 1
        fp32_steps, lowp_steps = all_topk(reference), all_topk(noise)
        for position in range(len(reference.token_ids)):
            fp32, lowp = (
                step_of(reference, fp32_steps, position),
                step_of(noise, lowp_steps, position),
            )
            if lowp[0].token_id != reference.token_ids[position]:
                self.self_flip_count += 1
                if len(self.self_flips) < SELF_FLIPS_SHOWN:
                    self.self_flips.append((case_id, position))
            self._gap(fp32, {entry.token_id: entry.logprob for entry in lowp})
        for spread in noise.logit_noise or ():
            self.spread_sum += spread
            self.spread_count += 1
            self.spread_max = max(self.spread_max, spread)

    def _gap(self, fp32: Sequence[TopKEntry], lowp: dict[int, float]) -> None:
        if len(fp32) < 2 or fp32[0].token_id not in lowp or fp32[1].token_id not in lowp:
            return
        lowp_gap = lowp[fp32[0].token_id] - lowp[fp32[1].token_id]
        difference = lowp_gap - fp32[1].gap
        if not math.isfinite(difference):
            return
        self.positions += 1
        self.square_sum += difference * difference
        self.gap_max = max(self.gap_max, abs(difference))

    def result(self) -> NoiseFloor | None:
        """The noise floor; None when no case had a noise view."""
        if self.cases == 0:
            return None
        spread_mean = self.spread_sum / self.spread_count if self.spread_count else None
        return NoiseFloor(
            cases=self.cases,
            positions=self.positions,
            gap_sigma=math.sqrt(self.square_sum / self.positions) if self.positions else 0.0,
            gap_max=self.gap_max,
            logit_noise_mean=spread_mean,
            logit_noise_max=self.spread_max if self.spread_count else None,
            self_flip_count=self.self_flip_count,
            self_flips=tuple(self.self_flips),
        )


def check_forced(reference: Record, forced: Record) -> None:
    """A forced view must have been fed exactly the reference's tokens."""
    if forced.token_ids != reference.token_ids:
        raise ParityInputError(
            f"{forced.where}: field 'forced_ids' is not the reference's token_ids "
            f"({reference.where}): the view was fed other tokens"
        )


def step_of(
    record: Record, steps: Sequence[tuple[TopKEntry, ...]], position: int
) -> tuple[TopKEntry, ...]:
    """Step ``position`` of ``steps`` (``all_topk(record)``); a missing or empty one is an
    error naming the record."""
    topk = steps[position] if position < len(steps) else ()
    if not topk:
        raise ParityInputError(
            f"{record.where}: field 'top_logprobs' has no step {position} (one step per "
            "token is required)"
        )
    return topk


def reference_gaps(reference: Record) -> list[float]:
    """The reference's top-2 gap at each of its tokens (inf where it recorded one entry)."""
    steps = all_topk(reference)
    gaps = []
    for position in range(len(reference.token_ids)):
        topk = step_of(reference, steps, position)
        gaps.append(topk[1].gap if len(topk) > 1 else math.inf)
    return gaps


def divergence_probability(floor: NoiseFloor, gaps: Iterable[float]) -> float:
    """``p_i``: the chance a noise-only engine diverges somewhere along these gaps."""
    agree = 1.0
    for gap in gaps:
        agree *= 1.0 - floor.flip_probability(gap)
    return 1.0 - agree


def poisson_binomial(probabilities: Iterable[float]) -> list[float]:
    """``P(X = k)`` for ``k = 0..n``, ``X`` the number of successes of independent trials."""
    distribution = [1.0]
    for probability in probabilities:
        following = [0.0] * (len(distribution) + 1)
        for count, mass in enumerate(distribution):
            following[count] += mass * (1.0 - probability)
            following[count + 1] += mass * probability
        distribution = following
    return distribution


def false_fail_probability(divergence: Sequence[float], required: int) -> float:
    """The chance fewer than ``required`` of the cases are exact, case ``i`` diverging with
    probability ``divergence[i]`` independently."""
    exact = poisson_binomial(1.0 - probability for probability in divergence)
    return min(1.0, max(0.0, sum(exact[: max(0, required)])))


def gate_suggestion(divergence: Sequence[float], required: int) -> tuple[int, float] | None:
    """The largest ``min_exact`` below ``required`` whose false-fail probability is at most
    ``ALPHA``, with that probability; None when ``required`` already meets it."""
    if false_fail_probability(divergence, required) <= ALPHA:
        return None
    for candidate in range(required - 1, -1, -1):
        probability = false_fail_probability(divergence, candidate)
        if probability <= ALPHA:
            return candidate, probability
    return 0, 0.0


def allowed_disagreements(flip_probabilities: Sequence[float]) -> int:
    """The most disagreements noise explains at odds ``ALPHA``: the smallest ``k`` with
    ``P(X > k) <= ALPHA``, ``X`` the Poisson-binomial count of these flips."""
    tail = 1.0
    for count, mass in enumerate(poisson_binomial(flip_probabilities)):
        tail -= mass
        if tail <= ALPHA:
            return count
    return len(flip_probabilities)
