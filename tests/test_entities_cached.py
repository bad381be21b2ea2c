"""The entity extractor remembers the answers of its pure helpers for short names and
runs (``hivemem.providers.entities._cached``): a conversation names the same people turn
after turn. Remembering must not change a mention: every LoCoMo turn (where the
evaluation data is on disk) and the extractor's own examples give the same mentions
with the caches bypassed, cold and warm."""

from __future__ import annotations

import pytest

from hivemem.providers import entities
from hivemem.providers.entities import extract
from locomo_turns import locomo_turns

_EXAMPLES = [
    "Caroline: I went to the LGBTQ support group yesterday",
    "Bought apples. Coffee is great.",
    "Met Dr. Okafor and Caroline’s sister at Acme Corp in New York-based offices on 8 May 2023.",
    "Thanks Sam for Lunch! @alice #python https://example.com/x alice.smith@example.com",
    "Ready Player One, Harvard AI Group, Boss DS-1, Ford F-150 and Project Alpha",
    "I LOVE THIS",
    "Bruno answered Ana. Rafael deployed the fix.",
]


def _mentions(texts: list[str]) -> list[list[tuple[str, str, str]]]:
    return [[(m.name, m.canonical, m.type.value) for m in extract(t)] for t in texts]


@pytest.mark.parametrize("source", ["examples", "locomo"])
def test_remembered_helpers_give_the_mentions_of_fresh_ones(source, monkeypatch):
    texts = _EXAMPLES * 3 if source == "examples" else locomo_turns()
    with monkeypatch.context() as patch:
        patch.setattr(entities, "_CACHED_LENGTH", -1)  # nothing remembered
        fresh = _mentions(texts)
    cold = _mentions(texts)
    warm = _mentions(texts)
    assert cold == fresh
    assert warm == fresh


def test_only_short_texts_are_remembered():
    for remembered in entities._REMEMBERED:
        remembered.cache_clear()
    extract(" ".join(["Alpha"] * 100) + " went home.")  # one run of 599 characters
    assert all(r.cache_info().currsize == 0 for r in entities._REMEMBERED)
    extract("Alpha went home.")
    assert all(r.cache_info().currsize == 1 for r in entities._REMEMBERED)
