"""Whether a JSON document matches a filter: the filter language of the framework
adapters (LangGraph's store filters, Mem0's ``filters``), written once here.

A filter is a mapping of field → condition. A plain value matches by equality (a nested
mapping compares field by field, a list element by element); a mapping whose keys start
with ``$`` applies operators: ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``
(numbers or text, never across the two), ``$in``, ``$nin``. A missing field matches only
``$ne`` and ``$nin``. Every condition must hold. An unknown operator is an
``InvalidInput`` naming it, never a silent miss.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import InvalidInput

_MISSING = object()


def _ordered(compare: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def check(value: Any, wanted: Any) -> bool:
        numbers = (int, float)
        if isinstance(value, bool) or isinstance(wanted, bool):
            return False
        if isinstance(value, numbers) and isinstance(wanted, numbers):
            return compare(value, wanted)
        if isinstance(value, str) and isinstance(wanted, str):
            return compare(value, wanted)
        return False

    return check


def _member(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, str) or not isinstance(wanted, Sequence):
        raise InvalidInput("filter", "$in and $nin take a list")
    return value in wanted


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda value, wanted: value is not _MISSING and equal(value, wanted),
    "$ne": lambda value, wanted: value is _MISSING or not equal(value, wanted),
    "$gt": _ordered(lambda a, b: a > b),
    "$gte": _ordered(lambda a, b: a >= b),
    "$lt": _ordered(lambda a, b: a < b),
    "$lte": _ordered(lambda a, b: a <= b),
    "$in": lambda value, wanted: value is not _MISSING and _member(value, wanted),
    "$nin": lambda value, wanted: value is _MISSING or not _member(value, wanted),
}


def equal(value: Any, wanted: Any) -> bool:
    """JSON equality: a mapping field by field (the filter's fields only), a list in order."""
    if isinstance(wanted, Mapping):
        return isinstance(value, Mapping) and matches(value, wanted)
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(equal(v, w) for v, w in zip(value, wanted, strict=True))
        )
    if isinstance(value, bool) != isinstance(wanted, bool):
        return False  # True is not 1 in JSON
    return bool(value == wanted)


def _condition(value: Any, condition: Any) -> bool:
    if isinstance(condition, Mapping) and any(str(k).startswith("$") for k in condition):
        for operator, wanted in condition.items():
            check = _OPERATORS.get(operator)
            if check is None:
                known = ", ".join(_OPERATORS)
                raise InvalidInput("filter", f"unknown operator {operator!r} (known: {known})")
            if not check(value, wanted):
                return False
        return True
    return value is not _MISSING and equal(value, condition)


def validate(conditions: Mapping[str, Any] | None) -> None:
    """Raise ``InvalidInput`` for a filter that no document could be checked against
    (an unknown operator, ``$in`` without a list), before any document is read."""
    if conditions is None:
        return
    if not isinstance(conditions, Mapping):
        raise InvalidInput("filter", "expected a mapping of field to condition")
    for condition in conditions.values():
        _condition(_MISSING, condition)
        if isinstance(condition, Mapping) and any(str(k).startswith("$") for k in condition):
            for operator in ("$in", "$nin"):
                if operator in condition:
                    _member(None, condition[operator])


def matches(document: Mapping[str, Any], conditions: Mapping[str, Any] | None) -> bool:
    """Whether ``document`` meets every condition of ``conditions`` (``None``: yes)."""
    if conditions is None:
        return True
    if not isinstance(conditions, Mapping):
        raise InvalidInput("filter", "expected a mapping of field to condition")
    return all(
        _condition(document.get(field, _MISSING), condition)
        for field, condition in conditions.items()
    )
