"""The phi4 family's pieces: configuration, images, prompts, networks against transformers,
engine choice, checkpoint checks and the staged build.

The networks are checked against transformers' own ``Phi4MultimodalForCausalLM`` in fp32 on a
seeded model small enough to build in seconds (the real vocabulary and head width, so the
published LongRoPE factors apply); the E2E itself lives in families/phi4/test_e2e.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, require

torch = require("torch")
transformers = require("transformers")

FAMILY_DIR = Path(__file__).resolve().parent.parent / "families" / "phi4"
for _path in (FAMILY_DIR, FAMILY_DIR.parent / "tiny"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from phi4_engine import checkpoint, engine, images, network, prompts, sizes  # noqa: E402
from phi4_engine.build import NETWORKS, TEXT_NETWORKS, build_engine  # noqa: E402
from phi4_engine.options import FamilyOptions  # noqa: E402
from tiny_engine.network import NetworkShape  # noqa: E402

from harness.kit import bundle  # noqa: E402

pytestmark = pytest.mark.family


def test_full_size_is_the_published_configuration() -> None:
    config = transformers.Phi4MultimodalConfig(**sizes.config_kwargs("full"))
    assert (config.hidden_size, config.intermediate_size, config.num_hidden_layers) == (
        3072, 8192, 32,
    )  # fmt: skip
    assert (config.num_attention_heads, config.num_key_value_heads) == (24, 8)
    assert config.hidden_size // config.num_attention_heads == 128
    assert config.vocab_size == 200064 and config.tie_word_embeddings is True
    rope = config.rope_parameters
    assert rope["rope_type"] == "longrope" and rope["partial_rotary_factor"] == 0.75
    assert len(rope["short_factor"]) == len(rope["long_factor"]) == 48
    assert rope["long_factor"][0] == 1.0 and rope["long_factor"][-1] == 47.77
    vision = config.vision_config
    assert (vision.hidden_size, vision.num_hidden_layers, vision.image_size) == (1152, 27, 448)
    assert config.audio_config.num_blocks == 24


@pytest.mark.parametrize("size", sorted(sizes.SIZES))
def test_every_config_key_is_set_explicitly(size: str) -> None:
    kwargs = sizes.config_kwargs(size)
    declared = transformers.Phi4MultimodalConfig.__annotations__
    assert set(declared) <= set(kwargs)
    assert set(transformers.Phi4MultimodalVisionConfig.__annotations__) <= set(
        kwargs["vision_config"]
    )
    assert set(transformers.Phi4MultimodalAudioConfig.__annotations__) <= set(
        kwargs["audio_config"]
    )


def test_ci_keeps_vocabulary_grouping_and_rotary() -> None:
    ci, full = sizes.config_kwargs("ci"), sizes.config_kwargs("full")
    for key in ("vocab_size", "rope_parameters", "tie_word_embeddings", "max_position_embeddings"):
        assert ci[key] == full[key], key
    assert ci["hidden_size"] // ci["num_attention_heads"] == 128
    ratio = ci["num_attention_heads"] // ci["num_key_value_heads"]
    assert ratio == full["num_attention_heads"] // full["num_key_value_heads"] == 3
    assert ci["num_hidden_layers"] < full["num_hidden_layers"]
    assert ci["hidden_size"] < full["hidden_size"]
    assert sizes.cache_key("ci") != sizes.cache_key("full")
    with pytest.raises(ValueError, match="size 'huge' is not one of ci, full"):
        sizes.size_spec("huge")


@pytest.mark.parametrize(
    ("rows", "columns", "tokens"),
    [(1, 1, 545), (1, 2, 801), (2, 1, 817), (2, 2, 1329)],
)
def test_image_token_count_is_the_processors(rows: int, columns: int, tokens: int) -> None:
    # transformers' processor: 256 + 1 + mask.sum() + mask[:, 0].sum() + 16 over the
    # downsampled patch mask of rows*16 x columns*16 ones.
    assert images.num_image_tokens(rows, columns) == tokens


def test_images_are_deterministic_and_laid_out_in_crops() -> None:
    spec = images.IMAGES[1]
    first, second = images.draw(spec), images.draw(spec)
    assert torch.equal(first, second)
    assert first.shape == (3, 448, 896) and first.dtype == torch.uint8
    inputs = images.preprocess(first)
    assert inputs.pixel_values.shape == (1, 3, 3, 448, 448)
    # The grid crops are the scaled pixels; the bicubic global crop may overshoot a little.
    grid = inputs.pixel_values[0, 1:]
    assert grid.min() >= -1 and grid.max() <= 1
    # Crop 1 is the image's left half, crop 2 its right half, in row order.
    scaled = (first.float() / 255 - 0.5) / 0.5
    assert torch.equal(inputs.pixel_values[0, 1], scaled[:, :, :448])
    assert torch.equal(inputs.pixel_values[0, 2], scaled[:, :, 448:])
    assert inputs.num_tokens == 801
    with pytest.raises(ValueError, match="multiples of 448"):
        images.preprocess(torch.zeros((3, 448, 500), dtype=torch.uint8))


class _Tokenizer:
    """A character-level stand-in with the chat template's layout (prompts only need these)."""

    def __call__(self, text: str, add_special_tokens: bool = False) -> Any:
        ids = []
        rest = text
        while rest:
            if rest.startswith(prompts.IMAGE_TOKEN):
                ids.append(sizes.IMAGE_TOKEN_ID)
                rest = rest[len(prompts.IMAGE_TOKEN) :]
            else:
                ids.append(ord(rest[0]))
                rest = rest[1:]
        return type("Encoding", (), {"input_ids": ids})()

    def apply_chat_template(
        self, messages: list[dict[str, str]], add_generation_prompt: bool, tokenize: bool
    ) -> str:
        turns = "".join(f"<|{m['role']}|>{m['content']}<|end|>" for m in messages)
        return turns + ("<|assistant|>" if add_generation_prompt else "")


def test_prompts_hold_three_image_chats_with_their_placeholders() -> None:
    cases = prompts.parity_prompts(_Tokenizer(), 10)
    assert len(cases) == 10 == prompts.max_prompts()
    pictures = [case for case in cases if case.image is not None]
    assert [case.case_id for case in pictures] == [
        "image-red-square", "image-blue-stripes", "image-green-disc",
    ]  # fmt: skip
    for case in pictures:
        assert case.image is not None
        assert case.input_ids.count(sizes.IMAGE_TOKEN_ID) == case.image.num_tokens
        assert prompts.IMAGE_TOKEN not in case.text
    assert any(case.case_id.startswith("plain-") for case in cases)
    assert any(case.case_id.startswith("chat-") for case in cases)
    assert any(case.image is not None for case in prompts.parity_prompts(_Tokenizer(), 3))


def _seeded_model(original_max: int = sizes.ORIGINAL_MAX_POSITIONS) -> Any:
    kwargs = sizes.config_kwargs("ci")
    kwargs.update(hidden_size=256, num_attention_heads=2, num_key_value_heads=1)
    kwargs["rope_parameters"] = dict(kwargs["rope_parameters"])
    kwargs["rope_parameters"]["original_max_position_embeddings"] = original_max
    kwargs["original_max_position_embeddings"] = original_max
    kwargs["rope_parameters"]["factor"] = kwargs["max_position_embeddings"] / original_max
    kwargs["vision_config"] = dict(kwargs["vision_config"], hidden_size=64, intermediate_size=128)
    config = transformers.Phi4MultimodalConfig(**kwargs)
    config.architectures = ["Phi4MultimodalForCausalLM"]
    torch.manual_seed(7)
    model = transformers.Phi4MultimodalForCausalLM(config).eval()
    model.set_attn_implementation("eager")
    with torch.no_grad():
        # Non-zero separators and norms, so the layout and every weight are exercised.
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.02)
    return model


def _image_prompt(spec: images.ImageSpec) -> tuple[torch.Tensor, images.ImageInputs]:
    inputs = images.preprocess(images.draw(spec))
    ids = [200021, *[sizes.IMAGE_TOKEN_ID] * inputs.num_tokens, 4827, 382, 200020, 200019]
    return torch.tensor([ids]), inputs


@pytest.mark.parametrize("spec", images.IMAGES, ids=lambda spec: spec.name)
def test_networks_match_transformers_in_fp32(spec: images.ImageSpec) -> None:
    model = _seeded_model()
    weights = {name: tensor.detach() for name, tensor in model.state_dict().items()}
    ids, inputs = _image_prompt(spec)
    vision = network.VisionNetwork(
        network.VisionShape.from_config(model.config), network.vision_weights(weights)
    )
    shape = NetworkShape.from_config(model.config)
    rope = network.LongRope.from_config(model.config)
    prefill = network.PrefillNetwork(shape, rope, network.text_weights(weights))
    decode = network.DecodeNetwork(shape, rope, network.text_weights(weights))
    image = {
        "image_pixel_values": inputs.pixel_values,
        "image_sizes": inputs.image_sizes,
        "image_attention_mask": inputs.attention_mask,
    }
    with torch.no_grad():
        crops, separators = vision(inputs.pixel_values[0])
        layout = network.hd_layout(crops, separators, spec.rows, spec.columns)
        mask = ids == sizes.IMAGE_TOKEN_ID
        features = torch.zeros((1, ids.shape[1], shape.hidden_size))
        features[mask] = layout
        logits, keys, values = prefill(ids, features, mask)
        expected = model(input_ids=ids, use_cache=False, logits_to_keep=1, **image).logits[0, -1]
        torch.testing.assert_close(logits[0], expected, rtol=1e-4, atol=1e-4)
        step, _, _ = decode(torch.tensor([[500]]), keys, values)
        longer = torch.cat([ids, torch.tensor([[500]])], dim=1)
        expected = model(input_ids=longer, use_cache=False, logits_to_keep=1, **image).logits[0, -1]
        torch.testing.assert_close(step[0], expected, rtol=1e-4, atol=1e-4)


def test_prefill_switches_to_long_factors_past_the_original_context() -> None:
    model = _seeded_model(original_max=16)
    weights = network.text_weights({n: t.detach() for n, t in model.state_dict().items()})
    shape = NetworkShape.from_config(model.config)
    prefill = network.PrefillNetwork(shape, network.LongRope.from_config(model.config), weights)
    for length in (12, 24):
        ids = torch.arange(1000, 1000 + length)[None]
        no_image = (
            torch.zeros((1, length, shape.hidden_size)),
            torch.zeros_like(ids, dtype=torch.bool),
        )
        with torch.no_grad():
            logits, _, _ = prefill(ids, *no_image)
            expected = model(input_ids=ids, use_cache=False, logits_to_keep=1).logits[0, -1]
        torch.testing.assert_close(logits[0], expected, rtol=1e-4, atol=1e-4)


def test_auto_engine_on_cpu_is_torch_and_never_imports_tensorrt() -> None:
    if torch.cuda.is_available():
        pytest.skip("this host has CUDA: auto may pick TensorRT")
    choice = engine.choose_engine("auto")
    assert choice.name == "torch"
    assert "no CUDA device" in choice.reason
    assert engine.choose_engine("torch") == engine.EngineChoice("torch", "engine=torch asked for")
    with pytest.raises(engine.EngineUnavailableError, match="no CUDA device"):
        engine.choose_engine("tensorrt")
    assert "tensorrt" not in sys.modules


def test_auto_engine_with_cuda_and_tensorrt_says_why_it_runs_torch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The host's facts are the seam: CUDA present, a tensorrt package findable.
    monkeypatch.setattr(engine.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(engine.importlib.util, "find_spec", lambda name: object())
    choice = engine.choose_engine("auto")
    assert choice == engine.EngineChoice(
        "torch", "engine=auto: this family builds no TensorRT engines, bf16 torch.export plans"
    )
    with pytest.raises(engine.EngineUnavailableError, match="builds no TensorRT engines"):
        engine.choose_engine("tensorrt")


def test_options_validate() -> None:
    FamilyOptions().validate()
    with pytest.raises(ValueError, match="engine='fast' is not one of auto, torch, tensorrt"):
        FamilyOptions(engine="fast").validate()
    with pytest.raises(ValueError, match="prompts=11 must be between 1 and 10"):
        FamilyOptions(prompts=11).validate()


def _write_config(directory: Path, **config: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def test_checkpoint_check_refuses_what_it_cannot_build(tmp_path: Path) -> None:
    with pytest.raises(checkpoint.CheckpointError, match=r"no config\.json there"):
        checkpoint.check_checkpoint(tmp_path / "absent", trust_remote_code=False)
    mini = _write_config(tmp_path / "mini", model_type="llama")
    with pytest.raises(checkpoint.CheckpointError, match="model_type 'llama' is not one of"):
        checkpoint.check_checkpoint(mini, trust_remote_code=False)
    remote = _write_config(
        tmp_path / "remote", model_type="phi4mm", auto_map={"AutoConfig": "configuration_phi4mm.X"}
    )
    with pytest.raises(checkpoint.CheckpointError, match="only with --set trust_remote_code=true"):
        checkpoint.check_checkpoint(remote, trust_remote_code=False)
    with pytest.raises(checkpoint.CheckpointError, match="model_type 'phi4mm' is not one of"):
        checkpoint.check_checkpoint(remote, trust_remote_code=True)
    good = _write_config(tmp_path / "good", model_type="phi4_multimodal")
    assert checkpoint.check_checkpoint(good, trust_remote_code=False) == "phi4_multimodal"


@pytest.fixture(scope="module")
def seeded_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seeded model as a save_pretrained directory (no tokenizer: the build needs none)."""
    directory = tmp_path_factory.mktemp("phi4-checkpoint")
    model = _seeded_model()
    model.save_pretrained(directory)
    transformers.GenerationConfig(eos_token_id=[199999, 200020]).save_pretrained(directory)
    return directory


@pytest.mark.parametrize("retain_plans", [False, True])
def test_build_stages_three_plans_that_run(
    seeded_checkpoint: Path, tmp_path: Path, retain_plans: bool
) -> None:
    staged: list[str] = []
    published = build_engine(
        seeded_checkpoint,
        tmp_path / "engine",
        engine=engine.choose_engine("torch"),
        retain_plans=retain_plans,
        on_staged=lambda plan: staged.append(plan.network),
    )
    assert staged == list(NETWORKS) == ["prefill", "decode", "vision"]
    manifest = bundle.read_manifest(published)
    assert manifest["engine"] == "torch" and manifest["retain_plans"] is retain_plans
    assert manifest["stop_token_ids"] == [199999, 200020]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["engine"]
    plans = {plan["network"]: published / plan["file"] for plan in manifest["plans"]}
    vision = torch.export.load(plans["vision"]).module()
    spec = images.IMAGES[2]
    _, inputs = _image_prompt(spec)
    crops, separators = vision(inputs.pixel_values[0])
    assert crops.shape == (3, 16, 16, 256) and crops.dtype == torch.bfloat16
    assert separators.shape == (2, 256)


def test_failed_build_leaves_no_bundle(seeded_checkpoint: Path, tmp_path: Path) -> None:
    def fail_after_decode(plan: bundle.StagedPlan) -> None:
        if plan.network == "decode":
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        build_engine(
            seeded_checkpoint,
            tmp_path / "engine",
            engine=engine.choose_engine("torch"),
            on_staged=fail_after_decode,
        )
    assert list(tmp_path.iterdir()) == []


def test_build_refuses_an_engine_it_cannot_build(seeded_checkpoint: Path, tmp_path: Path) -> None:
    with pytest.raises(NotImplementedError, match="tensorrt"):
        build_engine(
            seeded_checkpoint,
            tmp_path / "engine",
            engine=engine.EngineChoice("tensorrt", "test"),
        )


def test_checkpoint_module_usage_is_one_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "phi4_engine.checkpoint"],
        cwd=FAMILY_DIR, capture_output=True, text=True, env=checkpoint._child_env(), check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip() == checkpoint.USAGE
    assert checkpoint.USAGE.startswith("usage: python -m phi4_engine.checkpoint SIZE [TARGET]")
    bad_model = subprocess.run(
        [sys.executable, "-m", "phi4_engine.checkpoint", "ci", "--model=phi3"],
        cwd=FAMILY_DIR, capture_output=True, text=True, env=checkpoint._child_env(), check=False,
    )  # fmt: skip
    assert bad_model.returncode == 2 and bad_model.stderr.strip() == checkpoint.USAGE


# microsoft/Phi-4-mini-instruct's published config.json (tests/data/samples/SOURCES.md).
PHI4_MINI_CONFIG = ROOT / "tests/data/samples/model_configs/phi-4-mini-instruct-config.json"


def test_real_phi4_mini_config_is_accepted_and_read_natively(tmp_path: Path) -> None:
    """Phi-4-mini-instruct ships an auto_map for a model type transformers builds itself:
    no remote code is needed, and its numbers are the family's Phi-4-mini at size full."""
    directory = tmp_path / "phi-4-mini"
    directory.mkdir()
    (directory / "config.json").write_bytes(PHI4_MINI_CONFIG.read_bytes())
    assert checkpoint.check_checkpoint(directory, trust_remote_code=False) == "phi3"
    assert checkpoint.is_multimodal(directory) is False
    config = transformers.AutoConfig.from_pretrained(directory, trust_remote_code=False)
    assert type(config) is transformers.Phi3Config
    ours = transformers.Phi3Config(**sizes.config_kwargs("full", "mini"))
    assert NetworkShape.from_config(config) == NetworkShape.from_config(ours)
    assert network.LongRope.from_config(config) == network.LongRope.from_config(ours)
    assert config.tie_word_embeddings is True and ours.tie_word_embeddings is True


def test_phi3_with_phi3s_vocabulary_is_not_phi4_mini(tmp_path: Path) -> None:
    config = json.loads(PHI4_MINI_CONFIG.read_text())
    config["vocab_size"] = 32064  # Phi-3-mini's
    directory = _write_config(tmp_path / "phi-3-mini", **config)
    with pytest.raises(checkpoint.CheckpointError, match="is Phi-3, not Phi-4-mini"):
        checkpoint.check_checkpoint(directory, trust_remote_code=False)


def test_mini_config_is_the_text_decoder_alone() -> None:
    multimodal, mini = sizes.config_kwargs("ci"), sizes.config_kwargs("ci", "mini")
    assert "vision_config" not in mini and "audio_config" not in mini
    assert {k: v for k, v in multimodal.items() if k in mini} == mini
    assert sizes.cache_key("ci", model="mini").startswith("ci-mini-")
    assert sizes.cache_key("ci", model="mini") != sizes.cache_key("ci")
    with pytest.raises(ValueError, match="model 'phi3' is not one of multimodal, mini"):
        sizes.config_kwargs("ci", "phi3")


def test_text_only_prompts_are_ten_without_images() -> None:
    cases = prompts.parity_prompts(_Tokenizer(), 10, images=False)
    assert len(cases) == 10 and all(case.image is None for case in cases)
    assert sizes.IMAGE_TOKEN_ID not in {i for case in cases for i in case.input_ids}
    assert len({case.case_id for case in cases}) == 10
    with pytest.raises(ValueError, match="between 1 and 10"):
        prompts.parity_prompts(_Tokenizer(), 11, images=False)


def test_mini_build_stages_prefill_and_decode_only(tmp_path: Path) -> None:
    kwargs = sizes.config_kwargs("ci", "mini")
    kwargs.update(hidden_size=256, num_attention_heads=2, num_key_value_heads=1)
    config = transformers.Phi3Config(**kwargs)
    config.architectures = ["Phi3ForCausalLM"]
    torch.manual_seed(7)
    directory = tmp_path / "mini"
    transformers.Phi3ForCausalLM(config).save_pretrained(directory)
    transformers.GenerationConfig(eos_token_id=[199999, 200020]).save_pretrained(directory)
    staged: list[str] = []
    published = build_engine(
        directory,
        tmp_path / "engine",
        engine=engine.choose_engine("torch"),
        on_staged=lambda plan: staged.append(plan.network),
    )
    assert staged == list(TEXT_NETWORKS) == ["prefill", "decode"]
    assert bundle.read_manifest(published)["networks"] == ["prefill", "decode"]
