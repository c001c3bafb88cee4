"""Identity checks between two tokenizer records (``observe``): each names its first mismatch."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from qualify.records import frozen_record


@frozen_record
class Check:
    """One identity check and its outcome."""

    name: str
    """What was compared: "vocabulary", "merges", "probes", "chats"..."""
    count: int
    """How many items were compared (entries, merges, probe encodings...)."""
    mismatch: str | None = None
    """The first difference, one line naming it; None when everything matched."""

    def __bool__(self) -> bool:
        return self.mismatch is None

    def to_dict(self) -> dict[str, Any]:
        """The audit's form of the check."""
        return {
            "name": self.name,
            "count": self.count,
            "passed": bool(self),
            "mismatch": self.mismatch,
        }


@frozen_record
class Probes:
    """What both sides tokenize: probe texts and chats, with their names."""

    text_names: list[str]
    texts: list[str]
    chat_names: list[str]
    chats: list[list[dict[str, Any]]]

    def to_dict(self) -> dict[str, Any]:
        """The form the client-side script reads (``observe.py --probes``)."""
        return {
            "text_names": self.text_names,
            "texts": self.texts,
            "chat_names": self.chat_names,
            "chats": self.chats,
        }

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> Probes:
        """Inverse of :meth:`to_dict`."""
        return cls(
            document["text_names"], document["texts"], document["chat_names"], document["chats"]
        )


def compare(expected: dict[str, Any], observed: dict[str, Any], probes: Probes) -> list[Check]:
    """Every check of ``observed`` against ``expected`` (a record of the source tokenizer)."""
    if observed.get("load_error"):
        return [Check("load", 1, f"load: {observed['load_error']}")]
    checks = [
        vocabulary(expected, observed),
        merges(expected["merges"], observed["merges"]),
        pipeline(expected, observed),
        added_tokens(expected["added_tokens"], observed["added_tokens"]),
        special_tokens(expected["special_tokens"], observed["special_tokens"]),
        probe_ids(expected["probes"], observed["probes"], probes.text_names),
        decoded(expected["probes"], observed["probes"], probes.text_names),
        chat_template(expected["chat_template"], observed["chat_template"]),
        chat_ids(expected["chats"], observed["chats"], probes.chat_names),
    ]
    if "client_encode" in observed:
        mode = observed.get("client_encode_mode", "plain")
        checks.append(client_encode(expected["probes"], observed["client_encode"], probes, mode))
    return checks


def vocabulary(expected: dict[str, Any], observed: dict[str, Any]) -> Check:
    """Every entry's id, then the entry count and ``len(tokenizer)``."""
    want, got = expected["vocab"], observed["vocab"]
    for token, token_id in sorted(want.items(), key=lambda item: item[1]):
        if token not in got:
            return Check(
                "vocabulary", len(want), f"vocabulary: {token!r} (id {token_id}) is missing"
            )
        if got[token] != token_id:
            return Check(
                "vocabulary",
                len(want),
                f"vocabulary: {token!r} has id {got[token]}, expected {token_id}",
            )
    extra = sorted(set(got) - set(want), key=lambda token: got[token])
    if extra:
        return Check(
            "vocabulary",
            len(want),
            f"vocabulary: {extra[0]!r} (id {got[extra[0]]}) is not in the source",
        )
    if observed["length"] != expected["length"]:
        message = (
            f"vocabulary: len(tokenizer) is {observed['length']}, expected {expected['length']}"
        )
        return Check("vocabulary", len(want), message)
    return Check("vocabulary", len(want))


def merges(want: Sequence[str], got: Sequence[str]) -> Check:
    """Every merge rule, in order (the order is the rule's priority)."""
    for index, (expected, actual) in enumerate(zip(want, got, strict=False)):
        if expected != actual:
            return Check(
                "merges", len(want), f"merges: merge {index} is {actual!r}, expected {expected!r}"
            )
    if len(got) != len(want):
        return Check("merges", len(want), f"merges: {len(got)} merges, expected {len(want)}")
    return Check("merges", len(want))


def pipeline(expected: dict[str, Any], observed: dict[str, Any]) -> Check:
    """Normalizer, pre-tokenizer (its regex), post-processor and decoder, and the model type."""
    parts = [("model type", expected["model_type"], observed["model_type"])]
    parts += [
        (name, expected["pipeline"][name], observed["pipeline"][name])
        for name in expected["pipeline"]
    ]
    for name, want, got in parts:
        if _canonical(want) != _canonical(got):
            return Check(
                "pipeline",
                len(parts),
                f"pipeline: {name} is {_short(got)}, expected {_short(want)}",
            )
    return Check("pipeline", len(parts))


def added_tokens(want: list[dict[str, Any]], got: list[dict[str, Any]]) -> Check:
    """Each added token's id and flags (special, lstrip, rstrip, normalized, single_word)."""
    by_content = {token["content"]: token for token in got}
    for token in want:
        other = by_content.get(token["content"])
        if other is None:
            message = f"added tokens: {token['content']!r} (id {token['id']}) is missing"
            return Check("added tokens", len(want), message)
        for key, value in token.items():
            if other.get(key) != value:
                content = token["content"]
                message = (
                    f"added tokens: {content!r} has {key} {other.get(key)!r}, expected {value!r}"
                )
                return Check("added tokens", len(want), message)
    if len(got) != len(want):
        return Check("added tokens", len(want), f"added tokens: {len(got)}, expected {len(want)}")
    return Check("added tokens", len(want))


def special_tokens(want: dict[str, list[Any]], got: dict[str, list[Any]]) -> Check:
    """The BOS/EOS/UNK/PAD... roles: which token each is, and its id."""
    for role in sorted(set(want) | set(got)):
        if want.get(role) != got.get(role):
            actual, wanted = _pair(got.get(role)), _pair(want.get(role))
            message = f"special tokens: {role} is {actual}, expected {wanted}"
            return Check("special tokens", len(want), message)
    return Check("special tokens", len(want))


def probe_ids(want: list[dict[str, Any]], got: list[dict[str, Any]], names: list[str]) -> Check:
    """Each probe's ids without framing and with it (``add_special_tokens`` False/True)."""
    count = 0
    for name, expected, actual in zip(names, want, got, strict=True):
        for mode, label in (
            ("plain", "add_special_tokens=False"),
            ("framed", "add_special_tokens=True"),
        ):
            count += 1
            difference = first_difference(expected[mode], actual[mode])
            if difference:
                return Check("probes", 2 * len(want), f"probe {name!r} ({label}): {difference}")
    return Check("probes", count)


def decoded(want: list[dict[str, Any]], got: list[dict[str, Any]], names: list[str]) -> Check:
    """Each probe's ids decoded back to text."""
    for name, expected, actual in zip(names, want, got, strict=True):
        if expected["decoded"] != actual["decoded"]:
            shown, wanted = _short(actual["decoded"]), _short(expected["decoded"])
            message = f"decode: probe {name!r} decodes to {shown}, expected {wanted}"
            return Check("decode", len(want), message)
    return Check("decode", len(want))


def chat_template(want: str | None, got: str | None) -> Check:
    """The chat template's text, character for character."""
    if want == got:
        return Check("chat template", 0 if want is None else len(want))
    if got is None:
        return Check(
            "chat template",
            len(want or ""),
            f"chat template: missing, expected {len(want or '')} characters",
        )
    if want is None:
        return Check(
            "chat template", 0, f"chat template: {len(got)} characters, the source has none"
        )
    at = next(
        (i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b),
        min(len(want), len(got)),
    )
    shown, wanted = got[at : at + 24], want[at : at + 24]
    message = f"chat template: differs at character {at}: {shown!r}, expected {wanted!r}"
    return Check("chat template", len(want), message)


def chat_ids(want: list[dict[str, Any]], got: list[dict[str, Any]], names: list[str]) -> Check:
    """Each rendered chat: its text, then its ids."""
    for name, expected, actual in zip(names, want, got, strict=True):
        if expected["error"] != actual["error"] or expected["text"] != actual["text"]:
            shown = actual["error"] or _short(actual["text"])
            wanted = expected["error"] or _short(expected["text"])
            message = f"chat {name!r}: rendered {shown}, expected {wanted}"
            return Check("chats", len(want), message)
        difference = first_difference(expected["ids"] or [], actual["ids"] or [])
        if difference:
            return Check("chats", len(want), f"chat {name!r}: {difference}")
    return Check("chats", len(want))


def client_encode(
    want: list[dict[str, Any]], got: list[list[int]], probes: Probes, mode: str = "plain"
) -> Check:
    """The client's own ``encode`` with its defaults, against the probe encoding ``mode`` names
    (AIPerf: ``plain``, no special tokens added; transformers: ``framed``)."""
    for name, expected, actual in zip(probes.text_names, want, got, strict=True):
        difference = first_difference(expected[mode], actual)
        if difference:
            return Check(
                "client encode", len(want), f"client encode of probe {name!r}: {difference}"
            )
    return Check("client encode", len(want))


def first_difference(want: Sequence[int], got: Sequence[int]) -> str | None:
    """ "token 3 is 220, expected 256 (12 tokens, expected 11)", or None when equal."""
    if list(want) == list(got):
        return None
    at = next(
        (i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b),
        min(len(want), len(got)),
    )
    actual = got[at] if at < len(got) else "the end"
    wanted = want[at] if at < len(want) else "the end"
    return f"token {at} is {actual}, expected {wanted} ({len(got)} tokens, expected {len(want)})"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _short(value: Any, limit: int = 80) -> str:
    if value is None:
        return "nothing"
    text = value if isinstance(value, str) else _canonical(value)
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _pair(value: list[Any] | None) -> str:
    return "absent" if value is None else f"{value[0]!r} (id {value[1]})"
