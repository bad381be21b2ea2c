"""``resolve``: entity resolution by the LLM where name similarity is low (ADR 005, §9:
"Background: LLM for entity resolution only when confidence < 0.7; not online").

The write path resolves a mention to an entity by its exact canonical name or an alias
(``hivemem.store.sqlite.entities.link_mentions``): "Alice" and "Alice Smith", "Acme" and
"Acme Industries", "Caro" and "Caroline" stay two entities. This job looks, per scope, at
pairs of entities that may be one — types compatible (equal, or one of them only the
regex's guess, ``person``/``other``) and names related (a word in common, or a word of
one the start of a word of the other, three letters at least) — and scores each pair's
*name similarity* (``difflib`` ratio of the canonical names, 0 to 1):

- similarity >= ``resolve_confident`` (0.7, the ADR's threshold): the names alone are
  evidence enough; the write path's decision stands and no model is asked;
- below it: the LLM is asked (20 pairs a call, each with one line of context per name)
  whether both name the same real-world entity. "Same" merges them: the entity with
  fewer mentions becomes part of the other (its links and aliases move, its name becomes
  an alias, so later mentions under it are linked to the kept entity on the write path).
  A protected entity is never absorbed; two protected ones are never merged.

Every verdict is recorded (``entity_resolutions``), so a rerun asks only about new
pairs. Without an LLM the job is skipped, saying why: offline, nothing is merged. A
failed call fails the run with nothing of its batch written; the rerun asks again. The
job never runs on the write path (``hivemem maintain``, the schedule).
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from ...providers.entities import GUESSED_TYPES, EntityType
from . import Skipped

if TYPE_CHECKING:  # pragma: no cover
    from ...store.resolutions import EntityRow
    from . import JobContext

NAME = "resolve"
HELP = (
    "Ask the LLM whether entities with related names of low similarity are one (skipped without)."
)
BATCH = 20
MAX_PAIRS = 400  # pairs asked about per run and scope; the next run takes the rest
PREFIX = 3  # letters a word must have to count as the start of another
TYPES = tuple(
    t.value
    for t in (
        EntityType.PERSON,
        EntityType.ORGANIZATION,
        EntityType.PROJECT,
        EntityType.LOCATION,
        EntityType.TOOL,
        EntityType.CONCEPT,
        EntityType.OTHER,
    )
)
_GUESSED = {t.value for t in GUESSED_TYPES}
_SCHEMA = {
    "title": "resolutions",
    "type": "object",
    "properties": {
        "pairs": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"index": {"type": "integer"}, "same": {"type": "boolean"}},
                "required": ["index", "same"],
            },
        }
    },
    "required": ["pairs"],
}
_SYSTEM = (
    "You resolve entity names in an agent's long-term memory. For each numbered pair, "
    "say whether both names refer to the same real-world entity (the same person, "
    "organisation, place, project or thing), judging by the names, their types and the "
    "example line for each. Answer same=false when unsure."
)


def similarity(a: str, b: str) -> float:
    """Name similarity of two canonical names, 0 to 1 (``difflib``'s ratio)."""
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def _compatible(a: EntityRow, b: EntityRow) -> bool:
    return a.type == b.type or a.type in _GUESSED or b.type in _GUESSED


def _related(a: str, b: str) -> bool:
    words_a, words_b = a.split(), b.split()
    if set(words_a) & set(words_b):
        return True
    return any(
        min(len(x), len(y)) >= PREFIX and (x.startswith(y) or y.startswith(x))
        for x in words_a
        for y in words_b
    )


def candidates(rows: list[EntityRow]) -> list[tuple[EntityRow, EntityRow, float]]:
    """Pairs of ``rows`` that may be one entity, with their name similarity (ids
    ascending in each pair). Pairs are found through the first letters of their words,
    so a scope of many entities is not compared all against all."""
    index: dict[str, list[int]] = defaultdict(list)
    for position, row in enumerate(rows):
        for prefix in {w[:PREFIX] for w in row.canonical.split() if len(w) >= PREFIX}:
            index[prefix].append(position)
    seen: set[tuple[int, int]] = set()
    out = []
    for members in index.values():
        for i, first in enumerate(members):
            for second in members[i + 1 :]:
                a, b = rows[first], rows[second]
                pair = (a.id, b.id) if a.id < b.id else (b.id, a.id)
                if pair in seen or a.canonical == b.canonical:
                    continue
                seen.add(pair)
                if _compatible(a, b) and _related(a.canonical, b.canonical):
                    low, high = (a, b) if a.id < b.id else (b, a)
                    out.append((low, high, similarity(a.canonical, b.canonical)))
    out.sort(key=lambda c: (c[0].id, c[1].id))
    return out


def _ask(ctx: JobContext, pairs: list[tuple[EntityRow, EntityRow, float]]) -> dict[int, bool]:
    found = ctx.store.resolutions
    lines = []
    for number, (a, b, _) in enumerate(pairs, 1):
        lines.append(
            f'[{number}] "{a.name}" ({a.type}; e.g. "{found.example(a.id)}") vs '
            f'"{b.name}" ({b.type}; e.g. "{found.example(b.id)}")'
        )
    reply: Any = ctx.llm.complete(  # type: ignore[union-attr]
        [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": "\n".join(lines)}],
        schema=_SCHEMA,
    )
    out: dict[int, bool] = {}
    for item in reply.get("pairs", []) if isinstance(reply, dict) else []:
        index = item.get("index") if isinstance(item, dict) else None
        if isinstance(index, int) and 1 <= index <= len(pairs):
            out[index - 1] = item.get("same") is True
    return out


def run(ctx: JobContext) -> None:
    if ctx.llm is None:
        raise Skipped("no LLM is configured (setting llm): entity names are left as written")
    threshold = ctx.settings.resolve_confident
    store, counts = ctx.store.resolutions, ctx.counts
    judged = store.judged(ctx.scope)
    todo = []
    for a, b, score in candidates(store.entities(ctx.scope, TYPES)):
        if score >= threshold:
            counts["confident"] += 1  # the names say enough: no model call (the ADR's rule)
        elif (a.id, b.id) not in judged:
            todo.append((a, b, score))
    todo = todo[:MAX_PAIRS]
    gone: set[int] = set()
    for start in range(0, len(todo), BATCH):
        batch = [
            p for p in todo[start : start + BATCH] if p[0].id not in gone and p[1].id not in gone
        ]
        if not batch:
            continue
        verdicts = _ask(ctx, batch)  # outside the write lock
        with ctx.store.atomic():
            now = ctx.clock()
            for number, (a, b, score) in enumerate(batch):
                if number not in verdicts:
                    continue  # unanswered: asked again next run
                same = verdicts[number]
                counts["asked"] += 1
                if same and not (a.protected and b.protected):
                    keep, lose = _direction(a, b)
                    if lose.id not in gone and store.merge(ctx.scope, keep.id, lose.id):
                        gone.add(lose.id)
                        counts["merged"] += 1
                        continue  # the absorbed entity's verdict rows went with it
                store.record(ctx.scope, (a.id, b.id), same, score, ctx.llm.identity, now)
        ctx.tick(start + len(batch), len(todo))


def _direction(a: EntityRow, b: EntityRow) -> tuple[EntityRow, EntityRow]:
    """(kept, absorbed): a protected entity is kept, else the more mentioned, else the
    older."""
    if a.protected != b.protected:
        return (a, b) if a.protected else (b, a)
    if a.mentions != b.mentions:
        return (a, b) if a.mentions > b.mentions else (b, a)
    return (a, b) if a.id < b.id else (b, a)
