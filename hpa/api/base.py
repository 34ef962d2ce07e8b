"""The common base of every boundary model, and JSON/dict conversion that loses nothing.

Upstream counterpart: the ``encoding/json`` behaviour of the Go API types in ``k8s.io/api`` and
``k8s.io/apimachinery`` (``json:"camelCase,omitempty"`` tags), as the API server serves them.

Rules every model in :mod:`hpa.api` follows:

* Python attributes are the upstream Go field names in snake_case; the wire names are their
  camelCase JSON tags (``alias_generator=to_camel``). Wire names that are not plain camelCase
  (``podIP``, ``targetCPUUtilizationPercentage``, ``serverAddressByClientCIDRs``, ...) carry an
  explicit alias.
* Unknown fields are kept (``extra="allow"``) at every nesting level and written back verbatim.
* Objects are written with ``exclude_unset=True``: a field absent on read stays absent on write,
  and a field that was read as an explicit ``null`` is written as ``null``. Read-then-write
  therefore loses nothing and adds nothing.
* Reading goes by wire name only (:func:`from_dict`, :func:`from_json`), so an unknown field whose
  key happens to equal one of our snake_case attribute names is still kept as an unknown field.
  Python code builds models by attribute name (``validate_by_name``); assignments are validated
  too, so a naive datetime or a malformed quantity is rejected where it is set.
* Fields that Go always serializes (no ``omitempty``) have Go's zero value as default
  (``""``, ``0``, ``False``), so they are never ``None`` for consumers; optional pointers are
  ``X | None``.

Deliberate deviations: we do not re-order keys or drop empty values the way Go's ``omitempty``
would; what was read is what is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Annotated, Any, Self, TypeVar

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    model_serializer,
)
from pydantic.alias_generators import to_camel

__all__ = [
    "KubeModel",
    "error_location",
    "from_dict",
    "from_json",
    "to_dict",
    "to_json",
    "unknown_fields",
]


class KubeModel(BaseModel):
    """Base of every Kubernetes boundary model (camelCase on the wire, unknown fields kept)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="allow",
        validate_assignment=True,
    )

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """Parse an already-decoded JSON object (wire names only)."""
        return cls.model_validate(data, by_alias=True, by_name=False)

    @classmethod
    def from_json(cls, data: bytes | str) -> Self:
        """Parse JSON bytes or text (wire names only)."""
        return cls.from_dict(orjson.loads(data))

    @model_serializer(mode="wrap")
    def _serialize_touched_defaults(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> Any:
        """With ``exclude_unset``, also write defaults that were changed in place.

        ``hpa.status.desired_replicas = 2`` on an object read without ``status`` changes the
        default ``status`` model in place, which pydantic does not count as setting ``status``;
        likewise ``pod.metadata.labels["a"] = "b"`` on an absent ``labels``. Such a field is
        written as soon as anything inside it differs from its default.
        """
        data = handler(self)
        if not info.exclude_unset or not isinstance(data, dict):
            return data
        fields = type(self).model_fields
        for name, field_info in fields.items():
            if name in self.model_fields_set:
                continue
            value = getattr(self, name)
            if not _touched(value):
                continue
            key = (field_info.alias or name) if info.by_alias else name
            data[key] = _adapter(type(self), name).dump_python(
                value,
                mode="json" if info.mode_is_json() else "python",
                by_alias=info.by_alias,
                exclude_unset=True,
            )
        return data

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict: wire names, only the fields that were read or set."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def to_json(self) -> bytes:
        """The JSON bytes of :meth:`to_dict`."""
        return orjson.dumps(self.to_dict())


def _touched(value: Any) -> bool:
    """Whether a default value was changed in place (a model with content, a filled container)."""
    if isinstance(value, KubeModel):
        if value.model_fields_set or value.model_extra:
            return True
        return any(_touched(getattr(value, name)) for name in type(value).model_fields)
    if isinstance(value, list | dict):
        return bool(value)
    return False


@cache
def _adapter(model: type[KubeModel], name: str) -> TypeAdapter[Any]:
    info = model.model_fields[name]
    annotation: Any = info.annotation
    if info.metadata:
        annotation = Annotated[(annotation, *info.metadata)]
    return TypeAdapter(annotation)


M = TypeVar("M", bound=KubeModel)


def from_dict(model: type[M], data: Any) -> M:
    """Parse ``data`` into ``model`` (function form of :meth:`KubeModel.from_dict`)."""
    return model.from_dict(data)


def from_json(model: type[M], data: bytes | str) -> M:
    """Parse JSON into ``model`` (function form of :meth:`KubeModel.from_json`)."""
    return model.from_json(data)


def to_dict(obj: KubeModel) -> dict[str, Any]:
    """Function form of :meth:`KubeModel.to_dict`."""
    return obj.to_dict()


def to_json(obj: KubeModel) -> bytes:
    """Function form of :meth:`KubeModel.to_json`."""
    return obj.to_json()


def unknown_fields(obj: KubeModel, path: str = "") -> dict[str, Any]:
    """Every unknown field kept in ``obj`` and its nested models, by wire path.

    Paths look like ``spec.constraints`` or ``spec.metrics[0].futureField``; useful to see what a
    newer API server sent that this version does not model.
    """
    found: dict[str, Any] = {}
    for name, value in (obj.model_extra or {}).items():
        found[f"{path}.{name}" if path else name] = value
    for name in obj.model_fields_set:
        info = type(obj).model_fields.get(name)
        if info is None:
            continue
        wire = info.alias or name
        found.update(_unknown_in(getattr(obj, name), f"{path}.{wire}" if path else wire))
    return found


def _unknown_in(value: Any, path: str) -> dict[str, Any]:
    if isinstance(value, KubeModel):
        return unknown_fields(value, path)
    found: dict[str, Any] = {}
    if isinstance(value, list):
        for i, item in enumerate(value):
            found.update(_unknown_in(item, f"{path}[{i}]"))
    elif isinstance(value, dict):
        for key, item in value.items():
            found.update(_unknown_in(item, f"{path}[{key}]"))
    return found


def error_location(error: Mapping[str, Any]) -> str:
    """The field path of one pydantic error (``ValidationError.errors()[i]``), written as
    Kubernetes writes paths: ``spec.metrics[0].resource.name`` (``(root)`` for the document)."""
    parts: list[str] = []
    for item in error.get("loc", ()):
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts) or "(root)"
