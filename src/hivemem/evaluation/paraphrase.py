"""The paraphrase suite (``hivemem eval paraphrase``): answers found by meaning only.

Each question is paired with one answer turn that shares no content word with it (the
keyword index's own tokens: stopwords dropped, porter stems, so plain BM25 can never find
it): "Where does the user live now?" / "I moved to Berlin last spring …". Every answer is
hidden among real dialogue turns in one scope: the user turns of LongMemEval-S
haystacks (MIT licence), shipped with the package as ``data/paraphrase_distractors.json.gz``
so the suite runs from an installed package with no file to download. The pairs were
written by hand for HiveMem, in many domains (``data/paraphrase_pairs.json``); none is
tuned on: a pair is added or fixed only to keep the no-shared-word rule, which
``load_pairs`` enforces (a pair that breaks it is an error, not a skipped item).

Set B (``hivemem eval paraphrase-b``, ``data/paraphrase_pairs_b.json``): 200 more pairs
in 20 other domains, written after the vector lane's seats were chosen on the first set,
among the same distractors: held out, to confirm what the first set chose (and so run
only when named: a set every tuning run scores stops being held out).

Scored as hit@1/@5/@10 (the answer among the first k hits), per domain, beside plain BM25
(0 by construction) — the same tables as the other suites of ``hivemem eval all``.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .. import text as textmod
from ..errors import InvalidInput
from ..store import scratch

DATA = "data"
PAIRS_FILE = "paraphrase_pairs.json"
PAIRS_B_FILE = "paraphrase_pairs_b.json"  # set B, held out (module docstring)
DISTRACTORS_FILE = "paraphrase_distractors.json.gz"
SCOPE = "paraphrase"


@dataclass(frozen=True)
class Pair:
    key: str
    domain: str
    question: str
    answer: str


def content_words(text: str) -> set[str]:
    """``text``'s content words as the keyword index stores them: the query terms
    (stopwords and one-letter words dropped) tokenized and porter-stemmed by FTS5."""
    return {
        stem for term in textmod.query_terms(text, max_terms=256) for stem in scratch.stems(term)
    }


def shared_words(question: str, answer: str) -> set[str]:
    return content_words(question) & content_words(answer)


def _read(name: str) -> bytes:
    return resources.files(__package__).joinpath(DATA, name).read_bytes()


def load_pairs(
    raw: Sequence[dict[str, Any]] | None = None, *, name: str = PAIRS_FILE
) -> list[Pair]:
    """The bundled pairs of ``name`` (or ``raw``), checked: keys unique, every field
    text, and no question sharing a content word with its answer (``InvalidInput`` names
    the pair and the words)."""
    items = raw if raw is not None else json.loads(_read(name))
    pairs: list[Pair] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        try:
            pair = Pair(
                str(item["key"]), str(item["domain"]), str(item["question"]), str(item["answer"])
            )
        except (KeyError, TypeError):
            message = f"pair {index}: expected key, domain, question, answer"
            raise InvalidInput("pairs", message) from None
        if pair.key in seen:
            raise InvalidInput("pairs", f"pair {pair.key}: the key is used twice")
        seen.add(pair.key)
        common = shared_words(pair.question, pair.answer)
        if common:
            raise InvalidInput(
                "pairs", f"pair {pair.key}: question and answer share {sorted(common)}"
            )
        pairs.append(pair)
    return pairs


def load_distractors() -> list[list[str]]:
    """The bundled distractor turns, as sessions of turns in their original order."""
    data = json.loads(gzip.decompress(_read(DISTRACTORS_FILE)))
    return [list(session["turns"]) for session in data["sessions"]]


def build_distractors(
    longmemeval_path: str | Path, *, count: int = 2000, shortest: int = 30, longest: int = 320
) -> dict[str, Any]:
    """How ``data/paraphrase_distractors.json.gz`` was made (reproducible; see
    ``data/README.md``): the user turns of ``shortest``-``longest`` characters of the
    LongMemEval file's haystacks, in file order, first occurrence of each text, grouped
    by their session, until ``count`` turns."""
    with gzip.open(longmemeval_path) as handle:
        raw = json.loads(handle.read())
    seen: set[str] = set()
    sessions: list[dict[str, Any]] = []
    total = 0
    for question in raw:
        for session_id, session in zip(
            question["haystack_session_ids"], question["haystack_sessions"], strict=True
        ):
            turns: list[str] = []
            for turn in session:
                content = turn.get("content", "").strip()
                if turn.get("role") != "user" or not shortest <= len(content) <= longest:
                    continue
                if content in seen or total + len(turns) >= count:
                    continue
                seen.add(content)
                turns.append(content)
            if turns:
                sessions.append({"session": str(session_id), "turns": turns})
                total += len(turns)
            if total >= count:
                return {"source": "LongMemEval-S (MIT), user turns", "sessions": sessions}
    return {"source": "LongMemEval-S (MIT), user turns", "sessions": sessions}


def placed(pairs: Sequence[Pair], sessions: Sequence[Sequence[str]]) -> list[tuple[str, str, str]]:
    """Every turn of the scope in order as (session, text, gold key or ""): answer ``i``
    is put in the middle of distractor session ``i × 7 mod n`` (spread, deterministic)."""
    extra: dict[int, list[Pair]] = {}
    for index, pair in enumerate(pairs):
        extra.setdefault((index * 7) % max(1, len(sessions)), []).append(pair)
    out: list[tuple[str, str, str]] = []
    for number, turns in enumerate(sessions):
        name = f"s{number}"
        middle = len(turns) // 2
        rows = [(name, t, "") for t in turns]
        inserts = [(name, p.answer, p.key) for p in extra.get(number, [])]
        out.extend([*rows[:middle], *inserts, *rows[middle:]])
    return out


def domains(pairs: Iterable[Pair]) -> list[str]:
    return sorted({p.domain for p in pairs})
