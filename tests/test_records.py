"""``frozen_record`` behaves as ``@dataclasses.dataclass(frozen=True)``: the same equality,
hash, printed form, frozenness and field handling, checked class shape by class shape against
the standard library's own, and on every record class qualify defines."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from typing import Any

import pytest

import qualify
from qualify.records import frozen_record


def _shapes(decorate: Any) -> dict[str, Any]:
    @decorate
    class Plain:
        a: int = 0
        b: str = "x"

    @decorate
    class Hidden:
        a: int = 0
        secret: str = dataclasses.field(default="s", repr=False)
        noise: float = dataclasses.field(default=0.0, compare=False)
        hashed_only: int = dataclasses.field(default=0, compare=False, hash=True)
        unhashed: int = dataclasses.field(default=0, hash=False)

    @decorate
    class Own:
        a: int = 0

        def __repr__(self) -> str:
            return "own"

        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = object.__hash__

    @decorate
    class Base:
        a: int = 0

    @decorate
    class Child(Base):
        b: list[int] = dataclasses.field(default_factory=list)

    return {"Plain": Plain, "Hidden": Hidden, "Own": Own, "Base": Base, "Child": Child}


OURS = _shapes(frozen_record)
STDLIB = _shapes(dataclasses.dataclass(frozen=True))


def _pairs(cls: type) -> list[tuple[Any, Any]]:
    if cls.__name__ == "Hidden":
        return [
            (cls(), cls()), (cls(1), cls(1)), (cls(noise=2.0), cls()),
            (cls(hashed_only=1), cls()), (cls(unhashed=3), cls()), (cls(1), cls(2)),
        ]  # fmt: skip
    if cls.__name__ == "Child":
        return [(cls(), cls()), (cls(1, [2]), cls(1, [2])), (cls(1, [2]), cls(1, [3]))]
    return [(cls(), cls()), (cls(1), cls(2)), (cls(1), cls(1))]


@pytest.mark.parametrize("name", sorted(OURS))
def test_each_shape_compares_hashes_and_prints_as_the_stdlibs(name: str) -> None:
    ours, stdlib = OURS[name], STDLIB[name]
    for (a, b), (c, d) in zip(_pairs(ours), _pairs(stdlib), strict=True):
        assert (a == b, a != b) == (c == d, c != d)
        assert repr(a) == repr(c)
        try:
            expected: Any = hash(c) == hash(d)
        except TypeError as exc:  # a list field: unhashable in both
            expected = type(exc)
        try:
            got: Any = hash(a) == hash(b)
        except TypeError as exc:
            got = type(exc)
        if name != "Own":  # (identity hashes: two objects differ in both)
            assert got == expected
    assert [f.name for f in dataclasses.fields(ours)] == [
        f.name for f in dataclasses.fields(stdlib)
    ]


def test_frozen_and_replace_and_other_classes() -> None:
    plain, base, child = OURS["Plain"](1, "y"), OURS["Base"](1), OURS["Child"](1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plain.a = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del plain.a  # type: ignore[misc]
    assert dataclasses.replace(plain, a=3) == OURS["Plain"](3, "y")
    assert base != child and child != base  # another class is never equal, as dataclasses
    assert plain != (1, "y")
    assert dataclasses.asdict(plain) == {"a": 1, "b": "y"}


def _record_classes() -> list[type]:
    found = []
    for module in pkgutil.walk_packages(qualify.__path__, "qualify."):
        if module.name.endswith("__main__"):
            continue
        loaded = importlib.import_module(module.name)
        for value in vars(loaded).values():
            if isinstance(value, type) and "__record_compared__" in vars(value):
                found.append(value)
    return found


def test_every_record_of_qualify_is_frozen_with_its_fields_compared() -> None:
    classes = _record_classes()
    assert len(classes) > 100
    for cls in classes:
        params = cls.__dataclass_params__  # type: ignore[attr-defined]
        assert cls.__record_frozen__ and not params.eq and not params.repr  # type: ignore[attr-defined]
        fields = dataclasses.fields(cls)
        assert cls.__record_compared__ == tuple(f.name for f in fields if f.compare)  # type: ignore[attr-defined]


def _init_shapes(decorate: Any, **options: Any) -> list[type]:
    @decorate
    class Required:
        a: int
        b: str = "x"
        c: list[int] = dataclasses.field(default_factory=list)

    @(decorate(kw_only=True) if options else dataclasses.dataclass(frozen=True, kw_only=True))
    class KeywordsOnly:
        a: int
        b: int = 2

    @decorate
    class NotInInit:
        a: int = 1
        fixed: int = dataclasses.field(default=3, init=False)
        made: list[int] = dataclasses.field(default_factory=lambda: [7], init=False)

    @decorate
    class Checked:
        a: int = 0
        seen: list[int] = dataclasses.field(default_factory=list, compare=False)

        def __post_init__(self) -> None:
            if self.a < 0:
                raise ValueError(f"a = {self.a}")
            self.seen.append(self.a)

    return [Required, KeywordsOnly, NotInInit, Checked]


def test_init_is_the_stdlibs() -> None:
    import inspect

    ours = _init_shapes(frozen_record, ours=True)
    stdlib = _init_shapes(dataclasses.dataclass(frozen=True))
    for mine, theirs in zip(ours, stdlib, strict=True):
        signature, expected = inspect.signature(mine), inspect.signature(theirs)
        assert [(p.name, p.kind) for p in signature.parameters.values()] == [
            (p.name, p.kind) for p in expected.parameters.values()
        ]
    required, keywords, not_in_init, checked = ours
    assert repr(required(1)) == repr(stdlib[0](1))
    assert required(1).c is not required(1).c  # the factory called per instance
    with pytest.raises(TypeError):
        required()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        keywords(1)  # type: ignore[misc]
    assert keywords(a=1) == keywords(a=1, b=2)
    assert (not_in_init().fixed, not_in_init().made) == (3, [7])
    with pytest.raises(TypeError):
        not_in_init(1, 2)  # type: ignore[call-arg]
    assert checked(4).seen == [4]
    with pytest.raises(ValueError, match="a = -1"):
        checked(-1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        checked(1).a = 2  # type: ignore[misc]


def test_a_default_before_a_required_field_is_refused_as_the_stdlib_refuses() -> None:
    for decorate in (frozen_record, dataclasses.dataclass(frozen=True)):
        with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

            @decorate
            class Wrong:
                a: int = 0
                b: int
