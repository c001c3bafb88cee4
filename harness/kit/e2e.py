"""The E2E test skeleton of a family: run state, fixtures, generation of every case, checks.

A family's ``test_e2e.py`` keeps its tests (checkpoint, build, native, reference with its noise
floor, teacher-forced engine: ``harness.kit.forced``) and what is its own in them; the plumbing
around them comes from here::

    engine_root, collect_garbage = e2e.fixtures(checkpoint.CACHE.root)

    @pytest.fixture(scope="module")
    def run() -> e2e.Run[FamilyOptions]:
        return e2e.start(e2e.Run(FamilyOptions.from_harness()))

The tests check the mechanics (a complete bundle, ``new_tokens`` tokens or an end of turn,
well-formed top-k); parity itself is judged by the host from the recorded cases.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import harness
from harness.kit import allocator, bundle, generation, workspace

_Options = TypeVar("_Options")
_T = TypeVar("_T")


@dataclass
class Run(Generic[_Options]):
    """What one test hands to the next (a family may subclass it to carry more)."""

    options: _Options
    checkpoint_dir: Path | None = None
    bundle_dir: Path | None = None
    cases: list[Any] = field(default_factory=list)
    natives: list[generation.Generation] | None = None
    """The engine's generations (the teacher pass runs where they diverge)."""
    references: list[generation.Generation] | None = None
    """The FP32 reference's generations, which the noise and teacher passes are fed."""


_Run = TypeVar("_Run", bound=Run[Any])


def start(run: _Run) -> _Run:
    """``run``, once glibc's mmap threshold is pinned (``harness.kit.allocator``): the memory
    the build frees then leaves the process instead of staying charged to the cap."""
    allocator.pin_mmap_threshold()
    return run


def fixtures(cache_root: Callable[[], Path]) -> tuple[Any, Any]:
    """The module fixture ``engine_root`` (a private directory for this run's bundle, on the
    disk of the checkpoint cache, not a tmpfs that would charge the plans to the cap) and the
    autouse fixture ``collect_garbage``; assign both to names in the test module."""
    import pytest

    @pytest.fixture(scope="module", name="engine_root")
    def engine_root() -> Iterator[Path]:
        with workspace.engine_workspace(cache_root() / "engines") as directory:
            yield directory

    @pytest.fixture(autouse=True, name="collect_garbage")
    def collect_garbage() -> Iterator[None]:
        # Free what a test's runtime left (exported graphs can hold reference cycles) before
        # the next phase starts, so that each phase's memory peak is its own.
        yield
        gc.collect()

    return engine_root, collect_garbage


def require(value: _T | None, producer: str) -> _T:
    """``value``, or a skip naming the test that should have produced it."""
    import pytest

    if value is None:
        pytest.skip(f"needs {producer} to pass first")
    return value


def check_bundle(published: Path, engine_root: Path, networks: Sequence[str]) -> dict[str, Any]:
    """The published bundle holds one plan per network, each its recorded size (recorded as
    ``plan_bytes:<network>``), and nothing else was left in ``engine_root``; its manifest."""
    manifest = bundle.read_manifest(published)
    assert [plan["network"] for plan in manifest["plans"]] == list(networks)
    for plan in manifest["plans"]:
        assert (published / plan["file"]).stat().st_size == plan["size_bytes"]
        harness.metric(f"plan_bytes:{plan['network']}", plan["size_bytes"], "bytes")
    entries = [path for path in engine_root.iterdir() if path.name != workspace.LOCK]
    assert entries == [published], "staging left behind"
    return manifest


class Runtime(Protocol):
    """What a side (native or reference) offers the skeleton."""

    tokenizer: Any
    stop_ids: set[int]

    def generate(self, prompt: Any, new_tokens: int) -> generation.Generation: ...


def generate_all(
    run: Run[Any], runtime: Runtime, side: str, *, speed: bool = False
) -> list[generation.Generation]:
    """Every case of ``run`` through ``runtime``, each recorded as a parity case of ``side``
    (``check`` them once the side's phase is over). ``speed`` records ``<side>_tokens_per_s``
    and, for the native side, the serving latencies (``serving_metrics``)."""
    new_tokens: int = run.options.new_tokens
    started = time.perf_counter()
    results = []
    for case in run.cases:
        result = runtime.generate(case, new_tokens)
        generation.record(result, side, runtime.tokenizer)
        results.append(result)
    if speed:
        elapsed = time.perf_counter() - started
        tokens = sum(len(result.token_ids) for result in results)
        harness.metric(f"{side}_tokens_per_s", tokens / elapsed, "tokens/s")
        if side == "native":  # the serving engine; a reference is not served
            serving_metrics(results)
    return results


def serving_metrics(results: list[generation.Generation]) -> None:
    """Time to first token per request, inter-token latency per decode step, and decode
    throughput (tokens after the first over their time), as a serving benchmark reports them."""
    decode_tokens, decode_s = 0, 0.0
    for result in results:
        ttft = result.time_to_first_token_ms()
        if ttft is not None:
            harness.metric("ttft_ms", ttft, "ms")
        steps = result.inter_token_ms()
        for step_ms in steps:
            harness.metric("itl_ms", step_ms, "ms")
        decode_tokens += len(steps)
        decode_s += sum(steps) / 1e3
    if decode_s > 0:
        harness.metric("decode_tokens_per_s", decode_tokens / decode_s, "tokens/s")


def check(results: list[generation.Generation], new_tokens: int, stop_ids: set[int]) -> None:
    """Each result is ``new_tokens`` long or ends with a stop token, with a well-formed top-k
    (``TOP_K`` entries, the picked token first, log-probabilities descending) at every step."""
    for result in results:
        if result.eos:
            assert result.token_ids[-1] in stop_ids, result.case_id
        else:
            assert len(result.token_ids) == new_tokens, result.case_id
        assert len(result.top_logprobs) == len(result.token_ids), result.case_id
        for token, top in zip(result.token_ids, result.top_logprobs, strict=True):
            assert len(top) == generation.TOP_K
            assert top[0][0] == token
            assert [entry[1] for entry in top] == sorted((entry[1] for entry in top), reverse=True)
