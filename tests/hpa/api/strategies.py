"""Hypothesis strategies built from the boundary models themselves.

:func:`wire_objects` walks a model's fields (with their full annotations) and generates JSON
objects in wire form: a random subset of the fields under their wire names, valid Quantity and
Time strings where the model expects them, explicit ``null`` for optional fields, nested models
recursively, and a few unknown fields at every level. Round-tripping such an object through the
model must give it back unchanged.
"""

from __future__ import annotations

import types
import typing
from datetime import UTC, datetime
from functools import cache
from typing import Any

from hypothesis import strategies as st
from pydantic.alias_generators import to_camel

from hpa.api.base import KubeModel
from hpa.api.types import MicroTime, Quantity, Time, format_micro_time, format_time
from hpa.core.quantity import QuantityError, parse_quantity

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
UNKNOWN_KEYS = ("futureField", "x-kubernetes-unknown", "zzPreserved")

json_scalars = st.none() | st.booleans() | INT64 | st.text(max_size=8)
json_values = st.recursive(
    json_scalars | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def _parses(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


quantity_strings = st.builds(
    lambda sign, whole, frac, suffix: f"{sign}{whole}{frac}{suffix}",
    st.sampled_from(["", "", "-", "+"]),
    st.integers(min_value=0, max_value=10**6).map(str),
    st.sampled_from(["", "", ".5", ".25", ".125"]),
    st.sampled_from(["", "m", "u", "n", "k", "M", "G", "Ki", "Mi", "Gi", "e3", "E-2"]),
).filter(_parses)
"""Valid Kubernetes quantity strings (``"100m"``, ``"-1.5Gi"``, ``"2e3"``, ...)."""

times = st.datetimes(
    min_value=datetime(1970, 1, 1),  # noqa: DTZ001 - hypothesis bounds are naive by contract
    max_value=datetime(2200, 1, 1),  # noqa: DTZ001
    timezones=st.just(UTC),
)
time_strings = times.map(lambda t: format_time(t.replace(microsecond=0)))
micro_time_strings = times.map(format_micro_time)


def _annotation_strategy(annotation: Any) -> st.SearchStrategy[Any]:
    if annotation is Quantity or annotation == Quantity:
        return quantity_strings
    if annotation == Time:
        return time_strings
    if annotation == MicroTime:
        return micro_time_strings
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (types.UnionType, typing.Union):
        return st.one_of([_annotation_strategy(a) for a in args])
    if origin is list:
        return st.lists(_annotation_strategy(args[0]), max_size=2)
    if origin is dict:
        return st.dictionaries(st.text(max_size=8), _annotation_strategy(args[1]), max_size=2)
    if annotation is type(None):
        return st.none()
    if annotation is Any:
        return json_values
    if isinstance(annotation, type) and issubclass(annotation, KubeModel):
        return wire_objects(annotation)
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        return INT64
    if annotation is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if annotation is str:
        return st.text(max_size=8)
    raise TypeError(f"no strategy for {annotation!r}")


@cache
def wire_objects(model: type[KubeModel]) -> st.SearchStrategy[dict[str, Any]]:
    """JSON objects in ``model``'s wire form, with unknown fields mixed in."""
    hints = typing.get_type_hints(model, include_extras=True)
    optional: dict[str, st.SearchStrategy[Any]] = {}
    names: set[str] = set()
    for name, info in model.model_fields.items():
        wire = info.alias or to_camel(name)
        names |= {name, wire}
        optional[wire] = _annotation_strategy(hints[name])
    unknown = st.dictionaries(
        st.sampled_from([k for k in UNKNOWN_KEYS if k not in names]), json_values, max_size=1
    )
    return st.builds(
        lambda known, extra: {**extra, **known},
        st.fixed_dictionaries({}, optional=optional),
        unknown,
    )


def assert_round_trip(model: type[KubeModel], data: dict[str, Any]) -> KubeModel:
    """Parse ``data``, check that writing it back (as a dict and as JSON) gives ``data``."""
    obj = model.from_dict(data)
    assert obj.to_dict() == data
    assert model.from_json(obj.to_json()).to_dict() == data
    return obj
