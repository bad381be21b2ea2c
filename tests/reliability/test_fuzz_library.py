"""Property: every public entry point of the library, given hostile arguments, returns a
result or raises a ``HiveMemError`` subclass — never a ``TypeError``, ``OverflowError``,
``UnicodeEncodeError``, a driver error or anything else.

Each test draws, for one entry point, values for its required parameters and for up to
three of its optional ones from ``hostile.hostile_value`` (surrogates, control
characters, huge strings and numbers, wrong types, plus real ids and keys of the store).
Callbacks (``progress``, ``on_start``, ``clock``) are left out: passing a non-callable
there is a programming error, not input.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import hivemem
from hivemem import ContextProvider, HiveMemError, ScopedMemory, Store, Vault, tools

from .hostile import FUZZ, hostile_text, hostile_value, tally

CALLBACKS = {"progress", "on_start", "clock"}


@pytest.fixture
def world(tmp_path):
    """A store with a little of everything: a keyed fact with an old version, episodes of
    a session, a deleted memory, a vault secret; and the ids and names to aim at."""
    store = hivemem.open(tmp_path / "fuzz.db", embedder="hash")
    mem = store.scope("team-a", shared=["swarm"])
    old = mem.save("the deploy window is Monday", key="deploy-window")
    new = mem.save("the deploy window is Tuesday", key="deploy-window", supersede_reason="moved")
    gone = mem.save("a scratch note about Alice")
    mem.delete(gone.id)
    episodes = mem.add_episodes(
        [{"content": f"Alice said turn {i}", "session_id": "s1", "role": "user"} for i in range(3)]
    )
    store.vault("team-a").set("api_token", "tok-0123456789abcdef", secret=True)
    plausible = [
        old.id,
        new.id,
        gone.id,
        episodes[0].id,
        "deploy-window",
        "api_token",
        "team-a",
        "swarm",
        "s1",
        "Alice",
        "deploy",
        "7d",
        "2026-01-01",
        "fact",
        "lesson",
        "active",
        None,
    ]
    yield store, mem, plausible
    store.close()


def _parameters(fn: Callable[..., Any]) -> list[inspect.Parameter]:
    return [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.name != "self" and p.name not in CALLBACKS and p.kind is not p.VAR_KEYWORD
    ]


def _call(surface: str, fn: Callable[..., Any], data: st.DataObject, plausible: list) -> None:
    """Call ``fn`` with drawn arguments; a ``HiveMemError`` is an answer, anything else
    escapes and fails the test (Hypothesis then shrinks it to the smallest case)."""
    args, kwargs = [], {}
    params = _parameters(fn)
    optional = [p.name for p in params if p.default is not p.empty]
    # A few optional arguments at a time, so each is reached past the others' checks.
    chosen = set(
        data.draw(st.lists(st.sampled_from(optional), max_size=3), "give") if optional else ()
    )
    for p in params:
        required = p.default is p.empty
        if not required and p.name not in chosen:
            continue
        value = data.draw(hostile_value(plausible), label=p.name)
        if p.kind is p.POSITIONAL_OR_KEYWORD and required:
            args.append(value)
        else:
            kwargs[p.name] = value
    try:
        result = fn(*args, **kwargs)
        if inspect.isgenerator(result):
            list(result)
    except HiveMemError as exc:
        tally(surface, type(exc).__name__)
        return
    tally(surface, "ok")


MEMORY_METHODS = sorted(
    name
    for name, fn in inspect.getmembers(ScopedMemory, inspect.isfunction)
    if not name.startswith("_")
)
STORE_METHODS = sorted(
    name
    for name, fn in inspect.getmembers(Store, inspect.isfunction)
    if not name.startswith("_") and name != "close"
)
VAULT_METHODS = ["__contains__", "delete", "entry", "get", "list", "set"]


@pytest.mark.parametrize("name", MEMORY_METHODS)
@FUZZ
@given(data=st.data())
def test_scoped_memory(world, name, data):
    store, mem, plausible = world
    _call("library ScopedMemory", getattr(mem, name), data, plausible)


@pytest.mark.parametrize("name", STORE_METHODS)
@FUZZ
@given(data=st.data())
def test_store(world, name, data):
    store, _, plausible = world
    _call("library Store", getattr(store, name), data, plausible)


@pytest.mark.parametrize("name", VAULT_METHODS)
@FUZZ
@given(data=st.data())
def test_vault(world, name, data):
    store, _, plausible = world
    _call("library Vault", getattr(store.vault("team-a"), name), data, plausible)


@FUZZ
@given(data=st.data())
def test_handles_and_module_functions(world, data):
    """``store.scope``/``store.vault`` names, ``ContextProvider``, ``index_folder`` and
    ``run_job``."""
    store, mem, plausible = world
    which = data.draw(st.sampled_from(["scope", "vault", "context", "index", "job"]))
    if which == "scope":
        _call(
            "library handles",
            lambda name, shared=(): store.scope(name, shared=shared),
            data,
            plausible,
        )
    elif which == "vault":
        _call("library handles", lambda scope: Vault(store, scope), data, plausible)
    elif which == "context":
        provider = ContextProvider(mem)
        method = data.draw(st.sampled_from(["system_message", "messages"]))
        _call("library ContextProvider", getattr(provider, method), data, plausible)
    elif which == "index":
        _call("library index_folder", lambda folder: hivemem.index_folder(mem, folder), data, [])
    else:
        _call(
            "library run_job",
            lambda name, scope=None: hivemem.run_job(store, name, scope),
            data,
            ["decay", "expire", "consolidate", "categorize", "team-a"],
        )


@pytest.mark.parametrize("name", sorted(tools.TOOLS))
@FUZZ
@given(data=st.data())
def test_tools(world, name, data):
    """The tools (MCP server and HTTP API run them): hostile values for their arguments,
    under their own names, their aliases and unknown names."""
    store, mem, plausible = world
    properties = list(tools.TOOLS[name].parameters.get("properties", {}))
    own = st.sampled_from(properties or ["x"])
    names = st.one_of(own, own, own, st.sampled_from(["q", "limit", "k"]), hostile_text())
    arguments = data.draw(st.dictionaries(names, hostile_value(plausible), max_size=4))
    _call("tools", lambda: tools.call(mem, name, arguments), data, plausible)
