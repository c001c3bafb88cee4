"""End-to-end test of the tiny family: checkpoint, engine build, native run, reference run.

An ordinary pytest file. Under qualify the harness records phases, metrics and every parity
case into the run directory, and options arrive as ``QUALIFY_OPT_*``; under plain pytest the
harness calls do nothing and the defaults apply. The tests check the mechanics (a bundle, 30
tokens or an end of turn, well-formed top-k); parity itself is judged by the host.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pytest
from tiny_engine import allocator, bundle, checkpoint, generation, prompts, workspace
from tiny_engine.build import NETWORKS, build_engine
from tiny_engine.native import NativeRuntime
from tiny_engine.options import FamilyOptions
from tiny_engine.reference import ReferenceRuntime

import harness

_T = TypeVar("_T")


@dataclass
class Run:
    """What one test hands to the next."""

    options: FamilyOptions
    checkpoint_dir: Path | None = None
    bundle_dir: Path | None = None
    cases: list[prompts.Prompt] = field(default_factory=list)


@pytest.fixture(scope="module")
def run() -> Run:
    """The options of this run and the state the tests build up."""
    allocator.pin_mmap_threshold()
    return Run(FamilyOptions.from_harness())


@pytest.fixture(scope="module")
def engine_root() -> Iterator[Path]:
    """A private directory for this run's bundle, on the disk of the checkpoint cache."""
    with workspace.engine_workspace(checkpoint.cache_root() / "engines") as directory:
        yield directory


@pytest.fixture(autouse=True)
def _collect_garbage() -> Iterator[None]:
    # Free what a test's runtime left (exported graphs can hold reference cycles) before the
    # next phase starts, so that each phase's memory peak is its own.
    yield
    gc.collect()


def test_checkpoint(run: Run) -> None:
    """The checkpoint exists (created on first use) and loads through from_pretrained."""
    from transformers import AutoConfig

    with harness.phase("checkpoint"):
        path = checkpoint.ensure_checkpoint(run.options.size)
        tokenizer = checkpoint.load_tokenizer(path)
    config = AutoConfig.from_pretrained(path)
    assert config.model_type == "phi3"
    assert config.architectures == ["Phi3ForCausalLM"]
    assert len(tokenizer) == config.vocab_size
    run.cases = prompts.parity_prompts(tokenizer, run.options.prompts)
    assert any(case.text.startswith("<|") for case in run.cases), "no chat-templated case"
    run.checkpoint_dir = path


def test_build_engine(run: Run, engine_root: Path) -> None:
    """One bf16 plan per network, published as a complete bundle and nothing else."""
    checkpoint_dir = _require(run.checkpoint_dir, "test_checkpoint")
    published = build_engine(
        checkpoint_dir,
        engine_root / "engine",
        retain_plans=run.options.retain_plans,
        perturb_native=run.options.perturb_native,
    )
    manifest = bundle.read_manifest(published)
    assert [plan["network"] for plan in manifest["plans"]] == list(NETWORKS)
    for plan in manifest["plans"]:
        assert (published / plan["file"]).stat().st_size == plan["size_bytes"]
        harness.metric(f"plan_bytes:{plan['network']}", plan["size_bytes"], "bytes")
    entries = [path for path in engine_root.iterdir() if path.name != workspace.LOCK]
    assert entries == [published], "staging left behind"
    run.bundle_dir = published


def test_native_run(run: Run) -> None:
    """The bundle's plans generate every case with a KV cache; each case is recorded."""
    bundle_dir = _require(run.bundle_dir, "test_build_engine")
    checkpoint_dir = _require(run.checkpoint_dir, "test_checkpoint")
    with harness.phase("native"):
        runtime = NativeRuntime(bundle_dir, checkpoint_dir)
        results = _generate_all(run, runtime, "native")
    _check(results, run.options.new_tokens, runtime.stop_ids)


def test_reference_run(run: Run) -> None:
    """FP32 eager transformers, full recompute per token, generates every case."""
    checkpoint_dir = _require(run.checkpoint_dir, "test_checkpoint")
    with harness.phase("reference"):
        runtime = ReferenceRuntime(checkpoint_dir)
        results = _generate_all(run, runtime, "reference")
    _check(results, run.options.new_tokens, runtime.stop_ids)


def _generate_all(
    run: Run, runtime: NativeRuntime | ReferenceRuntime, side: str
) -> list[generation.Generation]:
    started = time.perf_counter()
    results = []
    for case in run.cases:
        result = runtime.generate(case, run.options.new_tokens)
        generation.record(result, side, runtime.tokenizer)
        results.append(result)
    elapsed = time.perf_counter() - started
    tokens = sum(len(result.token_ids) for result in results)
    harness.metric(f"{side}_tokens_per_s", tokens / elapsed, "tokens/s")
    if side == "native":  # the serving engine; the reference recomputes and is not served
        _serving_metrics(results)
    return results


def _serving_metrics(results: list[generation.Generation]) -> None:
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


def _check(results: list[generation.Generation], new_tokens: int, stop_ids: set[int]) -> None:
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


def _require(value: _T | None, producer: str) -> _T:
    if value is None:
        pytest.skip(f"needs {producer} to pass first")
    return value
