"""Lead rights (Agent Swarm): which scopes other than its own a handle may change.

A handle writes its own scope. A *lead* may also delete, correct, confirm and purge
memories of the scopes it leads — the swarm scope its workers read, a worker's private
scope — and inject learnings into them. The grant is a list of scope names or glob
patterns (``lead_of=["swarm", "worker-*"]``) given when the handle is made: by the
library caller (``store.scope("lead", shared=["swarm"], lead_of=["swarm"])``), by the
server's configuration (``serve-mcp --lead-of``, setting ``lead_of``) or by an HTTP
token (each scope the token may write). A model never names its own rights: no tool
argument reaches them.

Trigger: a change aimed at a memory outside the own scope. Why: workers read the swarm
scope and must not rewrite it. Outcome: the lead gets a handle on the memory's scope
(acting as the lead, ``updated_by`` = the lead's actor); a handle that can see the
memory but does not lead its scope gets ``Forbidden``; one that cannot see it,
``NotFound``.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from ..errors import Forbidden, InvalidInput, NotFound
from ..types import as_tuple
from . import rules

if TYPE_CHECKING:  # pragma: no cover
    from ..store.handles import Scope, ScopedHandle
    from ..types import Memory


def clean_patterns(values: Sequence[str] | str | None, max_chars: int) -> tuple[str, ...]:
    """``lead_of`` checked: scope names or glob patterns (``*``, ``?``, ``[…]``); a
    comma-separated string is split (the form of the setting and the CLI)."""
    if values is None:
        return ()
    if isinstance(values, str):
        values = [v for v in values.split(",") if v.strip()]
    out: list[str] = []
    for value in as_tuple(values):  # one name that is not a string: rules.name says so
        clean = rules.name(value, "lead_of", max_chars)
        assert clean is not None
        if clean not in out:
            out.append(clean)
    return tuple(out)


def leads(mem: Scope, scope: str) -> bool:
    """Whether ``mem`` may change ``scope``: its own, or one its ``lead_of`` matches."""
    return scope == mem.name or any(fnmatchcase(scope, p) for p in mem.lead_of)


def led_scopes(mem: ScopedHandle) -> list[str]:
    """The scopes, other than its own, that ``mem`` leads: those named, and the existing
    ones its glob patterns match (listing scopes reads an index: only for patterns)."""
    named = [p for p in mem.lead_of if not any(ch in p for ch in "*?[")]
    out = [s for s in named if s != mem.name]
    if len(named) < len(mem.lead_of):
        out += [s for s in mem.store.scopes() if s != mem.name and s not in out and leads(mem, s)]
    return out


def owner(mem: ScopedHandle, id_or_key: str, action: str) -> tuple[ScopedHandle, str] | None:
    """The handle through which ``mem`` may ``action`` the memory ``id_or_key``, with
    the memory's id: ``None`` when the memory is in the own scope (or nowhere: the
    caller raises ``NotFound`` as before), a handle on the led scope that holds it, or
    ``Forbidden`` when ``mem`` sees it in a scope it does not lead."""
    if not isinstance(id_or_key, str) or not id_or_key:
        raise InvalidInput("id", "expected a memory id or key")
    rules.utf8(id_or_key, "id")
    memories = mem.store.memories
    if memories.get([mem.name], id_or_key) or memories.by_key([mem.name], id_or_key):
        return None
    others = [s for s in mem.visible if s != mem.name]
    others += [s for s in led_scopes(mem) if s not in others]
    if not others:
        return None
    found: Memory | None = memories.get(others, id_or_key)
    if found is None:
        found = memories.by_key(others, id_or_key)
    if found is None:
        return None
    if not leads(mem, found.scope):
        raise Forbidden(
            f"scope {mem.name!r} may read memory {found.id} of scope {found.scope!r} but "
            f"not {action} it: only a lead of {found.scope!r} may (grant it with lead_of, "
            "serve-mcp --lead-of, or a token with write on that scope)"
        )
    return handle_on(mem, found.scope), found.id


def handle_on(mem: ScopedHandle, scope: str) -> ScopedHandle:
    """A handle on ``scope`` acting as ``mem``: same actor, no further rights."""
    return mem.store.scope(scope, actor=mem.actor)


def target(mem: ScopedHandle, scope: str, action: str) -> ScopedHandle:
    """The handle to ``action`` in ``scope`` (own, or led), else ``Forbidden``."""
    clean = rules.name(scope, "scope", mem.settings.max_scope_chars)
    assert clean is not None
    if clean == mem.name:
        return mem
    if not leads(mem, clean):
        raise Forbidden(
            f"scope {mem.name!r} does not lead {clean!r} and may not {action} there "
            f"(lead_of: {list(mem.lead_of) or 'none'}); grant it with lead_of, "
            "serve-mcp --lead-of, or a token with write on that scope"
        )
    return handle_on(mem, clean)


def missing(mem: Scope, id_or_key: str) -> NotFound:
    return NotFound(f"no memory {id_or_key!r} in scope {mem.name!r}")
