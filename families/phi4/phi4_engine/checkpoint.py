"""The family's Hugging Face checkpoint: synthesized once per size into a cache, or a real one.

A synthesized checkpoint is a genuine ``save_pretrained`` directory of transformers'
``Phi4MultimodalForCausalLM`` (``config.json`` with every key set, ``model.safetensors``,
``generation_config.json``) with the real Phi-4 tokenizer (``phi4_engine.tokenizer``) next to
it. It is always loaded back through ``from_pretrained``: the path a real local checkpoint
(``--set checkpoint=DIR``) takes too, after ``check_checkpoint`` has read its ``config.json``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import torch

from harness.kit import checkpoint as kit_checkpoint
from harness.kit.checkpoint import load_tokenizer, quiet_transformers, stop_token_ids
from phi4_engine import corpus, fit, sizes, tokenizer

__all__ = ["load_tokenizer", "stop_token_ids"]

ENV_CACHE_DIR = "PHI4_CACHE_DIR"
_FAMILY = Path(__file__).resolve().parent.parent
# phi4_engine, and tiny_engine next to it (pytest puts both on the E2E's path, not a child's).
CACHE = kit_checkpoint.CheckpointCache(
    ENV_CACHE_DIR, "phi4", "phi4_engine.checkpoint", [_FAMILY, _FAMILY.parent / "tiny"]
)
MODEL_TYPES = {
    "phi4_multimodal": "Phi-4-multimodal (transformers' Phi4MultimodalForCausalLM)",
    "phi3": "Phi-4-mini, text only (transformers' Phi3ForCausalLM with the 200,064 vocabulary)",
}
MULTIMODAL = "phi4_multimodal"
# ``phi3`` is also Phi-3's own model type (a 32,064 Llama vocabulary); the vocabulary tells
# Phi-4-mini apart.
MINI_VOCAB_SIZE = sizes.VOCAB_SIZE


class CheckpointError(ValueError):
    """A checkpoint this family cannot build: the message is one line naming what is valid."""


def cache_root() -> Path:
    """Where checkpoints live: ``$PHI4_CACHE_DIR`` or ``~/.cache/qualify/phi4``."""
    return CACHE.root()


def tokenizer_dir(root: Path | None = None) -> Path:
    """The cached Phi-4 tokenizer directory (named by its content)."""
    root = cache_root() if root is None else root
    return root / f"tokenizer-{tokenizer.content_digest()[:16]}"


def checkpoint_dir(size: str, root: Path | None = None, model: str = "multimodal") -> Path:
    """The cache directory of ``size``'s checkpoint of ``model`` (``multimodal`` or ``mini``),
    whether it exists yet or not."""
    root = cache_root() if root is None else root
    return root / sizes.cache_key(size, content=_content_digest(), model=model)


def ensure_checkpoint(size: str, root: Path | None = None, model: str = "multimodal") -> Path:
    """The checkpoint directory of ``size``, created first (in a child process) if not cached.

    The child keeps what creation leaves in the allocator (the fit, the tokenizer conversion)
    out of every later phase's memory.
    """
    target = checkpoint_dir(size, root, model)
    argv = [size, str(target)] + ([f"--model={model}"] if model != "multimodal" else [])
    return CACHE.ensure(target, argv)


def create_checkpoint(size: str, target: Path, model: str = "multimodal") -> None:
    """Write the checkpoint into a temporary sibling of ``target`` and rename it into place;
    when two processes race, the first rename wins."""
    source = tokenizer_dir(target.parent)
    kit_checkpoint.create(target, lambda staging: write_checkpoint(size, staging, source, model))


def write_checkpoint(
    size: str, directory: Path, tokenizer_source: Path, model_name: str = "multimodal"
) -> None:
    """Build the seeded model, fit it to the corpus, save it with the tokenizer.

    ``model_name="mini"`` writes Phi-4-mini instead: ``Phi3ForCausalLM`` with the same text
    configuration, fitted to the text part of the corpus.
    """
    from transformers import (
        GenerationConfig,
        Phi3Config,
        Phi3ForCausalLM,
        Phi4MultimodalConfig,
        Phi4MultimodalForCausalLM,
    )

    quiet_transformers()
    phi4_tokenizer = tokenizer.load_tokenizer(tokenizer.build_tokenizer(tokenizer_source))
    kwargs = sizes.config_kwargs(size, model_name)
    torch.manual_seed(sizes.SEED)
    model: Phi4MultimodalForCausalLM | Phi3ForCausalLM
    if model_name == "multimodal":
        config = Phi4MultimodalConfig(**kwargs)
        config.architectures = ["Phi4MultimodalForCausalLM"]
        model = Phi4MultimodalForCausalLM(config)
    else:
        mini = Phi3Config(**kwargs)
        mini.architectures = ["Phi3ForCausalLM"]
        model = Phi3ForCausalLM(mini)
    _eager(model)
    losses = fit.fit(model, fit.sequences(phi4_tokenizer, images=model_name == "multimodal"))
    model.save_pretrained(directory)
    GenerationConfig(
        bos_token_id=sizes.ENDOFTEXT_ID,
        eos_token_id=[sizes.ENDOFTEXT_ID, sizes.END_ID],
        pad_token_id=sizes.ENDOFTEXT_ID,
        do_sample=False,
    ).save_pretrained(directory)
    phi4_tokenizer.save_pretrained(directory)
    record = {"steps": len(losses), "first_loss": losses[0], "final_loss": losses[-1]}
    (directory / "fit.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def check_checkpoint(directory: Path, *, trust_remote_code: bool) -> str:
    """Read ``directory/config.json`` before anything is built; its ``model_type``.

    Raises :class:`CheckpointError` (one line) for a missing directory or config, a model type
    this family does not build (``phi3`` only with Phi-4-mini's vocabulary), or a checkpoint
    that needs its own Python code (``auto_map`` with a model type transformers lacks) when
    ``trust_remote_code`` is off.
    """
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise CheckpointError(f"checkpoint={directory}: no config.json there")
    config = json.loads(config_path.read_text(encoding="utf-8"))
    model_type = config.get("model_type")
    # Phi-4-mini-instruct's config.json has an auto_map too, but transformers builds its
    # model_type natively (and does, unless trust_remote_code is set): only a model type
    # transformers lacks needs the checkpoint's own code.
    if model_type not in MODEL_TYPES and config.get("auto_map") and not trust_remote_code:
        raise CheckpointError(
            f"checkpoint={directory}: model_type {model_type!r} ships its own code (auto_map); "
            "it runs only with --set trust_remote_code=true"
        )
    if model_type not in MODEL_TYPES:
        valid = ", ".join(f"{name} ({what})" for name, what in MODEL_TYPES.items())
        raise CheckpointError(
            f"checkpoint={directory}: model_type {model_type!r} is not one of: {valid}"
        )
    if model_type == "phi3" and config.get("vocab_size") != MINI_VOCAB_SIZE:
        raise CheckpointError(
            f"checkpoint={directory}: model_type 'phi3' with vocab_size "
            f"{config.get('vocab_size')!r} is Phi-3, not Phi-4-mini (vocab_size {MINI_VOCAB_SIZE})"
        )
    return str(model_type)


def is_multimodal(directory: Path) -> bool:
    """Whether the checkpoint has Phi-4-multimodal's vision encoder (Phi-4-mini has none)."""
    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    return bool(config.get("model_type") == MULTIMODAL)


def load_model(directory: Path, dtype: torch.dtype, *, trust_remote_code: bool = False) -> Any:
    """``AutoModelForCausalLM.from_pretrained`` in ``dtype`` with eager attention, eval mode.

    Eager everywhere: transformers' SDPA path runs the vision encoder's attention as causal
    when no patch is padded (``Phi4MultimodalVisionAttention.is_causal``, transformers 5.24),
    eager runs it bidirectional, as SigLIP is.
    """
    return kit_checkpoint.load_model(directory, dtype, trust_remote_code=trust_remote_code)


def _eager(model: Any) -> None:
    # The fit runs eager attention too, for the reason load_model gives.
    model.set_attn_implementation("eager")


def _child_env() -> dict[str, str]:
    """The environment of the child that creates a checkpoint."""
    return CACHE.child_env()


def _content_digest() -> str:
    """Hash of what shapes the weights besides the size: corpus, images, fit and tokenizer."""
    payload = {
        "documents": corpus.DOCUMENTS,
        "chats": corpus.CHAT_SAMPLES,
        "image_chats": [[c.image.name, c.messages] for c in corpus.image_chats()],
        "images": [repr(c.image) for c in corpus.image_chats()],
        "fit": [fit.LEARNING_RATE, fit.STEPS],
        "tokenizer": tokenizer.content_digest(),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


USAGE = "usage: python -m phi4_engine.checkpoint SIZE [TARGET] [--model=multimodal|mini]"


def main(argv: list[str]) -> int:
    """``python -m phi4_engine.checkpoint SIZE [TARGET] [--model=multimodal|mini]``: create
    one checkpoint (``mini``: a Phi-4-mini one, for ``--set checkpoint=DIR``).

    Without TARGET it fills the cache (ahead of a capped run) and prints the directory.
    """
    model = "multimodal"
    positional = []
    for argument in argv:
        if argument.startswith("--model="):
            model = argument.removeprefix("--model=")
        else:
            positional.append(argument)
    if model not in sizes.MODELS or not 1 <= len(positional) <= 2:
        print(USAGE, file=sys.stderr)
        return 2
    size = positional[0]
    if len(positional) == 2:
        create_checkpoint(size, Path(positional[1]), model)
        return 0
    target = checkpoint_dir(size, model=model)
    if not target.is_dir():
        create_checkpoint(size, target, model)
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
