"""The family's Hugging Face checkpoint: created once per size into a cache, loaded like any.

The checkpoint is a genuine ``save_pretrained`` directory (``config.json``,
``model.safetensors``, ``generation_config.json``, tokenizer files with a chat template), so
the reference and the engine build load it through ``from_pretrained`` exactly as they would
load a downloaded Phi-4-mini.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

from tiny_engine import corpus, head, sizes, tokenizer
from tiny_engine.durable import fsync_dir, fsync_tree

ENV_CACHE_DIR = "TINY_CACHE_DIR"


def cache_root() -> Path:
    """Where checkpoints live: ``$TINY_CACHE_DIR`` or ``~/.cache/qualify/tiny``."""
    configured = os.environ.get(ENV_CACHE_DIR)
    return Path(configured) if configured else Path.home() / ".cache" / "qualify" / "tiny"


def checkpoint_dir(size: str, root: Path | None = None) -> Path:
    """The cache directory of ``size``'s checkpoint (whether it exists yet or not)."""
    root = cache_root() if root is None else root
    return root / sizes.cache_key(size, content=_content_digest())


def ensure_checkpoint(size: str, root: Path | None = None) -> Path:
    """The checkpoint directory of ``size``, created first if it is not cached yet.

    Creation runs in a child process: what it leaves behind in the allocator and the imported
    modules (about 150 MB at ``small``) would otherwise raise every later phase's memory.
    """
    target = checkpoint_dir(size, root)
    if not target.is_dir():
        command = [sys.executable, "-m", "tiny_engine.checkpoint", size, str(target)]
        subprocess.run(command, check=True, env=_child_env())
    return target


def create_checkpoint(size: str, target: Path) -> None:
    """Write the checkpoint into a temporary sibling of ``target`` and rename it into place.

    A reader never sees a half-written checkpoint; when two processes race, the first rename
    wins and the other's copy (identical, as everything is seeded) is discarded.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        # mkdtemp's 0700 would make a shared cache unreadable to other users.
        staging.chmod(0o755)
        write_checkpoint(size, staging)
        fsync_tree(staging)
        try:
            staging.rename(target)
        except OSError:
            if not target.is_dir():
                raise
        fsync_dir(target.parent)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def write_checkpoint(size: str, directory: Path) -> None:
    """Train the tokenizer, build the seeded Phi-3 model and save both into ``directory``."""
    from transformers import GenerationConfig, Phi3Config, Phi3ForCausalLM

    _quiet_transformers()
    trained = tokenizer.train_tokenizer()
    ids = tokenizer.special_ids(trained)
    config = Phi3Config(**sizes.config_kwargs(size, trained.get_vocab_size(), ids))
    torch.manual_seed(sizes.SEED)
    model = Phi3ForCausalLM(config).eval()
    head.fit_output_head(model, [trained.encode(text).ids for text in corpus.sequences()])
    model.save_pretrained(directory)
    # A turn ends with <|end|>, a document with <|endoftext|>: both stop generation.
    GenerationConfig(
        bos_token_id=ids["bos"], eos_token_id=[ids["eos"], ids["bos"]], do_sample=False
    ).save_pretrained(directory)
    tokenizer.wrap_for_transformers(trained).save_pretrained(directory)


def load_model(directory: Path, dtype: torch.dtype) -> Any:
    """``AutoModelForCausalLM.from_pretrained`` in ``dtype`` with eager attention, in eval mode."""
    from transformers import AutoModelForCausalLM

    _quiet_transformers()
    model = AutoModelForCausalLM.from_pretrained(
        directory, dtype=dtype, attn_implementation="eager"
    )
    return model.eval()


def load_tokenizer(directory: Path) -> Any:
    """``AutoTokenizer.from_pretrained``: the tokenizer and its chat template."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(directory)


def stop_token_ids(directory: Path) -> list[int]:
    """Token ids that end a generation, from the checkpoint's ``generation_config.json``."""
    from transformers import GenerationConfig

    eos = GenerationConfig.from_pretrained(directory).eos_token_id
    return [eos] if isinstance(eos, int) else list(eos or [])


def _child_env() -> dict[str, str]:
    """This environment, with the directory holding ``tiny_engine`` first on PYTHONPATH."""
    env = dict(os.environ)
    package_parent = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH")]))
    return env


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


def _quiet_transformers() -> None:
    # transformers 5 draws a progress bar per load and save; the E2E's logs need none.
    from transformers.utils import logging

    logging.disable_progress_bar()


def main(argv: list[str]) -> int:
    """``python -m tiny_engine.checkpoint SIZE [TARGET]``: create one checkpoint.

    Without TARGET it fills the cache (ahead of a capped run, whose cap may not leave room for
    creation: at ``small`` it peaks near 700 MiB in its own process) and prints the directory.
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
