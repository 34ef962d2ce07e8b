"""adapter.rules.mapper: DefaultRESTMapper-style pluralization and normalization."""

from __future__ import annotations

import pytest

from adapter.rules import GroupResource, StaticRESTMapper, UnknownResourceError
from adapter.rules.mapper import guess_plural


@pytest.mark.parametrize(
    ("kind", "plural"),
    [
        ("Pod", "pods"),
        ("Ingress", "ingresses"),
        ("NetworkPolicy", "networkpolicies"),
        ("Endpoints", "endpoints"),
    ],
)
def test_unsafe_guess_kind_to_resource(kind: str, plural: str) -> None:
    assert guess_plural(kind) == (plural, kind.lower())


def test_resource_for_accepts_singular_plural_and_any_group() -> None:
    mapper = StaticRESTMapper.builtin()
    assert mapper.resource_for(GroupResource("", "pod")) == GroupResource("", "pods")
    assert mapper.resource_for(GroupResource("", "Deployment")) == GroupResource(
        "apps", "deployments"
    )
    assert mapper.resource_for(GroupResource("apps", "deployments")) == GroupResource(
        "apps", "deployments"
    )
    assert mapper.resource_singularizer("ingresses") == "ingress"
    assert not mapper.is_namespaced(GroupResource("", "nodes"))


def test_unknown_and_ambiguous_resources() -> None:
    mapper = StaticRESTMapper.from_kinds([("a.io", "Widget", True), ("b.io", "Widget", True)])
    with pytest.raises(UnknownResourceError, match="multiple"):
        mapper.resource_for(GroupResource("", "widgets"))
    assert mapper.resource_for(GroupResource("b.io", "widget")) == GroupResource("b.io", "widgets")
    with pytest.raises(UnknownResourceError, match="no matches"):
        mapper.resource_for(GroupResource("", "gadgets"))
