"""``enrich``: accurate entity extraction for memories with few entities.

The write path links entities with fast regexes (``hivemem.providers.entities``), which miss
lowercase names, organisations written like words, and places outside the gazetteer.
This job takes active facts, notes, summaries and reflections linked to fewer than
``enrich_below_entities`` entities and extracts them again with the seed's *accurate*
strategy: every extractor available runs —

- the regexes (always; their cue-based types: ``hivemem.providers.entities.name_type``),
- spaCy, when installed (``pip install 'hivemem[spacy]'`` and the pipeline named by
  ``enrich_spacy_model``): ORG → organization, GPE/LOC/FAC → location, PERSON → person,
  PRODUCT → tool, LAW/LANGUAGE/NORP → concept, DATE → date, other labels → other;
- the LLM, when one is configured (a JSON schema reply per batch of 20, with a type and
  a confidence per entity),

— and their spans are merged by overlap: of overlapping spans the longest wins, then
the most confident (regex 0.5, spaCy 0.8, LLM as it says, 0.9 by default). With neither
spaCy nor an LLM the run is logged as skipped with the reason.

New mentions are linked through the same code as the write path (an alias or an
existing entity of the scope is reused). An entity whose type was only the regex's guess
(``person``) takes the type an accurate extractor gives it, unless it is protected. Every
memory looked at is marked, so a rerun changes nothing.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...providers.entities import (
    GUESSED_TYPES,
    EntityType,
    Mention,
    canonical,
    entity_type,
    extract,
    lookup_keys,
)
from ...providers.entities import name_type as cue_type
from ...types import Kind, Memory
from . import Skipped

if TYPE_CHECKING:  # pragma: no cover
    from . import JobContext

NAME = "enrich"
HELP = "Re-extract entities of memories with few, with spaCy and/or the LLM (skipped without)."
KINDS = (Kind.FACT, Kind.NOTE, Kind.SUMMARY, Kind.REFLECTION)
LLM_BATCH = 20
REGEX_CONFIDENCE, SPACY_CONFIDENCE, LLM_CONFIDENCE = 0.5, 0.8, 0.9
SPACY_TYPES = {
    "PERSON": EntityType.PERSON,
    "ORG": EntityType.ORGANIZATION,
    "GPE": EntityType.LOCATION,
    "LOC": EntityType.LOCATION,
    "FAC": EntityType.LOCATION,
    "PRODUCT": EntityType.TOOL,
    "NORP": EntityType.CONCEPT,
    "LAW": EntityType.CONCEPT,
    "LANGUAGE": EntityType.CONCEPT,
    "EVENT": EntityType.OTHER,
    "WORK_OF_ART": EntityType.OTHER,
    "DATE": EntityType.DATE,
}
_LLM_TYPES = [
    t.value
    for t in EntityType
    if t not in (EntityType.MENTION, EntityType.HASHTAG, EntityType.EMAIL, EntityType.URL)
]
_SCHEMA = {
    "title": "entities",
    "type": "object",
    "properties": {
        "memories": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer"},
                    "entities": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string"},
                                "type": {"type": "string", "enum": _LLM_TYPES},
                                "confidence": {"type": "number"},
                            },
                            "required": ["name"],
                        },
                    },
                },
                "required": ["index", "entities"],
            },
        }
    },
    "required": ["memories"],
}
_SYSTEM = (
    "List the named entities of each numbered text, as written in the text, each with "
    "its type: person, organization, project, location, tool (software, products), "
    "concept, date or other, and your confidence from 0 to 1."
)


@dataclass(frozen=True, slots=True)
class Span:
    """An entity one extractor found: where in the text, what, and how sure."""

    start: int
    end: int
    mention: Mention
    confidence: float


Extractor = Callable[[Sequence[Memory]], list[list[Span]]]


def _span(text: str, name: str, kind: EntityType, confidence: float, at: int = -1) -> Span | None:
    """A span for ``name`` in ``text`` (at ``at``, else its first occurrence, case-blind;
    a name not in the text gets an empty span at the end, so it overlaps nothing)."""
    name = " ".join(name.split())
    keys = lookup_keys(name) if kind is EntityType.DATE else [canonical(name)]
    key = keys[-1]
    if not key or not any(ch.isalnum() for ch in key):
        return None
    if at < 0:
        at = text.casefold().find(name.casefold())
    start, end = (at, at + len(name)) if at >= 0 else (len(text), len(text))
    return Span(start, end, Mention(name, key, kind), max(0.0, min(1.0, confidence)))


def merge(spans: Sequence[Span]) -> list[Mention]:
    """Mentions of overlapping spans merged: the longest span wins, then the most
    confident; one mention per (canonical, type), in text order."""
    ranked = sorted(spans, key=lambda s: (-(s.end - s.start), -s.confidence, s.start))
    taken: list[Span] = []
    for span in ranked:
        empty = span.start == span.end
        if empty or not any(span.start < t.end and t.start < span.end for t in taken):
            taken.append(span)
    taken.sort(key=lambda s: s.start)
    return list({(s.mention.canonical, s.mention.type): s.mention for s in taken}.values())


def _regex(memories: Sequence[Memory]) -> list[list[Span]]:
    out = []
    for memory in memories:
        found = []
        for mention in extract(memory.content):
            span = _span(memory.content, mention.name, mention.type, REGEX_CONFIDENCE)
            if span is not None:
                found.append(Span(span.start, span.end, mention, REGEX_CONFIDENCE))
        out.append(found)
    return out


def _pipeline_missing(model: str) -> str | None:
    """Why ``model`` cannot load, found without importing spaCy (~2 s): the job runs on a
    schedule, and a store without the pipeline should not pay for it on every run."""
    if importlib.util.find_spec("spacy") is None:
        return "spaCy is not installed (pip install 'hivemem[spacy]')"
    if not model:
        return "no spaCy pipeline is set (setting enrich_spacy_model)"
    if Path(model).expanduser().exists():
        return None  # a pipeline folder (nlp.to_disk)
    if any(sep in model for sep in ("/", "\\")) or not model.isidentifier():
        return f"spaCy pipeline {model!r} does not exist (setting enrich_spacy_model)"
    if importlib.util.find_spec(model) is None:
        return (
            f"spaCy pipeline {model!r} is not installed (python -m spacy download {model}, "
            "or set enrich_spacy_model)"
        )
    return None


def _spacy(model: str) -> tuple[Extractor | None, str]:
    missing = _pipeline_missing(model)
    if missing is not None:
        return None, missing
    spacy = importlib.import_module("spacy")
    try:
        nlp = spacy.load(model, disable=["lemmatizer"])
    except OSError as exc:  # present but unreadable: the first line of spaCy's reason
        return None, f"spaCy pipeline {model!r} cannot be loaded: {str(exc).splitlines()[0]}"

    def run(memories: Sequence[Memory]) -> list[list[Span]]:
        out = []
        for memory, doc in zip(memories, nlp.pipe(m.content for m in memories), strict=True):
            found = []
            for ent in doc.ents:
                kind = SPACY_TYPES.get(ent.label_)
                if kind is None:
                    continue
                span = _span(memory.content, ent.text, kind, SPACY_CONFIDENCE, ent.start_char)
                if span is not None:
                    found.append(span)
            out.append(found)
        return out

    return run, "spacy"


def _llm_type(name: str, value: object) -> EntityType:
    if isinstance(value, str):
        if value.strip().lower() == "date":
            return EntityType.DATE
        named = entity_type(value)  # "org" (ADR 005's word) is an organization
        if named is not None:
            return named
    return cue_type(name)  # "name" (older replies) or unknown: the regex's cues


def _with_llm(llm: Any) -> Extractor:
    def run(memories: Sequence[Memory]) -> list[list[Span]]:
        listing = "\n".join(
            f"[{i}] {' '.join(m.content.split())}" for i, m in enumerate(memories, 1)
        )
        reply = llm.complete(
            [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": listing}],
            schema=_SCHEMA,
        )
        out: list[list[Span]] = [[] for _ in memories]
        for item in reply.get("memories", []):
            index = item.get("index")
            if not isinstance(index, int) or not 1 <= index <= len(memories):
                continue
            for entity in item.get("entities") or []:
                if not isinstance(entity, dict) or not isinstance(entity.get("name"), str):
                    continue
                sure = entity.get("confidence")
                sure = float(sure) if isinstance(sure, int | float) else LLM_CONFIDENCE
                kind = _llm_type(entity["name"], entity.get("type"))
                span = _span(memories[index - 1].content, entity["name"], kind, sure)
                if span is not None:
                    out[index - 1].append(span)
        return out

    return run


def extractors(ctx: JobContext) -> tuple[list[Extractor], str]:
    """spaCy and the LLM, each where available; ``Skipped`` with both reasons if none."""
    found, why = _spacy(ctx.settings.enrich_spacy_model)
    out, names = [], []
    if found is not None:
        out.append(found)
        names.append(why)
    if ctx.llm is not None:
        out.append(_with_llm(ctx.llm))
        names.append(f"llm:{ctx.llm.identity}")
    if not out:
        raise Skipped(f"no accurate extractor: {why}, and no LLM is configured (setting llm)")
    return out, "+".join(names)


def run(ctx: JobContext) -> None:
    maint, counts = ctx.maint, ctx.counts
    accurate, _method = extractors(ctx)
    while True:
        batch = maint.unmarked(ctx.scope, NAME, KINDS, LLM_BATCH)
        if not batch:
            return
        have = maint.entity_counts([m.id for m in batch])
        few = [m for m in batch if have[m.id] < ctx.settings.enrich_below_entities]
        # Model calls, outside the write lock.
        found: list[list[Span]] = [[] for _ in few]
        per_extractor = (
            [_regex(few), *(extract_with(few) for extract_with in accurate)] if few else []
        )
        for spans in per_extractor:
            for index, more in enumerate(spans):
                found[index].extend(more)
        with ctx.store.atomic():
            now = ctx.clock()
            for memory, held in zip(few, found, strict=True):
                mentions = merge(held)
                accurate_spans = [s for s in held if s.confidence > REGEX_CONFIDENCE]
                for mention in mentions:
                    if mention.type not in GUESSED_TYPES and any(
                        s.mention is mention for s in accurate_spans
                    ):
                        retyped = maint.retype_guessed(
                            ctx.scope, mention.canonical, mention.type.value
                        )
                        if retyped:
                            counts["retyped"] += retyped
                before = have[memory.id]
                maint.link_entities(ctx.scope, memory.id, mentions, now)
                added = maint.entity_counts([memory.id])[memory.id] - before
                if added > 0:
                    counts["enriched"] += 1
                    counts["mentions"] += added
            maint.mark(NAME, [m.id for m in batch], now)
        counts["checked"] += len(batch)
        ctx.tick(counts["checked"], 0)
