"""Phi-4's real tokenizer: o200k_base converted to a fast tokenizer, Phi-4's tokens and template.

The ranks are OpenAI's o200k_base (``phi4_engine.o200k``, verified against tiktoken's pinned
sha256); transformers' own ``TikTokenConverter`` turns them into a byte-level BPE with the
o200k split pattern; Phi-4-multimodal's added tokens go in at their published ids and its chat
template into ``tokenizer_config.json``. The directory is built once per ``dest`` in a child
process (deriving the merges peaks near 600 MB, which later phases should not inherit) and
published by a rename, so a reader never sees half of it.

The model's vocabulary is 200,064 rows (``MODEL_VOCAB_SIZE``); the tokenizer knows 200,012
tokens with ids up to 200,028: ids 199,998, 200,000-200,009, 200,012-200,017 and above 200,028
name no token (o200k_base ranks none of them, the published added tokens list none of them).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phi4_engine import o200k

MODEL_VOCAB_SIZE = 200064
"""Rows of Phi-4-mini's / Phi-4-multimodal's embedding (config.json ``vocab_size``)."""
MODEL_MAX_LENGTH = 131072


@dataclass(frozen=True)
class SpecialToken:
    """One added token of the published tokenizer."""

    id: int
    """Its id in the model's vocabulary."""
    content: str
    """Its text."""
    special: bool = True
    """Skipped by ``decode(skip_special_tokens=True)``; the tool markers are not."""
    rstrip: bool = False
    """Whitespace right after it is part of the token (the chat markers)."""


# microsoft/Phi-4-multimodal-instruct, tokenizer_config.json "added_tokens_decoder" and
# added_tokens.json (https://huggingface.co/microsoft/Phi-4-multimodal-instruct); Phi-4-mini-
# instruct has the same table without the two placeholders. 200010 and 200011 are the image and
# audio placeholders (transformers' Phi4MultimodalVisionConfig.image_token_id = 200010).
SPECIAL_TOKENS = (
    SpecialToken(199999, "<|endoftext|>"),
    SpecialToken(200010, "<|endoftext10|>"),
    SpecialToken(200011, "<|endoftext11|>"),
    SpecialToken(200018, "<|endofprompt|>"),
    SpecialToken(200019, "<|assistant|>", rstrip=True),
    SpecialToken(200020, "<|end|>", rstrip=True),
    SpecialToken(200021, "<|user|>", rstrip=True),
    SpecialToken(200022, "<|system|>", rstrip=True),
    SpecialToken(200023, "<|tool|>", special=False, rstrip=True),
    SpecialToken(200024, "<|/tool|>", special=False, rstrip=True),
    SpecialToken(200025, "<|tool_call|>", special=False, rstrip=True),
    SpecialToken(200026, "<|/tool_call|>", special=False, rstrip=True),
    SpecialToken(200027, "<|tool_response|>", special=False, rstrip=True),
    SpecialToken(200028, "<|tag|>", special=False, rstrip=True),
)
IMAGE_TOKEN = "<|endoftext10|>"
AUDIO_TOKEN = "<|endoftext11|>"
ENDOFTEXT = "<|endoftext|>"

# microsoft/Phi-4-multimodal-instruct and Phi-4-mini-instruct, tokenizer_config.json
# "chat_template" (verbatim).
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'system' and 'tools' in message and message['tools'] is not none %}"
    "{{ '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + message['tools'] "
    "+ '<|/tool|>' + '<|end|>' }}"
    "{% else %}"
    "{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}"
)
REQUIRED_FILES = ("tokenizer.json", "tokenizer_config.json")


ENV_CACHE_DIR = "PHI4_CACHE_DIR"


class TokenizerBuildError(RuntimeError):
    """The build failed for a reason the user can fix; the message is one line."""


def content_digest() -> str:
    """Hash of everything the directory is made from: a cache key for callers."""
    payload = {
        "o200k": o200k.O200K_SHA256,
        "pattern": o200k.O200K_PATTERN,
        "special": [[t.id, t.content, t.special, t.rstrip] for t in SPECIAL_TOKENS],
        "template": CHAT_TEMPLATE,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def cache_root() -> Path:
    """Where the family caches what it builds: ``$PHI4_CACHE_DIR`` or ``~/.cache/qualify/phi4``."""
    configured = os.environ.get(ENV_CACHE_DIR)
    return Path(configured) if configured else Path.home() / ".cache" / "qualify" / "phi4"


def default_dir(root: Path | None = None) -> Path:
    """The cache directory of this tokenizer (whether it exists yet or not)."""
    root = cache_root() if root is None else root
    return root / f"tokenizer-{content_digest()[:16]}"


def build_tokenizer(dest: Path) -> Path:
    """The tokenizer directory ``dest``, built first (in a child process) unless complete.

    The verified o200k file is cached next to ``dest`` (``dest.parent``). Raises
    :class:`TokenizerBuildError` with one line when the ranks cannot be had (offline without
    ``PHI4_O200K_FILE``) or ``dest`` holds something else.
    """
    if is_complete(dest):
        return dest
    if dest.exists() and any(dest.iterdir()):
        raise TokenizerBuildError(f"{dest} exists but is not a complete tokenizer directory")
    command = [sys.executable, "-m", "phi4_engine.tokenizer", str(dest)]
    result = subprocess.run(command, env=_child_env(), capture_output=True, text=True, check=False)
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines() or [f"exit status {result.returncode}"]
        if result.returncode == 2:
            raise TokenizerBuildError(lines[-1])
        raise RuntimeError(f"building the Phi-4 tokenizer failed:\n{result.stderr}")
    return dest


def is_complete(directory: Path) -> bool:
    """True when ``directory`` holds a published tokenizer (every file a reader needs)."""
    return all((directory / name).is_file() for name in REQUIRED_FILES)


def load_tokenizer(directory: Path) -> Any:
    """``AutoTokenizer.from_pretrained(directory)``: the way every consumer loads it."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(directory)


def create_tokenizer(dest: Path) -> None:
    """Write the directory into a temporary sibling of ``dest`` and rename it into place."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    ranks = o200k.ranks_file(dest.parent)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        staging.chmod(0o755)  # mkdtemp's 0700 would hide a shared cache from other users
        wrap_for_transformers(convert(ranks)).save_pretrained(staging, save_jinja_files=False)
        _fsync_tree(staging)
        try:
            staging.rename(dest)
        except OSError:
            # Another build won the race (its copy is identical) or dest is an empty directory.
            if not is_complete(dest):
                if dest.is_dir() and not any(dest.iterdir()):
                    dest.rmdir()
                    staging.rename(dest)
                else:
                    raise
        _fsync_dir(dest.parent)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def convert(ranks_path: Path) -> Any:
    """The ``tokenizers.Tokenizer``: transformers' converter over the verified ranks, with
    Phi-4's added tokens at their ids."""
    from tokenizers import Tokenizer

    converted = _converter(ranks_path).converted()
    document = json.loads(converted.to_str())
    # The converter can only append tokens after the last rank (199998 onwards). A token that
    # is already in the model's vocabulary keeps that id when it is added, which is how the
    # published tokenizer.json places them.
    vocab = document["model"]["vocab"]
    for token in SPECIAL_TOKENS:
        vocab[token.content] = token.id
    document["added_tokens"] = [
        {
            "id": token.id,
            "content": token.content,
            "single_word": False,
            "lstrip": False,
            "rstrip": token.rstrip,
            "normalized": False,
            "special": token.special,
        }
        for token in SPECIAL_TOKENS
    ]
    return Tokenizer.from_str(json.dumps(document, ensure_ascii=False))


def wrap_for_transformers(tokenizer: Any) -> Any:
    """The transformers tokenizer, framed like Phi-4's: no BOS/EOS added to an encoding."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=ENDOFTEXT,
        eos_token=ENDOFTEXT,
        pad_token=ENDOFTEXT,
        unk_token=ENDOFTEXT,
        chat_template=CHAT_TEMPLATE,
        model_max_length=MODEL_MAX_LENGTH,
        clean_up_tokenization_spaces=False,
        add_prefix_space=False,
    )


def _converter(ranks_path: Path) -> Any:
    """transformers' ``TikTokenConverter`` with its file reader swapped for a checked one.

    Its reader is tiktoken's ``load_tiktoken_bpe``; this one reads the same format without
    needing tiktoken in the family's environment, and refuses any file but o200k_base.
    """
    from transformers.convert_slow_tokenizer import TikTokenConverter

    class VerifiedTikTokenConverter(TikTokenConverter):
        @staticmethod
        def load_tiktoken_bpe(tiktoken_url: str) -> dict[bytes, int]:
            data = Path(tiktoken_url).read_bytes()
            o200k.check_ranks(data, origin=tiktoken_url)
            return o200k.parse_ranks(data)

    return VerifiedTikTokenConverter(
        vocab_file=str(ranks_path), pattern=o200k.O200K_PATTERN, add_prefix_space=False
    )


def _fsync_tree(directory: Path) -> None:
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            descriptor = os.open(path, os.O_RDONLY)
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
    _fsync_dir(directory)


def _fsync_dir(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _child_env() -> dict[str, str]:
    """This environment, with the directory holding ``phi4_engine`` first on PYTHONPATH."""
    env = dict(os.environ)
    package_parent = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH")]))
    return env


def main(argv: list[str]) -> int:
    """``python -m phi4_engine.tokenizer [DEST]``: build the directory; exit 2 with one line
    when the ranks cannot be had.

    Without DEST it fills the cache (``default_dir()``, e.g. ahead of a run whose sandbox has
    no network) and prints the directory.
    """
    if len(argv) > 1:
        print("usage: python -m phi4_engine.tokenizer [DEST]", file=sys.stderr)
        return 2
    dest = Path(argv[0]) if argv else default_dir()
    try:
        if not is_complete(dest):
            create_tokenizer(dest)
    except o200k.RanksUnavailableError as exc:
        print(exc, file=sys.stderr)
        return 2
    if not argv:
        print(dest)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
