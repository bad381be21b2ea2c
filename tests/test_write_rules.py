"""Every write rule of DESIGN §1, on a real SQLite file."""

from __future__ import annotations

from datetime import timedelta

import pytest

import hivemem
from hivemem import Conflict, InvalidInput, Kind, MemoryType, NotFound, Status
from hivemem.types import TYPE_ALIASES

# ----------------------------------------------------------------------------- types


@pytest.mark.parametrize("name", [t.value for t in MemoryType])
def test_each_canonical_type_is_stored_as_given(mem, name):
    assert mem.save(f"a {name} memory", type=name).type.value == name


@pytest.mark.parametrize(("alias", "canonical"), sorted(TYPE_ALIASES.items()))
def test_aliases_resolve_at_write_time(mem, alias, canonical):
    saved = mem.save(f"memory typed {alias}", type=alias.upper())
    assert saved.type is canonical
    assert mem.get(saved.id).type is canonical


def test_unknown_type_lists_valid_types(mem):
    with pytest.raises(InvalidInput) as err:
        mem.save("x", type="gossip")
    assert err.value.field == "type"
    for name in ("identity", "lesson", "decision", "context", "reference", "historical"):
        assert name in str(err.value)
    assert mem.list() == []


def test_type_is_kept_when_superseding_without_a_type(mem):
    mem.save("Never deploy on Fridays", key="deploy", type="warning")
    new = mem.save("Deploy any day", key="deploy", supersede_reason="CI is solid now")
    assert new.type is MemoryType.LESSON


def test_type_changes_only_when_asked(mem):
    mem.save("Use Postgres", key="db", type="decision")
    new = mem.save("Use Postgres 16", key="db", type="context", supersede_reason="pinned")
    assert new.type is MemoryType.CONTEXT


# ----------------------------------------------------------------------------- keys


def test_reusing_a_key_without_reason_is_rejected_showing_the_current_entry(mem):
    first = mem.save("Never deploy on Fridays", key="deploy-lesson", type="warning")
    with pytest.raises(Conflict) as err:
        mem.save("Deploy whenever", key="deploy-lesson")
    assert err.value.current == first
    assert first.id in str(err.value) and "Never deploy on Fridays" in str(err.value)
    assert [m.content for m in mem.list()] == ["Never deploy on Fridays"]


def test_hard_supersede_links_the_chain(mem, clock):
    first = mem.save("Never deploy on Fridays", key="deploy-lesson", type="warning")
    clock.advance(days=1)
    second = mem.save(
        "We deploy daily now", key="deploy-lesson", supersede_reason="we now deploy daily"
    )
    old = mem.get(first.id)
    assert old.status is Status.SUPERSEDED
    assert old.valid_until == second.created_at
    assert second.supersedes_id == first.id
    assert second.supersede_reason == "we now deploy daily"
    assert second.supersede_kind == "hard"
    assert second.confidence == 1.0 and second.access_count == 0
    assert mem.get("deploy-lesson").id == second.id


def test_soft_supersede_keeps_usage_and_confidence(mem):
    first = mem.save("Teh API key rotates monthly", key="rotation", confidence=0.8)
    mem.get(first.id)  # one access
    fixed = mem.save("The API key rotates monthly", key="rotation", minor=True)
    assert fixed.supersede_kind == "soft"
    assert fixed.supersedes_id == first.id
    assert fixed.confidence == 0.8
    assert fixed.access_count == 1


def test_identical_resave_under_a_key_is_a_no_op(mem):
    first = mem.save("Use Postgres", key="db")
    again = mem.save("  Use   Postgres ", key="db")
    assert again == first
    assert len(mem.history("db")) == 1


def test_expired_key_holder_is_superseded_without_a_reason(mem, clock):
    first = mem.save("build green", key="ci", source="task_completion")
    clock.advance(days=8)
    second = mem.save("build red", key="ci", source="task_completion")
    assert second.supersedes_id == first.id and second.supersede_reason == "expired"


def test_keys_are_per_scope(store):
    a, b = store.scope("a"), store.scope("b")
    a.save("alpha", key="k")
    b.save("beta", key="k")
    assert a.get("k").content == "alpha" and b.get("k").content == "beta"


def test_history_by_key_and_by_any_id_returns_the_whole_chain(mem):
    v1 = mem.save("v1", key="k")
    v2 = mem.save("v2", key="k", supersede_reason="r2")
    v3 = mem.save("v3", key="k", minor=True)
    expected = [v1.id, v2.id, v3.id]
    assert [m.id for m in mem.history("k")] == expected
    assert [m.id for m in mem.history(v1.id)] == expected
    assert [m.id for m in mem.history(v2.id)] == expected
    statuses = [m.status for m in mem.history("k")]
    assert statuses == [Status.SUPERSEDED, Status.SUPERSEDED, Status.ACTIVE]


def test_history_of_unknown_is_not_found(mem):
    with pytest.raises(NotFound):
        mem.history("nope")


# ----------------------------------------------------------------------------- as_of


def test_as_of_reads_what_was_active_then(mem, clock):
    t0 = clock.now
    clock.advance(hours=1)
    v1 = mem.save("Lives in Paris", key="home")
    clock.advance(days=10)
    t1 = clock.now
    clock.advance(days=10)
    v2 = mem.save("Lives in Berlin", key="home", supersede_reason="moved")
    clock.advance(days=10)
    mem.delete(v2.id)
    t_after = clock.now + timedelta(days=1)

    assert mem.get("home", as_of=t1).id == v1.id
    assert mem.get("home", as_of=v2.created_at + timedelta(seconds=1)).id == v2.id
    with pytest.raises(NotFound):
        mem.get("home", as_of=t0)
    with pytest.raises(NotFound):
        mem.get("home", as_of=t_after)
    assert [m.id for m in mem.list(as_of=t1)] == [v1.id]
    assert [h.memory.id for h in mem.search("Paris", as_of=t1)] == [v1.id]
    assert mem.search("Berlin", as_of=t1) == []


# ----------------------------------------------------------------------------- delete


def test_delete_is_soft_and_hides_from_search(mem):
    m = mem.save("The staging password is in the vault")
    mem.delete(m.id)
    assert mem.search("staging password") == []
    assert mem.list() == []
    assert mem.get(m.id).status is Status.DELETED
    assert mem.list(status="deleted")[0].id == m.id


def test_delete_by_key_frees_the_key(mem):
    mem.save("one", key="k")
    mem.delete("k")
    again = mem.save("two", key="k")
    assert again.supersedes_id is None and mem.get("k").content == "two"


def test_deleted_can_never_be_searched_even_when_asked(mem):
    with pytest.raises(InvalidInput):
        mem.search("x", status="deleted")


def test_superseded_rows_are_searchable_flagged_and_ranked_below(mem):
    old = mem.save("The build server is jenkins-01", key="build")
    new = mem.save("The build server is jenkins-02", key="build", supersede_reason="moved")
    hits = mem.search("build server jenkins")
    assert [h.memory.id for h in hits] == [new.id, old.id]
    assert hits[1].memory.status is Status.SUPERSEDED
    assert hits[1].explain.factors["superseded"] == 0.5
    assert hits[1].score < hits[0].score
    active_only = mem.search("build server jenkins", status="active")
    assert [h.memory.id for h in active_only] == [new.id]


# ----------------------------------------------------------------------------- correct/confirm


def test_correct_creates_a_linked_version(mem):
    m = mem.save("Alice works at Acme", type="identity", tags=["people"])
    fixed = mem.correct(m.id, "Alice works at Initech", reason="she changed jobs")
    assert fixed.supersedes_id == m.id and fixed.supersede_reason == "she changed jobs"
    assert fixed.type is MemoryType.IDENTITY and fixed.tags == ("people",)
    assert mem.get(m.id).status is Status.SUPERSEDED
    with pytest.raises(Conflict):
        mem.correct(m.id, "again")  # only the current version can be corrected


def test_confirm_protects_from_decay(mem):
    m = mem.save("The sky is blue", confidence=0.4)
    confirmed = mem.confirm(m.id)
    assert (confirmed.confidence, confirmed.decay_rate) == (1.0, 0.0)
    stored = mem.get(m.id)
    assert (stored.confidence, stored.decay_rate) == (1.0, 0.0)


# ----------------------------------------------------------------------------- TTL


@pytest.mark.parametrize(
    ("source", "days"),
    [("task_completion", 7), ("session_summary", 3), ("file_index", 30), ("manual", None)],
)
def test_ttl_by_source(mem, source, days):
    m = mem.save(f"from {source}", source=source)
    if days is None:
        assert m.expires_at is None
    else:
        assert m.expires_at == m.created_at + timedelta(days=days)


def test_ttl_is_overridable_per_call_and_by_settings(tmp_path, clock):
    settings = hivemem.Settings().replace(ttl_days={"manual": 1})
    with hivemem.open(tmp_path / "t.db", settings=settings, clock=clock) as store:
        mem = store.scope("s")
        m = mem.save("short lived")
        assert m.expires_at == m.created_at + timedelta(days=1)
        forever = mem.save("kept", source="task_completion", expires_at=None)
        assert forever.expires_at is None


def test_expired_rows_are_hidden_from_search_but_readable_by_id(mem, clock):
    m = mem.save("deploy finished for release 42", source="task_completion")
    assert [h.memory.id for h in mem.search("release 42")] == [m.id]
    clock.advance(days=8)
    assert mem.search("release 42") == []
    assert [h.memory.id for h in mem.search("release 42", include_expired=True)] == [m.id]
    assert mem.get(m.id).id == m.id
    assert mem.stats()["expired"] == 1


# ----------------------------------------------------------------------------- dedup


def test_exact_duplicate_facts_are_not_stored_twice(mem):
    a = mem.save("Alice likes tea")
    b = mem.save("Alice  likes tea")
    assert a.id == b.id and len(mem.list()) == 1


def test_duplicate_episodes_are_kept(mem):
    mem.add_episode("ok", session_id="s1", role="user")
    mem.add_episode("ok", session_id="s1", role="user")
    assert len(mem.list(kind="episode")) == 2


# ----------------------------------------------------------------------------- bad input


BAD_CONTENT = [
    ("", "is empty"),
    ("   \n\t", "is empty"),
    (b"\xff\xfe", "not valid UTF-8"),
    ("bad \ud800 surrogate", "not valid UTF-8"),
    ("nul\x00inside", "NUL"),
    (42, "expected text"),
    (None, "expected text"),
    (["a"], "expected text"),
]


@pytest.mark.parametrize(("content", "message"), BAD_CONTENT)
def test_bad_content_is_rejected_naming_the_field(mem, content, message):
    with pytest.raises(InvalidInput) as err:
        mem.save(content)
    assert err.value.field == "content" and message in str(err.value)
    assert mem.list() == []


def test_utf8_bytes_are_accepted_as_text(mem):
    assert mem.save("caf\xe9".encode()).content == "café"


def test_oversize_content_is_rejected(tmp_path, clock):
    settings = hivemem.Settings().replace(max_content_bytes=100)
    with hivemem.open(tmp_path / "t.db", settings=settings, clock=clock) as store:
        mem = store.scope("s")
        with pytest.raises(InvalidInput, match="exceeds the limit of 100"):
            mem.save("x" * 101)
        assert mem.save("x" * 100).content == "x" * 100


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"key": ""}, "key"),
        ({"key": "a\nb"}, "key"),
        ({"key": "k" * 201}, "key"),
        ({"key": 5}, "key"),
        ({"kind": "dream"}, "kind"),
        ({"source": "Not A Source!"}, "source"),
        ({"tags": "not-a-list"}, "tags"),
        ({"tags": ["ok", 3]}, "tags"),
        ({"attributes": ["x"]}, "attributes"),
        ({"attributes": {"x": object()}}, "attributes"),
        ({"attributes": {"x": float("nan")}}, "attributes"),
        ({"confidence": 1.5}, "confidence"),
        ({"confidence": "high"}, "confidence"),
        ({"decay_rate": -1}, "decay_rate"),
        ({"event_time": "yesterday-ish"}, "event_time"),
        ({"category": "gossip"}, "category"),
        ({"supersede_reason": ""}, "supersede_reason"),
    ],
)
def test_bad_fields_are_rejected_naming_the_field(mem, kwargs, field):
    with pytest.raises(InvalidInput) as err:
        mem.save("valid content", **kwargs)
    assert err.value.field == field
    assert mem.list() == []


def test_a_bad_item_in_a_batch_writes_nothing(mem):
    items = [
        {"content": "first", "session_id": "s", "role": "user"},
        {"content": "", "session_id": "s", "role": "user"},
    ]
    with pytest.raises(InvalidInput) as err:
        mem.add_episodes(items)
    assert err.value.field == "items[1].content"
    assert mem.list(kind="episode") == [] and mem.sessions() == []


def test_episode_needs_session_and_role(mem):
    with pytest.raises(InvalidInput) as err:
        mem.add_episode("hi", session_id="", role="user")
    assert err.value.field == "session_id"
    with pytest.raises(InvalidInput) as err:
        mem.add_episode("hi", session_id="s", role=None)
    assert err.value.field == "role"


# ----------------------------------------------------------------------------- episodes


def test_episodes_register_sessions_on_first_sight(mem, clock):
    mem.add_episode("hello", session_id="s1", role="user", event_time="2023-05-08T13:56:00")
    mem.add_episodes(
        [
            {"content": "hi there", "session_id": "s1", "role": "assistant"},
            {"content": "new topic", "session_id": "s2", "role": "user", "attributes": {"n": 1}},
        ]
    )
    sessions = {s.session_id: s for s in mem.sessions()}
    assert sorted(sessions) == ["s1", "s2"]
    assert sessions["s1"].episode_count == 2 and sessions["s2"].episode_count == 1
    assert sessions["s1"].started_at.isoformat() == "2023-05-08T13:56:00+00:00"
    episode = mem.list(session_id="s2")[0]
    assert (episode.kind, episode.type, episode.role, episode.attributes) == (
        Kind.EPISODE,
        MemoryType.HISTORICAL,
        "user",
        {"n": 1},
    )


def test_long_content_is_chunked_and_every_part_searchable(mem):
    paragraphs = [
        f"Paragraph {i} talks about topic{i} " + "filler words here " * 30 for i in range(12)
    ]
    m = mem.save("\n\n".join(paragraphs))
    for i in (0, 5, 11):
        hits = mem.search(f"topic{i}")
        assert hits and hits[0].memory.id == m.id
    assert hits[0].explain.chunk_seq > 0


# ----------------------------------------------------------------------------- promote


def test_promote_copies_up_with_provenance(store):
    worker = store.scope("worker-1", shared=["swarm"])
    other = store.scope("worker-2", shared=["swarm"])
    lesson = worker.save("Run migrations before deploy", type="lesson", key="migrate-first")
    copy = worker.promote(lesson.id, to="swarm")
    assert copy.scope == "swarm" and copy.source == "promotion"
    assert copy.source_ids == (lesson.id,)
    assert copy.attributes["promoted_from"] == {"scope": "worker-1", "id": lesson.id}
    assert [h.memory.id for h in other.search("migrations deploy")] == [copy.id]
    with pytest.raises(InvalidInput):
        worker.promote(lesson.id, to="elsewhere")
