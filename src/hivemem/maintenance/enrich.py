"""``enrich``: accurate entity extraction for memories with few entities.

The write path links entities with fast regexes (``hivemem.entities``), which miss
lowercase names, organisations written like words, and places. This job takes active
facts, notes, summaries and reflections linked to fewer than ``enrich_below_entities``
entities and extracts them again with:

- spaCy, when installed (``pip install 'hivemem[spacy]'`` and the pipeline named by
  ``enrich_spacy_model``): proper names of every kind become ``person`` entities (the
  store's type for any proper name), dates ``date``;
- else the LLM, when one is configured (a JSON schema reply per batch of 20);
- else nothing: the run is logged as skipped with the reason.

New mentions are linked through the same code as the write path (an alias or an
existing entity of the scope is reused). Every memory looked at is marked, so a rerun
changes nothing.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..entities import EntityType, Mention, canonical
from ..types import Kind, Memory
from . import Skipped

if TYPE_CHECKING:  # pragma: no cover
    from . import JobContext

NAME = "enrich"
HELP = "Re-extract entities of memories with few, with spaCy or the LLM (skipped without)."
KINDS = (Kind.FACT, Kind.NOTE, Kind.SUMMARY, Kind.REFLECTION)
LLM_BATCH = 20
_SPACY_NAMES = {"PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART"}
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
                                "type": {"type": "string", "enum": ["name", "date"]},
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
    "List the named entities of each numbered text: people, organisations, places, "
    "products, events (type `name`) and dates (type `date`), as written in the text."
)
Extractor = Callable[[Sequence[Memory]], list[list[Mention]]]


def _mention(name: str, kind: str) -> Mention | None:
    name = " ".join(name.split())
    key = canonical(name)
    if not key or not any(ch.isalnum() for ch in key):
        return None
    return Mention(name, key, EntityType.DATE if kind == "date" else EntityType.PERSON)


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

    def run(memories: Sequence[Memory]) -> list[list[Mention]]:
        out = []
        for doc in nlp.pipe(m.content for m in memories):
            found = []
            for ent in doc.ents:
                if ent.label_ in _SPACY_NAMES or ent.label_ == "DATE":
                    mention = _mention(ent.text, "date" if ent.label_ == "DATE" else "name")
                    if mention is not None:
                        found.append(mention)
            out.append(found)
        return out

    return run, "spacy"


def _with_llm(llm: Any) -> Extractor:
    def run(memories: Sequence[Memory]) -> list[list[Mention]]:
        listing = "\n".join(
            f"[{i}] {' '.join(m.content.split())}" for i, m in enumerate(memories, 1)
        )
        reply = llm.complete(
            [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": listing}],
            schema=_SCHEMA,
        )
        out: list[list[Mention]] = [[] for _ in memories]
        for item in reply.get("memories", []):
            index = item.get("index")
            if not isinstance(index, int) or not 1 <= index <= len(memories):
                continue
            for entity in item.get("entities") or []:
                if isinstance(entity, dict) and isinstance(entity.get("name"), str):
                    mention = _mention(entity["name"], str(entity.get("type") or "name"))
                    if mention is not None:
                        out[index - 1].append(mention)
        return out

    return run


def extractor(ctx: JobContext) -> tuple[Extractor, str]:
    """spaCy if it loads, else the LLM; ``Skipped`` with both reasons otherwise."""
    found, why = _spacy(ctx.settings.enrich_spacy_model)
    if found is not None:
        return found, why
    if ctx.llm is not None:
        return _with_llm(ctx.llm), f"llm:{ctx.llm.identity}"
    raise Skipped(f"no accurate extractor: {why}, and no LLM is configured (setting llm)")


def run(ctx: JobContext) -> None:
    maint, counts = ctx.maint, ctx.counts
    extract, _method = extractor(ctx)
    while True:
        batch = maint.unmarked(ctx.scope, NAME, KINDS, LLM_BATCH)
        if not batch:
            return
        have = maint.entity_counts([m.id for m in batch])
        few = [m for m in batch if have[m.id] < ctx.settings.enrich_below_entities]
        found = extract(few) if few else []  # outside the write lock (a model call)
        with ctx.backend.atomic():
            now = ctx.clock()
            for memory, mentions in zip(few, found, strict=True):
                unique = list({(m.canonical, m.type): m for m in mentions}.values())
                if unique:
                    maint.link_entities(ctx.scope, memory.id, unique, now)
                    counts["enriched"] += 1
                    counts["mentions"] += len(unique)
            maint.mark(NAME, [m.id for m in batch], now)
        counts["checked"] += len(batch)
        ctx.tick(counts["checked"], 0)
