"""A faster ``__init__`` for the frozen, slotted dataclasses built on every reconcile.

Upstream has no counterpart (Go structs cost nothing to build). A frozen dataclass's generated
``__init__`` sets each field with ``object.__setattr__(self, name, value)``, a global lookup and
a name-keyed call per field: about three times the cost of an ordinary class's ``__init__``. A
decision builds some forty such objects (trace entries, conditions, statuses, the history), which
made object construction an eighth of a simulated reconcile. :func:`fast_init` replaces the
generated ``__init__`` with one that stores through each slot's descriptor directly; everything
else the dataclass generated (``__eq__``, ``__hash__``, ``__repr__``, the ``FrozenInstanceError``
on assignment, ``replace``) is untouched, and the new ``__init__`` has the same signature, the
same defaults and default factories, and still calls ``__post_init__``.

Only plain fields are supported: a field with ``init=False`` or an ``InitVar`` makes the
decorator raise ``TypeError`` at import time, so it can never silently change a class.
``tests/hpa/core/test_frozen.py`` checks every decorated class against the dataclass-generated
``__init__`` it replaced (kept as ``__dataclass_init__``).

Deliberate deviations: none (construction is observably identical).
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from typing import Any, TypeVar

__all__ = ["fast_init"]

_C = TypeVar("_C", bound=type)


class _Factory:
    """The default of a parameter whose field has a ``default_factory``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def fast_init(cls: _C) -> _C:
    """Give the frozen, slotted dataclass ``cls`` an ``__init__`` that sets slots directly."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__}: fast_init is for @dataclass(frozen=True, slots=True)")
    if any(isinstance(value, dataclasses.InitVar) for value in cls.__annotations__.values()):
        raise TypeError(f"{cls.__name__}: InitVar fields are not supported")
    namespace: dict[str, Any] = {"_FACTORY": _FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for index, f in enumerate(dataclasses.fields(cls)):
        if not f.init:
            raise TypeError(f"{cls.__name__}.{f.name}: init=False fields are not supported")
        descriptor = inspect.getattr_static(cls, f.name)
        if not isinstance(descriptor, types.MemberDescriptorType):
            raise TypeError(f"{cls.__name__}.{f.name}: not a slot")
        setter = f"_set{index}"
        namespace[setter] = descriptor.__set__
        if f.default is not dataclasses.MISSING:
            namespace[f"_default{index}"] = f.default
            parameter = f"{f.name}=_default{index}"
        elif f.default_factory is not dataclasses.MISSING:
            namespace[f"_factory{index}"] = f.default_factory
            parameter = f"{f.name}=_FACTORY"
            body.append(f"    if {f.name} is _FACTORY: {f.name} = _factory{index}()")
        else:
            parameter = f.name
        (keyword if f.kw_only else positional).append(parameter)
        body.append(f"    {setter}(self, {f.name})")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    source = f"def __init__({signature}) -> None:\n" + ("\n".join(body) or "    pass") + "\n"
    exec(source, namespace)  # noqa: S102 - generated from the dataclass's own field list
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    generated = cls.__dict__["__init__"]
    init.__doc__ = generated.__doc__
    setattr(cls, "__dataclass_init__", generated)  # noqa: B010 - for the tests to compare
    setattr(cls, "__init__", init)  # noqa: B010
    return cls
