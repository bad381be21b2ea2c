"""``hivemem eval entities``: how well the write path's regex pass finds and types entities,
measured on a labelled sample of real dialogue (and spaCy's, where a trained pipeline is
installed).

The sample (``data/entity_mentions.jsonl``, see ``data/README.md``) holds 300 sentences
drawn at random from LongMemEval's user turns (MIT), each with every entity
mention in it (its text, where it starts, its true type) and, as ``none``, the spans the
regex pass took for names before its typing was measured ("Nature", "Plus", "LGBTQ",
"Tues"). Each sentence is in ``dev`` (the half the typing rules were looked at against)
or ``holdout`` (kept apart, to see whether they generalise), by session.

Scoring, per sentence: an extractor's mention matches a labelled one when their keys
are the same (``canonical``; a date by any of its forms). For each type T: a mention
typed T is right when the labelled mention with its key has type T (precision), and a
labelled mention of type T is found when the extractor typed its key T (recall). A
mention no labelled entity has a key for is wrong whatever its type (a ``none``).
What #22's "entity typing precision ≥ .90" is measured by, and beside it:

- ``asserted precision`` (the target: typing precision): the share right among the
  mentions typed anything but ``other``, the types the pass asserts. ``other`` is the
  regex's "a name whose kind I cannot tell", a claim about no type.
- ``entity precision``: the share of all mentions that are entities and not mistyped
  (an ``other`` counts when the span is an entity of any type): what a false span
  ("Suggest", "Food", "NLP") costs. The stricter ``typed precision`` counts an ``other``
  right only where the label is ``other`` too; ``found precision`` is the share that are
  entities at all, whatever the type.
- recall per type, and ``typed recall`` over all: what the rules give up.
"""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from ..providers.entities import extract, lookup_keys

SAMPLE = "entity_mentions.jsonl"
NONE = "none"
OTHER = "other"  # the regex's "a name of unknown kind"
SPLITS = ("dev", "holdout")

Extractor = Callable[[str], list[tuple[str, str, str]]]  # text -> [(surface, key, type)]


@dataclass(frozen=True, slots=True)
class Labelled:
    source: str
    split: str
    sentence: str
    mentions: tuple[tuple[str, int, str], ...]  # (text, start, type)


def load_sample() -> list[Labelled]:
    """The labelled sentences shipped with the package."""
    text = resources.files(__package__).joinpath("data", SAMPLE).read_text(encoding="utf-8")
    out = []
    for line in text.splitlines():
        if line.strip():
            row = json.loads(line)
            mentions = tuple((m["text"], m["start"], m["type"]) for m in row["mentions"])
            out.append(Labelled(row["source"], row["split"], row["sentence"], mentions))
    return out


def regex_extractor(text: str) -> list[tuple[str, str, str]]:
    return [(m.name, m.canonical, m.type.value) for m in extract(text)]


def spacy_extractor(model: str) -> tuple[Extractor | None, str | None]:
    """spaCy's entities mapped to HiveMem's types as the ``enrich`` job maps them, or
    None and why it cannot be measured here (not installed, no trained pipeline)."""
    if importlib.util.find_spec("spacy") is None:
        return None, "spaCy is not installed (pip install 'hivemem[spacy]')"
    from ..lifecycle.maintenance.enrich import SPACY_TYPES
    from ..lifecycle.maintenance.enrich import _pipeline_missing as pipeline_missing

    missing = pipeline_missing(model)
    if missing is not None:
        return None, missing
    import spacy

    nlp = spacy.load(model)
    if "ner" not in nlp.pipe_names:
        return None, f"spaCy pipeline {model!r} has no entity recognizer (ner)"

    def run(text: str) -> list[tuple[str, str, str]]:
        found = []
        for ent in nlp(text).ents:
            kind = SPACY_TYPES.get(ent.label_)
            if kind is not None:
                found.append((ent.text, lookup_keys(ent.text)[-1], kind.value))
        return found

    return run, None


@dataclass
class Score:
    """Counts of one extractor over some sentences."""

    right: Counter[str] = field(default_factory=Counter)  # mentions typed T rightly
    said: Counter[str] = field(default_factory=Counter)  # mentions the extractor typed T
    labelled: Counter[str] = field(default_factory=Counter)  # labelled mentions of type T
    found_any: int = 0  # its mentions that are labelled entities, whatever the type
    untyped_entities: int = 0  # its mentions typed ``other`` that are labelled entities
    wrong: Counter[str] = field(default_factory=Counter)  # "surface -> type (true)" errors

    def add(self, sample: Labelled, found: Iterable[tuple[str, str, str]]) -> None:
        truth: dict[str, str] = {}
        for text, _, kind in sample.mentions:
            if kind != NONE:
                for key in _match_keys(text):
                    truth.setdefault(key, kind)
        seen: set[str] = set()
        for surface, key, kind in found:
            keys = [key, *_match_keys(key), *_match_keys(surface)]
            true = next((truth[k] for k in keys if k in truth), NONE)
            if keys[0] in seen:
                continue
            seen.add(keys[0])
            self.said[kind] += 1
            if true != NONE:
                self.found_any += 1
                self.untyped_entities += kind == OTHER
            if true == kind:
                self.right[kind] += 1
            else:
                self.wrong[f"{surface} -> {kind} ({true})"] += 1
        for _text, _, kind in sample.mentions:
            if kind != NONE:
                self.labelled[kind] += 1

    def to_dict(self) -> dict[str, Any]:
        said = sum(self.said.values())
        types = sorted(set(self.said) | set(self.labelled))
        per_type = {}
        for kind in types:
            per_type[kind] = {
                "precision": _ratio(self.right[kind], self.said[kind]),
                "recall": _ratio(self.right[kind], self.labelled[kind]),
                "said": self.said[kind],
                "labelled": self.labelled[kind],
                "right": self.right[kind],
            }
        asserted = said - self.said[OTHER]
        right_asserted = sum(self.right.values()) - self.right[OTHER]
        return {
            "mentions": said,
            "labelled": sum(self.labelled.values()),
            "asserted_precision": _ratio(right_asserted, asserted),
            "entity_precision": _ratio(right_asserted + self.untyped_entities, said),
            "typed_precision": _ratio(sum(self.right.values()), said),
            "found_precision": _ratio(self.found_any, said),
            "typed_recall": _ratio(sum(self.right.values()), sum(self.labelled.values())),
            "per_type": per_type,
            "top_errors": [f"{n}x {e}" for e, n in self.wrong.most_common(15)],
        }


def _match_keys(text: str) -> list[str]:
    """The keys a mention is matched by: its lookup keys, and each without a leading
    article ("The Witcher" and "Witcher" are one mention of one work)."""
    keys = lookup_keys(text)
    return keys + [k[4:] for k in keys if k.startswith("the ") and len(k) > 4]


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 3) if b else None


def evaluate(extractor: Extractor, sample: Sequence[Labelled] | None = None) -> dict[str, Any]:
    """Scores per split and over the whole sample."""
    rows = load_sample() if sample is None else list(sample)
    scores = {name: Score() for name in (*SPLITS, "all")}
    for row in rows:
        found = extractor(row.sentence)
        scores[row.split].add(row, found)
        scores["all"].add(row, found)
    return {name: score.to_dict() for name, score in scores.items()}


def run(spacy_model: str = "en_core_web_sm") -> dict[str, Any]:
    """The regex pass's scores, and spaCy's or the reason it was not measured."""
    sample = load_sample()
    out: dict[str, Any] = {
        "sentences": len(sample),
        "labelled_mentions": sum(1 for s in sample for m in s.mentions if m[2] != NONE),
        "none_spans": sum(1 for s in sample for m in s.mentions if m[2] == NONE),
        "extractors": {"regex": evaluate(regex_extractor, sample)},
        "not_measured": {},
    }
    nlp, why = spacy_extractor(spacy_model)
    if nlp is None:
        out["not_measured"]["spacy"] = why
    else:
        out["extractors"]["spacy"] = evaluate(nlp, sample)
    return out


def format_report(report: dict[str, Any]) -> str:
    lines = [
        f"{report['sentences']} sentences, {report['labelled_mentions']} labelled entity "
        f"mentions, {report['none_spans']} spans that are no entity",
        "asserted precision: right among the mentions given a type (not `other`), the "
        "#22 target (.90); entity precision: entities not mistyped among all mentions "
        "(`other` right on any entity, a span that is no entity wrong); typed precision: "
        "`other` right only where labelled other",
    ]
    for name, splits in report["extractors"].items():
        for split in (*SPLITS, "all"):
            s = splits[split]
            lines.append(
                f"\n{name} / {split}: asserted precision {_pct(s['asserted_precision'])}, "
                f"entity precision {_pct(s['entity_precision'])}, "
                f"typed precision {_pct(s['typed_precision'])}, "
                f"found precision {_pct(s['found_precision'])}, typed recall "
                f"{_pct(s['typed_recall'])} ({s['mentions']} mentions, {s['labelled']} labelled)"
            )
            lines.append(f"  {'type':<13} {'precision':>9} {'recall':>7} {'said':>5} {'true':>5}")
            for kind, t in s["per_type"].items():
                lines.append(
                    f"  {kind:<13} {_pct(t['precision']):>9} {_pct(t['recall']):>7} "
                    f"{t['said']:>5} {t['labelled']:>5}"
                )
        errors = splits["all"]["top_errors"]
        if errors:
            lines.append(f"\n{name}: commonest errors (surface -> said (true))")
            lines += [f"  {e}" for e in errors]
    for name, why in report["not_measured"].items():
        lines.append(f"\n{name}: not measured: {why}")
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
