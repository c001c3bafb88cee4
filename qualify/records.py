"""``frozen_record``: a frozen dataclass whose methods are made with one ``exec`` per class.

``dataclasses.dataclass`` writes the source of each generated method and ``exec``s it, class by
class: six methods for a frozen class, in Python 3.11 each in its own ``exec`` (about 0.1 ms of
compiling each). A run imports about a hundred of qualify's records, and that code generation
cost about 70 ms of CPU at every start (qualify's start and end are the fixed cost of a one-test
E2E). ``frozen_record`` lets dataclasses collect the fields and generate nothing, writes the
``__init__`` itself (the same code dataclasses writes for a frozen class: each field set through
``object.__setattr__``, a default factory called when its argument is not given, then
``__post_init__``) in the one ``exec`` a class needs, and gives every record the same frozen
``__setattr__`` and ``__delattr__`` and the same three functions below, which read the fields
through an ``operator.attrgetter`` made once per class. Equality, hashing, the printed form,
frozenness and the ``__init__``'s parameters are those of ``@dataclasses.dataclass(frozen=True)``
(``compare=False`` fields left out of both, ``hash=`` honoured, ``repr=False`` hidden;
``tests/test_records.py`` checks it); ``__dataclass_params__`` says what dataclasses generated
(nothing), and ``__record_frozen__`` that the class is frozen. The price: a comparison or a hash
takes about twice a generated method's 0.15 us, which a process would have to make some hundred
thousand times to lose what the import saved (``benchmarks/bench_records.py`` prints both
sides).
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


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


_FROZEN = "__record_frozen__"
_INITVAR = getattr(dataclasses, "_FIELD_INITVAR", None)
_FACTORY = object()
"""The default of a parameter whose field has a default factory (dataclasses' own marker)."""


def _init(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> Any:
    """The ``__init__`` dataclasses writes for a frozen class of ``fields``, in one ``exec``."""
    namespace: dict[str, Any] = {
        "__record_set__": object.__setattr__,
        "__record_factory__": _FACTORY,
    }
    positional: list[str] = []
    keywords: list[str] = []
    body: list[str] = []
    seen_default = False
    for field in fields:
        default = f"__record_default_{field.name}__"
        has_default = field.default is not dataclasses.MISSING
        has_factory = field.default_factory is not dataclasses.MISSING
        if field.init:
            if has_factory:
                namespace[default] = field.default_factory
                param = f"{field.name}=__record_factory__"
                value = f"{default}() if {field.name} is __record_factory__ else {field.name}"
            elif has_default:
                namespace[default] = field.default
                param, value = f"{field.name}={default}", field.name
            else:
                if seen_default and not field.kw_only:
                    raise TypeError(f"non-default argument {field.name!r} follows default argument")
                param, value = field.name, field.name
            seen_default = seen_default or ((has_default or has_factory) and not field.kw_only)
            (keywords if field.kw_only else positional).append(param)
        elif has_factory:
            namespace[default] = field.default_factory
            value = f"{default}()"
        else:
            continue  # read from the class's attribute, as dataclasses leaves it
        body.append(f"    __record_set__(self, {field.name!r}, {value})")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    params = ", ".join(["self", *positional, *(["*", *keywords] if keywords else [])])
    source = f"def __init__({params}) -> None:\n" + ("\n".join(body) or "    pass") + "\n"
    exec(source, namespace)  # the source is made of the class's field names
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = {f.name: f.type for f in fields if f.init} | {"return": None}
    return init


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
        made = dataclasses.dataclass(
            init=False, repr=False, eq=False, frozen=False, kw_only=kw_only
        )(cls)
        fields = dataclasses.fields(made)  # type: ignore[arg-type]
        pseudo = made.__dataclass_fields__.values()  # type: ignore[attr-defined]
        if any(getattr(f, "_field_type", None) is _INITVAR for f in pseudo):
            raise TypeError(f"{cls.__qualname__}: a record takes no InitVar")
        for name in ("__setattr__", "__delattr__"):
            if name in own:  # as dataclasses refuses for a frozen class
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
        if "__init__" not in own:
            made.__init__ = _init(made, fields)  # type: ignore[method-assign]
        made.__setattr__ = _frozen_setattr  # type: ignore[method-assign]
        made.__delattr__ = _frozen_delattr  # type: ignore[method-assign]
        setattr(made, _FROZEN, True)
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
