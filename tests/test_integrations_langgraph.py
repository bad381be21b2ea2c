"""HiveMemStore through the real langgraph package (pinned in requirements-dev.lock).

LangGraph publishes no store conformance suite (langgraph-checkpoint-conformance covers
checkpointers only), so the first half mirrors the cases of its own store tests
(libs/checkpoint/tests/test_store.py, test_store_ttl.py: namespaces, wildcards, depth,
pagination, invalid namespaces, put/get/search/delete, filters, TTL); the second half
holds what HiveMem adds (history, a vault secret, hostile input, a real file reopened).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import timedelta

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

import hivemem
from hivemem import InvalidInput
from hivemem.integrations.langgraph import HiveMemStore


@pytest.fixture
def store(any_store):
    """Every test of this file runs on SQLite, then on PostgreSQL."""
    return any_store


@pytest.fixture
def lg(store):
    return HiveMemStore(store)


def _fill(lg, namespaces):
    for i, ns in enumerate(namespaces):
        lg.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})


# ---------------------------------------------------------------- LangGraph's own cases


def test_list_namespaces_basic(lg):
    _fill(
        lg,
        [
            ("a", "b", "c"),
            ("a", "b", "d", "e"),
            ("a", "b", "d", "i"),
            ("a", "b", "f"),
            ("a", "c", "f"),
            ("b", "a", "f"),
            ("users", "123"),
            ("users", "456", "settings"),
            ("admin", "users", "789"),
        ],
    )
    ab = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")]
    assert lg.list_namespaces(prefix=("a", "b")) == ab
    assert lg.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert lg.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert lg.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert lg.list_namespaces(prefix=("a", "b"), limit=2) == ab[:2]
    assert lg.list_namespaces(prefix=("a", "b"), offset=2) == ab[2:]
    assert lg.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert lg.list_namespaces(suffix=("*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert lg.list_namespaces(prefix=("nonexistent",)) == []
    assert lg.list_namespaces(prefix=("users", "123")) == [("users", "123")]


def test_list_namespaces_with_wildcards(lg):
    _fill(
        lg,
        [
            ("users", "123"),
            ("users", "456"),
            ("users", "789", "settings"),
            ("admin", "users", "789"),
            ("guests", "123"),
            ("guests", "456", "preferences"),
        ],
    )
    assert lg.list_namespaces(prefix=("users", "*")) == [
        ("users", "123"),
        ("users", "456"),
        ("users", "789", "settings"),
    ]
    assert lg.list_namespaces(suffix=("*", "preferences")) == [("guests", "456", "preferences")]
    assert lg.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []


def test_list_namespaces_pagination_depth_and_empty(store, lg):
    assert lg.list_namespaces() == []
    for i in range(20):
        lg.put(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"data": i})
    for offset in (0, 5, 15):
        assert lg.list_namespaces(prefix=("namespace",), limit=5, offset=offset) == [
            ("namespace", f"sub_{i:02d}") for i in range(offset, offset + 5)
        ]
    other = HiveMemStore(hivemem.open(":memory:", embedder="hash"))
    _fill(other, [("a", "b", "c", "d"), ("a", "b", "c", "e"), ("a", "b", "f"), ("a", "g")])
    _fill(other, [("h", "i", "j", "k")])
    assert other.list_namespaces(max_depth=2) == [("a", "b"), ("a", "g"), ("h", "i")]
    assert other.list_namespaces() == [
        ("a", "b", "c", "d"),
        ("a", "b", "c", "e"),
        ("a", "b", "f"),
        ("a", "g"),
        ("h", "i", "j", "k"),
    ]
    other.store.close()


def test_invalid_namespaces_are_refused_as_langgraph_refuses_them(lg):
    doc = {"foo": "bar"}
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            lg.put(bad, "foo", doc)
        with pytest.raises(InvalidNamespaceError):
            asyncio.run(lg.aput(bad, "foo", doc))
    # a label "langgraph" below the root is fine, as is the root past the public put
    for ns in [("foo", "langgraph", "foo"), ("langgraph", "foo")]:
        lg.batch([PutOp(ns, "bar", doc)])
        assert lg.get(ns, "bar").value == doc
        assert lg.search(ns)[0].value == doc
        lg.delete(ns, "bar")
        assert lg.get(ns, "bar") is None
    # a dotted label passed straight to batch cannot address ("a", "b")
    lg.put(("a", "b"), "k", doc)
    with pytest.raises(InvalidNamespaceError):
        lg.batch([GetOp(("a.b",), "k")])


def test_put_get_update_delete(lg, clock):
    assert lg.get(("docs",), "missing") is None
    lg.put(("docs",), "report", {"memory": "Will likes ai", "n": 1})
    first = lg.get(("docs",), "report")
    value = {"memory": "Will likes ai", "n": 1}
    assert (first.namespace, first.key, first.value) == (("docs",), "report", value)
    clock.advance(seconds=5)
    lg.put(("docs",), "report", {"memory": "Will likes ai", "n": 2})  # same text, new value
    second = lg.get(("docs",), "report")
    assert second.value["n"] == 2
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    lg.delete(("docs",), "report")
    assert lg.get(("docs",), "report") is None
    lg.delete(("docs",), "report")  # deleting nothing is not an error
    lg.put(("docs",), "report", {"memory": "again"})
    assert lg.get(("docs",), "report").created_at > first.created_at  # a new item


def test_search_filters_pagination_and_prefix(lg):
    for i in range(12):
        lg.put(("users", f"u{i % 3}"), f"k{i}", {"n": i, "tag": "even" if i % 2 == 0 else "odd"})
    lg.put(("usersX",), "other", {"n": 100, "tag": "even"})
    everything = lg.search(("users",), limit=100)
    assert {item.key for item in everything} == {f"k{i}" for i in range(12)}  # not usersX
    assert [i.key for i in everything] == [f"k{i}" for i in reversed(range(12))]  # newest first
    assert {i.key for i in lg.search(("users", "u1"), limit=100)} == {"k1", "k4", "k7", "k10"}
    even = lg.search(("users",), filter={"tag": "even"}, limit=100)
    assert sorted(i.value["n"] for i in even) == [0, 2, 4, 6, 8, 10]
    ranged = lg.search((), filter={"n": {"$gte": 4, "$lt": 7}}, limit=100)
    assert sorted(i.value["n"] for i in ranged) == [4, 5, 6]
    assert [i.value["n"] for i in lg.search(("users",), filter={"n": {"$ne": 3}}, limit=3)] == [
        11,
        10,
        9,
    ]
    page = lg.search(("users",), limit=4, offset=4)
    assert [i.key for i in page] == ["k7", "k6", "k5", "k4"]
    with pytest.raises(InvalidInput, match="unknown operator"):
        lg.search(("users",), filter={"n": {"$regex": "x"}})
    with pytest.raises(InvalidInput, match="unknown operator"):
        lg.search(("nothing-here",), filter={"n": {"$regex": "x"}})  # refused before reading


def test_semantic_search_ranks_by_the_index_fields(store):
    lg = HiveMemStore(store, index={"fields": ["text"]})
    docs = [
        ("doc1", {"text": "short text"}),
        ("doc2", {"text": "longer text document"}),
        ("doc3", {"text": "longest text document here"}),
        ("doc4", {"description": "text in description field"}),
        ("doc5", {"text": "the deploy freeze starts on Friday", "owner": "ops"}),
    ]
    for key, value in docs:
        lg.put(("test",), key, value)
    store.flush()
    hits = lg.search(("test",), query="deploy freeze friday")
    assert hits[0].key == "doc5" and hits[0].score > 0
    assert hits[0].value == {"text": "the deploy freeze starts on Friday", "owner": "ops"}
    assert lg.search(("test",), query="deploy freeze", filter={"owner": "nobody"}) == []
    # the item's text is its field; a put's own index overrides the store's fields
    assert store.scope("test").get("doc5").content == "the deploy freeze starts on Friday"
    lg.put(("test",), "doc6", {"title": "Quarterly", "body": "x"}, index=["title"])
    assert store.scope("test").get("doc6").content == "Quarterly"
    assert store.scope("test").get("doc4").content == '{"description": "text in description field"}'


def test_index_with_an_embedding_function_says_where_the_embedder_is_set(store):
    with pytest.raises(InvalidInput, match=r"hivemem.open\(\.\.\., embedder=\.\.\.\)"):
        HiveMemStore(store, index={"dims": 1536, "embed": "openai:text-embedding-3-small"})


def test_ttl_expires_and_reads_refresh_it(store, clock):
    lg = HiveMemStore(store, ttl={"refresh_on_read": True, "default_ttl": 10})
    lg.put(("s",), "kept", {"v": 1})  # default_ttl: 10 minutes
    lg.put(("s",), "never", {"v": 2}, ttl=None)
    lg.put(("s",), "short", {"v": 3}, ttl=1)
    clock.advance(minutes=8)
    assert lg.get(("s",), "kept").value == {"v": 1}  # read at 8 min: restarts the 10 minutes
    clock.advance(minutes=8)  # 16 min after the put, 8 after the read
    assert lg.get(("s",), "kept", refresh_ttl=False) is not None
    assert lg.get(("s",), "short") is None
    assert {i.key for i in lg.search(("s",))} == {"kept", "never"}
    clock.advance(minutes=11)
    assert lg.get(("s",), "kept") is None
    assert [i.key for i in lg.search(("s",))] == ["never"]
    lg.put(("s",), "short", {"v": 4}, ttl=5)  # an expired key takes a new item
    assert lg.get(("s",), "short").value == {"v": 4}


def test_batch_and_abatch_return_one_result_per_op_in_order(lg):
    ops = [
        PutOp(("a",), "x", {"v": 1}),
        GetOp(("a",), "x"),
        PutOp(("a",), "x", {"v": 2}),
        GetOp(("a",), "x"),
        SearchOp(("a",), None, 10, 0, None),
        PutOp(("a",), "x", None),
        GetOp(("a",), "x"),
    ]
    results = lg.batch(ops)
    assert results[0] is None and results[1].value == {"v": 1} and results[3].value == {"v": 2}
    assert [i.value for i in results[4]] == [{"v": 2}] and results[6] is None

    async def run():
        await lg.aput(("b", "c"), "k", {"v": 1})
        got = await asyncio.gather(lg.aget(("b", "c"), "k"), lg.asearch(("b",)))
        return got, await lg.alist_namespaces(prefix=("b",))

    (item, found), spaces = asyncio.run(run())
    assert item.value == {"v": 1} and [i.key for i in found] == ["k"] and spaces == [("b", "c")]


# ---------------------------------------------------------------- what HiveMem adds


def test_every_put_is_a_version_in_the_history(store, lg):
    for n in range(3):
        lg.put(("prefs",), "theme", {"theme": ["light", "dark", "solarized"][n]})
    chain = store.scope("prefs").history("theme")
    assert [m.attributes["value"]["theme"] for m in chain] == ["light", "dark", "solarized"]
    assert [m.status.value for m in chain] == ["superseded", "superseded", "active"]


def test_memories_of_other_front_ends_are_items(store, lg):
    mem = store.scope("team")
    keyed = mem.save("Never deploy on Fridays", key="deploy")
    loose = mem.save("The staging database is Postgres 16")
    assert lg.get(("team",), "deploy").value == {"content": keyed.content}
    assert lg.get(("team",), loose.id).value == {"content": loose.content}
    assert {i.key for i in lg.search(("team",))} == {"deploy", loose.id}


def test_a_vault_secret_never_comes_back(store, lg):
    secret = "hunter2-Zq8v-very-secret"
    store.vault("users.alice").set("db", secret, secret=True)
    lg.put(("users", "alice"), "db", {"text": f"the database password is {secret}"})
    item = lg.get(("users", "alice"), "db")
    assert secret not in repr(item.value)
    store.flush()
    found = lg.search(("users",), query="database password")
    assert found and all(secret not in repr(i.value) for i in found)
    assert all(secret not in m.content for m in store.iter_memories())


def test_hostile_input_is_stored_exactly_or_refused_clearly(lg):
    hostile = {
        "q": "'; DROP TABLE memories; --",
        "fts": 'NEAR("a" "b") OR * AND -x',
        "unicode": "Zoë 😀 \u202e",
        "nested": {"a": [1, {"b": None}]},
    }
    lg.put(("users", "x' OR '1'='1"), 'key"; --', hostile)
    assert lg.get(("users", "x' OR '1'='1"), 'key"; --').value == hostile
    assert lg.search(("users",), query='NEAR("a" "b") OR *')[0].value == hostile
    assert lg.search(("users",), filter={"q": "'; DROP TABLE memories; --"})[0].value == hostile
    with pytest.raises(InvalidInput):
        lg.put(("users",), "bad\x00key", {"v": 1})
    with pytest.raises(InvalidInput):
        lg.put(("u" * 300,), "k", {"v": 1})  # a scope name past max_scope_chars
    with pytest.raises(InvalidInput, match="JSON"):
        lg.put(("users",), "k", ["not", "a", "mapping"])  # type: ignore[arg-type]


def test_items_survive_reopening_the_file(db_path):
    with hivemem.open(db_path, embedder="hash") as store:
        HiveMemStore(store).put(("a",), "k", {"v": [1, 2]})
    with hivemem.open(db_path, embedder="hash") as store:
        assert HiveMemStore(store).get(("a",), "k").value == {"v": [1, 2]}


def test_without_langgraph_the_import_names_the_extra(tmp_path):
    code = (
        "import sys; sys.modules['langgraph'] = None\n"
        "import hivemem\n"
        "try:\n"
        "    import hivemem.integrations.langgraph\n"
        "except hivemem.MissingDependency as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'hivemem[langgraph]'" in done.stdout, done.stderr


def test_ttl_is_minutes_from_the_put(store, clock):
    lg = HiveMemStore(store)
    lg.put(("t",), "k", {"v": 1}, ttl=30)
    [memory] = store.scope("t").list()
    assert abs(memory.expires_at - memory.created_at - timedelta(minutes=30)) < timedelta(seconds=1)
