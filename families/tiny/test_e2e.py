"""End-to-end test of the tiny family: checkpoint, engine build, native run, reference run
(with its noise floor), teacher-forced engine.

An ordinary pytest file on the family kit's skeleton (``harness.kit.e2e``). Under qualify the
harness records phases, metrics and every parity case into the run directory, and options
arrive as ``QUALIFY_OPT_*``; under plain pytest the harness calls do nothing and the defaults
apply. The tests check the mechanics (a bundle, 30 tokens or an end of turn, well-formed
top-k); parity itself is judged by the host.
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from tiny_engine import checkpoint, prompts
from tiny_engine.build import NETWORKS, PLAN_DTYPE, build_engine
from tiny_engine.native import NativeRuntime
from tiny_engine.options import FamilyOptions
from tiny_engine.reference import ReferenceRuntime

import harness
from harness.kit import e2e, forced

Run = e2e.Run[FamilyOptions]
engine_root, collect_garbage = e2e.fixtures(checkpoint.cache_root)


@pytest.fixture(scope="module")
def run() -> Run:
    """The options of this run and the state the tests build up."""
    return e2e.start(Run(FamilyOptions.from_harness()))


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
    published = build_engine(
        e2e.require(run.checkpoint_dir, "test_checkpoint"),
        engine_root / "engine",
        retain_plans=run.options.retain_plans,
        perturb_native=run.options.perturb_native,
    )
    e2e.check_bundle(published, engine_root, NETWORKS)
    run.bundle_dir = published


def test_native_run(run: Run) -> None:
    """The bundle's plans generate every case with a KV cache; each case is recorded."""
    bundle_dir = e2e.require(run.bundle_dir, "test_build_engine")
    checkpoint_dir = e2e.require(run.checkpoint_dir, "test_checkpoint")
    with harness.phase("native"):
        runtime = NativeRuntime(bundle_dir, checkpoint_dir, run.options.plant(engine=True))
        results = e2e.generate_all(run, runtime, "native", speed=True)
    e2e.check(results, run.options.new_tokens, runtime.stop_ids)
    run.natives = results


def test_reference_run(run: Run) -> None:
    """FP32 eager transformers, full recompute per token, generates every case; then the
    same model in the engine's dtype, fed the FP32 tokens, measures the precision noise."""
    checkpoint_dir = e2e.require(run.checkpoint_dir, "test_checkpoint")
    plant = run.options.plant(engine=False)
    with harness.phase("reference"):
        runtime = ReferenceRuntime(checkpoint_dir, plant=plant)
        results = e2e.generate_all(run, runtime, "reference", speed=True)
        stop_ids = runtime.stop_ids
        with harness.phase("reference:noise"):
            # The FP32 rows first, then the FP32 model goes before the bf16 one is loaded: the
            # two are never resident together, and the phase's peak stays the reference's.
            exact = forced.rows_of(run.cases, results, runtime.forced_rows)
            del runtime
            gc.collect()
            lowp = ReferenceRuntime(checkpoint_dir, PLAN_DTYPE, plant=plant)
            forced.noise_pass(run.cases, results, exact, lowp.forced_rows)
    e2e.check(results, run.options.new_tokens, stop_ids)
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
