"""Records: classes of typed fields, made without ``dataclasses`` on a run's path.

``dataclasses.dataclass`` writes the source of each generated method and ``exec``s it, class by
class (in Python 3.11 each method in its own ``exec``), resolves every field through a chain
of checks, gives a class without a docstring one made by ``inspect.signature``, and importing
``dataclasses`` imports ``inspect`` (and with it ``ast``, ``dis``, ``tokenize``). A run imports
about a hundred of qualify's records; that was tens of milliseconds of CPU at every start
(qualify's start and end are the fixed cost of a one-test E2E).

``frozen_record`` (``@dataclasses.dataclass(frozen=True)``) and ``record`` (the same, mutable:
``@dataclasses.dataclass``) collect the fields themselves: a class's annotations in order, after
those of its record bases, each with the default or the ``field(...)`` it is given (``field``
takes the arguments of ``dataclasses.field``; a ``dataclasses.field(...)`` is read too). Each
class gets the ``__init__`` dataclasses writes (each field set, a default factory called when its
argument is not given, then ``__post_init__``): bound by hand for its first instances, compiled
(one ``exec``, cached by the shape of its parameters) once the class has made enough of them to
repay the compiling (``_COMPILE_AFTER``), and shares ``__eq__``, ``__hash__`` and ``__repr__``,
which read the fields through an ``operator.attrgetter`` made once per class. Equality, hashing,
the printed form, frozenness and the ``__init__``'s parameters are those of dataclasses
(``compare=False`` fields left out of both, ``hash=`` honoured, ``repr=False`` hidden; a mutable
record is unhashable, as a dataclass with ``eq``); ``tests/test_records.py`` checks it, shape by
shape against the standard library and on every record qualify defines.

``fields``, ``replace`` and ``asdict`` are dataclasses' functions for records, without importing
``dataclasses``. ``dataclasses.fields``, ``replace``, ``asdict`` and ``is_dataclass`` still work
on a record: its ``__dataclass_fields__`` and ``__dataclass_params__`` are made on first use, as
dataclasses' own ``Field`` objects (importing ``dataclasses`` then). A comparison or a hash takes
about twice a generated method's 0.15 us, which a process would have to make some hundred
thousand times to lose what the import saved (``benchmarks/bench_records.py`` prints both
sides).
"""

from __future__ import annotations

import operator
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T")


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""A field's default or default factory when it has none (dataclasses' ``MISSING`` plays the
same part; ``dataclasses.MISSING`` is read as this where a ``dataclasses.field`` is given)."""

_EMPTY: Mapping[str, Any] = types.MappingProxyType({})


class FrozenInstanceError(AttributeError):
    """A field of a frozen record was assigned or deleted (``dataclasses.FrozenInstanceError``
    is raised where ``dataclasses`` is loaded, so that either name catches it)."""


class Field:
    """One field of a record: what ``dataclasses.Field`` holds, by the same names."""

    __slots__ = (
        "compare",
        "default",
        "default_factory",
        "hash",
        "init",
        "kw_only",
        "metadata",
        "name",
        "repr",
        "type",
    )

    def __init__(
        self,
        default: Any = MISSING,
        default_factory: Any = MISSING,
        init: bool = True,
        repr: bool = True,
        hash: bool | None = None,
        compare: bool = True,
        metadata: Mapping[str, Any] | None = None,
        kw_only: Any = MISSING,
    ) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.hash = hash
        self.compare = compare
        self.metadata = types.MappingProxyType(dict(metadata)) if metadata else _EMPTY
        self.kw_only = kw_only

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r})"


def field(
    *,
    default: Any = MISSING,
    default_factory: Callable[[], Any] | Any = MISSING,
    init: bool = True,
    repr: bool = True,
    hash: bool | None = None,
    compare: bool = True,
    metadata: Mapping[str, Any] | None = None,
    kw_only: bool | Any = MISSING,
) -> Any:
    """``dataclasses.field`` for a record."""
    return Field(default, default_factory, init, repr, hash, compare, metadata, kw_only)


_FIELDS = "__record_fields__"
_FROZEN = "__record_frozen__"
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


def _frozen_error(message: str) -> Exception:
    """``dataclasses.FrozenInstanceError`` where ``dataclasses`` is loaded (code that catches it
    by that name), else this module's own (an ``AttributeError`` as well)."""
    loaded = sys.modules.get("dataclasses")
    cls = loaded.FrozenInstanceError if loaded is not None else FrozenInstanceError
    return cls(message)


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise _frozen_error(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise _frozen_error(f"cannot delete field {name!r}")


_FACTORY = object()
"""The default of a parameter whose field has a default factory (dataclasses' own marker)."""

_INITS: dict[tuple[Any, ...], Callable[..., Any]] = {}
"""Compiled ``__init__`` code by shape (parameters, factories, ``__post_init__``, frozen): the
records of one shape share one ``exec``, each with its own defaults."""


def _init(cls: type, fields: tuple[Field, ...], frozen: bool) -> Any:
    """The ``__init__`` dataclasses writes for ``fields``; its code compiled once per shape."""
    positional: list[str] = []
    keywords: list[str] = []
    body: list[str] = []
    defaults: dict[str, Any] = {}
    seen_default = False
    for number, one in enumerate(fields):
        default = f"__record_d{number}__"
        has_default = one.default is not MISSING
        has_factory = one.default_factory is not MISSING
        if one.init:
            if has_factory:
                defaults[default] = one.default_factory
                param = f"{one.name}=__record_factory__"
                value = f"{default}() if {one.name} is __record_factory__ else {one.name}"
            elif has_default:
                defaults[default] = one.default
                param, value = f"{one.name}={default}", one.name
            else:
                if seen_default and not one.kw_only:
                    raise TypeError(f"non-default argument {one.name!r} follows default argument")
                param, value = one.name, one.name
            seen_default = seen_default or ((has_default or has_factory) and not one.kw_only)
            (keywords if one.kw_only else positional).append(param)
        elif has_factory:
            defaults[default] = one.default_factory
            value = f"{default}()"
        else:
            continue  # read from the class's attribute, as dataclasses leaves it
        if frozen:
            body.append(f"    __record_set__(self, {one.name!r}, {value})")
        else:
            body.append(f"    self.{one.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    params = ", ".join(["self", *positional, *(["*", *keywords] if keywords else [])])
    shape = (params, tuple(body), tuple(defaults))
    make = _INITS.get(shape)
    if make is None:
        inner = "\n".join(body) or "    pass"
        names = ", ".join(defaults) or "_"
        source = (
            f"def __record_make__({names}):\n"
            + "\n".join("    " + line for line in f"def __init__({params}):\n{inner}".split("\n"))
            + "\n    return __init__\n"
        )
        namespace: dict[str, Any] = {
            "__record_set__": object.__setattr__,
            "__record_factory__": _FACTORY,
        }
        exec(source, namespace)  # the source is made of the class's field names
        make = _INITS[shape] = namespace["__record_make__"]
    init = make(*defaults.values()) if defaults else make(None)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = {f.name: f.type for f in fields if f.init} | {"return": None}
    return init


def _check_order(fields: tuple[Field, ...]) -> None:
    """Refused as dataclasses refuses it, when the class is made: a positional parameter
    without a default after one with a default."""
    seen_default = False
    for one in fields:
        if not one.init or one.kw_only:
            continue
        has_default = one.default is not MISSING or one.default_factory is not MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {one.name!r} follows default argument")
        seen_default = seen_default or has_default


_COMPILE_AFTER = 128
"""Instances a record class makes through ``_generic`` before its ``__init__`` is compiled.
Compiling one costs about as much as a hundred-odd calls of the generic one cost more than
calls of the compiled one (``benchmarks/bench_records.py`` prints the three figures): a class
that makes fewer instances never pays for compiling; one that makes many pays at most about
twice what compiling at once would have (the ski-rental bound)."""


def _generic(
    cls: type, fields: tuple[Field, ...], frozen: bool, compiled: Callable[[], Any]
) -> Callable[..., None]:
    """An ``__init__`` for ``fields`` without compiling one: the parameters bound by hand for a
    call that binds (the fields set in order, each factory called when its argument is not
    given, then ``__post_init__``), as the compiled one does; any other call (an unknown or a
    repeated argument, too many, a required one missing) is handed to the compiled one, so that
    it refuses it in the words Python uses."""
    positional = tuple(f.name for f in fields if f.init and not f.kw_only)
    accepted = frozenset(f.name for f in fields if f.init)
    required = frozenset(
        f.name for f in fields if f.init and f.default is MISSING and f.default_factory is MISSING
    )
    steps = tuple(
        (f.name, positional.index(f.name) if f.name in positional else len(fields), f.init,
         f.default, f.default_factory)
        for f in fields
        if f.init or f.default_factory is not MISSING
    )  # fmt: skip
    given_first = {name: index for index, name in enumerate(positional)}
    post_init = hasattr(cls, "__post_init__")
    setter: Callable[[Any, str, Any], None] = object.__setattr__ if frozen else setattr

    def binds(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        count = len(args)
        if count > len(positional):
            return False
        if kwargs and (
            not accepted.issuperset(kwargs)
            or any(given_first.get(name, count) < count for name in kwargs)
        ):
            return False
        return all(name in kwargs or given_first.get(name, count) < count for name in required)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if not binds(args, kwargs):
            compiled()(self, *args, **kwargs)  # (it refuses the call)
            return
        count = len(args)
        for name, index, init, default, factory in steps:
            if not init:
                value = factory()
            elif index < count:
                value = args[index]
            elif name in kwargs:
                value = kwargs[name]
            elif factory is not MISSING:
                value = factory()
            else:
                value = default
            setter(self, name, value)
        if post_init:
            self.__post_init__()

    return __init__


class _LazyInit:
    """A record's ``__init__`` until it is compiled (``_init``) and set on the class in its
    place: at the first lookup on the class itself (``Cls.__init__``, ``inspect.signature``), or
    when the class has made ``_COMPILE_AFTER`` instances; until then each instance is made by
    ``_generic`` (through a subclass, or a subclass's ``super().__init__(...)``, too). A run
    defines about a hundred record classes and makes instances of fewer than half of them, most
    a handful each: none of those pays for compiling."""

    __slots__ = ("cls", "fields", "frozen", "generic", "made")

    def __init__(self, cls: type, fields: tuple[Field, ...], frozen: bool) -> None:
        self.cls, self.fields, self.frozen = cls, fields, frozen
        self.made = 0
        self.generic: Callable[..., None] | None = None

    def compiled(self) -> Any:
        """The compiled ``__init__``, written and set on the class at the first call."""
        init = self.cls.__dict__["__init__"]
        if init is self:  # (a lookup from another thread may have written it first)
            init = _init(self.cls, self.fields, self.frozen)
            type.__setattr__(self.cls, "__init__", init)
        return init

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is not None and self.made < _COMPILE_AFTER:
            self.made += 1  # (a count lost to a race only compiles a call later)
            generic = self.generic
            if generic is None:
                generic = self.generic = _generic(self.cls, self.fields, self.frozen, self.compiled)
            return types.MethodType(generic, instance)
        init = self.compiled()
        return init if instance is None else init.__get__(instance, owner)


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


def _is_classvar(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return annotation.startswith(("ClassVar", "typing.ClassVar"))
    return annotation is typing.ClassVar or typing.get_origin(annotation) is typing.ClassVar


def _is_initvar(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return annotation.startswith(("InitVar", "dataclasses.InitVar"))
    return type(annotation).__name__ == "InitVar"


def _is_dataclasses_field(value: Any) -> bool:
    return type(value).__name__ == "Field" and type(value).__module__ == "dataclasses"


def _as_field(value: Any) -> Field:
    """A record's field from a class attribute: a ``Field``, a ``dataclasses.field(...)`` (read
    by its attributes, ``dataclasses.MISSING`` as ``MISSING``), or a plain default."""
    if isinstance(value, Field):
        return value
    if _is_dataclasses_field(value):
        import dataclasses

        def own(v: Any) -> Any:
            return MISSING if v is dataclasses.MISSING else v

        return Field(
            own(value.default), own(value.default_factory), value.init, value.repr,
            value.hash, value.compare, value.metadata, own(value.kw_only),
        )  # fmt: skip
    return Field(default=value)


def _collect(cls: type, kw_only: bool) -> tuple[Field, ...]:
    """The fields of ``cls`` as dataclasses collects them: its record bases' in order, then
    its own annotations (a redefined field keeps its place); class attributes set as
    dataclasses sets them (the default, or nothing when there is only a factory)."""
    found: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for one in base.__dict__.get(_FIELDS, ()):
            found[one.name] = one
    own = cls.__dict__
    annotations = own.get("__annotations__", {})
    for name, annotation in annotations.items():
        if _is_classvar(annotation):
            continue
        if _is_initvar(annotation):
            raise TypeError(f"{cls.__qualname__}: a record takes no InitVar")
        value = getattr(cls, name, MISSING)  # an inherited attribute is a default, as there
        one = _as_field(value)
        one.name, one.type = name, annotation
        if one.kw_only is MISSING:
            one.kw_only = kw_only
        if one.default is not MISSING and one.default.__class__.__hash__ is None:
            raise ValueError(
                f"mutable default {type(one.default)} for field {name} is not allowed:"
                " use default_factory"
            )
        if one is not value and not _is_dataclasses_field(value):
            pass  # a plain default, or none: the class attribute is already what it should be
        elif one.default is MISSING:
            delattr(cls, name)  # only a factory: no class attribute, as dataclasses leaves it
        else:
            setattr(cls, name, one.default)
        found[name] = one
    for name, value in own.items():
        if isinstance(value, Field) and name not in annotations:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    return tuple(found.values())


class _DataclassView:
    """``__dataclass_fields__`` or ``__dataclass_params__`` of a record, made on first use as
    dataclasses' own objects (``dataclasses.fields``, ``replace``, ``asdict``,
    ``is_dataclass`` and other code that asks for them), then kept on the class."""

    def __init__(self, cls: type, attribute: str) -> None:
        self.cls, self.attribute = cls, attribute

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        import dataclasses

        cls = self.cls
        if self.attribute == "__dataclass_params__":
            value: Any = dataclasses._DataclassParams(  # type: ignore[attr-defined]
                False, False, False, False, False, False
            )  # init, repr, eq, order, unsafe_hash, frozen: what dataclasses generated
        else:
            value = {}
            for own in cls.__dict__[_FIELDS]:

                def theirs(v: Any) -> Any:
                    return dataclasses.MISSING if v is MISSING else v

                made: Any = dataclasses.field(
                    default=theirs(own.default), default_factory=theirs(own.default_factory),
                    init=own.init, repr=own.repr, hash=own.hash, compare=own.compare,
                    metadata=dict(own.metadata) or None, kw_only=theirs(own.kw_only),
                )  # fmt: skip
                made.name, made.type = own.name, own.type
                made._field_type = dataclasses._FIELD  # type: ignore[attr-defined]
                value[own.name] = made
        setattr(cls, self.attribute, value)
        return value


def _make(cls: type[T], kw_only: bool, frozen: bool) -> type[T]:
    own = set(cls.__dict__)
    fields = _collect(cls, kw_only)
    if frozen:
        for name in ("__setattr__", "__delattr__"):
            if name in own:  # as dataclasses refuses for a frozen class
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    made: Any = cls  # the class being made a record, its methods set below
    setattr(made, _FIELDS, fields)
    setattr(made, _FROZEN, frozen)
    if "__init__" not in own:
        _check_order(fields)
        made.__init__ = _LazyInit(cls, fields, frozen)
    if frozen:
        made.__setattr__ = _frozen_setattr
        made.__delattr__ = _frozen_delattr
    compared = tuple(f.name for f in fields if f.compare)
    hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
    setattr(made, _COMPARED, compared)
    setattr(made, _HASHED, hashed)
    setattr(made, _GET_COMPARED, staticmethod(_getter(compared)))
    setattr(made, _GET_HASHED, staticmethod(_getter(hashed)))
    setattr(made, _SHOWN, tuple(f.name for f in fields if f.repr))
    if "__eq__" not in own:
        made.__eq__ = _eq
        if "__hash__" not in own:
            # frozen with eq: hashed by the fields; mutable with eq: unhashable (dataclasses)
            made.__hash__ = _hash if frozen else None
    if "__repr__" not in own:
        made.__repr__ = _repr
    made.__match_args__ = tuple(f.name for f in fields if f.init and not f.kw_only)  # type: ignore[misc]
    for attribute in ("__dataclass_fields__", "__dataclass_params__"):
        setattr(made, attribute, _DataclassView(cls, attribute))
    return cls


@overload
def frozen_record(cls: type[T], /) -> type[T]: ...


@overload
def frozen_record(*, kw_only: bool = False) -> Any: ...


@dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
def frozen_record(cls: type[T] | None = None, /, *, kw_only: bool = False) -> Any:
    """``@dataclasses.dataclass(frozen=True)`` for a record (a method the class defines
    itself is kept, as dataclasses keeps it)."""

    def wrap(cls: type[T]) -> type[T]:
        return _make(cls, kw_only, frozen=True)

    return wrap if cls is None else wrap(cls)


@overload
def record(cls: type[T], /) -> type[T]: ...


@overload
def record(*, kw_only: bool = False) -> Any: ...


@dataclass_transform(field_specifiers=(field, Field))
def record(cls: type[T] | None = None, /, *, kw_only: bool = False) -> Any:
    """``@dataclasses.dataclass`` for a mutable record."""

    def wrap(cls: type[T]) -> type[T]:
        return _make(cls, kw_only, frozen=False)

    return wrap if cls is None else wrap(cls)


def is_record(value: Any) -> bool:
    """Whether ``value`` is a record class or an instance of one."""
    cls = value if isinstance(value, type) else type(value)
    return getattr(cls, _FIELDS, None) is not None


def fields(value: Any) -> tuple[Field, ...]:
    """The fields of a record class or instance, in order (``dataclasses.fields``)."""
    cls = value if isinstance(value, type) else type(value)
    found = getattr(cls, _FIELDS, None)
    if found is None:
        raise TypeError(f"{cls.__qualname__} is not a record")
    return found  # type: ignore[no-any-return]


def replace(value: T, /, **changes: Any) -> T:
    """A copy of the record ``value`` with ``changes`` (``dataclasses.replace``)."""
    for one in fields(value):
        if not one.init:
            if one.name in changes:
                raise ValueError(
                    f"field {one.name} is declared with init=False, it cannot be specified"
                    " with replace()"
                )
            continue
        if one.name not in changes:
            changes[one.name] = getattr(value, one.name)
    return value.__class__(**changes)


def asdict(value: Any) -> dict[str, Any]:
    """The record ``value`` as a dict, records, lists, tuples and dicts within it converted
    and everything else deep-copied (``dataclasses.asdict``)."""
    if isinstance(value, type) or not is_record(value):
        raise TypeError("asdict() should be called on record instances")
    return _asdict(value)  # type: ignore[no-any-return]


def _asdict(value: Any) -> Any:
    cls = type(value)
    if not isinstance(value, type) and getattr(cls, _FIELDS, None) is not None:
        return {one.name: _asdict(getattr(value, one.name)) for one in getattr(cls, _FIELDS)}
    if cls in (str, int, float, bool, type(None)):
        return value
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return cls(*[_asdict(item) for item in value])
    if isinstance(value, list | tuple):
        return cls(_asdict(item) for item in value)
    if isinstance(value, dict):
        return cls((_asdict(key), _asdict(item)) for key, item in value.items())
    import copy

    return copy.deepcopy(value)
