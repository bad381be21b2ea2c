"""``reflect``: a weekly reflection on what was learned.

Runs only when both hold: no reflection in the last ``reflect_min_interval_days`` (6),
and at least ``reflect_min_facts`` (3) facts were made in the last
``reflect_window_days`` (7) since the last reflection. Otherwise the run is logged as
skipped, with the reason. The reflection is a memory of kind ``reflection``, type
``lesson``, tagged ``weekly``, ``decay_rate`` 0 (it never decays), with the facts it
reflects on in ``source_ids``; ``context()`` shows the latest one. With an LLM it is the
model's summary of patterns, changes and open questions, read from the window's facts
and its dialogue turns (the newest ``_MAX_EPISODES``); without one, an extractive
digest: the most mentioned names and the newest facts, as written.

Either way it flags openhive's vault anti-pattern: a key superseded at least
``reflect_vault_versions`` times holds a counter, progress state or a cache, which
pollutes search and bloats history — the reflection names such keys and suggests the
vault (``hivemem vault set``), and lists them in ``attributes.vault_candidates``.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import TYPE_CHECKING

from ...providers.entities import extract
from ...types import Kind, Memory, MemoryType
from ...write import rules
from . import Skipped

if TYPE_CHECKING:  # pragma: no cover
    from . import JobContext

NAME = "reflect"
WRITER = f"maintenance:{NAME}"  # updated_by of what the job writes
HELP = "Write a weekly reflection on the new facts (at most once per 6 days, needs 3 new facts)."
SOURCE = "reflection"
_MAX_FACTS = 200  # facts one reflection reads
_MAX_EPISODES = 100  # dialogue turns one reflection reads (the newest)
_SYSTEM = (
    "You maintain the long-term memory of an AI agent. Below are the facts it learned "
    "this week and recent dialogue turns. Write a short reflection (at most 8 bullet "
    "points): what was learned, patterns, changes of mind, open questions worth "
    "following up. Plain markdown."
)


def run(ctx: JobContext) -> None:
    s, maint = ctx.settings, ctx.maint
    interval = timedelta(days=s.reflect_min_interval_days)
    latest = maint.since(ctx.scope, Kind.REFLECTION, ctx.now - interval, 1)
    if latest:
        raise Skipped(
            f"the last reflection ({latest[0].created_at:%Y-%m-%d %H:%M}) is less than "
            f"{s.reflect_min_interval_days:g} days old"
        )
    window_start = ctx.now - timedelta(days=s.reflect_window_days)
    previous = maint.since(ctx.scope, Kind.REFLECTION, window_start, 1)
    start = max(window_start, previous[0].created_at) if previous else window_start
    facts = maint.since(ctx.scope, Kind.FACT, start, _MAX_FACTS)
    if len(facts) < s.reflect_min_facts:
        raise Skipped(
            f"{len(facts)} new facts since {start:%Y-%m-%d %H:%M}; "
            f"a reflection needs {s.reflect_min_facts}"
        )
    llm = ctx.llm
    if llm is not None:
        turns = maint.since(ctx.scope, Kind.EPISODE, start, _MAX_EPISODES)
        listing = "Facts:\n" + "\n".join(
            f"- {' '.join(m.content.split())}" for m in reversed(facts)
        )
        if turns:
            listing += "\nRecent dialogue:\n" + "\n".join(
                f"{m.role}: {' '.join(m.content.split())}" for m in reversed(turns)
            )
        body = str(
            llm.complete(
                [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": listing}]
            )
        ).strip()
        method = f"llm:{llm.identity}"
    else:
        body, method = digest(facts), "extractive"
    heavy = maint.busy_keys(ctx.scope, s.reflect_vault_versions)
    if heavy:
        body += "\n" + vault_advice(heavy)
    heading = f"Reflection on {len(facts)} facts learned {start:%Y-%m-%d} to {ctx.now:%Y-%m-%d}"
    content = fit(f"{heading}:\n{body}", s.max_content_bytes)
    with ctx.store.atomic():
        now = ctx.clock()
        record = rules.build_memory(
            ctx.scope,
            s,
            now,
            content=content,
            kind=Kind.REFLECTION,
            type=MemoryType.LESSON,
            source=SOURCE,
            decay_rate=0.0,
            expires_at=None,
            source_ids=[m.id for m in facts],
            tags=["weekly"],
            updated_by=WRITER,
            attributes={
                "reflected_by": method,
                "facts": len(facts),
                **({"vault_candidates": dict(heavy)} if heavy else {}),
            },
        )
        ctx.insert(record)
    ctx.counts["reflections"] += 1
    ctx.counts["facts"] += len(facts)


def vault_advice(keys: list[tuple[str, int]]) -> str:
    """The reflection's note on keys written over and over (openhive's anti-pattern)."""
    named = ", ".join(f"`{key}` ({versions} versions)" for key, versions in keys)
    return (
        f"- Vault candidates: {named}. A key rewritten this often holds a counter, "
        "progress state or a cache: keep it in the vault (`hivemem vault set`), where it "
        "is read by key and never pollutes search or prompts."
    )


def digest(facts: list[Memory], shown: int = 10) -> str:
    """The extractive reflection: the most mentioned names, then the newest facts."""
    names: Counter[str] = Counter()
    for fact in facts:
        names.update({m.name for m in extract(fact.content)})
    lines = []
    top = [f"{name} ({n})" for name, n in names.most_common(5) if n > 1]
    if top:
        lines.append("Most mentioned: " + ", ".join(top) + ".")
    lines += [f"- {' '.join(m.content.split())}" for m in facts[:shown]]
    if len(facts) > shown:
        lines.append(f"- … and {len(facts) - shown} more")
    return "\n".join(lines)


def fit(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes (a memory's size limit)."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: limit - 4].decode("utf-8", errors="ignore") + " …"
