"""Kubernetes name checks: DNS-1123 labels and subdomains, qualified names, label values.

Upstream counterpart: ``k8s.io/apimachinery/pkg/util/validation/validation.go``
(``IsDNS1123Label``, ``IsDNS1123Subdomain``, ``IsQualifiedName``, ``IsValidLabelValue``). Each
function returns upstream's messages, empty when the value is valid, so callers build their own
``field.Error`` or selector error around them with upstream's wording.

This is the one home of these rules for both packages: API validation (``hpa.api.validation``),
label selectors (``hpa.core.selector``) and through them the adapter.

Deliberate deviations: none.
"""

from __future__ import annotations

import re

__all__ = [
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_label_value",
]

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN = re.compile(_DNS1123_SUBDOMAIN_FMT)
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME = re.compile(_QUALIFIED_NAME_FMT)
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_LABEL_VALUE = re.compile(_LABEL_VALUE_FMT)

_QUALIFIED_NAME_MAX_LENGTH = 63
_LABEL_VALUE_MAX_LENGTH = 63
_DNS1123_LABEL_MAX_LENGTH = 63
_DNS1123_SUBDOMAIN_MAX_LENGTH = 253


def _max_len_error(length: int) -> str:
    """``MaxLenError``."""
    return f"must be no more than {length} characters"


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    """``RegexError``: the rule, examples, and the regex."""
    shown = ",  or ".join(f"'{example}'" for example in examples)
    return f"{message} (e.g. {shown}, regex used for validation is '{fmt}')"


_DNS1123_LABEL_MSG = _regex_error(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character",
    _DNS1123_LABEL_FMT,
    "my-name",
    "123-abc",
)
_DNS1123_SUBDOMAIN_MSG = _regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character",
    _DNS1123_SUBDOMAIN_FMT,
    "example.com",
)
_QUALIFIED_NAME_MSG = _regex_error(
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character",
    _QUALIFIED_NAME_FMT,
    "MyName",
    "my.name",
    "123-abc",
)
_LABEL_VALUE_MSG = _regex_error(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character",
    _LABEL_VALUE_FMT,
    "MyValue",
    "my_value",
    "12345",
)


def _messages(value: str, max_length: int, pattern: re.Pattern[str], message: str) -> list[str]:
    """The length and regex checks every rule here starts with, in upstream's order."""
    messages = []
    if len(value) > max_length:
        messages.append(_max_len_error(max_length))
    if pattern.fullmatch(value) is None:
        messages.append(message)
    return messages


def is_dns1123_label(value: str) -> list[str]:
    """``IsDNS1123Label``: a namespace name, a container name."""
    return _messages(value, _DNS1123_LABEL_MAX_LENGTH, _DNS1123_LABEL, _DNS1123_LABEL_MSG)


def is_dns1123_subdomain(value: str) -> list[str]:
    """``IsDNS1123Subdomain``: most object names, a label key's prefix."""
    return _messages(
        value, _DNS1123_SUBDOMAIN_MAX_LENGTH, _DNS1123_SUBDOMAIN, _DNS1123_SUBDOMAIN_MSG
    )


def is_qualified_name(value: str) -> list[str]:
    """``IsQualifiedName``: ``[prefix/]name``, a label key or a resource name."""
    parts = value.split("/")
    messages: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            messages.append("prefix part must be non-empty")
        else:
            messages.extend(f"prefix part {m}" for m in is_dns1123_subdomain(prefix))
    else:
        return [
            f"a qualified name {_QUALIFIED_NAME_MSG} with an optional DNS subdomain prefix and "
            "'/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        messages.append("name part must be non-empty")
    elif len(name) > _QUALIFIED_NAME_MAX_LENGTH:
        messages.append("name part " + _max_len_error(_QUALIFIED_NAME_MAX_LENGTH))
    if _QUALIFIED_NAME.fullmatch(name) is None:
        messages.append("name part " + _QUALIFIED_NAME_MSG)
    return messages


def is_valid_label_value(value: str) -> list[str]:
    """``IsValidLabelValue``: empty, or at most 63 name characters."""
    return _messages(value, _LABEL_VALUE_MAX_LENGTH, _LABEL_VALUE, _LABEL_VALUE_MSG)
