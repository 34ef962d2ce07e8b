"""``fast_init``: every decorated class builds exactly what its dataclass ``__init__`` built."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
from typing import Any

import pytest

import hpa
from hpa.core.frozen import fast_init


def _decorated() -> list[type]:
    found: dict[str, type] = {}
    for module_info in pkgutil.walk_packages(hpa.__path__, "hpa."):
        if module_info.name.endswith("__main__"):
            continue
        module = importlib.import_module(module_info.name)
        for value in vars(module).values():
            if inspect.isclass(value) and "__dataclass_init__" in value.__dict__:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[name] for name in sorted(found)]


DECORATED = _decorated()


def test_the_reconcile_path_classes_are_decorated() -> None:
    names = {cls.__name__ for cls in DECORATED}
    assert {"TraceEntry", "Decision", "HorizontalPodAutoscalerStatus", "ReconcileReport"} <= names


def _arguments(cls: type) -> tuple[list[Any], dict[str, Any]]:
    """A distinct marker object for every required field; defaults left out."""
    positional: list[Any] = []
    keywords: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            continue
        marker = object()
        if f.kw_only:
            keywords[f.name] = marker
        else:
            positional.append(marker)
    return positional, keywords


def _fields(instance: object) -> list[Any]:
    return [getattr(instance, f.name) for f in dataclasses.fields(instance)]  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", DECORATED, ids=lambda cls: cls.__qualname__)
def test_fast_init_sets_what_the_dataclass_init_set(cls: type) -> None:
    original = cls.__dict__["__dataclass_init__"]
    fast_parameters = list(inspect.signature(cls.__dict__["__init__"]).parameters.values())
    original_parameters = list(inspect.signature(original).parameters.values())
    assert [(p.name, p.kind) for p in fast_parameters] == [
        (p.name, p.kind) for p in original_parameters
    ]
    positional, keywords = _arguments(cls)
    built = cls(*positional, **keywords)
    reference: object = object.__new__(cls)
    original(reference, *positional, **keywords)
    for got, want in zip(_fields(built), _fields(reference), strict=True):
        # defaults are the same objects; factories make equal, fresh ones
        assert got is want or (type(got) is type(want) and got == want)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(built, dataclasses.fields(cls)[0].name, None)


def test_a_default_factory_makes_a_fresh_value_each_time() -> None:
    @fast_init
    @dataclasses.dataclass(frozen=True, slots=True)
    class Holder:
        name: str
        items: list[int] = dataclasses.field(default_factory=list)
        limit: int = dataclasses.field(default=3, kw_only=True)

    first, second = Holder("a"), Holder("b", limit=5)
    assert first.items == []
    assert first.items is not second.items
    assert (first.limit, second.limit) == (3, 5)
    assert Holder("a", [1]) == Holder("a", [1], limit=3)
    assert dataclasses.replace(first, name="c") == Holder("c")
    with pytest.raises(TypeError):
        Holder()  # type: ignore[call-arg]


def test_post_init_still_runs() -> None:
    @fast_init
    @dataclasses.dataclass(frozen=True, slots=True)
    class Positive:
        value: int

        def __post_init__(self) -> None:
            if self.value <= 0:
                raise ValueError("must be positive")

    assert Positive(1).value == 1
    with pytest.raises(ValueError, match="must be positive"):
        Positive(0)


def test_unsupported_classes_are_refused_at_decoration() -> None:
    @dataclasses.dataclass(slots=True)
    class Mutable:
        value: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Derived:
        value: int
        double: int = dataclasses.field(init=False)

    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        value: int

    for cls in (Mutable, Derived, NoSlots):
        with pytest.raises(TypeError):
            fast_init(cls)
