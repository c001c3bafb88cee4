"""``frozen_record``: a frozen dataclass whose ``__eq__``, ``__hash__`` and ``__repr__`` are shared.

``dataclasses.dataclass`` writes the source of each generated method and ``exec``s it, class by
class: six methods for a frozen class. A run imports about a hundred of qualify's records, and
that code generation alone cost about 100 ms of CPU at every start (the fixed cost of a
one-test E2E is qualify's own start and end). ``frozen_record`` lets dataclasses generate only what
must be per class (``__init__``, and the frozen ``__setattr__``/``__delattr__``) and gives every
record the same three functions below, which read the class's fields once. Equality, hashing and
the printed form are those of ``@dataclasses.dataclass(frozen=True)``: fields with
``compare=False`` are left out of both, ``hash=`` is honoured, ``repr=False`` hides a field
(``benchmarks/bench_records.py`` measures the saving and checks the equivalence).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T")

_COMPARED = "__record_compared__"
_HASHED = "__record_hashed__"
_SHOWN = "__record_shown__"


def _compared(self: Any) -> tuple[Any, ...]:
    return tuple(getattr(self, name) for name in getattr(self.__class__, _COMPARED))


def _eq(self: Any, other: object) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _compared(self) == _compared(other)


def _hash(self: Any) -> int:
    return hash(tuple(getattr(self, name) for name in getattr(self.__class__, _HASHED)))


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
        setattr(made, _COMPARED, tuple(f.name for f in fields if f.compare))
        hashed = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]
        setattr(made, _HASHED, tuple(hashed))
        setattr(made, _SHOWN, tuple(f.name for f in fields if f.repr))
        if "__eq__" not in own:
            made.__eq__ = _eq  # type: ignore[method-assign]
            if "__hash__" not in own:
                made.__hash__ = _hash  # type: ignore[method-assign]
        if "__repr__" not in own:
            made.__repr__ = _repr  # type: ignore[method-assign]
        return made

    return wrap if cls is None else wrap(cls)
