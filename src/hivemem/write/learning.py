"""Learnings: what a lead teaches its workers (Agent Swarm's ``inject-learning``) and
what an autonomous learner stores from research (openhive's learning-originated
entries).

- ``inject(mem, content, category, to=…)`` saves a learning into the swarm scope (the
  ``learning_scope`` setting, the default) or into one worker's private scope. Either
  must be a scope ``mem`` leads (``hivemem.write.rights``): a worker gets ``Forbidden``.
- With a ``topic``, the entry gets openhive's deterministic key
  ``learn:{topic-slug}:{claim-hash}`` (``learn_key``) and its structured confidence tags
  ``confidence:{high|medium|low}``, ``corroborated:{n}``, ``domains:{a.com,b.org}`` and
  ``verified:{YYYY-MM-DD}`` (also under ``attributes.learning``). The same claim again
  with other tags (re-verified, more domains) supersedes the prior entry, as openhive's
  rules say; the same claim with the same tags is a no-op.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..types import Memory, MemoryType, as_tuple
from . import rights, rules

if TYPE_CHECKING:  # pragma: no cover
    from ..store.handles import ScopedHandle

CATEGORIES: Mapping[str, MemoryType] = {
    "mistake-pattern": MemoryType.LESSON,
    "best-practice": MemoryType.LESSON,
    "codebase-knowledge": MemoryType.CONTEXT,
    "preference": MemoryType.DECISION,
}
CONFIDENCE = ("high", "medium", "low")


def slug(topic: str) -> str:
    """A kebab-case topic identifier: ``"Rust async runtimes"`` → ``rust-async-runtimes``."""
    flat = unicodedata.normalize("NFKD", topic).encode("ascii", "ignore").decode().lower()
    out = re.sub(r"[^a-z0-9]+", "-", flat).strip("-")
    if not out:
        raise InvalidInput("topic", "expected a topic with letters or digits")
    return out[:80]


def claim_hash(claim: str) -> str:
    """A short hash of the normalised claim (case and spacing do not matter)."""
    normal = " ".join(unicodedata.normalize("NFC", claim).lower().split())
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()[:12]


def learn_key(topic: str, claim: str) -> str:
    return f"learn:{slug(topic)}:{claim_hash(claim)}"


def evidence_tags(
    confidence: str | None,
    corroborated: int | None,
    domains: Sequence[str] | None,
    verified: str | date | None,
) -> dict[str, Any]:
    """The four fields of openhive's confidence tag, checked (only those given)."""
    out: dict[str, Any] = {}
    if confidence is not None:
        level = str(confidence).strip().lower()
        if level not in CONFIDENCE:
            raise InvalidInput("confidence", f"expected one of {', '.join(CONFIDENCE)}")
        out["confidence"] = level
    if corroborated is not None:
        if isinstance(corroborated, bool) or not isinstance(corroborated, int) or corroborated < 0:
            raise InvalidInput("corroborated", "expected a whole number of domains >= 0")
        out["corroborated"] = corroborated
    if domains is not None:
        names = [rules.name(d, "domains", 253) for d in as_tuple(domains)]
        if any("," in str(d) for d in names):
            raise InvalidInput("domains", "one domain per item (no commas)")
        out["domains"] = sorted({str(d).lower() for d in names})
    if verified is not None:
        text = verified.isoformat() if isinstance(verified, date) else str(verified).strip()
        try:
            out["verified"] = date.fromisoformat(text[:10]).isoformat()
        except ValueError:
            raise InvalidInput("verified", "expected an ISO date (YYYY-MM-DD)") from None
    return out


def _as_tags(evidence: Mapping[str, Any]) -> list[str]:
    tags = []
    for name, value in evidence.items():
        shown = ",".join(value) if isinstance(value, list) else value
        tags.append(f"{name}:{shown}")
    return tags


def inject(
    mem: ScopedHandle,
    content: str,
    category: str,
    *,
    to: str | None = None,
    key: str | None = None,
    supersede_reason: str | None = None,
    tags: Sequence[str] | None = None,
    topic: str | None = None,
    confidence: str | None = None,
    corroborated: int | None = None,
    domains: Sequence[str] | None = None,
    verified: str | date | None = None,
) -> Memory:
    """Save a learning of ``category`` (see ``CATEGORIES``) into ``to`` (default: the
    ``learning_scope`` setting), a scope ``mem`` must lead."""
    if not isinstance(category, str) or category.strip().lower() not in CATEGORIES:
        raise InvalidInput("category", f"expected one of {', '.join(CATEGORIES)}")
    kind = category.strip().lower()
    scope = to or mem.settings.learning_scope or _single_lead(mem)
    if not scope:
        raise InvalidInput(
            "learning_scope",
            "no shared learning scope is configured: start the server with "
            "--learning-scope NAME (or set HIVEMEM_LEARNING_SCOPE), or name the target",
        )
    handle = rights.target(mem, scope, "inject a learning")
    evidence = evidence_tags(confidence, corroborated, domains, verified)
    if topic is not None:
        if key is not None:
            raise InvalidInput("key", "give a topic (the key is derived from it) or a key")
        key = learn_key(topic, content if isinstance(content, str) else "")
    all_tags = ["learning", kind, *_as_tags(evidence), *(tags or [])]
    attributes: dict[str, Any] = {"learning_category": kind, "injected_by": mem.actor}
    if topic is not None:
        attributes["learning"] = {"topic": slug(topic), **evidence}
    if key is not None and supersede_reason is None:
        current = handle.store.memories.by_key([handle.name], key)
        if current is not None and sorted(current.tags) != sorted(dict.fromkeys(all_tags)):
            supersede_reason = "re-verified: " + (", ".join(_as_tags(evidence)) or "new tags")
    return handle.save(
        content,
        key=key,
        type=CATEGORIES[kind],
        supersede_reason=supersede_reason,
        tags=list(dict.fromkeys(all_tags)),
        attributes=attributes,
        updated_by=mem.actor,
    )


def _single_lead(mem: ScopedHandle) -> str | None:
    """The one scope a lead leads by name (no pattern), as the default target."""
    named = [p for p in mem.lead_of if not any(ch in p for ch in "*?[")]
    return named[0] if len(named) == 1 else None
