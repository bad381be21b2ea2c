"""Maintenance jobs without an LLM, on real SQLite files with a deterministic clock:
the run log, consolidation (extractive), two-level dedup, conflicts, decay arithmetic,
expiry, reflection preconditions, summary grouping, idempotence and crash recovery."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

import hivemem
from hivemem import InvalidInput, Kind, NotFound, Settings, Status, run_job
from hivemem.lifecycle.maintenance import consolidate as consolidate_module
from hivemem.lifecycle.maintenance import run_log
from hivemem.lifecycle.maintenance.decay import factor
from hivemem.lifecycle.maintenance.similarity import jaccard, negated, words


def _state(store) -> list[dict]:
    """Every row of every scope, every field: what "the same state" means here."""
    return [m.to_dict() for m in store.iter_memories()]


def _sessions(mem) -> list[tuple]:
    return [(s.session_id, s.consolidated_at is not None) for s in mem.sessions()]


def _one(store, job, scope="team-a", **options):
    [result] = run_job(store, job, scope, **options)
    return result


CHAT = [
    ("user", "Hi there!"),
    ("user", "I moved to Lisbon in March and I work at Globex now."),
    ("assistant", "That sounds great. What do you do there?"),
    ("user", "Melanie runs the platform team at Globex. Do you know her?"),
    ("user", "Melanie   runs the platform team at Globex."),  # exact duplicate, other spacing
]


def _chat(mem, session="s1", turns=CHAT):
    return mem.add_episodes(
        [{"content": text, "session_id": session, "role": role} for role, text in turns]
    )


# ----------------------------------------------------------------------------- framework


def test_unknown_job_lists_the_valid_ones(store):
    with pytest.raises(InvalidInput, match="valid jobs: expire, consolidate"):
        run_job(store, "defrag")


def test_every_run_is_logged_per_scope(store, clock):
    store.scope("team-a").save("Ana leads the platform team")
    store.scope("team-b").save("Bo runs the data team")
    results = run_job(store, "decay")
    assert [(r.job, r.scope, r.status) for r in results] == [
        ("decay", "team-a", "ok"),
        ("decay", "team-b", "ok"),
    ]
    log = run_log(store, "decay")
    assert [(r.scope, r.status, r.trigger) for r in log] == [
        ("team-b", "ok", "manual"),
        ("team-a", "ok", "manual"),
    ]
    assert log[0].counts == {"checked": 1, "decayed": 0}
    assert log[0].finished_at >= log[0].started_at
    skipped = _one(store, "reflect")
    assert skipped.status == "skipped" and "a reflection needs 3" in skipped.reason
    assert run_log(store, "reflect")[0].error == skipped.reason


def test_an_empty_store_logs_one_run(store):
    [result] = run_job(store, "consolidate")
    assert (result.scope, result.status, dict(result.counts)) == (None, "ok", {})


# ----------------------------------------------------------------------------- consolidate


def test_consolidation_waits_for_the_session_to_end(store, clock):
    mem = store.scope("team-a")
    _chat(mem)
    assert _one(store, "consolidate").counts == {}
    assert mem.list(kind="fact") == []
    clock.advance(minutes=31)  # idle past consolidate_idle_minutes
    result = _one(store, "consolidate")
    assert result.counts["sessions"] == 1 and result.counts["episodes"] == 5
    assert _sessions(mem) == [("s1", True)]


def test_consolidate_cycle_is_adr005s_consolidate_in_one_call(store, clock):
    """ADR 005's consolidate() is one library call (the memory_consolidate tool calls it,
    over MCP and HTTP): the session's facts, then the prune, then the reflection, each
    run logged with the caller's trigger, and nothing of another scope touched."""
    mem, other = store.scope("team-a"), store.scope("team-b")
    doomed = mem.save("Zanzibar trip planned with Bob", kind="fact", decay_rate=1.0)
    spared = other.save("Zanzibar trip planned with Bob", kind="fact", decay_rate=1.0)
    for text in ["Ana leads the platform team", "Bo owns the billing service"]:
        mem.save(text, kind="fact", decay_rate=0.0)
    clock.advance(days=3)  # exp(-3) = 0.0498: below the floor
    _chat(mem)  # an open session: named, it is consolidated all the same
    results = mem.consolidate_cycle("s1", trigger="tool")
    assert [(r.job, r.scope, r.status) for r in results] == [
        ("consolidate", "team-a", "ok"),
        ("decay", "team-a", "ok"),
        ("reflect", "team-a", "ok"),
    ]
    assert results[0].counts["sessions"] == 1 and mem.list(kind="fact", session_id="s1")
    assert results[1].counts["pruned"] == 1 and mem.get(doomed.id).status is Status.DELETED
    assert results[2].counts["reflections"] == 1 and mem.list(kind="reflection")
    assert other.get(spared.id).status is Status.ACTIVE
    logged = run_log(store, scope="team-a")
    assert [(r.job, r.trigger, r.status) for r in logged[:3]] == [
        ("reflect", "tool", "ok"),
        ("decay", "tool", "ok"),
        ("consolidate", "tool", "ok"),
    ]
    assert mem.consolidate_cycle()[0].counts == {}  # again: nothing left to consolidate
    assert run_log(store, scope="team-a")[0].trigger == "manual"  # the default
    assert run_log(store, scope="team-b") == []
    for bad, field in [({"session_id": 7}, "session_id"), ({"trigger": " "}, "trigger")]:
        with pytest.raises(InvalidInput, match=field):
            mem.consolidate_cycle(**bad)


def test_a_new_session_ends_the_previous_one(store, clock):
    mem = store.scope("team-a")
    _chat(mem, "s1")
    clock.advance(minutes=1)
    _chat(mem, "s2", [("user", "Our staging cluster runs in Frankfurt since June.")])
    _one(store, "consolidate")
    assert _sessions(mem) == [("s1", True), ("s2", False)]
    mem.consolidate(session_id="s2")  # by hand: ended or not
    assert _sessions(mem) == [("s1", True), ("s2", True)]


def test_extractive_consolidation_keeps_salient_statements_with_provenance(store, clock):
    mem = store.scope("team-a")
    episodes = _chat(mem)
    clock.advance(hours=1)
    result = mem.consolidate()
    facts = sorted(mem.list(kind="fact"), key=lambda m: m.content)
    assert [f.content for f in facts] == [
        "Melanie runs the platform team at Globex.",
        "user said: I moved to Lisbon in March and I work at Globex now.",
    ]
    assert [f.source_ids for f in facts] == [(episodes[3].id,), (episodes[1].id,)]
    assert all(f.source == "consolidation" and f.session_id == "s1" for f in facts)
    assert all(f.attributes == {"consolidated_by": "extractive"} for f in facts)
    assert result.counts["duplicates"] == 1  # the same statement twice in one batch
    assert result.counts["facts"] == 2


def test_consolidation_is_idempotent(store, clock):
    mem = store.scope("team-a")
    _chat(mem)
    clock.advance(hours=1)
    mem.consolidate()
    before = _state(store)
    again = mem.consolidate()
    assert dict(again.counts) == {}
    assert _state(store) == before


def test_exact_duplicates_of_stored_facts_are_dropped(store, clock):
    mem = store.scope("team-a")
    mem.save("Melanie runs the platform team at Globex.", kind="fact")
    _chat(mem)
    clock.advance(hours=1)
    result = mem.consolidate()
    assert result.counts["duplicates"] == 2  # one in the batch, one in the store
    contents = [f.content for f in mem.list(kind="fact")]
    assert contents.count("Melanie runs the platform team at Globex.") == 1


@pytest.mark.parametrize("margin, dropped", [(0.0, True), (0.01, False)])
def test_near_duplicates_by_jaccard_threshold(db_path, clock, margin, dropped):
    stored = "Melanie runs the platform team at Globex in Lisbon"
    said = "Melanie runs the platform team at Globex in Lisbon these days"
    overlap = jaccard(words(stored), words(said))
    assert 0.75 <= overlap < 1
    settings = Settings(dedup_jaccard=overlap + margin)
    with hivemem.open(db_path, settings=settings, clock=clock, embedder="none") as store:
        mem = store.scope("team-a")
        mem.save(stored, kind="fact")
        _chat(mem, "s1", [("ops", said)])
        clock.advance(hours=1)
        result = mem.consolidate()
        assert result.counts.get("near_duplicates", 0) == int(dropped)
        assert len(mem.list(kind="fact")) == (1 if dropped else 2)


def test_a_contradiction_lowers_the_old_fact_and_links_to_it(store, clock):
    mem = store.scope("team-a")
    old = mem.save("Alice likes coffee in the morning", kind="fact")
    unrelated = mem.save("Bob likes tea in the morning", kind="fact")
    _chat(mem, "s1", [("ops", "Alice does not like coffee in the morning.")])
    clock.advance(hours=1)
    result = mem.consolidate()
    assert result.counts["conflicts"] == 1
    [new] = [f for f in mem.list(kind="fact") if f.source == "consolidation"]
    assert new.supersedes_id == old.id and new.supersede_reason == f"contradicts {old.id}"
    kept = mem.get(old.id)
    assert kept.status is Status.ACTIVE and kept.confidence == 0.3
    assert mem.get(unrelated.id).confidence == 1.0
    assert negated(new.content) and not negated(old.content)


def test_a_crash_mid_consolidation_loses_nothing_and_duplicates_nothing(
    db_path, tmp_path, clock, monkeypatch
):
    turns = [
        ("user", f"Server number {i} in rack {i % 7} runs service kappa{i}.") for i in range(70)
    ]

    # Reference: one run without a crash.
    with hivemem.open(tmp_path / "ref.db", clock=clock, embedder="none") as ref:
        _chat(ref.scope("team-a"), "s1", turns)
        clock.advance(hours=1)
        ref.scope("team-a").consolidate()
        expected = sorted(f.content for f in ref.scope("team-a").list(kind="fact", limit=1000))
    assert len(expected) == 70

    real = consolidate_module.extractive
    calls = []

    def crash_on_second_batch(episodes, min_words):
        calls.append(len(episodes))
        if len(calls) == 2:
            raise RuntimeError("power cut")
        return real(episodes, min_words)

    with hivemem.open(db_path, clock=clock, embedder="none") as store:
        mem = store.scope("team-a")
        _chat(mem, "s1", turns)
        clock.advance(hours=1)
        monkeypatch.setattr(consolidate_module, "extractive", crash_on_second_batch)
        with pytest.raises(RuntimeError, match="power cut"):
            mem.consolidate()
        assert len(mem.list(kind="fact", limit=1000)) == 30  # the first batch, committed
        assert _sessions(mem) == [("s1", False)]
        assert run_log(store, "consolidate")[0].status == "failed"
        assert "power cut" in run_log(store, "consolidate")[0].error
        monkeypatch.setattr(consolidate_module, "extractive", real)
        result = mem.consolidate()
        assert result.counts["episodes"] == 40  # resumed after the committed batch
        got = sorted(f.content for f in mem.list(kind="fact", limit=1000))
        assert got == expected
        assert _sessions(mem) == [("s1", True)]


# ----------------------------------------------------------------------------- decay


def test_decay_formulas():
    assert factor("exponential", 0.1, 10) == pytest.approx(math.exp(-1))
    assert factor("power", 0.1, 10, 0.8) == pytest.approx(math.exp(-0.1 * 10**0.8))
    assert factor("exponential", 0.1, -5) == 1.0
    with pytest.raises(InvalidInput, match="decay_formula"):
        factor("linear", 0.1, 1)


@pytest.mark.parametrize("formula", ["exponential", "power"])
def test_decay_arithmetic_and_protected_facts(db_path, clock, formula):
    # From creation: the gets below are accesses, which restart a curve from last access
    # (the default; tests/test_decay_defaults.py).
    settings = Settings(decay_formula=formula, decay_from="created")
    with hivemem.open(db_path, settings=settings, clock=clock, embedder="none") as store:
        mem = store.scope("team-a")
        fading = mem.save("Standup moved to 9:30", kind="fact", decay_rate=0.1)
        confirmed = mem.confirm(mem.save("Ana leads the platform team", kind="fact").id)
        note = mem.save("Runbook for the ingest workers", kind="note", decay_rate=0.1)
        clock.advance(days=10)
        _one(store, "decay")
        days = 10 if formula == "exponential" else 10**0.8
        assert mem.get(fading.id).confidence == pytest.approx(math.exp(-0.1 * days), rel=1e-6)
        assert mem.get(confirmed.id).confidence == 1.0  # decay_rate 0: untouched
        assert mem.get(note.id).confidence == 1.0  # facts only
        before = _state(store)
        _one(store, "decay")  # again, at (almost) the same time: nothing changes
        assert _state(store) == before
        clock.advance(days=10)
        _one(store, "decay")  # from the first sighting, not compounded per run
        expected = math.exp(-0.1 * (20 if formula == "exponential" else 20**0.8))
        assert mem.get(fading.id).confidence == pytest.approx(expected, rel=1e-6)


def test_a_changed_confidence_becomes_the_new_base(store, clock):
    mem = store.scope("team-a")
    fact = mem.save("Standup moved to 9:30", kind="fact", decay_rate=0.1)
    clock.advance(days=1)
    _one(store, "decay")
    with store.atomic():  # what a conflict found by consolidation does
        store.memories.update("team-a", fact.id, clock(), confidence=0.3)
    _one(store, "decay")
    assert mem.get(fact.id).confidence == pytest.approx(0.3)
    clock.advance(days=10)
    _one(store, "decay")
    assert mem.get(fact.id).confidence == pytest.approx(0.3 * math.exp(-1), rel=1e-6)


def test_decay_prunes_below_the_floor_with_vectors_and_entity_links(store, clock):
    mem = store.scope("team-a")
    doomed = mem.save("Zanzibar trip planned with Bob", kind="fact", decay_rate=1.0, wait=True)
    kept = mem.save("Bob likes the Zanzibar beaches", kind="fact", decay_rate=0.01, wait=True)
    vectors = store.vectors.count()
    assert store.job_state.entity_counts([doomed.id])[doomed.id] >= 1
    clock.advance(days=3)  # exp(-3) = 0.0498 < 0.05
    result = _one(store, "decay")
    assert result.counts["pruned"] == 1
    gone = mem.get(doomed.id)
    assert gone.status is Status.DELETED and gone.updated_by == "maintenance:decay"
    assert store.vectors.count() == vectors - 1
    assert store.job_state.entity_counts([doomed.id])[doomed.id] == 0
    _, linked = mem.entity("Bob")
    assert [m.id for m in linked] == [kept.id]
    assert [h.memory.id for h in mem.search("Zanzibar")] == [kept.id]


# ----------------------------------------------------------------------------- expire


def test_expire_archives_rows_long_past_their_ttl(store, clock):
    mem = store.scope("team-a")
    task = mem.save("Rotated the staging certificates", source="task_completion")
    forever = mem.save("Never deploy on Fridays", source="manual")
    clock.advance(days=8)  # past the 7-day TTL: hidden, still there
    assert mem.search("certificates") == []
    result = _one(store, "expire")
    assert dict(result.counts) == {"hidden": 1}
    assert mem.get(task.id).status is Status.ACTIVE
    clock.advance(days=30)
    result = _one(store, "expire")
    assert dict(result.counts) == {"archived": 1, "hidden": 0}
    archived = mem.get(task.id)  # readable by id
    assert archived.status is Status.ARCHIVED and archived.updated_by == "maintenance:expire"
    assert mem.get(forever.id).status is Status.ACTIVE
    before = _state(store)
    _one(store, "expire")
    assert _state(store) == before


# ----------------------------------------------------------------------------- reflect


def test_reflection_preconditions_and_interval(store, clock):
    mem = store.scope("team-a")
    for text in ["Ana leads the platform team", "Bo owns the billing service"]:
        mem.save(text, kind="fact")
    skipped = _one(store, "reflect")
    assert skipped.status == "skipped" and "2 new facts" in skipped.reason
    mem.save("Cy joined the data team in May", kind="fact")
    done = _one(store, "reflect")
    assert done.status == "ok" and done.counts == {"facts": 3, "reflections": 1}
    [reflection] = mem.list(kind="reflection")
    assert reflection.decay_rate == 0 and reflection.type.value == "lesson"
    assert len(reflection.source_ids) == 3
    assert "Cy joined the data team in May" in reflection.content
    before = _state(store)
    again = _one(store, "reflect")
    assert again.status == "skipped" and "less than 6 days old" in again.reason
    assert _state(store) == before
    clock.advance(days=6, minutes=1)
    late = _one(store, "reflect")  # old facts were reflected on already
    assert late.status == "skipped" and "0 new facts" in late.reason
    for text in ["Dee prefers async standups", "Eve runs the Lisbon office", "Fay left Globex"]:
        mem.save(text, kind="fact")
    assert _one(store, "reflect").status == "ok"
    assert len(mem.list(kind="reflection")) == 2
    clock.advance(days=60)
    _one(store, "decay")
    assert all(r.confidence == 1.0 for r in mem.list(kind="reflection"))  # never decays


# ----------------------------------------------------------------------------- summarize


def test_summaries_group_by_key_prefix_and_category(store, clock):
    mem = store.scope("team-a")
    day = mem.save("Deploys happen on Tuesdays", key="deploy.day", kind="fact")
    window = mem.save("The deploy window is 10:00-12:00", key="deploy-window", kind="fact")
    alone = mem.save("The database host is db1", key="db.host", kind="fact")
    tabs = mem.save("I prefer tabs", kind="fact", category="preference")
    dark = mem.save("I prefer dark mode", kind="fact", category="preference")
    who = mem.save("I am the release bot", kind="fact", type="identity", category="preference")
    sure = mem.confirm(mem.save("Ana prefers email", kind="fact", category="preference").id)
    clock.advance(days=29)
    young = mem.save("I prefer vim", kind="fact", category="preference")
    assert _one(store, "summarize").counts == {}  # nothing is 30 days old yet
    clock.advance(days=2)
    result = _one(store, "summarize")
    assert dict(result.counts) == {"archived": 4, "left_alone": 1, "summaries": 2}
    summaries = sorted(mem.list(kind="summary"), key=lambda m: m.attributes["group"])
    assert [s.attributes["group"] for s in summaries] == ["category:preference", "key:deploy"]
    assert [set(s.source_ids) for s in summaries] == [{tabs.id, dark.id}, {day.id, window.id}]
    assert all(s.type.value == "historical" for s in summaries)
    assert "I prefer dark mode" in summaries[0].content
    for member in (day, window, tabs, dark):
        assert mem.get(member.id).status is Status.ARCHIVED
    for untouched in (alone, who, sure, young):
        assert mem.get(untouched.id).status is Status.ACTIVE
    before = _state(store)
    assert _one(store, "summarize").counts == {"left_alone": 1}
    assert _state(store) == before


def test_summaries_are_keyed_as_corvid_and_recalled_by_key(db_path, clock):
    """corvid: two old ``project:*`` memories become one summary keyed
    ``summary:project:{date}``; recall by that key finds it (library and tool). A second
    summary for the same prefix on the same day takes the next free ``:{n}``."""
    from hivemem.tools import call

    settings = Settings(summarize_max_group=2)
    with hivemem.open(db_path, clock=clock, embedder="none", settings=settings) as store:
        mem = store.scope("team-a")
        alpha = mem.save("Alpha ships billing", key="project:alpha", kind="fact")
        beta = mem.save("Beta ships search", key="project:beta", kind="fact")
        gamma = mem.save("Gamma ships the inspector", key="project:gamma", kind="fact")
        delta = mem.save("Delta ships backups", key="project:delta", kind="fact")
        clock.advance(days=60)
        result = _one(store, "summarize")
        assert result.counts["summaries"] == 2
        day = f"{result.started_at:%Y-%m-%d}"
        first = mem.get(f"summary:project:{day}")
        second = mem.get(f"summary:project:{day}:2")
        assert first.kind.value == "summary"
        assert set(first.source_ids) | set(second.source_ids) == {
            alpha.id, beta.id, gamma.id, delta.id}  # fmt: skip
        assert "Alpha ships billing" in first.content
        answer = call(mem, "memory_get", {"key": f"summary:project:{day}"})
        assert answer["memory"]["id"] == first.id


# ----------------------------------------------------------------------------- categorize


def test_every_save_gets_a_category_and_its_confidence(store):
    mem = store.scope("team-a")
    secret = mem.save("The staging api key is sk-abcdefghijklmnop")
    given = mem.save("Ana leads the platform team", category="project")
    [turn] = mem.add_episodes([{"content": "hey, how are you?", "session_id": "s", "role": "u"}])
    plain = mem.save("Zebras")
    maint = store.job_state
    sure = maint.categories(["team-a"], [secret.id, given.id, turn.id, plain.id])
    assert (secret.category, given.category, turn.category) == (
        "credential",
        "project",
        "conversation",
    )
    assert mem.get(secret.id).category == "credential"
    assert sure[given.id] == 1.0
    assert 0.5 < sure[secret.id] <= 0.95
    assert (plain.category, sure[plain.id]) == ("general", 0.0)  # no keyword matched


def test_the_categorize_job_backfills_older_rows(store):
    mem = store.scope("team-a")
    secret = mem.save("Our database password is in the vault")
    given = mem.save("Ana leads the platform team", category="project")
    with store.atomic():  # rows written before categorize-on-save
        store._backend._write("DELETE FROM memory_categories")
        store.memories.update("team-a", secret.id, secret.created_at, category="general")
    result = _one(store, "categorize")
    assert dict(result.counts) == {"categorized": 1, "kept": 1}
    assert mem.get(secret.id).category == "credential"
    assert store.job_state.categories(["team-a"], [given.id]) == {given.id: 1.0}
    assert _one(store, "categorize").counts == {"categorized": 0, "kept": 0}


# ----------------------------------------------------------------------------- cross-refs


def test_cross_refs_are_current_on_save(store):
    """corvid: ``save`` updates the cross-references (``getRelated`` answers at once, not
    after the nightly job), and the job then finds nothing left to link."""
    from hivemem.tools import call

    mem = store.scope("team-a")
    lag = mem.save("Postgres replication lag alerts fire at night", kind="fact")
    lunch = mem.save("Friday lunch menu: tacos", kind="fact")
    grafana = mem.save("Replication lag on Postgres is graphed in Grafana", kind="fact")
    assert [r.memory.id for r in mem.related(lag.id)] == [grafana.id]
    assert [r.memory.id for r in mem.related(grafana.id)] == [lag.id]
    assert mem.related(lunch.id) == []
    answer = call(mem, "memory_related", {"id": lag.id})
    assert [r["memory"]["id"] for r in answer["related"]] == [grafana.id]
    assert _one(store, "crossrefs").counts == {}
    turn = mem.add_episode("Postgres replication lag again", session_id="s", role="user")
    assert mem.related(turn.id) == []  # episodes are left out, as by the job


def test_cross_refs_link_related_memories_at_most_ten(db_path, clock):
    settings = Settings(crossrefs_on_save=False)  # the job's own work, as before corvid's rule
    with hivemem.open(db_path, clock=clock, embedder="hash", settings=settings) as store:
        mem = store.scope("team-a")
        lag = mem.save("Postgres replication lag alerts fire at night", kind="fact")
        grafana = mem.save("Replication lag on Postgres is graphed in Grafana", kind="fact")
        lunch = mem.save("Friday lunch menu: tacos", kind="fact")
        for i in range(14):
            mem.save(f"Postgres replica {i} has replication lag alerts", kind="fact")
        assert mem.related(lag.id) == []  # before the job
        result = _one(store, "crossrefs")
        assert result.counts["memories"] == 17
        related = mem.related(lag.id, limit=100)
        assert 0 < len(related) <= 10 + 14  # its own ten, plus links from the others
        assert grafana.id in {r.memory.id for r in related}
        assert lunch.id not in {r.memory.id for r in related}
        assert mem.related(lunch.id) == []
        assert all(r.score > 0.05 for r in related)
        assert [r.score for r in related] == sorted((r.score for r in related), reverse=True)
        assert len(mem.related(lag.id)) == 10
        rows = store._backend._read("SELECT memory_id, COUNT(*) FROM cross_refs GROUP BY memory_id")
        assert max(n for _, n in rows) <= 10
        before = store._backend._read("SELECT * FROM cross_refs ORDER BY memory_id, related_id")
        _one(store, "crossrefs")
        assert (
            store._backend._read("SELECT * FROM cross_refs ORDER BY memory_id, related_id")
            == before
        )
        with pytest.raises(NotFound):
            store.scope("team-b").related(lag.id)


# ----------------------------------------------------------------------------- enrich


def test_enrich_without_spacy_or_llm_is_skipped_with_the_reason(store):
    store.scope("team-a").save("met acme corp in berlin", kind="fact")
    result = _one(store, "enrich")
    assert result.status == "skipped"
    assert "no LLM is configured" in result.reason
    assert run_log(store, "enrich")[0].error == result.reason


def test_enrich_with_a_spacy_pipeline_links_names_the_regex_missed(db_path, clock, tmp_path):
    spacy = pytest.importorskip("spacy")  # installed by requirements.lock for the tests
    nlp = spacy.blank("en")  # a real pipeline, no downloaded weights: an entity ruler
    nlp.add_pipe("entity_ruler").add_patterns(
        [{"label": "PERSON", "pattern": [{"LOWER": "ada"}, {"LOWER": "lovelace"}]}]
    )
    model = tmp_path / "pipeline"
    nlp.to_disk(model)
    settings = Settings(enrich_spacy_model=str(model))
    with hivemem.open(db_path, clock=clock, embedder="none", settings=settings) as store:
        mem = store.scope("team-a")
        fact = mem.save("met ada lovelace at the analytical engine meetup", kind="fact")
        with pytest.raises(NotFound):
            mem.entity("Ada Lovelace")  # lowercase: the regex on the write path misses it
        result = _one(store, "enrich")
        assert result.status == "ok", result.reason
        entity, linked = mem.entity("Ada Lovelace")
        assert [m.id for m in linked] == [fact.id]
        assert _one(store, "enrich").status == "ok"  # a rerun adds nothing
        assert mem.entity("ada lovelace")[0].mention_count == entity.mention_count


# ----------------------------------------------------------------------------- write path


def test_the_write_path_never_calls_the_llm(db_path, clock):
    class Exploding:
        identity = "test:exploding"

        def complete(self, messages, schema=None):
            raise AssertionError("an LLM call on the write path")

    with hivemem.open(db_path, clock=clock, embedder="none", llm=Exploding()) as store:
        assert store.llm is not None
        mem = store.scope("team-a")
        mem.save("Ana leads the platform team")
        mem.add_episode("I moved to Lisbon", session_id="s1", role="user")
        assert mem.search("Lisbon")


def test_open_resolves_the_llm_setting(db_path):
    with hivemem.open(db_path, embedder="none") as store:
        assert store.llm is None
    settings = Settings(llm="openai", llm_model="qwen2.5:7b", llm_base_url="http://x/v1")
    with hivemem.open(db_path, settings=settings, embedder="none", llm_api_key="k") as store:
        assert store.llm.identity == "openai:qwen2.5:7b"
        assert store.llm.base_url == "http://x/v1" and store.llm.timeout == 30.0
    with pytest.raises(InvalidInput, match="llm_model"):
        hivemem.open(db_path, settings=Settings(llm="openai"), embedder="none")
    with pytest.raises(InvalidInput, match="unknown LLM provider"):
        hivemem.open(db_path, llm="nonesuch", settings=Settings(llm_model="m"), embedder="none")


def test_kind_fact_is_the_default_of_consolidated_facts(store, clock):
    mem = store.scope("team-a")
    _chat(mem)
    clock.advance(hours=1)
    mem.consolidate()
    assert {f.kind for f in mem.list(kind="fact")} == {Kind.FACT}
    assert {f.type.value for f in mem.list(kind="fact")} == {"reference"}


def test_caseless_rules_hold_no_capital_letter_and_match_any_case():
    import importlib
    import re

    rules = importlib.import_module("hivemem.write.categorizer")._RULES
    for patterns in rules.values():
        for pattern, _weight in patterns:
            if pattern.flags & re.IGNORECASE:  # run on lowercased text: a capital never matches
                assert not re.search(r"(?<!\\)[A-Z]", pattern.pattern), pattern.pattern
    from hivemem.write.categorizer import categorize

    assert categorize("MY PASSWORD IS HUNTER2")[0] == "credential"
    assert categorize("My Password is hunter2") == categorize("my password is hunter2")


def test_enrich_without_the_pipeline_skips_quietly_and_never_imports_spacy(tmp_path):
    """The default pipeline is not installed: the job says so in one line, without
    spaCy's E050 text and without importing spaCy (~2 s on every scheduled run)."""
    script = (
        "import sys, hivemem\n"
        "from hivemem.lifecycle.maintenance import run_job\n"
        f"store = hivemem.open({str(tmp_path / 'm.db')!r}, embedder='none')\n"
        "store.scope('a').save('met acme corp in berlin')\n"
        "[result] = run_job(store, 'enrich', 'a')\n"
        "print(result.status)\n"
        "print(result.reason)\n"
        "print('spacy' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    status, reason, imported = done.stdout.splitlines()
    assert status == "skipped"
    assert "spaCy pipeline 'en_core_web_sm' is not installed" in reason
    assert "E050" not in reason and "python -m spacy download en_core_web_sm" in reason
    assert imported == "False"
