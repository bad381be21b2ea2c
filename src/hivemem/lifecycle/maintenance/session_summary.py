"""The summary of a session, written when consolidation finishes it (Agent Swarm's
session summaries; the assistant seed's end-of-session consolidation).

What was learned in the session becomes one memory of kind ``summary`` with source
``session_summary`` (its TTL: 3 days by default, ``ttl_days``), key
``session:<id>:summary``, type ``reference`` (found by relevance, not pinned), the
session's id, and the facts or turns it was drawn from in ``source_ids``:

- with an LLM: the model reads the session's turns (the newest ``_MAX_TURNS``) and lists
  the key learnings — mistakes made, patterns discovered, failed approaches, knowledge
  worth keeping — or answers that there were none (then no summary is written);
- without one, or when the model fails (a summary is ephemeral: an outage must not hold
  the session open): *extractive*, the facts consolidation drew from the session, as
  written. A session that yielded no fact gets no extractive summary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...providers.llm import LLMError
from ...types import Kind, Memory, MemoryType
from ...write import rules
from .reflect import fit

if TYPE_CHECKING:  # pragma: no cover
    from . import JobContext

SOURCE = "session_summary"
WRITER = "maintenance:consolidate"  # the summary is written by the consolidate job
_MAX_TURNS = 200
_MAX_FACTS = 20
_NOTHING = "NOTHING"
_SYSTEM = (
    "You keep the long-term memory of an AI agent. Below are the turns of one finished "
    "session. List its key learnings as at most 8 short markdown bullets: mistakes made "
    "and how to avoid them, patterns discovered, approaches that failed, and knowledge "
    "about the user, the team or the codebase worth keeping. Name things instead of "
    f"using pronouns. If nothing is worth keeping, answer exactly {_NOTHING}."
)


def key_of(session_id: str) -> str:
    return f"session:{session_id}:summary"


def build(ctx: JobContext, session_id: str) -> Memory | None:
    """The summary of ``session_id`` (not yet stored), or None when there is nothing to
    summarise. Calls the LLM, so it runs outside any transaction."""
    maint, s = ctx.maint, ctx.settings
    facts = maint.session_facts(ctx.scope, session_id, _MAX_FACTS)
    turns = [m for _, m in maint.episodes(ctx.scope, session_id, 0, 100_000)][-_MAX_TURNS:]
    if not turns:
        return None
    body, method, sources = None, "extractive", [m.id for m in facts]
    if ctx.llm is not None:
        try:
            body = _ask(ctx.llm, turns)
            method, sources = f"llm:{ctx.llm.identity}", [m.id for m in turns]
        except LLMError:
            ctx.counts["summary_fallbacks"] += 1
        if body is not None and body.strip().upper().startswith(_NOTHING):
            return None
    if body is None:
        if not facts:
            return None
        body = "\n".join(f"- {' '.join(m.content.split())}" for m in facts)
    first = turns[0].event_time or turns[0].created_at
    heading = f"What was learned in session {session_id} ({len(turns)} turns from {first:%Y-%m-%d})"
    content = fit(f"{heading}:\n{body.strip()}", s.max_content_bytes)
    return rules.build_memory(
        ctx.scope,
        s,
        ctx.clock(),
        content=content,
        key=key_of(session_id),
        kind=Kind.SUMMARY,
        type=MemoryType.REFERENCE,
        source=SOURCE,
        session_id=session_id,
        source_ids=sources,
        tags=["session_summary"],
        updated_by=WRITER,
        attributes={"summarized_by": method, "turns": len(turns), "facts": len(facts)},
    )


def _ask(llm: Any, turns: list[Memory]) -> str:
    lines = [f"{m.role}: {' '.join(m.content.split())}" for m in turns]
    reply = llm.complete(
        [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": "\n".join(lines)}]
    )
    return str(reply).strip()
