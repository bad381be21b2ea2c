"""The facade satisfies the handles services are annotated with (``store/handles.py``).

Services below the facade never import it (``.importlinter``, annotations included):
they name ``StoreHandle``, ``ScopedHandle`` and ``Scope`` instead, and the facade's
``Store`` and ``ScopedMemory`` match them by shape, without inheriting them. No type
checker runs in ``make test``, so this test holds the match: every member of each
protocol exists on a live object, and every method accepts what the protocol promises
(the same parameter names, in the same places, defaults where it has defaults). The
backends' shared handles (``SQLiteDatabase``, ``PostgresDatabase``) are held the same way.
"""

from __future__ import annotations

import inspect
import re
import typing
from pathlib import Path
from typing import Any

import pytest

from hivemem.evaluation.doctor import diagnose
from hivemem.lifecycle.inspection import Report
from hivemem.retrieval.pipeline import QueryEmbedder
from hivemem.store.handles import Scope, ScopedHandle, Secrets, StoreHandle
from hivemem.store.postgres.database import PostgresDatabase
from hivemem.store.sqlite.database import SQLiteStore

_P = inspect.Parameter
_POSITIONAL = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)
_HIDDEN = {"_is_protocol", "_is_runtime_protocol", "_abc_impl", "__protocol_attrs__"}


def members(protocol: type) -> dict[str, Any]:
    """The members a protocol declares (its own and its protocol bases'): name -> the
    function, property or ``None`` for an annotated attribute."""
    out: dict[str, Any] = {}
    for klass in reversed(protocol.__mro__):
        if klass in (object, typing.Protocol, typing.Generic):
            continue
        if not getattr(klass, "_is_protocol", False):
            continue
        for name in vars(klass).get("__annotations__", {}):
            out.setdefault(name, None)
        for name, value in vars(klass).items():
            if name in _HIDDEN or (name.startswith("__") and name.endswith("__")):
                continue
            out[name] = value
    return out


def _accepts(promised: Any, given: Any) -> list[str]:
    """What ``given`` (a bound method) fails to accept of the call ``promised`` (a
    protocol's function) allows; empty when every such call works."""
    want = [p for p in inspect.signature(promised).parameters.values() if p.name != "self"]
    have = list(inspect.signature(given).parameters.values())
    var_positional = any(p.kind is _P.VAR_POSITIONAL for p in have)
    var_keyword = any(p.kind is _P.VAR_KEYWORD for p in have)
    positional = [p for p in have if p.kind in _POSITIONAL]
    by_name = {p.name: p for p in have if p.kind is not _P.POSITIONAL_ONLY}
    problems = []
    for index, p in enumerate(want):
        if p.kind in (_P.VAR_POSITIONAL, _P.VAR_KEYWORD):
            continue
        if p.kind in _POSITIONAL and index < len(positional):
            q: inspect.Parameter | None = positional[index]
            if p.kind is _P.POSITIONAL_OR_KEYWORD and q is not None and q.name != p.name:
                problems.append(f"parameter {index} is {q.name!r}, not {p.name!r}")
        elif p.kind in _POSITIONAL:
            q = None
            if not var_positional:
                problems.append(f"no positional parameter {p.name!r}")
        else:
            q = by_name.get(p.name)
            if q is None and not var_keyword:
                problems.append(f"no keyword parameter {p.name!r}")
        if q is not None and p.default is not _P.empty and q.default is _P.empty:
            problems.append(f"{p.name!r} has no default")
    named = {p.name for p in want}
    for q in have:
        required = q.default is _P.empty and q.kind in (*_POSITIONAL, _P.KEYWORD_ONLY)
        if required and q.name not in named:
            problems.append(f"requires {q.name!r}, which the protocol does not give")
    return problems


def mismatches(protocol: type, obj: object) -> list[str]:
    """Where ``obj`` does not satisfy ``protocol``: missing members, methods that do not
    accept the protocol's calls."""
    out = []
    for name, declared in members(protocol).items():
        if not hasattr(obj, name):
            out.append(f"{protocol.__name__}.{name}: missing")
            continue
        function = declared.__func__ if isinstance(declared, staticmethod) else declared
        if inspect.isfunction(function):
            given = getattr(obj, name)
            if not callable(given):
                out.append(f"{protocol.__name__}.{name}: not callable")
                continue
            out += [f"{protocol.__name__}.{name}: {p}" for p in _accepts(function, given)]
    return out


def test_the_facade_satisfies_the_handles_services_take(store):
    mem = store.scope("team-a", shared=["team"], lead_of=["worker-*"], actor="lead-1")
    assert mismatches(StoreHandle, store) == []
    assert mismatches(Secrets, store.scrubber) == []
    assert mismatches(Scope, mem) == []
    assert mismatches(ScopedHandle, mem) == []
    assert mismatches(ScopedHandle, store.scope("worker-1")) == []  # what store.scope gives
    assert mismatches(QueryEmbedder, store.indexer) == []  # the retrieval pipeline's
    assert mismatches(Report, diagnose(store)) == []  # the inspector's overview
    # The members the services rely on are real, not just present.
    assert set(mem.visible) == {"team-a", "team"} and mem.actor == "lead-1"
    saved = mem.save("handles hold", key="seam")
    assert [m.id for m in mem.history("seam")] == [saved.id]


def test_the_backends_satisfy_their_shared_handles(store, pg_store):
    assert mismatches(SQLiteStore, store._backend) == []
    assert mismatches(PostgresDatabase, pg_store._backend) == []


def test_the_check_finds_a_missing_member_and_a_call_not_accepted(store):
    """The check is not vacuous: a handle without ``history``, one whose ``save`` lost
    a keyword, one that renamed a positional parameter, and one that requires more
    than the protocol gives are each named."""
    mem = store.scope("team-a")

    class Partial:
        def __init__(self) -> None:
            for name in ("name", "shared", "visible", "lead_of", "actor", "settings"):
                setattr(self, name, getattr(mem, name))
            self.store = store

        def save(self, content: str, *, key: str | None = None) -> Any: ...
        def get(self, ref: str) -> Any: ...
        def list(self, *, kind: Any = None, flag: bool) -> Any: ...

    found = mismatches(ScopedHandle, Partial())
    assert "ScopedHandle.history: missing" in found
    assert "ScopedHandle.save: no keyword parameter 'supersede_reason'" in found
    assert "ScopedHandle.get: parameter 0 is 'ref', not 'id_or_key'" in found
    assert "ScopedHandle.list: requires 'flag', which the protocol does not give" in found
    assert mismatches(Scope, Partial()) == []


# Members no service calls: the facade calls them on the handle of a led scope that
# ``write.rights.owner`` gives it (``ScopedMemory.correct`` / ``confirm`` of a lead).
FACADE_ONLY = {"correct", "confirm"}


@pytest.mark.parametrize("protocol", [StoreHandle, ScopedHandle, Scope])
def test_the_handles_name_only_what_services_use(protocol):
    """Each member of the handles is named by some service below the facade, or is one
    of ``FACADE_ONLY`` (a member nobody names is a member to drop: the handles stay
    narrow). A textual check: ``.member`` somewhere in write/, retrieval/, lifecycle/."""
    import hivemem

    root = Path(hivemem.__file__).parent
    services = "".join(
        path.read_text()
        for folder in ("write", "retrieval", "lifecycle")
        for path in (root / folder).rglob("*.py")
    )
    used = {name for name in members(protocol) if re.search(rf"\.{name}\b", services)}
    assert set(members(protocol)) - used == FACADE_ONLY & set(members(protocol))
