"""``frozen_record``: a frozen dataclass whose ``__eq__``, ``__hash__`` and ``__repr__`` are shared.

``dataclasses.dataclass`` writes the source of each generated method and ``exec``s it, class by
class: six methods for a frozen class. A run imports about a hundred of qualify's records, and
that code generation cost about 70 ms of CPU at every start (qualify's start and end are the
fixed cost of a one-test E2E). ``frozen_record`` lets dataclasses generate only what must be per
class (``__init__``, and the frozen ``__setattr__``/``__delattr__``) and gives every record the
same three functions below, which read the fields through an ``operator.attrgetter`` made once
per class. Equality, hashing and the printed form are those of
``@dataclasses.dataclass(frozen=True)`` (``compare=False`` fields left out of both, ``hash=``
honoured, ``repr=False`` hidden; ``tests/test_records.py`` checks it). The price: a comparison
or a hash takes about twice a generated method's 0.15 us, which a process would have to make
some hundred thousand times to lose what the import saved (``benchmarks/bench_records.py``
prints both sides).
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T")

_COMPARED = "__record_compared__"
_HASHED = "__record_hashed__"
_SHOWN = "__record_shown__"
_GET_COMPARED = "__record_get_compared__"
_GET_HASHED = "__record_get_hashed__"


def _getter(names: tuple[str, ...]) -> Any:
    """A C-level reader of ``names`` as one tuple (``operator.attrgetter``: as fast as the
    tuple a generated method builds, without compiling one per class)."""
    if not names:
        return lambda _: ()
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return lambda record: (one(record),)
    return operator.attrgetter(*names)


def _eq(self: Any, other: object) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    get = self.__class__.__dict__[_GET_COMPARED]
    return get(self) == get(other)


def _hash(self: Any) -> int:
    return hash(self.__class__.__dict__[_GET_HASHED](self))


def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in getattr(self.__class__, _SHOWN))
    return f"{self.__class__.__qualname__}({shown})"


@overload
def frozen_record(cls: type[T], /) -> type[T]: ...


@overload
def frozen_record(*, kw_only: bool = False) -> Any: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def frozen_record(cls: type[T] | None = None, /, *, kw_only: bool = False) -> Any:
    """``@dataclasses.dataclass(frozen=True)`` with shared ``__eq__``, ``__hash__`` and
    ``__repr__`` (a method the class defines itself is kept, as dataclasses keeps it)."""

    def wrap(cls: type[T]) -> type[T]:
        own = set(cls.__dict__)
        made = dataclasses.dataclass(frozen=True, repr=False, eq=False, kw_only=kw_only)(cls)
        fields = dataclasses.fields(made)  # type: ignore[arg-type]
        compared = tuple(f.name for f in fields if f.compare)
        hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
        setattr(made, _COMPARED, compared)
        setattr(made, _HASHED, hashed)
        setattr(made, _GET_COMPARED, staticmethod(_getter(compared)))
        setattr(made, _GET_HASHED, staticmethod(_getter(hashed)))
        setattr(made, _SHOWN, tuple(f.name for f in fields if f.repr))
        if "__eq__" not in own:
            made.__eq__ = _eq  # type: ignore[method-assign]
            if "__hash__" not in own:
                made.__hash__ = _hash  # type: ignore[method-assign]
        if "__repr__" not in own:
            made.__repr__ = _repr  # type: ignore[method-assign]
        return made

    return wrap if cls is None else wrap(cls)
