"""A real byte-level BPE tokenizer with Phi-4-mini's chat markers, trained deterministically."""

from __future__ import annotations

from typing import Any

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from tiny_engine import corpus

# Phi-4-mini's chat layout: <|system|>...<|end|><|user|>...<|end|><|assistant|>
SPECIAL_TOKENS = ["<|endoftext|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)
# An upper bound: the small corpus runs out of pairs seen twice at about 490 tokens.
VOCAB_SIZE = 1024


def train_tokenizer() -> Tokenizer:
    """Train the BPE on the embedded corpus; the same corpus always gives the same merges."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus.plain_texts(), trainer=trainer)
    return tokenizer


def wrap_for_transformers(tokenizer: Tokenizer) -> Any:
    """The transformers tokenizer object that ``save_pretrained`` writes like any checkpoint's."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<|endoftext|>",
        eos_token="<|end|>",
        pad_token="<|endoftext|>",
        chat_template=CHAT_TEMPLATE,
        model_max_length=512,
        clean_up_tokenization_spaces=False,
    )


def special_ids(tokenizer: Tokenizer) -> dict[str, int]:
    """Ids the model config names: bos, eos (end of a turn) and pad."""
    ids = {}
    for role, token in (("bos", "<|endoftext|>"), ("eos", "<|end|>"), ("pad", "<|endoftext|>")):
        token_id = tokenizer.token_to_id(token)
        if token_id is None:
            raise ValueError(f"the tokenizer has no {token} token")
        ids[role] = token_id
    return ids
