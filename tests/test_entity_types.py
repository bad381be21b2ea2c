"""Typed entities through the library and the tool surface: types from the regex cues,
dates found by any common form, the protected flag (decay and merges respect it), the
summary, and the migration that types entities stored before types existed."""

from __future__ import annotations

import pytest
import sqlean as sqlite3  # the SQLite library the store uses (tests/test_project_rules.py)

import hivemem
from hivemem import Conflict, InvalidInput, NotFound, run_job, tools
from hivemem.frontends.http import create_app
from hivemem.store.sqlite import migrations
from test_http import Client


def test_organisations_places_projects_and_tools_are_not_people(mem):
    fact = mem.save(
        "Acme Corp signed with Alice in Berlin for Project Alpha, built on PostgreSQL",
        kind="fact",
    )
    types = {name: mem.entity(name)[0].type for name in (
        "Acme Corp", "Alice", "Berlin", "Project Alpha", "PostgreSQL")}  # fmt: skip
    assert types == {
        "Acme Corp": "organization",
        "Alice": "person",
        "Berlin": "location",
        "Project Alpha": "project",
        "PostgreSQL": "tool",
    }
    entity, linked = mem.entity("acme")  # an organisation is also found without its legal form
    assert entity.canonical == "acme corp" and [m.id for m in linked] == [fact.id]


def test_a_hyphenated_modifier_names_its_stem_and_is_no_person(mem):
    """ "Berlin-based Project Alpha" is the place Berlin and the project, not a person
    named "Berlin-based Project Alpha"; a capitalised compound ("Rolls-Royce") stays one
    name."""
    mem.save("Acme Corp hired a Berlin-based Project Alpha lead; Rolls-Royce-made engines")
    assert mem.entity("Berlin")[0].type == "location"
    assert mem.entity("Project Alpha")[0].type == "project"
    assert mem.entity("Rolls-Royce")[0].name == "Rolls-Royce"
    for wrong in ("Berlin-based", "Berlin-based Project Alpha", "Rolls-Royce-made"):
        with pytest.raises(NotFound):
            mem.entity(wrong)


@pytest.mark.parametrize("asked", ["8 May 2023", "May 8, 2023", "2023-05-08", "8th of May 2023"])
def test_a_date_entity_is_found_by_any_common_form(mem, asked):
    first = mem.save("The launch happened on May 8, 2023.", kind="fact")
    second = mem.save("Retro held 2023-05-08 after the launch", kind="fact")
    entity, linked = mem.entity(asked)
    assert (entity.type, entity.canonical) == ("date", "2023-05-08")
    assert sorted(m.id for m in linked) == sorted([first.id, second.id])


def test_describe_entity_sets_type_summary_and_protection_and_validates(mem):
    mem.save("Globex is our biggest customer", kind="fact")
    assert mem.entity("Globex")[0].type == "other"  # no cue: a name of unknown kind
    entity = mem.describe_entity(
        "Globex", type="organization", summary="Customer since 2021", protected=True
    )
    assert (entity.type, entity.summary, entity.protected) == (
        "organization", "Customer since 2021", True)  # fmt: skip
    with pytest.raises(InvalidInput) as err:
        mem.describe_entity("Globex", type="planet")
    assert err.value.field == "type"
    with pytest.raises(InvalidInput) as err:
        mem.describe_entity("Globex", protected="yes")
    assert err.value.field == "protected"
    with pytest.raises(NotFound):
        mem.describe_entity("Nobody")
    mem.save("Paris called", kind="fact")
    mem.describe_entity("Paris", type="person", protected=True)
    mem.save("We flew to Paris", kind="fact")  # a second entity: the location
    with pytest.raises(Conflict, match="already has a location named 'paris'"):
        mem.describe_entity("Paris", type="location")


def test_adr005s_org_is_an_organization(mem):
    """ADR 005's schema types entities person | project | org | concept | tool: ``org``
    (any case) is the organization type, and an unknown type lists the aliases."""
    mem.save("Globex signed the contract", kind="fact")
    assert mem.describe_entity("Globex", type="org").type == "organization"
    assert mem.describe_entity("Globex", type=" ORG ").type == "organization"
    assert mem.entity("Globex")[0].type == "organization"
    with pytest.raises(InvalidInput, match="org → organization"):
        mem.describe_entity("Globex", type="planet")


def test_decay_leaves_the_memories_of_a_protected_entity_alone(store, clock):
    mem = store.scope("team-a")
    kept = mem.save("Mom's birthday is on 3 March", kind="fact", decay_rate=0.5)
    gone = mem.save("The coffee machine on floor two is broken", kind="fact", decay_rate=0.5)
    mem.describe_entity("Mom", protected=True)
    clock.advance(days=30)
    [result] = run_job(store, "decay", "team-a")
    assert result.counts["pruned"] == 1
    assert mem.get(kept.id).confidence == 1.0 and mem.get(kept.id).status.value == "active"
    assert mem.get(gone.id).status.value == "deleted"


def test_a_protected_entity_is_never_merged_with_a_namesake_of_another_type(mem):
    mem.save("Paris called about the contract", kind="fact")  # a person, by the user's say
    mem.describe_entity("Paris", type="person", protected=True)
    trip = mem.save("The team flew to Paris", kind="fact")  # the gazetteer: a location
    person, _ = mem.entity("Paris")
    place = [e for e in mem.store.entities.lookup(["team-a"], ["paris"])]
    assert sorted(e.type for e in place) == ["location", "person"]
    assert person.type == "person" and person.mention_count == 1
    located = next(e for e in place if e.type == "location")
    assert located.mention_count == 1
    assert trip.id in [
        m for m, _ in mem.store.entities.linked(["team-a"], [located.id], None, mem._now(), 10)
    ]


def test_get_entity_info_returns_type_aliases_summary_and_memories(mem):
    fact = mem.save("Project Alpha moves to Kubernetes in May", kind="fact")
    mem.alias("Project Alpha", "alpha")
    mem.describe_entity("Project Alpha", summary="The billing rewrite")
    info = tools.call(mem, "get_entity_info", {"name": "alpha"})
    assert info["entity"]["type"] == "project"
    assert info["entity"]["aliases"] == ["alpha"]
    assert info["entity"]["summary"] == "The billing rewrite"
    assert info["entity"]["protected"] is False
    assert [m["id"] for m in info["memories"]] == [fact.id]
    assert tools.call(mem, "get_entity_info", {"name": "Kubernetes"})["entity"]["type"] == "tool"


def test_the_migration_types_entities_stored_before_types_existed(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    with conn:
        migrations.apply(conn, "2026-01-01T00:00:00+00:00", upto="0009_api_tokens")
    for key, name in (("berlin", "Berlin"), ("acme corp", "Acme Corp"), ("alice", "Alice")):
        with conn:
            conn.execute(
                "INSERT INTO entities (scope, canonical, type, name, first_seen, last_seen) "
                "VALUES ('a', ?, 'person', ?, '2026-01-01', '2026-01-01')",
                (key, name),
            )
            conn.execute(
                "INSERT INTO entity_aliases (scope, alias, entity_id) "
                "VALUES ('a', ?, last_insert_rowid())",
                (key,),
            )
    conn.close()
    with hivemem.open(path, embedder="none") as store:
        mem = store.scope("a")
        assert [mem.entity(n)[0].type for n in ("Berlin", "Acme Corp", "Alice")] == [
            "location", "organization", "person"]  # fmt: skip
        assert mem.entity("Alice")[0].protected is False


def test_enrich_runs_spacy_and_the_llm_together_and_merges_by_span(db_path, clock, tmp_path):
    """The seed's accurate strategy: regex + spaCy + LLM; of overlapping spans the longest
    wins, then the most confident; spaCy's ORG retypes a name the regex guessed a person;
    a protected entity keeps its type."""
    import json

    spacy = pytest.importorskip("spacy")
    from hivemem.providers.llm import OpenAIChatLLM
    from test_llm import _Server

    nlp = spacy.blank("en")
    nlp.add_pipe("entity_ruler").add_patterns(
        [
            {"label": "ORG", "pattern": [{"LOWER": "acme"}]},
            {"label": "ORG", "pattern": [{"LOWER": "globex"}]},
            {"label": "ORG", "pattern": [{"LOWER": "umbrella"}]},
        ]
    )
    model = tmp_path / "pipeline"
    nlp.to_disk(model)
    server = _Server()
    try:
        llm = OpenAIChatLLM("m", base_url=server.url, max_retries=0)
        settings = hivemem.Settings(enrich_spacy_model=str(model))
        with hivemem.open(
            db_path, clock=clock, embedder="none", settings=settings, llm=llm
        ) as store:
            mem = store.scope("team-a")
            one = mem.save("signed with acme industries in lyon", kind="fact")
            two = mem.save("Globex renewed", kind="fact")
            three = mem.save("We renewed Umbrella too", kind="fact")
            mem.describe_entity("Umbrella", protected=True)
            assert mem.entity("Globex")[0].type == "other"
            reply = {
                "memories": [
                    {"index": 1, "entities": [
                        {"name": "acme industries", "type": "organization", "confidence": 0.7},
                        {"name": "lyon", "type": "location"}]},
                    {"index": 2, "entities": []},
                    {"index": 3, "entities": []},
                ]
            }  # fmt: skip
            server.script(json.dumps(reply))
            [result] = run_job(store, "enrich", "team-a")
            assert result.status == "ok", result.reason
            acme, linked = mem.entity("acme industries")
            assert acme.type == "organization" and [m.id for m in linked] == [one.id]
            with pytest.raises(NotFound):
                mem.entity("acme")  # spaCy's shorter span lost to the LLM's longer one
            assert mem.entity("lyon")[0].type == "location"
            assert mem.entity("Globex")[0].type == "organization"
            assert [m.id for m in mem.entity("Globex")[1]] == [two.id]
            assert mem.entity("Umbrella")[0].type == "other"  # protected: not retyped
            assert three.id
            assert result.counts["retyped"] == 1
    finally:
        server.close()


def test_merge_prefers_the_longest_then_the_most_confident_span():
    from hivemem.lifecycle.maintenance.enrich import Span, merge
    from hivemem.providers.entities import EntityType, Mention

    def span(start, end, name, kind, sure):
        return Span(start, end, Mention(name, name.lower(), EntityType(kind)), sure)

    merged = merge(
        [
            span(0, 4, "Acme", "person", 0.5),
            span(0, 15, "Acme Industries", "organization", 0.7),
            span(19, 23, "Lyon", "person", 0.5),
            span(19, 23, "Lyon", "location", 0.9),
            span(30, 34, "June", "date", 0.8),
        ]
    )
    assert [(m.name, m.type.value) for m in merged] == [
        ("Acme Industries", "organization"), ("Lyon", "location"), ("June", "date")]  # fmt: skip


def test_entity_info_and_session_summaries_over_http(store):
    """The tool surface over HTTP: get_entity_info answers with the type and summary,
    memory_consolidate writes the session's summary."""
    token = store.tokens.create("t", {"team-a": "write"}, store.clock())[1]
    app = create_app(store)
    try:
        client = Client(app)
        route = "/v1/scopes/team-a/tools/"
        saved = client.post(route + "memory_save", token,
                            json={"content": "Acme Corp opened an office in Berlin"})  # fmt: skip
        assert saved.status_code == 200, saved.text
        info = client.post(route + "get_entity_info", token, json={"name": "Acme Corp"}).json()
        assert info["entity"]["type"] == "organization" and info["entity"]["summary"] is None
        assert client.post(route + "get_entity_info", token, json={"name": "berlin"}).json()[
            "entity"]["type"] == "location"  # fmt: skip
        store.scope("team-a").add_episodes(
            [{"content": "The Berlin office opens on 8 May 2023 with twelve people.",
              "session_id": "s1", "role": "user"}]
        )  # fmt: skip
        done = client.post(route + "memory_consolidate", token, json={"session_id": "s1"})
        assert done.status_code == 200, done.text
        assert done.json()["result"]["counts"]["summaries"] == 1
        date = client.post(route + "get_entity_info", token, json={"name": "May 8, 2023"})
        assert date.json()["entity"]["canonical"] == "2023-05-08"
    finally:
        app.state.api.close()
