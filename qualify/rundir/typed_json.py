"""Frozen dataclasses as JSON documents: written exactly, read leniently, described by a schema.

One set of type hints drives all three, so the audit's writer, its readers and its published
JSON Schema cannot drift apart. Supported hints: ``str``, ``int``, ``float``, ``bool``,
``None``, unions of them, ``list[X]``, ``dict[str, X]``, ``Any`` and nested dataclasses.
``field(metadata={"schema": {...}})`` adds keywords (an ``enum``, a ``const``) to a field.

Reading never raises on content: a missing key takes the field's default, a value of the wrong
type is dropped (the default again) and named in ``problems``, an unknown key is ignored and
named. A run directory written by another version, cut short or edited by hand is still read.
"""

from __future__ import annotations

import builtins
import re
import sys
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from qualify import records

T = TypeVar("T")

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def to_json(value: Any) -> Any:
    """A dataclass (or list, dict, scalar) as plain JSON values, fields in declaration order."""
    if records.is_record(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in records.fields(value)}
    if isinstance(value, list | tuple):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_json(item) for key, item in value.items()}
    return value


_HINTS: dict[Any, dict[str, Any]] = {}


def _hints(cls: Any) -> dict[str, Any]:
    """``typing.get_type_hints(cls)``, read by ``_read_hints`` where every hint is of the
    supported grammar (``typing`` compiles each annotation string and ``eval``s it: some two
    hundred compilations for the audit's classes, at every run)."""
    found = _HINTS.get(cls)
    if found is None:
        try:
            found = _read_hints(cls)
        except LookupError:
            found = typing.get_type_hints(cls)
        _HINTS[cls] = found
    return found


_TOKEN = re.compile(r"\s*(?:([A-Za-z_][A-Za-z_0-9.]*)|(.))")


def _read_hints(cls: Any) -> dict[str, Any]:
    """The hints of ``cls`` and its bases, as ``typing.get_type_hints`` gives them (each string
    looked up in its class's module, then the class, then the builtins), for strings of the
    grammar ``hint := name ["[" hint ("," hint)* "]"] ("|" hint)*``; LookupError for any
    other (``typing`` reads those)."""
    hints: dict[str, Any] = {}
    for base in reversed(cls.__mro__):
        annotations = base.__dict__.get("__annotations__", {})  # noqa: RUF063 - no inspect
        if not annotations:
            continue
        module = sys.modules.get(base.__module__)
        scopes = (getattr(module, "__dict__", {}), base.__dict__, builtins.__dict__)
        for name, given in annotations.items():
            value = type(None) if given is None else given
            if isinstance(given, str):
                tokens = [m.group(1) or m.group(2) for m in _TOKEN.finditer(given.strip())]
                value, rest = _union(tokens, scopes)
                if rest:
                    raise LookupError(given)
            hints[name] = value
    return hints


def _union(tokens: list[str], scopes: tuple[Mapping[str, Any], ...]) -> tuple[Any, list[str]]:
    value, tokens = _term(tokens, scopes)
    while tokens[:1] == ["|"]:
        other, tokens = _term(tokens[1:], scopes)
        value = value | other
    return value, tokens


def _term(tokens: list[str], scopes: tuple[Mapping[str, Any], ...]) -> tuple[Any, list[str]]:
    if not tokens or not (tokens[0][0].isalpha() or tokens[0][0] == "_"):
        raise LookupError(tokens[:1])
    name, tokens = tokens[0], tokens[1:]
    found = _lookup(name, scopes)
    if tokens[:1] != ["["]:
        return found, tokens
    if found not in (list, dict, tuple):
        raise LookupError(name)
    arguments = []
    while True:
        argument, tokens = _union(tokens[1:], scopes)
        arguments.append(argument)
        if tokens[:1] == ["]"]:
            return found[tuple(arguments) if len(arguments) > 1 else arguments[0]], tokens[1:]
        if tokens[:1] != [","]:
            raise LookupError(name)


def _lookup(name: str, scopes: tuple[Mapping[str, Any], ...]) -> Any:
    if name == "None":
        return type(None)
    if name == "Any":  # (as typing names it, wherever it was imported from)
        return Any
    for scope in scopes:
        if name in scope:
            value = scope[name]
            if value is Any or isinstance(value, type):
                return value
            raise LookupError(name)  # an alias, a TypeVar, a module: typing reads it
    raise LookupError(name)


def prepare(cls: type[Any]) -> None:
    """Resolve the type hints of ``cls`` and of every dataclass in them, ahead of the first
    reading (``qualify run`` does it while the E2E runs: about a millisecond of reading
    annotation strings off the end of the run)."""
    pending, seen = [cls], set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        for hint in _hints(current).values():
            stack = [hint]
            while stack:
                part = stack.pop()
                if records.is_record(part) and isinstance(part, type):
                    pending.append(part)
                stack.extend(typing.get_args(part))


def _options(hint: Any) -> tuple[Any, ...]:
    """The members of a union (``X | None``), or the hint alone."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return typing.get_args(hint)
    return (hint,)


_PARTS: dict[Any, tuple[tuple[Any, Any, tuple[Any, ...]], ...]] = {}


def _parts(hint: Any) -> tuple[tuple[Any, Any, tuple[Any, ...]], ...]:
    """``_options(hint)``, each with its ``typing.get_origin`` and ``typing.get_args``: worked
    out once per hint (an audit read asks them for every value it holds)."""
    try:
        return _PARTS[hint]
    except KeyError:
        found = tuple((o, typing.get_origin(o), typing.get_args(o)) for o in _options(hint))
        _PARTS[hint] = found
        return found
    except TypeError:  # an unhashable hint
        return tuple((o, typing.get_origin(o), typing.get_args(o)) for o in _options(hint))


def _matches(value: Any, hint: Any, origin: Any) -> bool:
    """Whether ``value`` can be read as ``hint`` (``origin``: its ``typing.get_origin``)."""
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint in _SCALARS:
        return isinstance(value, hint)
    if origin is list:
        return isinstance(value, list)
    if origin is dict:
        return isinstance(value, dict)
    return records.is_record(hint) and isinstance(value, dict)


def _convert(value: Any, hint: Any, where: str, problems: list[str]) -> Any:
    """``value`` read as ``hint``; raises LookupError when it does not fit at all."""
    for option, origin, args in _parts(hint):
        if not _matches(value, option, origin):
            continue
        if option is float and value is not None:
            return float(value)
        if origin is list:
            (item,) = args or (Any,)
            return [
                _convert_or_skip(v, item, f"{where}[{i}]", problems) for i, v in enumerate(value)
            ]
        if origin is dict:
            item = (args or (str, Any))[1]
            return {
                str(k): _convert_or_skip(v, item, f"{where}.{k}", problems)
                for k, v in value.items()
            }
        if records.is_record(option) and isinstance(option, type):
            return _load(option, value, where, problems)
        return value
    raise LookupError(where)


def _convert_or_skip(value: Any, hint: Any, where: str, problems: list[str]) -> Any:
    try:
        return _convert(value, hint, where, problems)
    except LookupError:
        problems.append(f"{where}: {type(value).__name__} is not {_describe(hint)}")
        return None


def _describe(hint: Any) -> str:
    names = []
    for option in _options(hint):
        if option is type(None):
            names.append("null")
        elif option in _SCALARS:
            names.append(_SCALARS[option])
        else:
            origin = typing.get_origin(option)
            names.append("array" if origin is list else "object")
    return " or ".join(names)


def _default(field: records.Field) -> Any:
    if field.default is not records.MISSING:
        return field.default
    if field.default_factory is not records.MISSING:
        return field.default_factory()
    return None


def _load(cls: type[T], data: dict[str, Any], where: str, problems: list[str]) -> T:
    hints = _hints(cls)
    fields = records.fields(cls)
    known = {field.name for field in fields}
    problems.extend(f"{where}.{key}: unknown key" for key in data if key not in known)
    values: dict[str, Any] = {}
    for field in fields:
        path = f"{where}.{field.name}"
        if field.name not in data:
            values[field.name] = _default(field)
            continue
        try:
            values[field.name] = _convert(data[field.name], hints[field.name], path, problems)
        except LookupError:
            value = data[field.name]
            hint = _describe(hints[field.name])
            problems.append(f"{path}: {type(value).__name__} is not {hint}")
            values[field.name] = _default(field)
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:  # a dataclass that validates its values refused them
        problems.append(f"{where}: {exc}")
        return cls()


def from_json(cls: type[T], data: Any, where: str = "") -> tuple[T, list[str]]:
    """``data`` read as ``cls`` and every problem found on the way (empty: an exact fit)."""
    problems: list[str] = []
    if not isinstance(data, dict):
        problems.append(f"{where or 'document'}: {type(data).__name__} is not an object")
        data = {}
    return _load(cls, data, where, problems), problems


def schema_of(hint: Any, definitions: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of a type hint; dataclasses go to ``definitions`` by name."""
    options = _options(hint)
    if len(options) > 1:
        if all(option in _SCALARS or option is type(None) for option in options):
            return {"type": [_SCALARS.get(option, "null") for option in options]}
        return {"anyOf": [schema_of(option, definitions) for option in options]}
    if hint is Any:
        return {}
    if hint is type(None):
        return {"type": "null"}
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    origin = typing.get_origin(hint)
    if origin is list:
        (item,) = typing.get_args(hint) or (Any,)
        return {"type": "array", "items": schema_of(item, definitions)}
    if origin is dict:
        item = (typing.get_args(hint) or (str, Any))[1]
        return {"type": "object", "additionalProperties": schema_of(item, definitions)}
    if records.is_record(hint) and isinstance(hint, type):
        name = hint.__name__
        if name not in definitions:
            definitions[name] = {}  # placeholder: recursion stops here
            definitions[name] = _object_schema(hint, definitions)
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"no JSON Schema for {hint!r}")


def _object_schema(cls: type, definitions: dict[str, Any]) -> dict[str, Any]:
    hints = _hints(cls)
    properties = {}
    for field in records.fields(cls):
        described = schema_of(hints[field.name], definitions)
        extra: dict[str, Any] = dict(field.metadata.get("schema", {}))
        properties[field.name] = {**described, **extra} if extra else described
    schema: dict[str, Any] = {"type": "object"}
    if cls.__doc__:
        schema["description"] = " ".join(cls.__doc__.split())
    schema["properties"] = properties
    schema["required"] = [field.name for field in records.fields(cls)]
    schema["additionalProperties"] = False
    return schema


def document_schema(cls: type, schema_id: str, title: str) -> dict[str, Any]:
    """The whole JSON Schema (draft 2020-12) of documents of ``cls``."""
    definitions: dict[str, Any] = {}
    root = _object_schema(cls, definitions)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": schema_id,
        "title": title,
        **root,
        "$defs": dict(sorted(definitions.items())),
    }
