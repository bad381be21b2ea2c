"""Scope isolation (LESSONS 8): a handle for scope A never reads, lists, searches, walks
the history of, corrects, confirms or deletes a memory of scope B, even when it knows
B's ids and keys; shared scopes are readable and written only by ``promote``; hostile
scope names are either refused naming the field or are ordinary, isolated scopes.
"""

from __future__ import annotations

import tempfile
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hivemem
from hivemem import Conflict, Forbidden, InvalidInput, NotFound, Settings, Source, Status

ALL_STATUSES = [s.value for s in Status]

INVALID_SCOPES = [
    ("", "is empty"),
    (" ", "is empty"),
    ("\t\n ", "is empty"),
    ("team-a\x00", "NUL character"),
    ("team\x1b[31ma", "control character"),
    ("team\x7f", "control character"),
    ("x" * 201, "exceeds the limit of 200"),
    ("\ud800team", "not valid UTF-8"),
    (None, "is required"),
    (42, "expected text"),
    (b"team-a", "expected text"),
]

VALID_SCOPES = [
    "team-a",
    "Team-A",  # differs only by case: a different scope
    "TEAM-A",
    "a' OR '1'='1",
    "'; DROP TABLE memories; --",
    "%",
    "_",
    "*",
    "%%",
    "team-_",
    "../..",
    "..",
    "/",
    "\\",
    '"',
    "NULL",
    "x" * 200,
    "チーム",
    "🐝 hive",
    "\u202eevil",  # right-to-left override: a format character, not a control one
    "team-a\u200b",  # zero-width space: not whitespace to strip, so its own scope
]


@pytest.fixture
def store(db_path, clock):
    """As conftest's, without access tracking: reads leave rows as they were, so whole
    rows can be compared before and after."""
    s = hivemem.open(db_path, clock=clock, settings=Settings(track_access=False), embedder="hash")
    yield s
    s.close()


def _open(path: Path) -> hivemem.Store:
    # No access tracking: a refused or empty read must leave the file byte-for-byte alone.
    return hivemem.open(path, settings=Settings(track_access=False), embedder="hash")


def _snapshot(store: hivemem.Store) -> list[dict]:
    return [m.to_dict() for m in store.iter_memories()]


def _fill(mem: hivemem.ScopedMemory, marker: str) -> list[hivemem.Memory]:
    """The same key, session and words in every scope, plus one word of its own."""
    first = mem.save(f"the vault code is {marker} alpha", key="vault-code", type="identity")
    second = mem.save(
        f"the vault code is {marker} beta", key="vault-code", supersede_reason="rotated"
    )
    note = mem.save(f"plain note about the vault {marker}")
    episode = mem.add_episode(f"user mentioned the vault {marker}", session_id="s1", role="user")
    doomed = mem.save(f"deleted vault memo {marker}", key="memo")
    gone = mem.delete("memo")
    assert gone.id == doomed.id
    return [mem.get(first.id), second, note, episode, mem.get(doomed.id)]


@pytest.mark.parametrize(("name", "message"), INVALID_SCOPES)
def test_invalid_scope_names_are_refused_naming_the_field(store, name, message):
    with pytest.raises(InvalidInput) as err:
        store.scope(name)
    assert err.value.field == "scope"
    assert message in err.value.message
    with pytest.raises(InvalidInput) as err:
        store.scope("team-a", shared=[name])
    assert err.value.field == "shared"
    assert message in err.value.message
    assert store.scopes() == []


def test_names_that_normalise_alike_are_one_scope(store):
    """Leading/trailing whitespace is trimmed and text is NFC: such names are the same
    scope (so no look-alike scope can hide rows), while case is significant."""
    assert store.scope(" team-a ").name == "team-a"
    assert store.scope("team-a\t").name == "team-a"
    assert store.scope("cafe\u0301").name == store.scope("caf\u00e9").name == "caf\u00e9"
    saved = store.scope("team-a ").save("trimmed scope note", key="k")
    assert store.scope("team-a").get("k") == saved
    with pytest.raises(NotFound):
        store.scope("Team-A").get("k")
    assert store.scopes() == ["team-a"]


def test_hostile_scope_names_are_isolated_from_each_other(tmp_path):
    store = _open(tmp_path / "memory.db")
    handles = [store.scope(name) for name in VALID_SCOPES]
    assert [h.name for h in handles] == VALID_SCOPES
    rows = {h.name: _fill(h, f"marker{i}") for i, h in enumerate(handles)}
    assert sorted(store.scopes()) == sorted(VALID_SCOPES)
    before = _snapshot(store)

    for i, mem in enumerate(handles):
        own = rows[mem.name]
        own_ids = {m.id for m in own}
        assert {m.id for m in mem.list(status=ALL_STATUSES, limit=1000)} == own_ids
        assert mem.get("vault-code") == own[1]
        assert [m.id for m in mem.history("vault-code")] == [own[0].id, own[1].id]
        assert [m.id for m in mem.history("memo")] == [own[4].id]
        assert {h.memory.id for h in mem.search("vault code alpha beta", limit=100)} == {
            m.id for m in own[:4]
        }
        assert mem.stats()["total"] == len(own)
        assert [(s.session_id, s.episode_count) for s in mem.sessions()] == [("s1", 1)]
        for j, other in enumerate(handles):
            if i == j:
                continue
            marker = f"marker{j}"
            for status in (None, ["active", "superseded", "archived"]):
                hits = mem.search(marker, status=status)
                assert {h.memory.scope for h in hits} <= {mem.name}
                assert not any(marker in h.memory.content for h in hits)
            for victim in rows[other.name]:
                for attempt, extra in (
                    (mem.get, ()),
                    (mem.history, ()),
                    (mem.correct, ("overwritten by a neighbour",)),
                    (mem.confirm, ()),
                    (mem.delete, ()),
                ):
                    with pytest.raises(NotFound):
                        attempt(victim.id, *extra)

    assert _snapshot(store) == before  # nothing was read into or written across scopes

    # delete_all is as narrow as every other write.
    victim, bystanders = handles[3], [h for k, h in enumerate(handles) if k != 3]
    assert victim.delete_all() == 3
    assert victim.list() == []
    after = {m["id"]: m for m in _snapshot(store)}
    for h in bystanders:
        assert [after[m.id] for m in rows[h.name]] == [m.to_dict() for m in rows[h.name]]
    store.close()


def test_guessed_keys_and_ids_of_another_scope_are_not_found(store):
    a, b = store.scope("team-a"), store.scope("team-b")
    secret = b.save("the launch code is 0000", key="launch-code")
    assert a.list(key="launch-code") == []
    for id_or_key in (secret.id, "launch-code"):
        for attempt in (a.get, a.history, a.delete):
            with pytest.raises(NotFound):
                attempt(id_or_key)
    with pytest.raises(NotFound):
        a.get("launch-code", as_of="2100-01-01")
    # The same key in A is a separate memory: no conflict with B's, no supersede of it.
    mine = a.save("our launch code is 1234", key="launch-code")
    assert mine.supersedes_id is None
    assert b.get("launch-code") == secret
    assert [m.id for m in b.history("launch-code")] == [secret.id]
    assert [m.id for m in a.history("launch-code")] == [mine.id]


def test_shared_scopes_are_readable_and_written_only_by_promote(store):
    agent1 = store.scope("agent-1", shared=["swarm"])
    agent2 = store.scope("agent-2", shared=["swarm"])
    private = agent1.save("deploys need two approvals", key="deploy-rule", type="lesson")
    promoted = agent1.promote(private.id, to="swarm")

    assert promoted.scope == "swarm"
    assert promoted.source == Source.PROMOTION
    assert promoted.source_ids == (private.id,)
    assert promoted.attributes["promoted_from"] == {"scope": "agent-1", "id": private.id}
    assert (promoted.content, promoted.key, promoted.type) == (
        private.content,
        private.key,
        private.type,
    )
    assert store.scope("swarm").list() == [promoted]

    # agent-2 reads the shared copy, never agent-1's private original.
    assert agent2.get(promoted.id) == promoted
    assert agent2.get("deploy-rule") == promoted
    assert agent2.list() == [promoted]
    assert [h.memory.id for h in agent2.search("two approvals")] == [promoted.id]
    assert [m.id for m in agent2.history(promoted.id)] == [promoted.id]
    with pytest.raises(NotFound):
        agent2.get(private.id)
    with pytest.raises(NotFound):
        agent2.promote(private.id, to="swarm")

    # Nobody but promote (and a lead, hivemem.write.rights) writes the shared scope: its
    # readers are refused, clearly.
    for attempt in (
        lambda: agent2.correct(promoted.id, "deploys need one approval"),
        lambda: agent2.confirm(promoted.id),
        lambda: agent2.delete(promoted.id),
        lambda: agent2.delete("deploy-rule"),
        lambda: agent1.delete(promoted.id),
    ):
        with pytest.raises(Forbidden, match="only a lead of 'swarm'"):
            attempt()
    own = agent2.save("deploys need one approval", key="deploy-rule")
    assert own.scope == "agent-2"
    assert agent2.get("deploy-rule") == own  # the own scope wins over a shared one
    assert store.scope("swarm").list() == [promoted]
    assert store.scope("swarm").get(promoted.id).status is Status.ACTIVE

    # promote only into a shared scope of the handle; the shared scope's key rules apply.
    with pytest.raises(InvalidInput) as err:
        agent2.promote(own.id, to="agent-1")
    assert err.value.field == "to"
    with pytest.raises(Conflict):
        agent2.promote(own.id, to="swarm")
    newer = agent2.promote(own.id, to="swarm", supersede_reason="policy relaxed")
    assert newer.supersedes_id == promoted.id
    assert [m.id for m in agent1.history(private.id)] == [private.id]
    assert [m.id for m in store.scope("swarm").history("deploy-rule")] == [
        promoted.id,
        newer.id,
    ]
    assert agent1.get(private.id).status is Status.ACTIVE

    # A scope that shares nothing sees nothing of the swarm.
    outsider = store.scope("outsider")
    with pytest.raises(NotFound):
        outsider.get(promoted.id)
    assert outsider.search("approvals") == []
    assert outsider.list() == []


def test_a_handle_never_lists_its_own_scope_as_shared(store):
    mem = store.scope("team-a", shared=["team-a", " swarm ", "swarm"])
    assert mem.shared == ("swarm",)
    assert mem.visible == ("team-a", "swarm")


# ----------------------------------------------------------------------------- property

WORDS = ["vault", "alpha", "beta", "gamma", "code", "deploy", "river", "lamp", "seven"]

scope_names = st.one_of(
    st.text(max_size=10),
    st.sampled_from(VALID_SCOPES + [" team-a", "team-a ", "TEAM-a"]),
    st.text(alphabet="%_*'\"\\/. \x00\t-aA", max_size=6),
)
contents = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
operations = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=5),  # which handle
        st.sampled_from(["save", "episode", "delete", "correct", "confirm", "attack"]),
        st.sampled_from(["k1", "k2", None]),
        contents,
        st.integers(min_value=0, max_value=10_000),  # picks a memory
    ),
    max_size=15,
)


def _expected_name(raw: str) -> str | None:
    """What rules.name() should make of a scope name, computed independently."""
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        return None
    clean = unicodedata.normalize("NFC", raw.strip())
    if not clean or len(clean) > 200 or any(ord(c) < 32 or ord(c) == 127 for c in clean):
        return None
    return clean


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(names=st.lists(scope_names, min_size=2, max_size=5), ops=operations)
def test_no_cross_scope_visibility_property(names, ops):
    with tempfile.TemporaryDirectory() as folder:
        store = _open(Path(folder) / "memory.db")
        try:
            handles: list[hivemem.ScopedMemory] = []
            for raw in names:
                expected = _expected_name(raw)
                if expected is None:
                    with pytest.raises(InvalidInput) as err:
                        store.scope(raw)
                    assert err.value.field == "scope"
                else:
                    handle = store.scope(raw)
                    assert handle.name == expected
                    handles.append(handle)
            if not handles:
                return
            owned: dict[str, set[str]] = {h.name: set() for h in handles}

            def others(name: str) -> list[str]:
                return sorted(i for scope, ids in owned.items() if scope != name for i in ids)

            for which, op, key, content, pick in ops:
                mem = handles[which % len(handles)]
                mine = sorted(owned[mem.name])
                if op == "save":
                    reason = "update" if key else None
                    owned[mem.name].add(mem.save(content, key=key, supersede_reason=reason).id)
                elif op == "episode":
                    owned[mem.name].add(mem.add_episode(content, session_id="s", role="u").id)
                elif op == "attack":
                    targets = others(mem.name)
                    if targets:
                        target = targets[pick % len(targets)]
                        for attempt in (mem.get, mem.history, mem.delete, mem.confirm):
                            with pytest.raises(NotFound):
                                attempt(target)
                        with pytest.raises(NotFound):
                            mem.correct(target, content)
                elif mine:
                    target = mine[pick % len(mine)]
                    try:
                        if op == "delete":
                            mem.delete(target)
                        elif op == "correct":
                            owned[mem.name].add(mem.correct(target, content + " fixed").id)
                        else:
                            mem.confirm(target)
                    except Conflict:  # not the current version: refused, own scope anyway
                        assert mem.get(target).status is not Status.ACTIVE

            everything = {m.id: m.scope for m in store.iter_memories()}
            assert everything == {i: scope for scope, ids in owned.items() for i in ids}
            for mem in handles:
                listed = mem.list(status=ALL_STATUSES, limit=1000)
                assert {m.id for m in listed} == owned[mem.name]
                for word in WORDS:
                    assert {h.memory.scope for h in mem.search(word, limit=100)} <= {mem.name}
                for target in others(mem.name):
                    with pytest.raises(NotFound):
                        mem.get(target)
        finally:
            store.close()
