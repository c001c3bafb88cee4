"""The tiny family's pieces: checkpoint cache, bundle writer, engine build, options, sizes.

Everything runs at size ``tiny`` against one checkpoint created for this module in a
temporary cache; the E2E itself lives in families/tiny/test_e2e.py.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import require

torch = require("torch")
transformers = require("transformers")

FAMILY_DIR = Path(__file__).resolve().parent.parent / "families" / "tiny"
sys.path.insert(0, str(FAMILY_DIR))

from tiny_engine import checkpoint, prompts, sizes, tokenizer  # noqa: E402
from tiny_engine.build import NETWORKS, PLAN_DTYPE, build_engine  # noqa: E402
from tiny_engine.native import NativeRuntime  # noqa: E402
from tiny_engine.network import DecodeNetwork, NetworkShape, PrefillNetwork  # noqa: E402
from tiny_engine.options import FamilyOptions  # noqa: E402
from tiny_engine.reference import ReferenceRuntime  # noqa: E402

from harness.kit import bundle, workspace  # noqa: E402

pytestmark = pytest.mark.family

MB = 10**6
# Each default case with the token ids the FP32 reference generates for it.
Cases = list[tuple[prompts.Prompt, list[int]]]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private checkpoint cache for this module."""
    return tmp_path_factory.mktemp("tiny-cache")


@pytest.fixture(scope="module")
def tiny_checkpoint(cache: Path) -> Path:
    """The tiny checkpoint, created once into the module's cache."""
    return checkpoint.ensure_checkpoint("tiny", cache)


@pytest.fixture(scope="module")
def tiny_bundle(tiny_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A published engine bundle built from the tiny checkpoint."""
    return build_engine(tiny_checkpoint, tmp_path_factory.mktemp("engines") / "engine")


def test_checkpoint_loads_through_from_pretrained(tiny_checkpoint: Path) -> None:
    for name in ("config.json", "model.safetensors", "generation_config.json", "tokenizer.json"):
        assert (tiny_checkpoint / name).is_file(), name
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_checkpoint)
    assert type(model).__name__ == "Phi3ForCausalLM"
    assert model.config.tie_word_embeddings is False
    loaded = checkpoint.load_tokenizer(tiny_checkpoint)
    assert len(loaded) == model.config.vocab_size
    chat = [{"role": "user", "content": "Why did the program stop?"}]
    rendered = loaded.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    assert rendered == "<|user|>Why did the program stop?<|end|><|assistant|>"
    ids = loaded(rendered, add_special_tokens=False).input_ids
    assert ids[0] == loaded.convert_tokens_to_ids("<|user|>")
    assert loaded.decode(ids) == rendered
    stops = checkpoint.stop_token_ids(tiny_checkpoint)
    assert loaded.convert_tokens_to_ids("<|end|>") in stops


def test_checkpoint_is_created_once_per_key(tiny_checkpoint: Path, cache: Path) -> None:
    before = (tiny_checkpoint / "model.safetensors").stat().st_mtime_ns
    assert checkpoint.ensure_checkpoint("tiny", cache) == tiny_checkpoint
    assert (tiny_checkpoint / "model.safetensors").stat().st_mtime_ns == before
    assert [path.name for path in cache.iterdir()] == [tiny_checkpoint.name]
    keys = {checkpoint.checkpoint_dir(size, cache).name for size in sizes.SIZES}
    assert len(keys) == len(sizes.SIZES)


def test_failed_checkpoint_creation_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail_half_way(size: str, directory: Path) -> None:
        (directory / "config.json").write_text("{}")
        raise OSError("disk full")

    monkeypatch.setattr(checkpoint, "write_checkpoint", fail_half_way)
    with pytest.raises(OSError, match="disk full"):
        checkpoint.create_checkpoint("tiny", tmp_path / "tiny-key")
    assert list(tmp_path.iterdir()) == []


def test_cache_root_follows_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINY_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert checkpoint.cache_root() == tmp_path / "elsewhere"
    monkeypatch.delenv("TINY_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert checkpoint.cache_root() == tmp_path / ".cache" / "qualify" / "tiny"


def test_workspace_sweeps_only_abandoned_runs(tmp_path: Path) -> None:
    abandoned = tmp_path / "run-killed"
    abandoned.mkdir()
    (abandoned / workspace.LOCK).touch()
    (abandoned / ".engine.partial").mkdir()
    with workspace.engine_workspace(tmp_path) as mine:
        assert not abandoned.exists()
        assert workspace.sweep_abandoned(tmp_path) == []
        assert mine.is_dir()
    assert list(tmp_path.iterdir()) == []


_PINNED_CHILD = """
import sys
from pathlib import Path
import torch
from harness.kit import allocator

def anon():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024

if not allocator.pin_mmap_threshold():
    sys.exit(3)
before = anon()
tensors = [torch.ones(1 << 18) for _ in range(64)]  # 64 x 1 MiB
grown = anon() - before
del tensors
print(grown, anon() - before)
"""


def test_pinned_mmap_threshold_returns_freed_tensors() -> None:
    # In a fresh interpreter: in this one, heap freed by earlier tests would hold the tensors
    # without growing the process (and glibc's threshold may have moved already).
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, sys.path)))
    child = subprocess.run(
        [sys.executable, "-c", _PINNED_CHILD], check=False, env=env, capture_output=True, text=True
    )
    if child.returncode == 3:
        pytest.skip("not glibc")
    assert child.returncode == 0, child.stderr
    grown, after_free = map(int, child.stdout.split())
    assert grown > 48 << 20
    assert after_free < 16 << 20


def test_tokenizer_training_is_deterministic() -> None:
    assert tokenizer.train_tokenizer().to_str() == tokenizer.train_tokenizer().to_str()


def test_bundle_writer_publishes_complete_bundle(tmp_path: Path) -> None:
    target = tmp_path / "engine"
    with bundle.BundleWriter(target) as writer:
        writer.stage("prefill", b"p" * 1000)
        writer.stage("decode", memoryview(bytearray(b"d" * 10)))
        assert not target.exists(), "visible before publish"
        writer.publish({"networks": ["prefill", "decode"]})
    assert list(tmp_path.iterdir()) == [target]
    manifest = bundle.read_manifest(target)
    assert [(p["network"], p["size_bytes"]) for p in manifest["plans"]] == [
        ("prefill", 1000),
        ("decode", 10),
    ]
    assert (target / "prefill.pt2").read_bytes() == b"p" * 1000
    with pytest.raises(RuntimeError, match="already published"):
        writer.stage("late", b"x")


def test_bundle_writer_aborted_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), bundle.BundleWriter(tmp_path / "engine") as writer:
        writer.stage("prefill", b"p" * 1000)
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_build_aborted_mid_way_leaves_nothing(tiny_checkpoint: Path, tmp_path: Path) -> None:
    staged: list[str] = []

    def die_after_first(plan: bundle.StagedPlan) -> None:
        staged.append(plan.network)
        raise MemoryError("killed while the next network builds")

    with pytest.raises(MemoryError):
        build_engine(tiny_checkpoint, tmp_path / "engine", on_staged=die_after_first)
    assert staged == ["prefill"]
    assert list(tmp_path.iterdir()) == []


def test_build_publishes_one_bf16_plan_per_network(tiny_bundle: Path) -> None:
    manifest = bundle.read_manifest(tiny_bundle)
    assert manifest["networks"] == list(NETWORKS) == ["prefill", "decode"]
    assert manifest["dtype"] == "bfloat16"
    for plan in manifest["plans"]:
        program = torch.export.load(tiny_bundle / plan["file"])
        assert {t.dtype for t in program.state_dict.values()} == {PLAN_DTYPE}
        # Each plan carries its own copy of every weight.
        weight_bytes = sum(t.numel() * t.element_size() for t in program.state_dict.values())
        assert weight_bytes <= plan["size_bytes"] < weight_bytes * 1.1


def test_engine_networks_match_transformers_in_fp32(tiny_checkpoint: Path) -> None:
    model = checkpoint.load_model(tiny_checkpoint, torch.float32)
    weights = dict(model.state_dict())
    shape = NetworkShape.from_config(model.config)
    sequence = torch.tensor([[5, 60, 7, 300, 42, 9, 120, 77]])
    with torch.no_grad():
        expected = model(sequence, use_cache=False).logits[0]
        logits, keys, values = PrefillNetwork(shape, weights)(sequence[:, :5])
        assert torch.allclose(logits[0], expected[4], atol=1e-4)
        decode = DecodeNetwork(shape, weights)
        for position in range(5, 8):
            logits, keys, values = decode(sequence[:, position : position + 1], keys, values)
            assert torch.allclose(logits[0], expected[position], atol=1e-4)
    assert keys.shape == (shape.layers, 1, shape.kv_heads, 8, shape.head_dim)


@pytest.fixture(scope="module")
def reference_cases(tiny_checkpoint: Path) -> Cases:
    """The default 10 cases with the tokens the FP32 reference generates for each."""
    reference = ReferenceRuntime(tiny_checkpoint)
    cases = prompts.parity_prompts(reference.tokenizer, 10)
    return [(case, reference.generate(case, 30).token_ids) for case in cases]


def test_default_engine_matches_reference_exactly(
    tiny_checkpoint: Path,
    tiny_bundle: Path,
    reference_cases: Cases,
) -> None:
    native = NativeRuntime(tiny_bundle, tiny_checkpoint)
    for case, expected in reference_cases:
        assert native.generate(case, 30).token_ids == expected, case.case_id


def test_perturbed_engine_fails_the_gate(
    tiny_checkpoint: Path, tmp_path: Path, reference_cases: Cases
) -> None:
    broken_bundle = build_engine(tiny_checkpoint, tmp_path / "broken", perturb_native=0.01)
    broken = NativeRuntime(broken_bundle, tiny_checkpoint)
    exact = sum(broken.generate(case, 30).token_ids == ids for case, ids in reference_cases)
    assert exact < 9


def test_options_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    declared = tomllib.loads((FAMILY_DIR / "family.toml").read_text())["options"]
    assert FamilyOptions.from_harness() == FamilyOptions(**declared)
    monkeypatch.setenv("QUALIFY_OPT_SIZE", "small")
    monkeypatch.setenv("QUALIFY_OPT_RETAIN_PLANS", "true")
    monkeypatch.setenv("QUALIFY_OPT_PERTURB_NATIVE", "0.01")
    monkeypatch.setenv("QUALIFY_OPT_PROMPTS", "12")
    options = FamilyOptions.from_harness()
    assert (options.size, options.retain_plans, options.perturb_native) == ("small", True, 0.01)
    assert options.prompts == 12
    monkeypatch.setenv("QUALIFY_OPT_SIZE", "huge")
    with pytest.raises(ValueError, match="size 'huge' is not one of tiny, small, medium"):
        FamilyOptions.from_harness()


@pytest.mark.parametrize(
    ("size", "low_mb", "high_mb"), [("tiny", 2, 20), ("small", 100, 250), ("medium", 300, 800)]
)
def test_plan_weights_scale_with_size(size: str, low_mb: int, high_mb: int) -> None:
    trained = tokenizer.train_tokenizer()
    kwargs = sizes.config_kwargs(size, trained.get_vocab_size(), tokenizer.special_ids(trained))
    with torch.device("meta"):
        model = transformers.Phi3ForCausalLM(transformers.Phi3Config(**kwargs))
    plan_bytes = sum(p.numel() for p in model.parameters()) * 2  # bf16
    assert low_mb * MB <= plan_bytes <= high_mb * MB


def test_staged_plans_leave_the_page_cache(tmp_path: Path) -> None:
    control = tmp_path / "control.bin"
    control.write_bytes(os.urandom(4 << 20))
    if _resident_pages(control) == 0:
        pytest.skip("this filesystem does not keep written pages cached")
    with bundle.BundleWriter(tmp_path / "engine") as writer:
        writer.stage("prefill", os.urandom(4 << 20))
        writer.publish({})
    assert _resident_pages(tmp_path / "engine" / "prefill.pt2") == 0


def _resident_pages(path: Path) -> int:
    """Pages of ``path`` in the page cache, from mincore(2) over a private mapping."""
    libc = ctypes.CDLL(None, use_errno=True)
    size = path.stat().st_size
    with path.open("rb") as handle:
        mapped = mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_COPY)
    try:
        anchor = ctypes.c_char.from_buffer(mapped)
        pages = (ctypes.c_ubyte * (-(-size // mmap.PAGESIZE)))()
        status = libc.mincore(ctypes.c_void_p(ctypes.addressof(anchor)), size, pages)
        del anchor
        assert status == 0, os.strerror(ctypes.get_errno())
        return sum(page & 1 for page in pages)
    finally:
        mapped.close()


def test_forced_rows_fed_a_generation_reproduce_its_own_steps(
    tiny_checkpoint: Path, tiny_bundle: Path
) -> None:
    """Each runtime fed its own generated tokens must predict, at every position, what it
    picked there, with the log-probabilities it recorded: row t is the prediction of token t
    (no shift by one), for the KV-cache engine's forced decode and the reference's one pass."""
    from harness.kit.generation import top_k

    native = NativeRuntime(tiny_bundle, tiny_checkpoint)
    reference = ReferenceRuntime(tiny_checkpoint)
    for case in prompts.parity_prompts(reference.tokenizer, 4):
        for runtime in (native, reference):
            generated = runtime.generate(case, 12)
            rows = runtime.forced_rows(case, generated.token_ids)
            assert rows.shape[0] == len(generated.token_ids)
            for row, token, recorded in zip(
                rows, generated.token_ids, generated.top_logprobs, strict=True
            ):
                best = top_k(row)
                assert best[0][0] == token, case.case_id
                assert best[0][1] == pytest.approx(recorded[0][1], abs=1e-4)


def test_plant_flips_one_position_by_its_margin(tiny_checkpoint: Path, tiny_bundle: Path) -> None:
    """plant_tie: the reference's runner-up sits PLANT_NATS below its top-1 at the planted
    position and the engine's PLANT_NATS above, so the engine diverges exactly there."""
    from tiny_engine.plant import PLANT_NATS, Plant

    reference = ReferenceRuntime(tiny_checkpoint, plant=Plant("plain-1", 5, engine=False))
    native = NativeRuntime(tiny_bundle, tiny_checkpoint, Plant("plain-1", 5, engine=True))
    case = prompts.parity_prompts(reference.tokenizer, 3)[2]
    assert case.case_id == "plain-1"
    expected = reference.generate(case, 12)
    gap = expected.top_logprobs[5][0][1] - expected.top_logprobs[5][1][1]
    assert gap == pytest.approx(PLANT_NATS, abs=2e-4)
    got = native.generate(case, 12)
    assert got.token_ids[:5] == expected.token_ids[:5]
    assert got.token_ids[5] == expected.top_logprobs[5][1][0]  # the runner-up
    with pytest.raises(ValueError, match="must be '<case_id>:<position>'"):
        Plant.parse("plain-1", engine=True)
