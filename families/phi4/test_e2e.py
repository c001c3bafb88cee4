"""End-to-end test of the phi4 family: checkpoint, vision/prefill/decode plans, native run,
reference run.

An ordinary pytest file on the family kit's skeleton (``harness.kit.e2e``). Under qualify the
harness records phases and every parity case into the run directory, and options arrive as
``QUALIFY_OPT_*``; under plain pytest the harness calls do nothing and the defaults apply. The
tests check the mechanics (a complete bundle, 30 tokens or an end of turn, well-formed top-k);
parity itself is judged by the host.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from phi4_engine import checkpoint, engine, prompts
from phi4_engine.build import NETWORKS, PLAN_DTYPE, TEXT_NETWORKS, build_engine
from phi4_engine.native import NativeRuntime
from phi4_engine.options import FamilyOptions
from phi4_engine.reference import ReferenceRuntime

import harness
from harness.kit import e2e, forced


@dataclass
class Run(e2e.Run[FamilyOptions]):
    """What one test hands to the next: the kit's, with the engine and the model kind."""

    engine: engine.EngineChoice | None = None
    multimodal: bool = True


engine_root, collect_garbage = e2e.fixtures(checkpoint.cache_root)


@pytest.fixture(scope="module")
def run() -> Run:
    """The options of this run and the state the tests build up."""
    return e2e.start(Run(FamilyOptions.from_harness()))


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
    checkpoint_dir = e2e.require(run.checkpoint_dir, "test_checkpoint")
    choice = engine.choose_engine(run.options.engine)
    print(f"engine: {choice.name} ({choice.reason})")
    published = build_engine(
        checkpoint_dir,
        engine_root / "engine",
        engine=choice,
        retain_plans=run.options.retain_plans,
        trust_remote_code=run.options.trust_remote_code,
        perturb_native=run.options.perturb_native,
    )
    networks = NETWORKS if run.multimodal else TEXT_NETWORKS
    manifest = e2e.check_bundle(published, engine_root, networks)
    assert manifest["engine"] == choice.name
    run.bundle_dir, run.engine = published, choice


def test_native_run(run: Run) -> None:
    """The bundle's plans generate every case; the engine that ran names a nested phase."""
    bundle_dir = e2e.require(run.bundle_dir, "test_build_engine")
    checkpoint_dir = e2e.require(run.checkpoint_dir, "test_checkpoint")
    with harness.phase("native"):
        runtime = NativeRuntime(bundle_dir, checkpoint_dir, run.options.plant(engine=True))
        with harness.phase(f"native:{runtime.engine}"):
            results = e2e.generate_all(run, runtime, "native")
    e2e.check(results, run.options.new_tokens, runtime.stop_ids)
    run.natives = results
    if runtime.engine == engine.TORCH:
        assert "tensorrt" not in sys.modules, "the CPU path imported TensorRT"


def test_reference_run(run: Run) -> None:
    """FP32 eager transformers with its own KV cache generates every case."""
    checkpoint_dir = e2e.require(run.checkpoint_dir, "test_checkpoint")
    trust_remote_code = run.options.trust_remote_code
    plant = run.options.plant(engine=False)
    with harness.phase("reference"):
        runtime = ReferenceRuntime(checkpoint_dir, trust_remote_code=trust_remote_code, plant=plant)
        results = e2e.generate_all(run, runtime, "reference")
        with harness.phase("reference:noise"):
            # The same eager model in the engine's dtype, fed the FP32 tokens.
            lowp = ReferenceRuntime(
                checkpoint_dir, PLAN_DTYPE, trust_remote_code=trust_remote_code, plant=plant
            )
            forced.noise_pass(run.cases, results, runtime.forced_rows, lowp.forced_rows)
            del lowp
    e2e.check(results, run.options.new_tokens, runtime.stop_ids)
    run.references = results


def test_teacher_forced(run: Run) -> None:
    """The engine fed the reference's tokens where it diverged: does it agree after?"""
    bundle_dir = e2e.require(run.bundle_dir, "test_build_engine")
    checkpoint_dir = e2e.require(run.checkpoint_dir, "test_checkpoint")
    references = e2e.require(run.references, "test_reference_run")
    natives = e2e.require(run.natives, "test_native_run")
    with harness.phase("teacher"):
        cases, diverged = forced.diverging(run.cases, references, natives)
        if cases:  # an exact case has no continuation to explain
            runtime = NativeRuntime(bundle_dir, checkpoint_dir, run.options.plant(engine=True))
            forced.teacher_pass(cases, diverged, runtime.forced_rows)
