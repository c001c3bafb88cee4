"""What a loaded tokenizer does, as plain JSON: the one record both sides of a check produce.

Standard library only, and runnable as a script: ``qualify tokenizer verify`` runs this file
with the client's own interpreter (a venv where qualify is not installed), loads the directory
through the client's own loader, and writes the same record the export wrote on its side.

    python observe.py --loader aiperf --probes PROBES.json --output OUT.json DIR

``PROBES.json`` holds ``{"texts": [...], "chats": [[message, ...], ...]}``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
import traceback
from pathlib import Path
from typing import Any

PIPELINE_PARTS = ("normalizer", "pre_tokenizer", "post_processor", "decoder")
VERSIONED = ("transformers", "tokenizers", "huggingface-hub", "jinja2", "aiperf")
LOADERS = ("transformers", "aiperf")
CLIENT_ENCODE = {"aiperf": "plain", "transformers": "framed"}
"""Which probe encoding the client's own ``encode`` defaults to: AIPerf passes
``add_special_tokens=False``, transformers' ``encode`` adds them."""


def observe(tokenizer: Any, texts: list[str], chats: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """The record of ``tokenizer`` (a transformers fast tokenizer) on the probe texts and chats."""
    backend = json.loads(tokenizer.backend_tokenizer.to_str())
    model = backend.get("model") or {}
    return {
        "tokenizer_class": type(tokenizer).__name__,
        "length": len(tokenizer),
        "vocab": tokenizer.get_vocab(),
        "model_type": model.get("type"),
        "merges": [_merge_text(merge) for merge in model.get("merges") or []],
        "pipeline": {part: backend.get(part) for part in PIPELINE_PARTS},
        "added_tokens": [_added(token) for token in backend.get("added_tokens") or []],
        "special_tokens": {
            role: [content, tokenizer.convert_tokens_to_ids(content)]
            for role, content in sorted(_special_roles(tokenizer).items())
        },
        "probes": [_probe(tokenizer, text) for text in texts],
        "chat_template": tokenizer.chat_template,
        "chats": [_render(tokenizer, messages) for messages in chats],
        "versions": _versions(),
    }


def _probe(tokenizer: Any, text: str) -> dict[str, Any]:
    # verbose=False: the long probe exceeds small models' model_max_length on purpose.
    plain = tokenizer.encode(text, add_special_tokens=False, verbose=False)
    return {
        "plain": plain,
        "framed": tokenizer.encode(text, add_special_tokens=True, verbose=False),
        "decoded": tokenizer.decode(plain),
    }


def _merge_text(merge: Any) -> str:
    # tokenizers >= 0.20 writes a merge as a pair, older releases as one "a b" string.
    return " ".join(merge) if isinstance(merge, list) else str(merge)


def _added(token: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "content", "special", "lstrip", "rstrip", "normalized", "single_word")
    return {key: token.get(key) for key in keys}


def _special_roles(tokenizer: Any) -> dict[str, str]:
    roles = {}
    for role in ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token"):
        content = getattr(tokenizer, role, None)
        if isinstance(content, str):
            roles[role] = content
    return roles


def _render(tokenizer: Any, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A chat rendered with the template and tokenized as a server does (no framing added)."""
    if not tokenizer.chat_template:
        return {"text": None, "ids": None, "error": None}
    try:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    except Exception as exc:  # a template may reject a role; both sides must reject alike
        return {"text": None, "ids": None, "error": f"{type(exc).__name__}: {exc}"}
    ids = tokenizer.encode(text, add_special_tokens=False, verbose=False)
    return {"text": text, "ids": ids, "error": None}


def _versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in VERSIONED:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def load(loader: str, directory: Path) -> tuple[Any, Any]:
    """(the transformers tokenizer, the loader's own object) for ``directory``.

    ``aiperf`` loads through AIPerf's ``Tokenizer.from_pretrained`` exactly as ``aiperf
    profile --tokenizer DIR`` does (aiperf/common/tokenizer.py); its wrapper keeps the
    transformers object in ``_tokenizer``, which has the vocabulary and the chat template.
    ``transformers`` loads with ``AutoTokenizer.from_pretrained``, whichever release the
    interpreter has (a client pinned to transformers 4 included).
    """
    if loader == "aiperf":
        from aiperf.common.tokenizer import Tokenizer  # type: ignore[import-not-found]

        client = Tokenizer.from_pretrained(
            str(directory), trust_remote_code=False, revision="main", resolve_alias=True
        )
        return client._tokenizer, client
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(directory, trust_remote_code=False)
    return tokenizer, tokenizer


def main(argv: list[str] | None = None) -> int:
    """Load, observe, write the record; a load failure is recorded, not raised."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--loader", choices=LOADERS, required=True)
    parser.add_argument("--probes", type=Path, required=True)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("directory", type=Path)
    args = parser.parse_args(argv)
    probes = json.loads(args.probes.read_text(encoding="utf-8"))
    try:
        tokenizer, client = load(args.loader, args.directory.resolve())
    except Exception as exc:
        record: dict[str, Any] = {
            "load_error": f"{type(exc).__name__}: {exc}".strip(),
            "versions": _versions(),
        }
    else:
        record = observe(tokenizer, probes["texts"], probes["chats"])
        record["load_error"] = None
        # The client's own encode call, with its own defaults (CLIENT_ENCODE): what it counts
        # as a prompt's tokens.
        record["client_encode"] = [client.encode(text) for text in probes["texts"]]
        record["client_encode_mode"] = CLIENT_ENCODE[args.loader]
    args.output.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:
        traceback.print_exc()
        sys.exit(1)
