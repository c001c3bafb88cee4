"""End-to-end test of the phi4 family: checkpoint, vision/prefill/decode plans, native run,
reference run.

An ordinary pytest file. Under qualify the harness records phases and every parity case into
the run directory, and options arrive as ``QUALIFY_OPT_*``; under plain pytest the harness calls
do nothing and the defaults apply. The tests check the mechanics (a complete bundle, 30 tokens
or an end of turn, well-formed top-k); parity itself is judged by the host.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pytest
from phi4_engine import checkpoint, engine, prompts
from phi4_engine.build import NETWORKS, TEXT_NETWORKS, build_engine
from phi4_engine.native import NativeRuntime
from phi4_engine.options import FamilyOptions
from phi4_engine.reference import ReferenceRuntime
from tiny_engine import allocator, bundle, generation, workspace

import harness

_T = TypeVar("_T")


@dataclass
class Run:
    """What one test hands to the next."""

    options: FamilyOptions
    checkpoint_dir: Path | None = None
    bundle_dir: Path | None = None
    engine: engine.EngineChoice | None = None
    cases: list[prompts.Prompt] = field(default_factory=list)
    multimodal: bool = True


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
    # Free what a test's runtime left before the next phase starts, so that each phase's
    # memory peak is its own.
    yield
    gc.collect()


def test_checkpoint(run: Run) -> None:
    """The checkpoint (synthesized on first use, or checkpoint=DIR: Phi-4-multimodal or
    Phi-4-mini) passes its check and loads through from_pretrained, with the real Phi-4
    tokenizer."""
    from transformers import AutoConfig

    options = run.options
    with harness.phase("checkpoint"):
        if options.checkpoint:
            path = Path(options.checkpoint)
            checkpoint.check_checkpoint(path, trust_remote_code=options.trust_remote_code)
        else:
            path = checkpoint.ensure_checkpoint(options.size)
        tokenizer = checkpoint.load_tokenizer(path)
    config = AutoConfig.from_pretrained(path, trust_remote_code=options.trust_remote_code)
    assert config.model_type in checkpoint.MODEL_TYPES
    print(f"model: {config.model_type} ({checkpoint.MODEL_TYPES[config.model_type]})")
    assert config.tie_word_embeddings is True
    assert config.rope_parameters["rope_type"] == "longrope"
    assert tokenizer.convert_tokens_to_ids("<|endoftext|>") == 199999
    run.multimodal = checkpoint.is_multimodal(path)
    run.cases = prompts.parity_prompts(tokenizer, options.prompts, images=run.multimodal)
    run.checkpoint_dir = path


def test_build_engine(run: Run, engine_root: Path) -> None:
    """One plan per network (prefill, decode and, with a vision encoder, vision), published as
    a complete bundle."""
    checkpoint_dir = _require(run.checkpoint_dir, "test_checkpoint")
    choice = engine.choose_engine(run.options.engine)
    print(f"engine: {choice.name} ({choice.reason})")
    published = build_engine(
        checkpoint_dir,
        engine_root / "engine",
        engine=choice,
        retain_plans=run.options.retain_plans,
        trust_remote_code=run.options.trust_remote_code,
    )
    manifest = bundle.read_manifest(published)
    networks = NETWORKS if run.multimodal else TEXT_NETWORKS
    assert [plan["network"] for plan in manifest["plans"]] == list(networks)
    assert manifest["engine"] == choice.name
    for plan in manifest["plans"]:
        assert (published / plan["file"]).stat().st_size == plan["size_bytes"]
        harness.metric(f"plan_bytes:{plan['network']}", plan["size_bytes"], "bytes")
    entries = [path for path in engine_root.iterdir() if path.name != workspace.LOCK]
    assert entries == [published], "staging left behind"
    run.bundle_dir, run.engine = published, choice


def test_native_run(run: Run) -> None:
    """The bundle's plans generate every case; the engine that ran names a nested phase."""
    bundle_dir = _require(run.bundle_dir, "test_build_engine")
    checkpoint_dir = _require(run.checkpoint_dir, "test_checkpoint")
    with harness.phase("native"):
        runtime = NativeRuntime(bundle_dir, checkpoint_dir)
        with harness.phase(f"native:{runtime.engine}"):
            results = _generate_all(run, runtime, "native")
    _check(results, run.options.new_tokens, runtime.stop_ids)
    if runtime.engine == engine.TORCH:
        assert "tensorrt" not in sys.modules, "the CPU path imported TensorRT"


def test_reference_run(run: Run) -> None:
    """FP32 eager transformers with its own KV cache generates every case."""
    checkpoint_dir = _require(run.checkpoint_dir, "test_checkpoint")
    with harness.phase("reference"):
        runtime = ReferenceRuntime(checkpoint_dir, trust_remote_code=run.options.trust_remote_code)
        results = _generate_all(run, runtime, "reference")
    _check(results, run.options.new_tokens, runtime.stop_ids)


def _generate_all(
    run: Run, runtime: NativeRuntime | ReferenceRuntime, side: str
) -> list[generation.Generation]:
    results = []
    for case in run.cases:
        result = runtime.generate(case, run.options.new_tokens)
        generation.record(result, side, runtime.tokenizer)
        results.append(result)
    return results


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
