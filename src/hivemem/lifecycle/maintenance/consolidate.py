"""``consolidate``: the episodes of ended sessions become facts.

A session has ended when a later session of its scope has started, or when nothing was
added to it for ``consolidate_idle_minutes`` (``mem.consolidate(session_id=...)`` takes
one at once; the option ``before_sessions`` takes every open session first seen before
those, which ``hivemem.lifecycle.sessions`` passes when a new session starts). When the last batch
of a session is done, its summary is written (``session_summary``). Its episodes are
read ``consolidate_batch_size`` (30) at a time, in the order they were written; each
batch becomes candidate facts:

- with an LLM: the model is asked for the durable facts of the batch (JSON schema), each
  with the turns it came from (provenance in ``source_ids``) and optionally a ``key``;
- without one, *extractive* consolidation: every sentence a speaker (any role but
  assistant/system/tool) states, not a question nor a reaction ("oh", "thanks", "sounds
  great"), with at least ``consolidate_min_words`` meaningful words, becomes a fact as
  written ("<role> said: ..." when it speaks in the
  first person). No paraphrase, no inference: cheap, faithful and noisier.

Each candidate then passes two-level dedup: an exact duplicate (normalised content hash)
of one in the batch or of an active fact is dropped; so is a fact whose words overlap an
active fact's by Jaccard >= ``dedup_jaccard`` with the same polarity. Conflicts: a
candidate whose key holds an active fact with other content supersedes it (a real
supersede, with a reason); a candidate naming the same entities as an active fact, with
overlapping words (>= ``conflict_overlap``) and the opposite polarity, lowers the old
fact's confidence to ``conflict_confidence`` and links to it (``supersedes_id``; the old
fact stays active: which one is right is not known).

Resumable: the batch's facts and the session's cursor (``sessions.attributes``) commit in
one transaction, and the next run starts after the cursor. The last batch marks the
session ``consolidated_at``; a consolidated session is never read again. The LLM is
called outside any transaction, so readers and writers never wait on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ...errors import InvalidInput
from ...providers.entities import extract
from ...providers.llm import LLMError
from ...types import Kind, Memory, Status
from ...write import chains, rules
from . import conflicts, session_summary
from .similarity import candidates as similar
from .similarity import jaccard, negated, words

if TYPE_CHECKING:  # pragma: no cover
    from . import JobContext

NAME = "consolidate"
WRITER = f"maintenance:{NAME}"  # updated_by of what the job writes
HELP = "Turn the episodes of ended sessions into facts (LLM, or extractive without one)."
SOURCE = "consolidation"
_NOT_SPEAKERS = frozenset({"assistant", "system", "tool", "agent", "bot", "ai", "model"})
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_SMALL_TALK = re.compile(
    r"(oh|wow|haha|lol|yay|aw+|sorry|thanks|thank you|congrats|congratulations|yep|yeah|"
    r"no worries|hey|hi|hello|good luck|that's (great|awesome|amazing|so)|sounds)\b",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|my|me|mine|we|our|us)\b", re.IGNORECASE)
_FACTS_SCHEMA = {
    "title": "facts",
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string"},
                    "turns": {"type": "array", "items": {"type": "integer"}},
                    "key": {"type": ["string", "null"]},
                },
                "required": ["content"],
            },
        }
    },
    "required": ["facts"],
}
_SYSTEM = (
    "You maintain the long-term memory of an AI agent. From the dialogue turns below, "
    "extract the durable facts worth remembering in later conversations: who people "
    "are, preferences, decisions, plans, events with their dates. One self-contained "
    "statement per fact, naming people instead of pronouns. Skip greetings, small talk "
    "and questions. For each fact list the numbers of the turns it comes from. Give a "
    "short `key` (like `alice.city`) only for an attribute that can have one value at a "
    "time; otherwise null. Return an empty list when nothing is worth keeping."
)


@dataclass(frozen=True, slots=True)
class Candidate:
    content: str
    source_ids: tuple[str, ...]
    key: str | None = None
    event_time: Any = None


def run(ctx: JobContext) -> None:
    maint, s = ctx.maint, ctx.settings
    wanted = ctx.options.get("session_id")
    started = ctx.options.get("before_sessions")
    if wanted is not None:
        found = maint.session(ctx.scope, wanted)
        sessions = [found] if found is not None else []
    elif started:  # a new session started: every open one seen before it has ended
        sessions = maint.open_sessions(ctx.scope, list(started))
    else:
        ended = ctx.now - timedelta(minutes=s.consolidate_idle_minutes)
        sessions = maint.pending_sessions(ctx.scope, ended)
    for index, session in enumerate(sessions):
        _session(ctx, session.session_id)
        ctx.counts["sessions"] += 1
        ctx.tick(index + 1, len(sessions))


def _session(ctx: JobContext, session_id: str) -> None:
    maint, s, store = ctx.maint, ctx.settings, ctx.store
    size = max(1, s.consolidate_batch_size)
    while True:
        state = maint.session_state(ctx.scope, session_id)
        cursor = int(state.get("cursor", 0))
        page = maint.episodes(ctx.scope, session_id, cursor, size)
        episodes = [m for _, m in page]
        found, method = _extract(ctx, session_id, state, episodes) if page else ([], "")
        # The LLM judges conflicts here, outside the lock; None: the heuristic does.
        judged = conflicts.ask(ctx, [c.content for c in found]) if found else None
        with store.atomic():
            # Re-read under the write lock: another process may have done this batch.
            if int(maint.session_state(ctx.scope, session_id).get("cursor", 0)) != cursor:
                continue
            written = _write(ctx, session_id, found, method, judged)
            last = len(page) < size  # fewer than a page: nothing after it (yet)
            # With summaries on, the session is marked consolidated only once its summary
            # is stored (``_finish``): a crash in between redoes the summary, not the facts.
            done = last and not s.session_summaries
            state = {
                **state,
                "cursor": page[-1][0] if page else cursor,
                "facts": int(state.get("facts", 0)) + written,
                "failures": 0,
                "method": method or state.get("method"),
            }
            state.pop("last_error", None)
            maint.set_session_state(
                ctx.scope, session_id, state, consolidated_at=ctx.clock() if done else None
            )
        ctx.counts["episodes"] += len(page)
        if page:
            ctx.counts["batches"] += 1
        if last:
            if not done:
                _finish(ctx, session_id)
            return


def _finish(ctx: JobContext, session_id: str) -> None:
    """Write the session's summary (``session_summary``) and mark it consolidated."""
    summary = session_summary.build(ctx, session_id)  # may ask the LLM: no lock held
    with ctx.store.atomic():
        if ctx.maint.session(ctx.scope, session_id) is None:
            return  # another process finished it meanwhile
        if summary is not None and summary.key is not None:
            current = ctx.store.memories.by_key([ctx.scope], summary.key)
            if current is not None:  # a summary of an earlier pass: this one replaces it
                now = chains.successor_time(ctx.clock(), current)  # the key's lock held
                ctx.store.memories.set_status(
                    ctx.scope, current.id, Status.SUPERSEDED, now, now, NAME
                )
                summary = replace(
                    summary,
                    created_at=now,
                    updated_at=now,
                    valid_from=now,
                    supersedes_id=current.id,
                    supersede_reason="the session went on after its last summary",
                    supersede_kind="hard",
                )
            ctx.insert(summary)
            ctx.counts["summaries"] += 1
        state = ctx.maint.session_state(ctx.scope, session_id)
        if summary is not None:
            state["summary_id"] = summary.id
        ctx.maint.set_session_state(ctx.scope, session_id, state, consolidated_at=ctx.clock())


def _extract(
    ctx: JobContext, session_id: str, state: dict[str, Any], episodes: list[Memory]
) -> tuple[list[Candidate], str]:
    """Candidate facts of one batch, and how they were made (``llm:<id>``/``extractive``)."""
    llm = ctx.llm
    if llm is None or int(state.get("failures", 0)) >= ctx.settings.consolidate_max_failures:
        if llm is not None:
            ctx.counts["fallback_batches"] += 1
        return extractive(episodes, ctx.settings.consolidate_min_words), "extractive"
    try:
        return _ask(llm, episodes), f"llm:{llm.identity}"
    except LLMError as exc:
        # Trigger: the model failed on this batch. Why: an outage must not turn a session
        # into low-quality facts for good. Outcome: the run fails, the failure is counted,
        # and after consolidate_max_failures of them the batch goes extractive.
        failed = {**state, "failures": int(state.get("failures", 0)) + 1}
        failed["last_error"] = str(exc)[:500]
        with ctx.store.atomic():
            ctx.maint.set_session_state(ctx.scope, session_id, failed)
        raise


def _ask(llm: Any, episodes: list[Memory]) -> list[Candidate]:
    lines = []
    for number, episode in enumerate(episodes, 1):
        when = episode.event_time or episode.created_at
        text = " ".join(episode.content.split())
        lines.append(f"[{number}] {episode.role} ({when:%Y-%m-%d %H:%M}): {text}")
    reply = llm.complete(
        [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": "\n".join(lines)}],
        schema=_FACTS_SCHEMA,
    )
    out = []
    for item in reply.get("facts", []):
        content = str(item.get("content") or "").strip()
        if not content:
            continue
        turns = [
            t for t in item.get("turns") or [] if isinstance(t, int) and 1 <= t <= len(episodes)
        ]
        sources = [episodes[t - 1] for t in dict.fromkeys(turns)] or episodes
        key = item.get("key") if isinstance(item.get("key"), str) and item["key"].strip() else None
        out.append(Candidate(content, tuple(m.id for m in sources), key, _latest_time(sources)))
    return out


def extractive(episodes: list[Memory], min_words: int) -> list[Candidate]:
    """Salient speaker statements, as written (see the module docstring)."""
    out = []
    for episode in episodes:
        role = (episode.role or "").strip()
        if role.lower() in _NOT_SPEAKERS:
            continue
        for sentence in _SENTENCE.split(episode.content):
            sentence = sentence.strip()
            if not sentence or sentence.endswith("?") or len(words(sentence)) < min_words:
                continue
            if _SMALL_TALK.match(sentence):  # reactions, not statements
                continue
            if _FIRST_PERSON.search(sentence):
                sentence = f"{role} said: {sentence}"
            out.append(Candidate(sentence, (episode.id,), None, episode.event_time))
    return out


def _latest_time(episodes: list[Memory]) -> Any:
    times = [m.event_time for m in episodes if m.event_time is not None]
    return max(times) if times else None


def _write(
    ctx: JobContext,
    session_id: str,
    found: list[Candidate],
    method: str,
    judged: dict[int, list[str]] | None = None,
) -> int:
    """Inside the batch's transaction: dedup, resolve conflicts (as the LLM ``judged``
    them, by candidate index, or by the heuristic) and insert; returns how many facts
    were written."""
    s, memories, counts = ctx.settings, ctx.store.memories, ctx.counts
    seen: set[str] = set()
    written = 0
    for index, candidate in enumerate(found):
        now = ctx.clock()
        try:
            record = rules.build_memory(
                ctx.scope,
                s,
                now,
                content=candidate.content,
                key=candidate.key,
                kind=Kind.FACT,
                type=s.consolidate_fact_type,
                source=SOURCE,
                source_ids=candidate.source_ids,
                session_id=session_id,
                event_time=candidate.event_time,
                attributes={"consolidated_by": method},
                updated_by=WRITER,
            )
        except InvalidInput:
            counts["rejected"] += 1  # e.g. a reply too long for a memory
            continue
        if record.content_hash in seen:
            counts["duplicates"] += 1
            continue
        seen.add(record.content_hash)
        if record.key is not None:
            current = memories.by_key([ctx.scope], record.key)
            if current is not None:
                if current.content_hash == record.content_hash:
                    counts["duplicates"] += 1
                    continue
                # A real supersede: the key names one attribute, and this is its new value.
                now = chains.successor_time(ctx.clock(), current)  # the key's lock held
                memories.set_status(ctx.scope, current.id, Status.SUPERSEDED, now, now, NAME)
                record = replace(
                    record,
                    created_at=now,
                    updated_at=now,
                    valid_from=now,
                    supersedes_id=current.id,
                    supersede_reason=f"consolidation of session {session_id}",
                    supersede_kind="hard",
                    type=current.type,
                )
                ctx.insert(record)
                counts["superseded"] += 1
                written += 1
                continue
        elif memories.find_duplicate(ctx.scope, Kind.FACT.value, record.content_hash):
            counts["duplicates"] += 1
            continue
        verdict = None if judged is None else judged.get(index, [])
        linked = _dedup_or_link(ctx, record, verdict)
        if linked is None:
            counts["near_duplicates"] += 1
            continue
        ctx.insert(linked)
        written += 1
    counts["facts"] += written
    return written


def _dedup_or_link(
    ctx: JobContext, record: Memory, verdict: list[str] | None = None
) -> Memory | None:
    """``None`` for a near duplicate of an active fact; else the record, linked to the
    facts it contradicts (whose confidence drops): those of the LLM's ``verdict`` when
    it judged, else those of the heuristic (``conflicts`` module, polarity rule)."""
    s, maint = ctx.settings, ctx.maint
    mine, polarity = words(record.content), negated(record.content)
    floor = min(s.dedup_jaccard, s.conflict_overlap)
    others = similar(ctx.store, ctx.scope, record.content, [Kind.FACT], ctx.now, min_jaccard=floor)
    names = maint.entity_names([m.id for m in others])
    own_names = {m.canonical for m in extract(record.content)}
    contradicted: list[Memory] = []
    for other in others:
        overlap = jaccard(mine, words(other.content))
        same_polarity = negated(other.content) == polarity
        if same_polarity and overlap >= s.dedup_jaccard:
            return None
        theirs = names.get(other.id, set())
        same_entities = bool(own_names & theirs) or (not own_names and not theirs)
        heuristic = verdict is None and not same_polarity and same_entities
        if heuristic and overlap >= s.conflict_overlap:
            contradicted.append(other)
    if verdict is None:
        known = {m.id for m in contradicted}
        contradicted += [m for m in conflicts.by_attribute(ctx, record) if m.id not in known]
    else:
        judged = ctx.store.memories.get_many([ctx.scope], verdict)
        contradicted = [m for m in judged if m.status is Status.ACTIVE and m.kind is Kind.FACT]
    for other in contradicted:
        if other.confidence > s.conflict_confidence:  # a derived number: its author stays
            maint.set_confidence(ctx.scope, other.id, s.conflict_confidence)
        ctx.counts["conflicts"] += 1
    if contradicted:
        first = contradicted[0]
        reason = "contradicts " + ", ".join(m.id for m in contradicted)
        record = replace(record, supersedes_id=first.id, supersede_reason=reason[:1000])
    return record
