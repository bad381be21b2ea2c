"""Deep mode (``search(..., mode="deep")``): wider lanes, query expansion from entity
aliases, and, with an LLM, query rewriting and an LLM re-rank that fall back to the
deep result on any failure. The LLM is a real local HTTP server speaking the OpenAI chat
protocol with scripted replies (``test_llm._Server``)."""

from __future__ import annotations

import json

import pytest

import hivemem
from hivemem import InvalidInput
from hivemem.providers.llm import OpenAIChatLLM
from test_llm import Reply, _Server

FILLER = [f"Notes on topic {i}: the weather report for district {i}." for i in range(12)]


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


def _fill(mem) -> None:
    mem.add_episodes(
        [{"content": t, "session_id": f"s{i}", "role": "user"} for i, t in enumerate(FILLER)],
        wait=True,
    )


def test_mode_is_checked_and_fast_is_the_default(tmp_path, clock):
    settings = hivemem.Settings(track_access=False)
    with hivemem.open(tmp_path / "m.db", clock=clock, embedder="none", settings=settings) as s:
        mem = s.scope("a")
        _fill(mem)
        assert mem.search("weather district 3") == mem.search("weather district 3", mode="fast")
        with pytest.raises(InvalidInput, match="mode"):
            mem.search("weather", mode="thorough")


def test_deep_mode_finds_a_memory_by_the_name_an_alias_stands_for(tmp_path, clock):
    # The query says "Mel"; the memory says "Melanie". With the entity lane off, fast
    # search has no word in common; deep mode adds the entity's names to the query's
    # words and the keyword lane finds it.
    settings = hivemem.Settings(entity_weight=0.0)
    with hivemem.open(tmp_path / "a.db", clock=clock, embedder="none", settings=settings) as store:
        mem = store.scope("a")
        _fill(mem)
        target = mem.save("Melanie adopted a rescue greyhound last spring.", wait=True)
        mem.alias("Melanie", "Mel")
        fast = mem.search("what did Mel do")
        assert target.id not in [h.memory.id for h in fast]
        deep = mem.search("what did Mel do", mode="deep")
        hit = next(h for h in deep if h.memory.id == target.id)
        assert "melanie" in hit.explain.matched_terms
        assert any("expanded query" in note for note in hit.explain.notes)


def test_deep_mode_keeps_the_limit_and_min_score(tmp_path, clock):
    with hivemem.open(tmp_path / "l.db", clock=clock, embedder="hash") as store:
        mem = store.scope("a")
        _fill(mem)
        hits = mem.search("weather report district", limit=3, mode="deep")
        assert len(hits) == 3
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert all(h.score >= 0.5 for h in mem.search("weather", mode="deep", min_score=0.5))


def _llm_store(tmp_path, clock, server, **options):
    llm = OpenAIChatLLM("qwen2.5:7b", base_url=server.url, max_retries=0, **options)
    return hivemem.open(tmp_path / "llm.db", clock=clock, embedder="none", llm=llm)


class _Judge:
    """Scripted LLM replies: the first request (the rewrite) gets ``rewrite``; a re-rank
    request gets 10 for each listed text holding ``answer`` and 0 for the others."""

    def __init__(self, server: _Server, rewrite: dict, answer: str) -> None:
        self.server, self.rewrite, self.answer = server, rewrite, answer

    def __bool__(self) -> bool:
        return True

    def popleft(self) -> Reply:
        if len(self.server.requests) == 1:
            return Reply(content=json.dumps(self.rewrite))
        listing = self.server.requests[-1]["messages"][-1]["content"]
        lines = [x for x in listing.splitlines() if x.startswith("[")]
        scores = [10 if self.answer in x else 0 for x in lines]
        return Reply(content=json.dumps({"scores": scores}))


def test_the_llm_rewrites_the_query_and_re_ranks_what_deep_mode_found(tmp_path, clock, server):
    with _llm_store(tmp_path, clock, server) as store:
        mem = store.scope("a")
        _fill(mem)
        pet = mem.save("Caroline adopted a grey kitten named Pixel.", wait=True)
        mem.save("Caroline's car is a grey hatchback.", wait=True)
        # The question's words miss the memory ("cat"); the rewrite's words find it.
        assert pet.id not in [h.memory.id for h in mem.search("which cat does she own?")]
        server.replies = _Judge(server, {"queries": ["grey kitten"]}, "Pixel")
        hits = mem.search("which cat does she own?", mode="deep")
        assert hits[0].memory.id == pet.id
        assert hits[0].explain.lanes["llm_rerank"]["rank"] == 1
        assert len(server.requests) == 2  # one rewrite, one re-rank
        assert "Pixel" in server.requests[1]["messages"][-1]["content"]


def test_an_llm_failure_falls_back_to_the_deep_result_and_says_so(tmp_path, clock, server):
    with _llm_store(tmp_path, clock, server, timeout=0.5) as store:
        mem = store.scope("a")
        _fill(mem)
        server.script(Reply(status=500, body={"error": {"message": "down"}}), Reply(hang=True))
        hits = mem.search("weather district 4", mode="deep")
        assert hits and "district 4" in hits[0].memory.content
        notes = " ".join(hits[0].explain.notes)
        assert "query rewriting failed" in notes and "re-rank failed" in notes


def test_the_search_tools_take_the_mode(tmp_path, clock):
    from hivemem import tools

    settings = hivemem.Settings(entity_weight=0.0)
    with hivemem.open(tmp_path / "t.db", clock=clock, embedder="none", settings=settings) as s:
        mem = s.scope("a")
        _fill(mem)
        mem.save("Melanie adopted a rescue greyhound last spring.", wait=True)
        mem.alias("Melanie", "Mel")
        for name in ("memory_search", "search_memory"):
            fast = tools.call(mem, name, {"query": "what did Mel do"})
            deep = tools.call(mem, name, {"query": "what did Mel do", "mode": "deep"})
            assert "greyhound" not in json.dumps(fast) and "greyhound" in json.dumps(deep)
            with pytest.raises(InvalidInput):
                tools.call(mem, name, {"query": "x", "mode": "slow"})


def test_the_cli_searches_deep_with_a_flag(db_path, monkeypatch):
    from click.testing import CliRunner

    from hivemem.frontends.cli import main

    monkeypatch.setenv("HIVEMEM_EMBEDDER", "none")
    monkeypatch.setenv("HIVEMEM_ENTITY_WEIGHT", "0")

    def run(*args):
        return CliRunner().invoke(main, ["--db", str(db_path), *args], prog_name="hivemem")

    assert run("add", "Melanie adopted a rescue greyhound last spring.").exit_code == 0
    with hivemem.open(db_path, embedder="none") as store:
        store.scope("default").alias("Melanie", "Mel")
    assert "greyhound" not in run("search", "what did Mel do").stdout
    deep = run("search", "what did Mel do", "--deep", "--explain")
    assert deep.exit_code == 0 and "greyhound" in deep.stdout, deep.output
