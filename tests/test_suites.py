"""`hivemem eval all`: four suites from one run, each beside plain BM25."""

from __future__ import annotations

import gzip
import json

import pytest
from click.testing import CliRunner

from hivemem import Settings
from hivemem.evaluation.suites import format_suite, locomo_suite, longmemeval_suite, run_suite
from hivemem.frontends.cli import main

SETTINGS = Settings(embedder="hash")


def _locomo(tmp_path):
    turns = [
        ("D1:1", "Ann", "I adopted a puppy named Rex last week"),
        ("D1:2", "Bob", "Congrats! What breed is he?"),
        ("D1:3", "Ann", "A beagle, he loves the park"),
        ("D1:4", "Bob", "My sister moved to Lisbon for work"),
    ]
    data = [
        {
            "sample_id": "conv-x",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bob",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [{"speaker": s, "dia_id": d, "text": t} for d, s, t in turns],
            },
            "observation": {
                "session_1_observation": {
                    "Ann": [["Ann adopted a beagle puppy called Rex.", "D1:1"]],
                    "Bob": [["Bob's sister lives in Lisbon.", ["D1:4"]]],
                }
            },
            "session_summary": {"session_1_summary": "Ann and Bob talked about a new puppy."},
            "qa": [
                {"question": "What is the puppy's name?", "evidence": ["D1:1"], "category": 4},
                {"question": "Where did Bob's sister move?", "evidence": ["D1:4"], "category": 1},
                {"question": "Who adopted a cat?", "evidence": ["D1:9"], "category": 5},
            ],
        }
    ]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data))
    return path


def _longmemeval(tmp_path):
    def session(text, answer=None):
        turn = {"role": "user", "content": text}
        if answer is not None:
            turn["has_answer"] = answer
        return [turn, {"role": "assistant", "content": "Noted."}]

    question = {
        "question_id": "q1",
        "question_type": "single-session-user",
        "question": "What is the name of my parrot?",
        "question_date": "2023/06/01 (Thu) 10:00",
        "answer": "Kiwi",
        "answer_session_ids": ["s2"],
        "haystack_session_ids": ["s1", "s2", "s3"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21"] * 3,
        "haystack_sessions": [
            session("We cooked pasta with basil"),
            session("My parrot is named Kiwi", answer=True),
            session("The printer jammed again"),
        ],
    }
    path = tmp_path / "lme.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump([question], handle)
    return path


def test_mixed_locomo_stores_observations_as_facts_and_counts_the_turns_they_cite(tmp_path):
    suite = locomo_suite(_locomo(tmp_path), mixed=True)
    [unit] = suite.units
    kinds = [d.kind for d in unit.docs]
    assert kinds.count("episode") == 4 and kinds.count("fact") == 2
    assert kinds.count("summary") == 1
    facts = {d.content: d.labels for d in unit.docs if d.kind == "fact"}
    assert facts["Bob's sister lives in Lisbon."] == ("D1:4",)
    assert all(d.session is None for d in unit.docs if d.kind != "episode")
    assert [i.gold for i in unit.items] == [("D1:1",), ("D1:4",)]  # D1:9 does not exist
    report = run_suite(suite, SETTINGS)
    assert report.memories == 7
    assert report.overall["hivemem"]["hit@10"] == 1.0
    assert set(report.overall["bm25"]) == {"hit@1", "hit@5", "hit@10"}
    assert report.answer_score_p5 is not None and 0 < report.answer_score_p5 <= 1
    table = format_suite(report)
    assert "BM25 hit@10" in table and "search p50" in table


def test_longmemeval_reads_gzip_and_scores_sessions_and_turns(tmp_path):
    suite = longmemeval_suite(_longmemeval(tmp_path))
    report = run_suite(suite, SETTINGS, ablation=True)
    assert report.overall["hivemem"] == {
        "session@5": 1.0,
        "session@10": 1.0,
        "turn@5": 1.0,
        "turn@10": 1.0,
    }
    assert report.overall["bm25"]["turn@5"] == 1.0
    assert set(report.ablation) >= {"- window", "- session prior", "- vectors", "- diversity"}
    assert "+ 2 kB system prompt" in format_suite(report)


def test_eval_all_runs_the_four_suites(tmp_path, monkeypatch):
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "all",
            "--locomo",
            str(_locomo(tmp_path)),
            "--longmemeval",
            str(_longmemeval(tmp_path)),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    names = [r["suite"] for r in json.loads(result.stdout)]
    assert names == ["LongMemEval", "LoCoMo episodes", "LoCoMo mixed", "Paraphrase"]
    only = CliRunner().invoke(
        main, ["eval", "all", "--locomo", str(_locomo(tmp_path)), "--suite", "locomo"]
    )
    assert only.exit_code == 0, only.output
    assert "LoCoMo episodes" in only.output and "LoCoMo mixed" not in only.output


def test_a_kept_store_is_reused_by_the_next_run_and_scores_the_same(tmp_path, monkeypatch):
    from hivemem.evaluation import suites

    suite = locomo_suite(_locomo(tmp_path), mixed=True)
    keep = tmp_path / "kept"
    first = run_suite(suite, SETTINGS, keep=keep)
    assert len(list(keep.glob("*.db"))) == 1 and len(list(keep.glob("*.labels.json"))) == 1

    def no_ingest(*args, **kwargs):
        raise AssertionError("a kept store must not be stored again")

    monkeypatch.setattr(suites, "_ingest", no_ingest)
    again = run_suite(suite, SETTINGS, keep=keep)
    assert again.overall == first.overall and again.by_category == first.by_category
    assert again.memories == first.memories == 7
    # Another data set (or embedder) never reuses it: a store of its own is built.
    monkeypatch.undo()
    other = locomo_suite(_locomo(tmp_path), mixed=False)
    run_suite(other, SETTINGS, keep=keep)
    run_suite(suite, Settings(embedder="none"), keep=keep)
    assert len(list(keep.glob("*.db"))) == 3


def test_eval_all_keep_option_keeps_the_stores(tmp_path):
    keep = tmp_path / "kept"
    args = ["eval", "all", "--locomo", str(_locomo(tmp_path)), "--keep", str(keep), "--json"]
    first = CliRunner().invoke(main, args, env={"HIVEMEM_EMBEDDER": "hash"})
    assert first.exit_code == 0, first.output
    assert len(list(keep.glob("*.db"))) == 3  # episodes, mixed and paraphrase
    second = CliRunner().invoke(main, args, env={"HIVEMEM_EMBEDDER": "hash"})
    assert second.exit_code == 0, second.output
    before, after = json.loads(first.stdout), json.loads(second.stdout)
    assert [r["overall"] for r in before] == [r["overall"] for r in after]
    assert all(r["ingest_seconds"] < 1 for r in after)


def test_a_suite_store_is_embedded_in_fixed_batches_whatever_the_threads_do(tmp_path, monkeypatch):
    # The bundled int8 models give a text a slightly different vector in another batch,
    # so a store built while the background worker raced the writes scored a few
    # questions differently from one build to the next: the build embeds everything at
    # the end, in the queue's order, in full batches.
    import hivemem.facade.database as database
    from hivemem.evaluation.suites import Doc, Item, Suite, Unit
    from hivemem.providers.embed import HashEmbedder

    calls: list[int] = []

    class Recording(HashEmbedder):
        def embed_batch(self, texts):
            calls.append(len(texts))
            return super().embed_batch(texts)

    monkeypatch.setattr(database, "get_embedder", lambda name, **_: Recording())
    docs = tuple(
        Doc(
            f"turn {i} about topic {i % 7} and word{i}",
            "episode",
            (f"g{i}",),
            session=f"s{i // 10}",
        )
        for i in range(150)
    )
    suite = Suite("tiny", (Unit("u", docs, (Item("topic 3", "1", ("g3",)),)),), ("hit@1",), 10)
    run_suite(suite, Settings(embedder="hash", embed_batch_size=64))
    assert calls[:3] == [64, 64, 22]


def test_a_store_whose_embedding_was_cut_short_is_finished_not_built_again(tmp_path, monkeypatch):
    # LongMemEval's final embedding takes an hour with a large model: a run stopped in it
    # left a store with every document stored, and the next run threw it away and began
    # again. Now the next run embeds what the queue still holds, in the batches an
    # unbroken run would have used, and scores as that run does.
    import hivemem.facade.database as database
    from hivemem.evaluation import suites
    from hivemem.evaluation.suites import Doc, Item, Suite, Unit
    from hivemem.providers.embed import HashEmbedder

    calls: list[int] = []
    fail_after: list[int] = []

    class Stopping(HashEmbedder):
        def embed_batch(self, texts):
            if fail_after and len(calls) >= fail_after[0]:
                raise KeyboardInterrupt  # the process is stopped mid-embedding
            calls.append(len(texts))
            return super().embed_batch(texts)

    monkeypatch.setattr(database, "get_embedder", lambda name, **_: Stopping())
    docs = tuple(
        Doc(
            f"turn {i} about topic {i % 7} and word{i}",
            "episode",
            (f"g{i}",),
            session=f"s{i // 10}",
        )
        for i in range(150)
    )
    items = (Item("topic 3", "1", ("g3",)), Item("word42", "1", ("g42",)))
    suite = Suite("tiny", (Unit("u", docs, items),), ("hit@1",), 10)
    settings = Settings(embedder="hash", embed_batch_size=64)
    unbroken = run_suite(suite, settings, keep=tmp_path / "unbroken")
    assert calls[:3] == [64, 64, 22] and set(calls[3:]) == {1}  # then the questions

    calls.clear()
    fail_after.append(1)
    keep = tmp_path / "kept"
    with pytest.raises(KeyboardInterrupt):
        run_suite(suite, settings, keep=keep)
    assert calls == [64]
    assert not list(keep.glob("*.labels.json")) and len(list(keep.glob("*.stored.json"))) == 1

    def no_ingest(*args, **kwargs):
        raise AssertionError("a stored suite must not be stored again")

    monkeypatch.setattr(suites, "_ingest", no_ingest)
    calls.clear()
    fail_after.clear()
    finished = run_suite(suite, settings, keep=keep)
    assert calls[:2] == [64, 22] and set(calls[2:]) == {1}  # the queue's rest, then questions
    assert len(list(keep.glob("*.labels.json"))) == 1 and not list(keep.glob("*.stored.json"))
    assert finished.memories == unbroken.memories == 150
    assert finished.overall == unbroken.overall
    calls.clear()
    assert run_suite(suite, settings, keep=keep).overall == unbroken.overall
    assert calls and set(calls) == {1}  # complete now: only the questions are embedded
