"""The family's Hugging Face checkpoint: created once per size into a cache, loaded like any.

The checkpoint is a genuine Hugging Face model directory (``config.json``,
``model.safetensors``, ``generation_config.json``, tokenizer files with a chat template), so
the reference and the engine build load it through ``from_pretrained`` exactly as they would
load a downloaded Phi-4-mini. The cache, the child process that creates a checkpoint and the
loading are the family kit's (``harness.kit.checkpoint``).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import torch

from harness.kit import checkpoint as kit_checkpoint
from harness.kit.checkpoint import load_model, load_tokenizer, stop_token_ids
from tiny_engine import corpus, head, sizes, tokenizer

__all__ = ["load_model", "load_tokenizer", "stop_token_ids"]

ENV_CACHE_DIR = "TINY_CACHE_DIR"
CACHE = kit_checkpoint.CheckpointCache(
    ENV_CACHE_DIR, "tiny", "tiny_engine.checkpoint", [Path(__file__).resolve().parent.parent]
)


def cache_root() -> Path:
    """Where checkpoints live: ``$TINY_CACHE_DIR`` or ``~/.cache/qualify/tiny``."""
    return CACHE.root()


def checkpoint_dir(size: str, root: Path | None = None) -> Path:
    """The cache directory of ``size``'s checkpoint (whether it exists yet or not)."""
    root = cache_root() if root is None else root
    return root / sizes.cache_key(size, content=_content_digest())


def ensure_checkpoint(size: str, root: Path | None = None) -> Path:
    """The checkpoint directory of ``size``, created first (in a child process) if it is not
    cached yet."""
    target = checkpoint_dir(size, root)
    return CACHE.ensure(target, [size, str(target)])


def create_checkpoint(size: str, target: Path) -> None:
    """Write the checkpoint into a temporary sibling of ``target`` and rename it into place
    (everything is seeded: a racing process's copy is identical)."""
    kit_checkpoint.create(target, lambda staging: write_checkpoint(size, staging))


def write_checkpoint(size: str, directory: Path) -> None:
    """Train the tokenizer, build the seeded Phi-3 model and save both into ``directory``.

    The weights are written one tensor at a time (``harness.kit.checkpoint.save_model``): a
    cold cache is filled under the run's memory cap, which must not have to hold them twice.
    """
    from transformers import GenerationConfig, Phi3Config, Phi3ForCausalLM

    kit_checkpoint.quiet_transformers()
    trained = tokenizer.train_tokenizer()
    ids = tokenizer.special_ids(trained)
    config = Phi3Config(**sizes.config_kwargs(size, trained.get_vocab_size(), ids))
    torch.manual_seed(sizes.SEED)
    model = Phi3ForCausalLM(config).eval()
    head.fit_output_head(model, [trained.encode(text).ids for text in corpus.sequences()])
    kit_checkpoint.save_model(model, directory)
    # A turn ends with <|end|>, a document with <|endoftext|>: both stop generation.
    GenerationConfig(
        bos_token_id=ids["bos"], eos_token_id=[ids["eos"], ids["bos"]], do_sample=False
    ).save_pretrained(directory)
    tokenizer.wrap_for_transformers(trained).save_pretrained(directory)


def _content_digest() -> str:
    """Hash of what shapes the weights besides the size: corpus, tokenizer and head fit."""
    payload = {
        "sequences": corpus.sequences(),
        "plain": corpus.plain_texts(),
        "vocab": tokenizer.VOCAB_SIZE,
        "chat_template": tokenizer.CHAT_TEMPLATE,
        "head": [head.TARGET_LOGIT, head.RIDGE],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def main(argv: list[str]) -> int:
    """``python -m tiny_engine.checkpoint SIZE [TARGET]``: create one checkpoint.

    Without TARGET it fills the cache (ahead of a capped run) and prints the directory.
    """
    if len(argv) == 2:
        create_checkpoint(argv[0], Path(argv[1]))
        return 0
    if len(argv) != 1:
        print("usage: python -m tiny_engine.checkpoint SIZE [TARGET]", file=sys.stderr)
        return 2
    target = checkpoint_dir(argv[0])
    if not target.is_dir():
        create_checkpoint(argv[0], target)
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
