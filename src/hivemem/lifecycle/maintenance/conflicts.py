"""Conflicts between a new fact and the facts a scope already holds (ADR 005: "same
entity, opposite claim → old fact's confidence to 0.3 and a ``supersedes`` link").

Two judges, used by ``consolidate``:

- the LLM, when one is configured: once per batch, outside any transaction, it gets each
  new fact with the active facts that share an entity or words with it, and names the
  ones the new fact contradicts (JSON schema). A failed call falls back to the heuristic
  for that batch (counted as ``conflict_fallbacks``).
- the heuristic (always without an LLM): besides the polarity rule of ``consolidate``
  (same entities, same words, one negated), an *attribute* rule for the updates the ADR
  names — a move, a new employer: both facts state the same single-valued attribute
  (where someone lives, whom they work for) of the same subject, with different values.
  "Alice moved to Munich" contradicts "Alice lives in Berlin"; it does not contradict
  "Alice lives in Munich", "Bob lives in Berlin" or "Alice visited Berlin". Subjects are
  compared by canonical name ("I" is the speaker: "user said: I moved to …").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...providers.entities import canonical, extract
from ...providers.llm import LLMError
from ...types import Kind, ListFilter, Memory, Status
from .similarity import candidates as similar

if TYPE_CHECKING:  # pragma: no cover
    from . import JobContext

_RESIDENCE = (
    r"moved to|moves to|has moved to|relocated to|relocates to|is moving to|moving to|"
    r"lives in|live in|is living in|now lives in|resides in|is based in|settled in|"
    r"moved back to|moved house to"
)
_EMPLOYER = (
    r"works at|works for|work at|work for|joined|is employed by|started working at|now works at"
)
_CLAIM = re.compile(
    r"^(?:(?P<role>[\w .'-]{1,40}?) said: )?(?P<subject>[\w .'’-]{1,60}?)\s+"
    r"(?:has |have |just |recently |now |also )*"
    rf"(?P<verb>{_RESIDENCE}|{_EMPLOYER})\s+(?P<value>[^.,;:!?\n]+)",
    re.IGNORECASE,
)
_VALUE_END = re.compile(
    r"\s+(?:last|this|next|in|on|at|since|for|with|and|but|because|after|before|from|"
    r"during|when|while|as|to|two|three|a|an|the)\b.*$",
    re.IGNORECASE,
)
_FIRST_PERSON = frozenset({"i", "we", "me"})
_SCHEMA = {
    "title": "conflicts",
    "type": "object",
    "properties": {
        "conflicts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "new": {"type": "integer"},
                    "contradicts": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["new", "contradicts"],
            },
        }
    },
    "required": ["conflicts"],
}
_SYSTEM = (
    "You keep the long-term memory of an AI agent. For each NEW fact below, name the "
    "EXISTING facts it directly contradicts: the same entity with an opposite or "
    "replaced claim (someone moved, changed job, changed a preference or a decision). "
    "Facts that merely differ, add detail or are about other entities do not "
    "contradict. Answer with the ids of the existing facts; an empty list when none."
)


@dataclass(frozen=True, slots=True)
class Claim:
    subject: str  # canonical
    attribute: str  # residence, employer
    value: str  # canonical


def claim(text: str) -> Claim | None:
    """The single-valued attribute a fact states, if it states one the rule knows."""
    match = _CLAIM.match(" ".join(text.split()))
    if match is None:
        return None
    subject = canonical(match["subject"])
    if subject in _FIRST_PERSON:
        subject = canonical(match["role"] or "user")
    verb = match["verb"].lower()
    attribute = "employer" if re.fullmatch(_EMPLOYER, verb) else "residence"
    value = canonical(_VALUE_END.sub("", match["value"].strip()))
    if value.startswith("the "):
        value = value[4:]
    if not subject or not value or len(subject.split()) > 4:
        return None
    return Claim(subject, attribute, value)


def by_attribute(ctx: JobContext, record: Memory) -> list[Memory]:
    """Active facts of the scope stating the same attribute of the same subject as
    ``record`` with another value."""
    mine = claim(record.content)
    if mine is None:
        return []
    # The subject's facts: by its entity, and by its name as a word (a speaker's role,
    # "user", is no entity).
    found = ctx.store.entities.lookup([ctx.scope], [mine.subject], aliases=False)
    links = ctx.store.entities.linked(
        [ctx.scope],
        [e.id for e in found],
        ListFilter(kinds=(Kind.FACT,), statuses=(Status.ACTIVE,)),
        ctx.now,
        50,
    )
    ids = [m for m, _ in links]
    ids += [m.id for m in similar(ctx.store, ctx.scope, mine.subject, [Kind.FACT], ctx.now, 50)]
    out = []
    for other in ctx.store.memories.get_many([ctx.scope], list(dict.fromkeys(ids))):
        if other.id == record.id or other.status is not Status.ACTIVE:
            continue
        theirs = claim(other.content)
        if (
            theirs is not None
            and (theirs.subject, theirs.attribute) == (mine.subject, mine.attribute)
            and theirs.value != mine.value
        ):
            out.append(other)
    return out


def related(ctx: JobContext, content: str, limit: int = 10) -> list[Memory]:
    """Active facts the LLM should compare ``content`` with: those that share a named
    entity with it, then those that share words."""
    names = [m.canonical for m in extract(content)]
    found = ctx.store.entities.lookup([ctx.scope], names, aliases=False) if names else []
    links = ctx.store.entities.linked(
        [ctx.scope],
        [e.id for e in found],
        ListFilter(kinds=(Kind.FACT,), statuses=(Status.ACTIVE,)),
        ctx.now,
        limit,
    )
    ids = list(dict.fromkeys(m for m, _ in links))[:limit]
    out = ctx.store.memories.get_many([ctx.scope], ids) if ids else []
    seen = {m.id for m in out}
    for other in similar(ctx.store, ctx.scope, content, [Kind.FACT], ctx.now, limit):
        if other.id not in seen and len(out) < 2 * limit:
            out.append(other)
            seen.add(other.id)
    return out


def ask(ctx: JobContext, contents: Sequence[str]) -> dict[int, list[str]] | None:
    """For each new fact (by index), the ids of existing facts the LLM says it
    contradicts; None when the model failed (the caller uses the heuristic)."""
    llm: Any = ctx.llm
    if llm is None or not contents or not ctx.settings.llm_conflicts:
        return None
    existing: dict[str, Memory] = {}
    lines = ["NEW facts:"]
    for number, content in enumerate(contents, 1):
        lines.append(f"[{number}] {' '.join(content.split())}")
        for other in related(ctx, content):
            existing[other.id] = other
    if not existing:
        return {}
    lines.append("EXISTING facts:")
    lines += [f"({m.id}) {' '.join(m.content.split())}" for m in existing.values()]
    try:
        reply = llm.complete(
            [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": "\n".join(lines)}],
            schema=_SCHEMA,
        )
    except LLMError:
        ctx.counts["conflict_fallbacks"] += 1
        return None
    out: dict[int, list[str]] = {}
    for item in reply.get("conflicts", []):
        index = item.get("new")
        if not isinstance(index, int) or not 1 <= index <= len(contents):
            continue
        ids = [i for i in item.get("contradicts") or [] if isinstance(i, str) and i in existing]
        if ids:
            out.setdefault(index - 1, []).extend(ids)
    return out
