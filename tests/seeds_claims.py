"""The checks of docs/seeds.md's openhive and assistant rows (see tests/test_seeds_doc.py),
and the framework the checks of the other rows (tests/seeds_claims_more.py) use."""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import hivemem
from hivemem import InvalidInput, NotFound, Settings, run_job, tools
from hivemem.lifecycle.maintenance import job_names
from hivemem.lifecycle.maintenance.decay import factor
from hivemem.providers import calibration
from hivemem.providers import entities as ents
from hivemem.retrieval import ranking
from hivemem.types import TYPE_ALIASES, Kind, MemoryType, Status
from hivemem.write import learning

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = {
    "openhive": "## openhive",
    "assistant": "## The assistant's memory extension",
    "corvid": "## corvid-agent's memory module",
    "swarm": "## Agent Swarm's memory",
    "adr005": "## ADR 005",
    "issue14": "## Issue #14",
}


def doc_rows() -> list[tuple[str, str, str]]:
    """(section, rule, status) of every table row of the seed sections."""
    rows, section = [], None
    for line in (ROOT / "docs" / "seeds.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = next((k for k, h in SECTIONS.items() if line.startswith(h)), None)
            continue
        if section is None or not line.startswith("| ") or line.startswith(("| rule", "| item")):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        rows.append((section, cells[0], cells[1]))
    return rows


@dataclass
class Ctx:
    """What a check gets: a scratch directory and, on first use, a store on it."""

    tmp_path: Path
    opened: list = field(default_factory=list)

    def store(self, **kwargs) -> hivemem.Store:
        kwargs.setdefault("embedder", "hash")
        s = hivemem.open(self.tmp_path / f"s{len(self.opened)}.db", **kwargs)
        self.opened.append(s)
        return s

    def mem(self, scope: str = "team", **kwargs) -> hivemem.ScopedMemory:
        return self.store(**kwargs).scope(scope)


@dataclass(frozen=True)
class Check:
    section: str
    rule: str  # the start of the row's first cell
    run: Callable[[Ctx], None]
    context: bool = False  # about what the context branch changes (see the docstring)
    xfail: str | None = None  # the seed's contract the context branch makes true


CLAIMS: list[Check] = []
S = Settings()


def claim(section: str, rule: str, *, context: bool = False, xfail: str | None = None):
    def add(fn: Callable[[Ctx], None]) -> Callable[[Ctx], None]:
        CLAIMS.append(Check(section, rule, fn, context, xfail))
        return fn

    return add


def values(section: str, rule: str, check: Callable[[], object], **kw) -> None:
    """A row whose claim is values: ``check()`` asserts them."""
    claim(section, rule, **kw)(lambda c: check())


def schema(name: str) -> dict:
    return tools.tool_schema(name)["properties"]


# ---------------------------------------------------------------------------- openhive


@claim("openhive", "One SQLite store")
def _(c):
    mem = c.mem()
    mem.save("Deploys happen on Tuesdays", key="deploy")
    rows = {r[0] for r in mem.store._backend._read("SELECT name FROM sqlite_master")}
    assert {"memories", "chunks", "chunks_fts", "embedding_cache"} <= rows


@claim("openhive", "Every query goes through one data-access layer")
def _(c):
    a, b = c.store().scope("a"), None
    a.save("the secret plan is blue", key="plan")
    b = a.store.scope("b")
    assert b.search("secret plan") == []
    with pytest.raises(NotFound):
        b.get("plan")


@claim(
    "openhive",
    "Team name validated at the API boundary",
    context=True,
)
def _(c):
    c.store().scope("../evil team").save("x")  # by default: any name, bound as a parameter
    with pytest.raises(InvalidInput):  # the openhive profile holds new names to SLUG_RE
        c.store(settings=Settings(profile="openhive")).scope("../other team").save("x")


@claim("openhive", "Six types; aliases resolved at write time")
def _(c):
    assert [t.value for t in MemoryType] == [
        "identity", "lesson", "decision", "context", "reference", "historical"]  # fmt: skip
    assert TYPE_ALIASES["warning"] is MemoryType.LESSON
    mem = c.mem()
    assert mem.save("Never deploy on Friday", type="warning").type is MemoryType.LESSON
    with pytest.raises(InvalidInput, match="valid types: identity, lesson"):
        mem.save("x", type="planet")


@claim("openhive", "identity, lesson, decision, context injected", context=True)
def _(c):
    import inspect

    assert inspect.signature(hivemem.ScopedMemory.context).parameters["max_entries"].default == 50
    mem = c.mem()
    mem.save("I am the release bot", type="identity", key="who")
    mem.save("Old background", type="reference", key="ref")
    block = mem.context()
    assert "I am the release bot" in block and "Old background" not in block


@claim("openhive", "Injection format")
def _(c):
    mem = c.mem()
    mem.save("I am the release bot", type="identity", key="who")
    assert "### Identity" in mem.context() and "- **who**: I am the release bot" in mem.context()


@claim("openhive", "Entries over the budget keep their type")
def _(c):
    mem = c.mem()
    for i in range(5):
        mem.save(f"Decision number {i} about billing", type="decision", key=f"d{i}")
    mem.context(max_entries=2)
    assert {m.type for m in mem.list(limit=10)} == {MemoryType.DECISION}
    assert len(mem.search("decision billing")) == 5


@claim("openhive", "The agent reclassifies explicitly")
def _(c):
    mem = c.mem()
    mem.save("Use Postgres", type="decision", key="db")
    new = mem.save("Use Postgres", type="historical", key="db", supersede_reason="replaced")
    assert new.type is MemoryType.HISTORICAL
    assert [m.type.value for m in mem.history("db")] == ["decision", "historical"]


@claim("openhive", "Vault for counters")
def _(c):
    mem = c.mem()
    mem.store.vault("team").set("counter", 41)
    assert mem.store.vault("team").get("counter") == 41 and mem.search("counter") == []


@claim("openhive", "Learning-originated entries keyed")
def _(c):
    key = learning.learn_key("Deploy Windows", "Deploys go out on Tuesdays")
    assert re.fullmatch(r"learn:deploy-windows:[0-9a-f]+", key)


@claim("openhive", "Self-reflection detects the operational-cache")
def _(c):
    assert S.reflect_vault_versions == 24


@claim("openhive", "Large JSON blobs belong in the vault")
def _(c):
    mem = c.mem(settings=Settings(max_content_bytes=1000))
    with pytest.raises(InvalidInput):
        mem.save("x" * 2000)
    mem.store.vault("team").set("blob", {"a": [1, 2]})
    assert mem.store.vault("team").get("blob") == {"a": [1, 2]}


@claim("openhive", "A new team starts empty")
def _(c):
    mem = c.mem()
    assert mem.context() == "" and mem.search("anything") == []


@claim("openhive", "Saving under a key with an active entry")
def _(c):
    mem = c.mem()
    first = mem.save("Deploys on Tuesdays", key="deploy")
    with pytest.raises(hivemem.Conflict) as err:
        mem.save("Deploys on Fridays", key="deploy")
    assert err.value.current.id == first.id


@claim("openhive", "Hard supersede")
def _(c):
    mem = c.mem()
    old = mem.save("Deploys on Tuesdays", key="deploy")
    new = mem.save("Deploys on Fridays", key="deploy", supersede_reason="moved")
    assert new.supersedes_id == old.id and mem.get(old.id).status is Status.SUPERSEDED
    soft = mem.save("Deploys on Fridays.", key="deploy", minor=True)
    assert soft.supersedes_id == new.id


@claim("openhive", "Superseded entries stay searchable")
def _(c):
    mem = c.mem()
    mem.save("Deploys on Tuesdays", key="deploy")
    mem.save("Deploys on Fridays", key="deploy", supersede_reason="moved")
    hits = mem.search("deploys")
    assert [h.memory.is_active for h in hits] == [True, False]
    gone = mem.save("Lunch is tacos", key="lunch")
    mem.delete("lunch")
    assert gone.id not in {h.memory.id for h in mem.search("lunch tacos")}


@claim("openhive", "The supersede reason is searchable context")
def _(c):
    mem = c.mem()
    mem.save("Deploys on Tuesdays", key="deploy")
    new = mem.save("Deploys on Fridays", key="deploy", supersede_reason="the CAB meets Thursday")
    assert mem.search("CAB meets")[0].memory.id == new.id


@claim("openhive", "`updated_by` is the agent or session")
def _(c):
    mem = c.store().scope("team", actor="agent-7")
    assert mem.save("Deploys on Tuesdays").updated_by == "agent-7"


@claim("openhive", "Soft validation")
def _(c):
    from hivemem.write import audit

    text = "Never deploy on Friday: it broke prod twice"
    assert "reads like a lesson" in audit.type_suggestion(text, MemoryType.IDENTITY)
    out = tools.call(c.mem(), "memory_save", {"content": text, "type": "identity"})
    assert out["memory"]["type"] == "identity" and "lesson" in out["type_suggestion"]


@claim("openhive", "Partial unique index")
def _(c):
    sql = "SELECT sql FROM sqlite_master WHERE name = 'memories_active_key'"
    [(text,)] = c.mem().store._backend._read(sql)
    assert "WHERE" in text.upper()


values(
    "openhive",
    "Chunks of ~400 tokens",
    lambda: (S.chunk_tokens, S.chunk_overlap_tokens) == (400, 80) or pytest.fail(),
)  # noqa: E501


@claim("openhive", "Embedding cache keyed by content hash and model")
def _(c):
    mem = c.mem()
    mem.save("the same words", wait=True)
    mem.store.scope("other").save("the same words", wait=True)
    [(n,)] = mem.store._backend._read("SELECT COUNT(*) FROM embedding_cache")
    assert n == 1


@claim("openhive", "`shutdown_team` removes")
def _(c):
    mem = c.mem()
    mem.save("Deploys on Tuesdays")
    mem.purge_all()
    assert mem.list() == [] and mem.search("deploys") == []


@claim("openhive", "FTS5 keyword path with BM25 normalised")
def _(c):
    mem = c.mem(embedder="none")
    mem.save("alpha beta gamma")
    [hit] = mem.search("alpha beta")
    assert 0 < hit.explain.lanes["keyword"]["coverage"] <= 1


@claim("openhive", "Hybrid merge `0.7 × vector + 0.3 × keyword`")
def _(c):
    model = calibration.resolved(S, "all-MiniLM-L6-v2-int8:384")  # -1: the model's weights
    assert (model.fusion, model.keyword_weight, model.vector_weight) == ("minmax", 0.6, 0.4)
    assert Settings(fusion="weighted", vector_weight=0.7, keyword_weight=0.3).fusion == "weighted"


@claim("openhive", "Temporal decay: half-life 30 days", context=True)
def _(c):
    assert (S.decay_profile, S.half_life_days, S.decay_weight) == ("exponential", 30.0, 0.3)
    profile = ranking.DecayProfile.EXPONENTIAL
    assert ranking.temporal_decay(30, profile, S.half_life_days) == 0.5


values("openhive", "MMR, λ = 0.7", lambda: S.mmr_lambda == 0.7 or pytest.fail())


@claim("openhive", "`memory_save(key, content")
def _(c):
    props = schema("memory_save")
    assert "key" not in tools.tool_schema("memory_save")["required"]
    assert {"key", "content", "type", "supersede_reason"} <= set(props)
    assert S.default_type == "context"


@claim("openhive", "`memory_delete(key)` soft delete")
def _(c):
    mem = c.mem()
    saved = mem.save("x", key="k")
    tools.call(mem, "memory_delete", {"key": "k"})
    assert mem.get(saved.id).status is Status.DELETED


@claim("openhive", "`memory_search(query, max_results=5)`", context=True)
def _(c):
    assert schema("memory_search")["max_results"]["default"] == 10  # the row: "defaults to 10"
    mem = c.mem()
    mem.save("Kubernetes upgrade notes", key="k8s")
    out = tools.call(mem, "memory_search", {"query": "kubernetes"})
    assert {"key", "snippet", "score", "type", "is_active", "source"} <= set(out["results"][0])
    assert out["search_mode"] in ("hybrid", "keyword")


@claim(
    "openhive",
    "`memory_list(type)` returns all active entries",
    context=True,
)
def _(c):
    mem = c.mem()
    for i in range(25):
        mem.save(f"fact number {i}", type="context")
    out = tools.call(mem, "memory_list", {"type": "context"})
    assert len(out["memories"]) == 25


@claim("openhive", "Tools get the team implicitly")
def _(c):
    for name in tools.TOOLS:
        assert "scope" not in schema(name) and "team" not in schema(name)


@claim("openhive", "Embedding profile missing, Anthropic, or unreachable")
def _(c):
    mem = c.mem(embedder="none")
    mem.save("alpha")
    out = tools.call(mem, "memory_search", {"query": "alpha"})
    assert out["search_mode"] == "keyword" and "no embedder" in out["search_mode_reason"]
    _log_lines(c)


def _log_lines(c: Ctx) -> None:
    """The seeds' log lines: no embedder at INFO, another model's vectors a WARNING."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.INFO)
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("hivemem.lifecycle.indexer")
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    try:
        path = c.tmp_path / "log.db"
        with hivemem.open(path, embedder="hash") as s:
            s.scope("a").save("alpha", wait=True)
        with hivemem.open(path, embedder="none"):
            pass
        with hivemem.open(path, embedder=hivemem.providers.embed.HashEmbedder(dimension=32)):
            pass
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
    assert [r.levelname for r in records] == ["INFO", "WARNING"]
    assert "hivemem reindex" in records[1].getMessage()


@claim("openhive", "Supported models text-embedding-3-small")
def _(c):
    from hivemem.providers.embed import OpenAIEmbedder

    sizes = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072,
             "text-embedding-ada-002": 1536}  # fmt: skip
    for model, size in sizes.items():
        assert OpenAIEmbedder(model=model, dimension=size, api_key="k").identity.startswith(model)


@claim("openhive", "Fail open on reads, fail loud on writes")
def _(c):
    class Down:
        identity, dimension = "down:8", 8

        def embed_batch(self, texts):
            raise ConnectionError("endpoint down")

    mem = c.mem(embedder=Down())
    mem.save("alpha beta")
    assert mem.search("alpha")[0].memory.content == "alpha beta"  # reads fail open
    with pytest.raises(ConnectionError):
        mem.store.flush()  # the vectors asked for: loud


@claim("openhive", "Concurrent writes: WAL")
def _(c):
    [(mode,)] = c.mem().store._backend._read("PRAGMA journal_mode")
    assert mode == "wal"


@claim("openhive", "Credential scrubber")
def _(c):
    assert S.credential_policy == "redact"
    saved = c.mem().save("the staging key is sk-abcdefghijklmnopqrstuvwx")
    assert "sk-abcdefghijklmnopqrstuvwx" not in saved.content


@claim("openhive", "CI tests of cross-team access attempts")
def _(c):
    a = c.store().scope("a")
    saved = a.save("private")
    with pytest.raises(NotFound):
        a.store.scope("b").get(saved.id)


@claim("openhive", "Deferred: usage signal", context=True)
def _(c):
    assert S.max_access_boost == 1.5
    mem = c.mem()
    saved = mem.save("alpha")
    mem.get(saved.id)
    mem.store.flush_access()
    assert mem.get(saved.id).access_count >= 1


values(
    "openhive",
    "Deferred: cross-encoder re-rank",
    lambda: (S.reranker, S.rerank_depth) == ("none", 30) or pytest.fail(),
)  # noqa: E501


@claim("openhive", "Deferred: LLM query expansion")
def _(c):
    mem = c.mem()
    mem.save("alpha beta")
    assert mem.search("alpha", mode="deep")[0].memory.content == "alpha beta"


@claim("openhive", "Deferred: query-time type classification")
def _(c):
    assert "type" in schema("memory_search")["filters"]["properties"]


# --------------------------------------------------------------------------- assistant


@claim("assistant", "One `memories` table, `kind`")
def _(c):
    assert {k.value for k in Kind} >= {"episode", "fact", "reflection", "summary", "note"}


@claim("assistant", "Ids prefixed by kind")
def _(c):
    saved = c.mem().save("alpha")
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", saved.id)
    assert saved.created_at.tzinfo is not None


values(
    "assistant", "`decay_rate` default 0.1", lambda: S.default_decay_rate == 0.01 or pytest.fail()
)  # noqa: E501


@claim("assistant", "`entities` with type, aliases")
def _(c):
    assert {t.value for t in ents.EntityType} >= {
        "person", "organization", "project", "location", "tool", "concept", "email", "url",
        "date", "other", "mention", "hashtag"}  # fmt: skip
    mem = c.mem()
    mem.save("Hey Melanie, see you", kind="fact")
    mem.alias("Melanie", "Mel")
    entity, _ = mem.entity("Mel")
    assert entity.canonical == "melanie" and entity.mention_count == 1


@claim("assistant", "`memory_entities` junction")
def _(c):
    mem = c.mem()
    saved = mem.save("Hey Melanie, see you", kind="fact")
    assert [m.id for m in mem.entity("Melanie")[1]] == [saved.id]


@claim("assistant", "FTS5 kept in sync")
def _(c):
    mem = c.mem(embedder="none")
    saved = mem.save("alpha", key="k")
    mem.save("omega", key="k", supersede_reason="r")
    assert mem.search("omega")[0].memory.supersedes_id == saved.id


@claim("assistant", "`vec_memories` locked to the configured dimension")
def _(c):
    _log_lines(c)


@claim("assistant", "`memory_metadata` records the embedding dimensions")
def _(c):
    mem = c.mem()
    mem.save("alpha", wait=True)
    assert mem.store.vectors.recorded_identity() == "hash-bow:256"


@claim("assistant", "256-dimensional `text-embedding-3-large`")
def _(c):
    from hivemem.providers.embed import OpenAIEmbedder

    e = OpenAIEmbedder(model="text-embedding-3-large", dimensions=256, api_key="k")
    assert e.identity == "text-embedding-3-large@256:256"


@claim("assistant", "`sessions_consolidations`")
def _(c):
    mem = c.mem()
    mem.add_episode("hello", session_id="s1", role="user")
    [info] = mem.sessions()
    assert info.session_id == "s1" and info.consolidated_at is None


values(
    "assistant", "New session id", lambda: S.consolidate_on_session_switch is False or pytest.fail()
)  # noqa: E501


@claim("assistant", "RRF `Σ 1/(60 + rank)`")
def _(c):
    assert S.rrf_k == 60


@claim("assistant", "Entity lane always on")
def _(c):
    mem = c.mem(embedder="none")
    mem.save("Hey Melanie, see you at noon", kind="fact")
    assert "entity" in mem.search("melanie")[0].explain.lanes


@claim("assistant", "Context: hybrid search over facts, limit 5", context=True)
def _(c):
    mem = c.mem()
    mem.add_episode("I adopted a cat called Miso", session_id="old", role="user")
    mem.add_episode("My cat Miso sleeps a lot", session_id="now", role="user")
    block = mem.context("what is my cat called?", session_id="now")
    assert "adopted a cat called Miso" in block and "sleeps a lot" not in block


@claim("assistant", "Nightly: enrichment 02:00")
def _(c):
    sched = S.maintenance_schedule
    assert (sched["enrich"], sched["consolidate"], sched["decay"], sched["reflect"]) == (
        "0 2 * * *", "0 3 * * *", "0 4 * * *", "0 3 * * 0")  # fmt: skip


values("assistant", "Consolidator loop", lambda: S.consolidate_batch_size == 30 or pytest.fail())
values("assistant", "Two-level dedup", lambda: S.dedup_jaccard == 0.75 or pytest.fail())
values(
    "assistant",
    "Conflicts → old fact at 0.3",
    lambda: S.conflict_confidence == 0.3 or pytest.fail(),
)  # noqa: E501
values("assistant", "Conflicts judged by the LLM", lambda: S.llm_conflicts is True or pytest.fail())  # noqa: E501


@claim("assistant", "Weekly reflection")
def _(c):
    assert (S.reflect_min_interval_days, S.reflect_min_facts, S.reflect_window_days) == (6, 3, 7)


@claim("assistant", "Reflections tagged `weekly`")
def _(c):
    mem = c.mem()
    for text in ("Ana prefers tea", "Ana moved to Oslo", "Ana works at Globex"):
        mem.save(text, kind="fact")
    run_job(mem.store, "reflect", "team")
    [reflection] = mem.list(kind="reflection")
    assert "weekly" in reflection.tags and reflection.decay_rate == 0


@claim("assistant", "NER providers regex / spaCy / LLM")
def _(c):
    assert "enrich" in job_names() and {
        ents.EntityType.PERSON, ents.EntityType.OTHER} == ents.GUESSED_TYPES  # fmt: skip


@claim("assistant", "Regex finds mentions, hashtags, emails, URLs, dates")
def _(c):
    found = {m.type.value for m in ents.extract("@bob #ship a@b.io https://x.io on 8 May 2023")}
    assert found == {"mention", "hashtag", "email", "url", "date"}


@claim("assistant", "Enrichment skipped when no spaCy or LLM")
def _(c):
    mem = c.mem(settings=Settings(enrich_spacy_model="no_such_pipeline"))
    mem.save("met acme corp in berlin", kind="fact")
    [result] = run_job(mem.store, "enrich", "team")
    assert result.status == "skipped"


values(
    "assistant",
    "Enrichment of facts and episodes",
    lambda: S.enrich_below_entities == 2 or pytest.fail(),
)  # noqa: E501


@claim("assistant", "Decay `confidence × exp(−rate × days since access)`")
def _(c):
    assert (S.decay_from, S.decay_prune_below) == ("last_access", 0.05)
    assert math.isclose(factor("exponential", 0.1, 10), math.exp(-1.0))


@claim("assistant", "`confirm_fact`: `decay_rate = 0`, confidence 1")
def _(c):
    mem = c.mem()
    saved = mem.save("alpha", confidence=0.5)
    out = tools.call(mem, "confirm_fact", {"memory_id": saved.id})
    assert (out["memory"]["decay_rate"], out["memory"]["confidence"]) == (0.0, 1.0)


@claim("assistant", "Orchestrator tools")
def _(c):
    assert {"search_memory", "remember_fact", "correct_fact", "confirm_fact", "memory_stats",
            "get_entity_info"} <= set(tools.select("assistant"))  # fmt: skip


@claim("assistant", "Consolidator tools internal")
def _(c):
    assert not {n for n in tools.TOOLS if n.startswith(("extract", "consolidator"))}


@claim("assistant", "Hot path < 50 ms, no LLM")
def _(c):
    class Refuses:
        identity = "refuses"

        def complete(self, *a, **k):
            raise AssertionError("the write path called the LLM")

    c.mem(llm=Refuses()).add_episode("hello there", session_id="s", role="user")


values(
    "assistant",
    "Enrichment runs before consolidation",
    lambda: (
        S.maintenance_schedule["enrich"] < S.maintenance_schedule["consolidate"] or pytest.fail()
    ),
)  # noqa: E501
values("assistant", "Session memory (in-conversation)", lambda: None)
