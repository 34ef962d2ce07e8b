"""Errors of the rule language, split by who is at fault.

Upstream counterpart: prometheus-adapter ``pkg/naming/errors.go`` (``ErrUnsupportedOperator``,
``ErrMalformedQuery``, ``ErrQueryUnsupportedValues``, ``ErrLabelNotSpecified``) plus the
``fmt.Errorf`` strings of ``pkg/config`` and ``pkg/naming``.

Deliberate deviation: upstream returns plain errors and the providers turn most of them into
"not found" or "internal error". Here the type says who is at fault, so the server can map
``BadQueryError`` (the caller's input: selector, names, namespace) to HTTP 400 *before*
Prometheus is asked, and ``RuleEvaluationError`` (the rule file cannot answer this request)
to a 404/500 of its choosing.
"""

from __future__ import annotations


class RuleConfigError(ValueError):
    """The rule file is invalid. The message names the source, the rule and the field."""

    def __init__(self, reason: str, *, source: str, rule: str = "", field: str = "") -> None:
        self.source = source
        self.rule = rule
        self.field = field
        self.reason = reason
        parts = [source]
        if rule:
            parts.append(rule)
        if field:
            parts.append(field)
        parts.append(reason)
        super().__init__(": ".join(parts))


class BadQueryError(ValueError):
    """The request (selector, object names, namespace) cannot be turned into a safe query.

    Always the caller's fault: the server answers 400 BadRequest with ``str(error)``.
    """


class InvalidSelectorError(BadQueryError):
    """The label selector does not follow the Kubernetes selector grammar."""


class SelectorTooLargeError(BadQueryError):
    """The label selector text is longer than ``MAX_SELECTOR_BYTES``."""


class TooManyValuesError(BadQueryError):
    """An ``in``/``notin`` set has more than ``MAX_SET_VALUES`` values."""


class InvalidLabelNameError(BadQueryError):
    """A selector key is not a valid Prometheus label name, or is reserved."""


class NamespaceOverrideError(BadQueryError):
    """The selector tries to constrain the namespace label of a namespaced query."""


class UnsupportedOperatorError(BadQueryError):
    """``gt``/``lt`` have no PromQL label-matcher equivalent (``ErrUnsupportedOperator``)."""


class MalformedQueryError(BadQueryError):
    """Operator/value combination that cannot be expressed (``ErrMalformedQuery`` and friends)."""


class InvalidValueError(BadQueryError):
    """A value, object name or namespace cannot be sent to Prometheus (empty or not UTF-8)."""


class RuleEvaluationError(RuntimeError):
    """A valid rule cannot answer this request (no label for the resource, empty render, ...)."""


class TemplateError(ValueError):
    """A ``<<``/``>>`` template failed to parse or to type-check (raised at load time)."""


class GoRegexError(ValueError):
    """A regular expression is not valid Go RE2 syntax, or uses a construct we cannot translate."""
