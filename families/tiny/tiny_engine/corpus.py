"""The small embedded corpus: the tokenizer is trained on it and the output head fitted to it.

Documents are plain paragraphs; chat samples are conversations in the chat template's layout.
Each is one sequence from its first token, as the parity prompts (their beginnings) are.
"""

from __future__ import annotations

DOCUMENTS = [
    "The river runs past the old mill and under the stone bridge before it reaches the sea. "
    "In spring the water is high and cold, and the children are told to stay on the path.",
    "A good loaf needs flour, water, salt and time. The dough must rest before it is baked; "
    "bake it in a hot oven for forty minutes, then let it cool on a wooden board.",
    "The weather changed quickly in the hills: a clear morning could end in rain and wind. "
    "After the storm the air was fresh and the sky was bright again.",
    "When a program asks for more memory than the machine has, the system stops it. "
    "A test checks that a program does what it should; a failing test tells you where to look.",
    "def add(first, second):\n    return first + second\n\n\nfor index in range(10):\n"
    "    print(index, add(index, index))\n",
    "The oldest book in the library is a map of the valley drawn by hand two hundred years "
    "ago. Readers may borrow four books at a time and keep them for three weeks.",
    "The model reads a prompt, predicts the next token, and repeats until it reaches the end. "
    "Each token is a short piece of text: a word, part of a word, or a single character.",
    "The engine runs the same network as the reference, but with lower precision and a cache. "
    "If they disagree, compare the tokens one by one and find the first difference.",
]

CHAT_SAMPLES = [
    [
        {"role": "user", "content": "What is the capital of the valley?"},
        {"role": "assistant", "content": "The capital is the town by the river, near the bridge."},
    ],
    [
        {"role": "user", "content": "How many books can a reader borrow?"},
        {"role": "assistant", "content": "A reader can borrow four books at a time."},
    ],
    [
        {"role": "system", "content": "Answer briefly and clearly."},
        {"role": "user", "content": "Why did the program stop?"},
        {"role": "assistant", "content": "It asked for more memory than the limit allowed."},
    ],
    [
        {"role": "user", "content": "How long should tea leaves steep?"},
        {"role": "assistant", "content": "Let the leaves steep for three minutes, then pour."},
    ],
    [
        {"role": "user", "content": "When does the train to the city leave?"},
        {"role": "assistant", "content": "It leaves at seven and arrives at half past eight."},
    ],
    [
        {"role": "system", "content": "You explain how a model engine is tested."},
        {"role": "user", "content": "The engine and the reference disagree. What now?"},
        {
            "role": "assistant",
            "content": "Compare their tokens one by one, find the first difference, "
            "and look at the two best candidates at that step.",
        },
    ],
]


def render_chat(messages: list[dict[str, str]]) -> str:
    """A conversation in the layout of the tokenizer's chat template."""
    return "".join(f"<|{m['role']}|>{m['content']}<|end|>" for m in messages)


def plain_texts() -> list[str]:
    """Text the tokenizer learns its merges from (no markup)."""
    return DOCUMENTS + [m["content"] for sample in CHAT_SAMPLES for m in sample]


def sequences() -> list[str]:
    """Every sequence the head is fitted to: documents (ended like a document) and chats."""
    return [doc + "<|endoftext|>" for doc in DOCUMENTS] + [render_chat(s) for s in CHAT_SAMPLES]
