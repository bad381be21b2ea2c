"""The filter language of the framework adapters (hivemem.retrieval.matching)."""

from __future__ import annotations

import pytest

from hivemem import InvalidInput
from hivemem.retrieval.matching import matches, validate

DOC = {"n": 3, "flag": True, "name": "ada", "tags": ["a", "b"], "meta": {"lang": "en", "v": 2}}


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        (None, True),
        ({}, True),
        ({"n": 3}, True),
        ({"n": 3.0}, True),
        ({"flag": 1}, False),  # True is not 1 in JSON
        ({"n": True}, False),
        ({"missing": None}, False),
        ({"meta": {"lang": "en"}}, True),  # a nested mapping compares its own fields
        ({"meta": {"lang": "fr"}}, False),
        ({"tags": ["a", "b"]}, True),
        ({"tags": ["b", "a"]}, False),
        ({"n": {"$gt": 2, "$lte": 3}}, True),
        ({"n": {"$lt": 3}}, False),
        ({"name": {"$gte": "a"}}, True),
        ({"name": {"$gt": 1}}, False),  # text and numbers never compare
        ({"missing": {"$ne": 1}}, True),
        ({"missing": {"$eq": None}}, False),
        ({"n": {"$in": [1, 3]}}, True),
        ({"n": {"$nin": [1, 3]}}, False),
        ({"missing": {"$nin": [1]}}, True),
        ({"n": 3, "name": "bob"}, False),
    ],
)
def test_conditions(conditions, expected):
    assert matches(DOC, conditions) is expected


@pytest.mark.parametrize("conditions", [{"n": {"$regex": "x"}}, {"n": {"$in": "13"}}, ["n"]])
def test_bad_filters_are_invalid_input(conditions):
    with pytest.raises(InvalidInput):
        matches(DOC, conditions)
    with pytest.raises(InvalidInput):
        validate(conditions)  # before any document is read


def test_good_filters_validate():
    validate({"n": {"$gt": 1, "$in": [1]}, "meta": {"lang": "en"}, "x": None})
