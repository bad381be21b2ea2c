"""The real-long-memory bench says where HiveMem's searches spend, by pipeline stage,
beside plain FTS5's (evaluation/bench_real_long.py)."""

from __future__ import annotations

import hivemem
from hivemem.evaluation import bench_real_long as real_long
from hivemem.store.baseline import BareStore


def test_the_timings_keep_hivemems_cpu_by_stage_and_the_report_prints_it(tmp_path):
    turns = [
        {"content": f"the otter swam past the {w} near the quarry", "session_id": "s1", "role": r}
        for w, r in zip(["heron", "lake", "stone", "maple"], ["user", "assistant"] * 2, strict=True)
    ]
    questions = ["where did the otter swim?", "what is near the quarry?"]
    settings = hivemem.Settings(track_access=False)
    with hivemem.open(tmp_path / "m.db", embedder="none", settings=settings) as store:
        for n in range(len(questions)):
            store.scope(real_long._scope(n)).add_episodes(turns)
        handles = [store.scope(real_long._scope(n)) for n in range(len(questions))]
        mine, hits = real_long._timed(lambda n, q: len(handles[n].search(q, limit=3)), questions, 2)
    bare = BareStore(tmp_path / "bare.db")
    for n in range(len(questions)):
        bare.add_many(real_long._scope(n), [t["content"] for t in turns])
    theirs, _ = real_long._timed(
        lambda n, q: len(bare.search(real_long._scope(n), q, 3)), questions, 2
    )
    assert hits > 0 and mine.first.count == 2 and mine.warm.count == 4
    assert mine.first_stages["keyword"] > 0 and mine.warm_stages["keyword"] > 0
    assert {"setup", "keyword", "order"} <= set(mine.warm_stages)
    assert theirs.first_stages == {} and theirs.warm_stages == {}  # no pipeline there
    report = real_long.RealLongReport(
        "x.json", 2, 8, 40.0, (real_long.RealLongResult(3, mine, theirs, hits, 3.0),)
    )
    text = real_long.format_real_long(report)
    assert "limit  3 HiveMem CPU by stage, first / warm (ms): setup " in text
    stages = report.to_dict()["results"][0]["hivemem"]["cpu_ms_by_stage"]
    assert stages == {"first": mine.first_stages, "warm": mine.warm_stages}
    assert "cpu_ms_by_stage" not in report.to_dict()["results"][0]["plain_fts5"]
