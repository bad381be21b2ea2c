"""Acknowledged writes after ``kill -9`` (issue 11): writers and a process whose embedding
worker is busy are killed with SIGKILL; after the store is reopened every acknowledged
memory is there, has its chunks and its keyword index entry, and is found by its unique
token at rank 1.

The root cause of the outside report ("2 of 60 acknowledged memories not found by their
unique token, 20 other hits came back") was ranking, not lost index entries: a memory
whose only match is the exact token (keyword lane) was pushed below loosely related
vector hits by the keyword lane's 0.6 weight, the session prior, MMR and the access
boost the repeated searches gave those vector hits. ``retrieval._exact_first`` ranks
memories holding every query term first. The ranking test below uses the bundled model
(the hash embedder finds no vector hits for a nonsense token, so it cannot show the
defect); the kill rounds use the hash embedder.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import hivemem
from hivemem.evaluation import doctor

pytestmark = pytest.mark.slow
SRC = str(Path(hivemem.__file__).resolve().parents[1])
WORDS = [
    "deploy",
    "server",
    "database",
    "cache",
    "queue",
    "worker",
    "build",
    "release",
    "test",
    "monitor",
    "alert",
    "user",
    "billing",
    "report",
    "invoice",
    "schedule",
    "backup",
    "restore",
]

WRITER = textwrap.dedent(
    """
    import json, random, sys, time
    import hivemem
    from hivemem.providers.embed import HashEmbedder

    path, log, name, mode = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    words = sys.argv[5].split()

    class SlowHash(HashEmbedder):
        # The hash embedder, slowed down so the worker is inside a batch when killed.
        def embed_batch(self, texts):
            with open(log + ".embedding", "a") as fp:
                fp.write("batch\\n")
            time.sleep(0.05)
            return super().embed_batch(texts)

    embedder = SlowHash() if mode == "worker" else "hash"
    store = hivemem.open(path, embedder=embedder)
    mem = store.scope("team")
    rng = random.Random(name)
    with open(log, "a") as fp:
        i = 0
        while True:
            token = f"zq{name}x{i:05d}k"
            text = " ".join(rng.choice(words) for _ in range(12)) + f" {token} " + " ".join(
                rng.choice(words) for _ in range(6)
            )
            if mode == "worker":  # batches: the worker always has a queue to embed
                turns = [{"content": text.replace(token, f"{token}b{j}"), "session_id":
                          f"s-{name}-{i}", "role": "user"} for j in range(20)]
                made = mem.add_episodes(turns)
                for j, m in enumerate(made):
                    fp.write(json.dumps({"id": m.id, "token": f"{token}b{j}"}) + "\\n")
            elif i % 3:
                m = mem.add_episode(text, session_id=f"s-{name}-{i // 40}", role="user")
                fp.write(json.dumps({"id": m.id, "token": token}) + "\\n")
            else:
                m = mem.save(text, tags=["fact"])
                fp.write(json.dumps({"id": m.id, "token": token}) + "\\n")
            fp.flush()
            i += 1
    """
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _acked(log: Path) -> list[dict[str, str]]:
    if not log.exists():
        return []
    lines = log.read_text().split("\n")[:-1]  # a torn last line was never acknowledged
    return [json.loads(line) for line in lines if line.endswith("}")]


def kill_round(path: Path, folder: Path, label: str, mode: str, writers: int, rng) -> list:
    """Start ``writers`` processes, let each acknowledge some writes (for ``worker``:
    until its embedding worker is inside a batch), SIGKILL them all; the acked writes."""
    logs = [folder / f"{label}-{w}.log" for w in range(writers)]
    children = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WRITER,
                str(path),
                str(log),
                f"{label}w{w}",
                mode,
                " ".join(WORDS),
            ],
            stderr=subprocess.PIPE,
            env=_env(),
        )
        for w, log in enumerate(logs)
    ]
    try:
        deadline = time.monotonic() + 90
        while not all(len(_acked(log)) >= 5 for log in logs) or (
            mode == "worker" and not all(Path(f"{log}.embedding").exists() for log in logs)
        ):
            for child in children:
                assert child.poll() is None, child.communicate()[1].decode()[-2000:]
            assert time.monotonic() < deadline, "the writers made no progress"
            time.sleep(0.01)
        time.sleep(rng.uniform(0.05, 0.4))
        for child in children:
            os.kill(child.pid, signal.SIGKILL)
        for child in children:
            child.wait(timeout=30)
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    assert all(child.returncode == -signal.SIGKILL for child in children)
    return [a for log in logs for a in _acked(log)]


def assert_every_acknowledged_write_is_found(path: Path, acked: list[dict[str, str]]) -> dict:
    """Every acked memory: stored, chunked, in the keyword index once, rank 1 by token."""
    with hivemem.open(path, embedder="hash") as store:
        mem = store.scope("team")
        backend = store._backend
        ranks = []
        for entry in acked:
            memory = mem.get(entry["id"])
            assert entry["token"] in memory.content
            indexed = backend._read(  # its own keyword index entry, read directly
                "SELECT COUNT(*) FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
                "WHERE chunks_fts MATCH ? AND c.memory_id = ?",
                [f'"{entry["token"]}"', entry["id"]],
            )[0][0]
            assert indexed == 1, (entry, indexed)
            hits = mem.search(entry["token"], limit=20)
            ids = [h.memory.id for h in hits]
            assert entry["id"] in ids, (entry, [h.memory.content[:60] for h in hits])
            rank = ids.index(entry["id"]) + 1
            # Only memories holding the token too (a session summary drawn from it) may
            # rank above it.
            assert all(entry["token"] in h.memory.content for h in hits[:rank]), entry
            ranks.append(rank)
        report = doctor.diagnose(store)
        by_name = {c.name: c for c in report.checks}
        assert by_name["integrity"].ok and by_name["chunks"].ok, report.failed
        return {"acked": len(acked), "ranks": ranks}


def run_rounds(tmp_path: Path, rounds: int, writers: int, sample: int | None) -> dict:
    path = tmp_path / "memory.db"
    rng = random.Random(7)
    acked: list[dict[str, str]] = []
    for r in range(rounds):
        mode = "worker" if r % 2 else "writers"
        acked += kill_round(path, tmp_path, f"r{r}", mode, writers, rng)
    chosen = acked if sample is None else random.Random(1).sample(acked, min(sample, len(acked)))
    return assert_every_acknowledged_write_is_found(path, chosen)


def test_kill_9_of_writers_and_of_a_busy_embedding_worker_loses_no_acknowledged_write(
    tmp_path,
):
    result = run_rounds(tmp_path, rounds=2, writers=2, sample=60)
    assert result["acked"] >= 20


@pytest.mark.long
def test_kill_9_rounds_long(tmp_path):
    rounds = int(os.environ.get("HIVEMEM_KILL_ROUNDS", "20"))
    result = run_rounds(tmp_path, rounds=rounds, writers=3, sample=None)
    print(f"\nRELIABILITY kill9 rounds={rounds} acked={result['acked']} lost=0")


def test_a_unique_token_finds_its_memory_first_among_many_vector_hits(tmp_path):
    """The ranking defect behind the report, without a kill: with the bundled model, a
    memory whose only match is its unique token came back below rank 1, or not at all,
    once repeated searches had boosted the vector hits they keep returning."""
    rng = random.Random(5)
    with hivemem.open(tmp_path / "memory.db", embedder="local") as store:
        mem = store.scope("team")
        tokens = {}
        for s in range(12):
            turns = []
            for i in range(30):
                token = f"zq{s:02d}x{i:03d}k"
                text = " ".join(rng.choice(WORDS) for _ in range(12))
                turns.append({"content": f"{text} {token}", "session_id": f"s{s}", "role": "user"})
            for turn, made in zip(turns, mem.add_episodes(turns, wait=True), strict=True):
                tokens[turn["content"].split()[-1]] = made.id
        ranks = {}
        for token in rng.sample(sorted(tokens), 40):
            hits = mem.search(token, limit=20)
            ids = [h.memory.id for h in hits]
            assert tokens[token] in ids, token
            rank = ids.index(tokens[token]) + 1
            # Only memories holding the token too (a summary drawn from it) rank above it.
            ranks[token] = all(token in h.memory.content for h in hits[:rank])
    assert all(ranks.values()), ranks
