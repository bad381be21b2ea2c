"""The memory section of the next prompt (DESIGN §4), and the provider an agent loop calls.

``build_context`` (and ``ScopedMemory.context``) returns one markdown block, sections in
this order, each memory one bullet (the reflection a paragraph):

1. Pinned memories by priority: identity (never dropped), lessons, decisions (newest
   first), current context (newest first). Facts, notes and summaries only: raw episodes
   and reflections are never pinned.
2. Memories from earlier sessions relevant to ``query`` (hybrid search; the current
   session excluded; only hits scoring at least ``min_score``; nothing pinned repeated, a
   text said twice shown once), each with its date.
3. The latest reflection, without its lines that repeat a memory shown above.

``profile`` picks a seed's recipe instead (``RECIPES``). Only active, unexpired memories
appear. The budget is ``max_entries`` memories and, when given, ``max_tokens`` for the
WHOLE block (headings included). The relevance section and the reflection hold their
share of it (``RELEVANT_SHARE``, ``REFLECTION_SHARE``) when they have something to show,
so pinned memories never crowd them out; within the shares, entries are taken in the
order above while they fit, and one that does not fit is left out (a smaller one after it
may still fit). Left-out memories keep their type and stay searchable; nothing is
written. Identity entries are exempt: never dropped, even past the budget (that is logged
as a warning). A warning is also logged when the pinned memories use 80% of the budget or
more. Nothing here reads secrets: a vault never appears in a prompt.
"""

from __future__ import annotations

import functools
import logging
import math
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import arguments
from ..errors import InvalidInput
from ..retrieval.hitset import one_per_memory
from ..types import Kind, Memory, MemoryType, Query, Status

if TYPE_CHECKING:  # pragma: no cover
    from ..store.handles import ScopedHandle

log = logging.getLogger(__name__)

TokenCounter = Callable[[str], int]
"""Counts the tokens of a text: the one seam for token budgets (inject one in tests)."""

PINNED = (MemoryType.IDENTITY, MemoryType.LESSON, MemoryType.DECISION, MemoryType.CONTEXT)
_TITLES = {
    MemoryType.IDENTITY: "Identity",
    MemoryType.LESSON: "Lessons",
    MemoryType.DECISION: "Decisions",
    MemoryType.CONTEXT: "Current context",
}
_PINNED_KINDS = (Kind.FACT, Kind.NOTE, Kind.SUMMARY)
_RELEVANT_KINDS = (Kind.EPISODE, Kind.FACT, Kind.NOTE, Kind.SUMMARY)
_RELEVANT_TITLE = "Relevant from earlier sessions"
_HEADER = "## Memory\n"
_MAX_FETCH = 10_000  # the most rows one list() call returns
WARN_AT = 0.8  # share of the budget the pinned memories may use before a warning

# ----------------------------------------------------------------------------- tokens

_PIECE = re.compile(r"[A-Za-z0-9]+|\S")
_DIGIT = re.compile(r"[0-9]")


def estimate_tokens(text: str) -> int:
    """A model-free token count, used when no offline tiktoken encoding is available.

    An ASCII word counts 1 token, plus 1 per 8 letters (long words split into pieces);
    a run holding digits counts 1 per 3 characters (numbers and ids split finely); every
    other visible character (punctuation, each CJK or Cyrillic letter, emoji) counts 1.
    Against the WordPiece tokenizer bundled for the embedder, on the 5,882 turns of
    LoCoMo, this gives 1.05x its count in total and for 10-turn blocks falls short of it
    in 1.7% of cases (by at most 3%): a slight over-estimate.
    """
    count = 0
    for match in _PIECE.finditer(text):
        piece = match.group()
        if len(piece) == 1 or not piece.isascii():
            count += 1
        elif _DIGIT.search(piece):
            count += math.ceil(len(piece) / 3)
        else:
            count += 1 + len(piece) // 8
    return count


class _TiktokenCounter:
    def __init__(self, encoding: Any) -> None:
        self.encoding = encoding
        self.name = f"tiktoken {encoding.name}"

    def __call__(self, text: str) -> int:
        # Special-token text such as "<|endoftext|>" in a memory is counted, not refused.
        return len(self.encoding.encode(text, disallowed_special=()))

    def __repr__(self) -> str:
        return f"<token counter {self.name}>"


TIKTOKEN_ENCODINGS = ("o200k_base", "cl100k_base")
_TIKTOKEN_LOCK = threading.Lock()


def _offline_tiktoken(encodings: Sequence[str] = TIKTOKEN_ENCODINGS) -> TokenCounter | None:
    """A tiktoken counter, only when tiktoken is installed AND one of ``encodings`` loads
    from local files (tiktoken's cache or a plugin). Trigger: tiktoken downloads its BPE
    files on first use. Why: HiveMem never fetches anything at run time. Outcome: remote
    reads are refused while the encoding loads, and a refusal means "no tiktoken"."""
    try:
        import tiktoken
        import tiktoken.load as tiktoken_load
    except ImportError:
        return None
    original = getattr(tiktoken_load, "read_file", None)
    if original is None:  # a tiktoken we do not know: do not risk a download
        return None

    def local_only(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise OSError(f"hivemem does not download {blobpath} at run time")
        return original(blobpath)

    with _TIKTOKEN_LOCK:
        tiktoken_load.read_file = local_only
        try:
            for name in encodings:
                try:
                    return _TiktokenCounter(tiktoken.get_encoding(name))
                except Exception as exc:  # missing file, refused download, unknown name
                    log.debug("tiktoken encoding %s not available offline: %s", name, exc)
        finally:
            tiktoken_load.read_file = original
    return None


@functools.cache
def default_token_counter() -> TokenCounter:
    """The counter budgets use unless one is injected: tiktoken (``o200k_base``, else
    ``cl100k_base``) when installed with its encoding already on disk, else
    ``estimate_tokens``. Chosen once per process; the choice is logged at DEBUG."""
    counter = _offline_tiktoken()
    if counter is None:
        log.debug("context token counter: estimate_tokens (no offline tiktoken encoding)")
        return estimate_tokens
    log.debug("context token counter: %s", getattr(counter, "name", counter))
    return counter


# ----------------------------------------------------------------------------- the block


def _whole(value: object, field: str, minimum: int, maximum: int = _MAX_FETCH) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise InvalidInput(
            field, f"expected a whole number from {minimum} to {maximum}, got {value!r}"
        )
    return value


def _check_limits(
    max_entries: object, max_tokens: object, max_relevant: object
) -> tuple[int, int | None, int]:
    """The budget arguments, checked: ``InvalidInput`` names the first bad one."""
    return (
        _whole(max_entries, "max_entries", 1),
        None if max_tokens is None else _whole(max_tokens, "max_tokens", 1, 10**9),
        _whole(max_relevant, "max_relevant", 0, 1000),
    )


def _optional_text(value: object, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise InvalidInput(field, f"expected text or nothing, got {value.__class__.__name__}")


def bullet(memory: Memory, *, dated: bool = False) -> str:
    text = " ".join(memory.content.split())
    label = f"**{memory.key}**: " if memory.key else ""
    if not dated:
        return f"- {label}{text}"
    when = (memory.event_time or memory.created_at).date().isoformat()
    speaker = f"{memory.role}: " if memory.kind is Kind.EPISODE and memory.role else ""
    return f"- [{when}] {speaker}{label}{text}"


@dataclass(slots=True)
class _Entry:
    section: str
    text: str
    memory: Memory


class _Block:
    """The block being built, with its running cost. Costs are summed piece by piece
    (header, section headings, lines); ``render`` is checked whole at the end, since a
    tokenizer's count of a whole text may differ slightly from the sum of its parts."""

    def __init__(self, count: TokenCounter, max_entries: int, max_tokens: int | None) -> None:
        self.count = count
        self.max_entries = max_entries
        self.max_tokens = max_tokens
        self.entries: list[_Entry] = []
        self.tokens = count(_HEADER)

    def cost(self, section: str, text: str) -> int:
        heading = 0 if any(e.section == section for e in self.entries) else self._heading(section)
        return heading + self.count(text + "\n")

    def _heading(self, section: str) -> int:
        return self.count(f"\n### {section}\n")

    def fits(self, cost: int) -> bool:
        if len(self.entries) >= self.max_entries:
            return False
        return self.max_tokens is None or self.tokens + cost <= self.max_tokens

    def add(self, section: str, text: str, memory: Memory, cost: int) -> None:
        self.entries.append(_Entry(section, text, memory))
        self.tokens += cost

    def full(self) -> bool:
        return len(self.entries) >= self.max_entries or (
            self.max_tokens is not None and self.tokens >= self.max_tokens
        )

    def render(self) -> str:
        if not self.entries:
            return ""
        sections: dict[str, list[str]] = {}
        for entry in self.entries:
            sections.setdefault(entry.section, []).append(entry.text + "\n")
        body = "".join(f"\n### {title}\n" + "".join(lines) for title, lines in sections.items())
        return _HEADER + body

    def sections(self) -> list[dict[str, Any]]:
        """Each section's title and its memories (id, key, type, kind, the line shown)."""
        out: dict[str, list[dict[str, Any]]] = {}
        for e in self.entries:
            out.setdefault(e.section, []).append(
                {
                    "id": e.memory.id,
                    "key": e.memory.key,
                    "type": e.memory.type.value,
                    "kind": e.memory.kind.value,
                    "text": e.text,
                }
            )
        return [{"title": title, "memories": items} for title, items in out.items()]

    def trim_to_budget(self) -> str:
        """The rendered block, dropping the last non-identity entries while the whole
        text is over ``max_tokens`` by the counter (rare: only where counts do not add)."""
        text = self.render()
        while self.max_tokens is not None and self.count(text) > self.max_tokens:
            droppable = [
                i for i, e in enumerate(self.entries) if e.memory.type is not MemoryType.IDENTITY
            ]
            if not droppable:
                break
            del self.entries[droppable[-1]]
            text = self.render()
        return text


@dataclass(frozen=True, slots=True)
class Recipe:
    """What a profile's block holds: the pinned section or not, which kinds the
    relevance section searches and how many it shows, its title, the reflection or not."""

    pinned: bool = True
    relevant_kinds: tuple[Kind, ...] = _RELEVANT_KINDS
    max_relevant: int | None = None  # None: the section's share of max_entries
    relevant_title: str = _RELEVANT_TITLE
    reflection: bool = True


# The block each seed builds (docs/context.md "Profiles"); "hivemem" is all three.
RECIPES: Mapping[str, Recipe] = {
    "hivemem": Recipe(),
    # openhive's buildMemorySection: the pinned types only, ~50 entries.
    "openhive": Recipe(relevant_kinds=(), reflection=False),
    # The assistant's ContextProvider: hybrid_search(prompt, kind="fact", limit=5,
    # current session excluded) and the latest reflection.
    "assistant": Recipe(pinned=False, relevant_kinds=(Kind.FACT,), max_relevant=5),
    # Agent Swarm's runner: the top matches for the task as "Relevant Past Knowledge".
    "swarm": Recipe(
        pinned=False, max_relevant=5, relevant_title="Relevant Past Knowledge", reflection=False
    ),
    # corvid-agent injects nothing itself: HiveMem's block.
    "corvid": Recipe(),
}

RELEVANT_SHARE = 0.4  # of max_entries and max_tokens, held for the relevance section
REFLECTION_SHARE = 0.2  # of max_tokens, held for the latest reflection
MIN_SCORE = 0.05  # the relevance floor: hits scoring below it are not shown (measured)


@dataclass(frozen=True, slots=True)
class ContextBlock:
    """The block and what it is made of: ``text`` is what ``build_context`` returns;
    ``sections`` lists each section's title and the memories in it, in order."""

    text: str
    profile: str
    tokens: int
    sections: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "block": self.text,
            "profile": self.profile,
            "tokens": self.tokens,
            "entries": sum(len(s["memories"]) for s in self.sections),
            "sections": self.sections,
        }


def recipe_of(mem: ScopedHandle, profile: object) -> tuple[str, Recipe]:
    """The profile's name and recipe: ``profile``, else the store's ``profile`` setting,
    else HiveMem's. ``InvalidInput`` names the choices."""
    if profile is None:
        profile = getattr(mem, "settings", None) and mem.settings.profile or "hivemem"
    if not isinstance(profile, str) or profile.strip().lower() not in RECIPES:
        raise InvalidInput("profile", f"expected one of {', '.join(RECIPES)}, got {profile!r:.60}")
    name = profile.strip().lower()
    return name, RECIPES[name]


def build_context(
    mem: ScopedHandle,
    *,
    query: str | None = None,
    session_id: str | None = None,
    max_entries: int = 50,
    max_tokens: int | None = None,
    max_relevant: int | None = None,
    count_tokens: TokenCounter | None = None,
    profile: str | None = None,
    min_score: float | None = None,
) -> str:
    """The memory block for a system prompt, or ``""`` when there is nothing to show.

    See the module docstring for the sections and the budget rules, and
    ``context_block`` for the arguments. The returned block never exceeds
    ``max_tokens`` by the token counter, unless identity memories alone do.
    """
    return context_block(
        mem,
        query=query,
        session_id=session_id,
        max_entries=max_entries,
        max_tokens=max_tokens,
        max_relevant=max_relevant,
        count_tokens=count_tokens,
        profile=profile,
        min_score=min_score,
    ).text


def context_block(
    mem: ScopedHandle,
    *,
    query: str | None = None,
    session_id: str | None = None,
    max_entries: int = 50,
    max_tokens: int | None = None,
    max_relevant: int | None = None,
    count_tokens: TokenCounter | None = None,
    profile: str | None = None,
    min_score: float | None = None,
) -> ContextBlock:
    """The block with its sections (``ContextBlock``).

    ``profile`` picks a seed's recipe (``RECIPES``; default: the ``profile`` setting,
    else all three sections). ``max_relevant`` caps the relevance section (default: the
    recipe's count, else its share of ``max_entries``: 20 of 50) and ``min_score`` is its
    floor (default ``MIN_SCORE``): a hit scoring below it is not shown. The relevance
    section and the reflection hold their share of the budget (``RELEVANT_SHARE``,
    ``REFLECTION_SHARE``): pinned memories never crowd them out. ``count_tokens`` is the
    token counter; by default ``default_token_counter()``: tiktoken when installed with
    its encoding on disk, otherwise ``estimate_tokens`` (documented there).
    """
    name, recipe = recipe_of(mem, profile)
    max_entries, max_tokens, max_relevant = _limits(recipe, max_entries, max_tokens, max_relevant)
    floor = MIN_SCORE if min_score is None else min_score
    if isinstance(floor, bool) or not isinstance(floor, int | float) or not 0 <= floor <= 1:
        raise InvalidInput("min_score", f"expected a number from 0 to 1, got {floor!r:.60}")
    query = _optional_text(query, "query")
    session_id = _optional_text(session_id, "session_id")
    count = count_tokens or default_token_counter()
    block = _Block(count, max_entries, max_tokens)

    hits: list[Memory] = []
    if recipe.relevant_kinds and query and query.strip() and max_relevant:
        hits = _relevant_hits(mem, query, session_id, recipe, max_relevant, max_entries, floor)
    reflection = None
    if recipe.reflection:
        latest = mem.list(kind=Kind.REFLECTION, include_expired=False, limit=1)
        reflection = latest[0] if latest else None
    if recipe.pinned:
        entries, tokens = _reserved(block, hits, reflection, recipe, max_relevant)
        block.max_entries = max(0, max_entries - entries)
        block.max_tokens = None if max_tokens is None else max(0, max_tokens - tokens)
        left_out = _add_pinned(mem, block)
        block.max_entries, block.max_tokens = max_entries, max_tokens
        _warn_if_tight(block, left_out)
    _add_relevant(block, hits, recipe.relevant_title, max_relevant)
    if reflection is not None and not block.full():
        _add_reflection(block, reflection)
    # The memories came through the facade, already scrubbed; the block is output too.
    text = mem.store.scrub(block.trim_to_budget())
    return ContextBlock(text, name, count(text) if text else 0, block.sections())


def _limits(
    recipe: Recipe, max_entries: object, max_tokens: object, max_relevant: object
) -> tuple[int, int | None, int]:
    """The budget, checked; ``max_relevant`` by default the recipe's count, else the
    relevance section's share of ``max_entries`` (20 of 50)."""
    entries, tokens, _ = _check_limits(max_entries, max_tokens, 0)
    if max_relevant is None:
        max_relevant = recipe.max_relevant
    if max_relevant is None:
        max_relevant = max(1, math.floor(RELEVANT_SHARE * entries))
    return _check_limits(entries, tokens, max_relevant)


def _reserved(
    block: _Block, hits: list[Memory], reflection: Memory | None, recipe: Recipe, max_relevant: int
) -> tuple[int, int]:
    """Entries and tokens held back from the pinned memories: the relevance section's
    hits (at most ``RELEVANT_SHARE`` of each limit) and the reflection (one entry, at
    most ``REFLECTION_SHARE`` of the tokens). Nothing is held for a section that has
    nothing to show, so a block without a query is all pinned memories, as before."""
    share = max(1, math.floor(RELEVANT_SHARE * block.max_entries))
    wanted = hits[: min(max_relevant, share)]
    entries = len(wanted) + (reflection is not None)
    if block.max_tokens is None:
        return entries, 0
    relevant = sum(block.count(bullet(m, dated=True) + "\n") for m in wanted)
    if wanted:
        relevant += block.count(f"\n### {recipe.relevant_title}\n")
    tokens = min(relevant, math.floor(RELEVANT_SHARE * block.max_tokens))
    if reflection is not None:
        title = _reflection_title(reflection)
        cost = block.count(f"\n### {title}\n") + block.count(reflection.content.strip() + "\n")
        tokens += min(cost, math.floor(REFLECTION_SHARE * block.max_tokens))
    return entries, tokens


def _add_pinned(mem: ScopedHandle, block: _Block) -> int:
    """Pinned memories into ``block``; returns how many were left out (at least)."""
    left_out = 0
    for memory_type in PINNED:
        identity = memory_type is MemoryType.IDENTITY
        fetch = _MAX_FETCH if identity else min(_MAX_FETCH, block.max_entries + 1)
        title = _TITLES[memory_type]
        listed = mem.list(type=memory_type, kind=_PINNED_KINDS, include_expired=False, limit=fetch)
        # A promoted memory is listed in the own scope and in the shared one: once.
        for memory in one_per_memory(listed, mem.name, lambda m: m):
            if not identity and len(block.entries) >= block.max_entries:
                left_out += 1  # no room for any entry: skip counting its tokens
                continue
            text = bullet(memory)
            cost = block.cost(title, text)
            if identity or block.fits(cost):
                block.add(title, text, memory, cost)
            else:
                left_out += 1
    identities = sum(e.memory.type is MemoryType.IDENTITY for e in block.entries)
    if identities and (
        identities > block.max_entries
        or (block.max_tokens is not None and block.tokens > block.max_tokens)
    ):
        log.warning(
            "context budget exceeded by identity memories alone (%d entries, %d tokens; "
            "max_entries=%d, max_tokens=%s): identity is never dropped",
            identities,
            block.tokens,
            block.max_entries,
            block.max_tokens,
        )
    return left_out


def _warn_if_tight(block: _Block, left_out: int) -> None:
    used = len(block.entries) / block.max_entries
    if block.max_tokens is not None:
        used = max(used, block.tokens / block.max_tokens)
    if used >= WARN_AT or left_out:
        tokens = f", {block.tokens}/{block.max_tokens} tokens" if block.max_tokens else ""
        log.warning(
            "context budget %.0f%% used by pinned memories (%d/%d entries%s); "
            "at least %d left out of the prompt (still typed and searchable)",
            100 * used,
            len(block.entries),
            block.max_entries,
            tokens,
            left_out,
        )


def _relevant_hits(
    mem: ScopedHandle,
    query: str,
    session_id: str | None,
    recipe: Recipe,
    max_relevant: int,
    max_entries: int,
    floor: float,
) -> list[Memory]:
    """The search's hits above ``floor`` (active, of the recipe's kinds, the current
    session excluded), one per distinct text, best first. Fetched with headroom for the
    pinned memories they may repeat."""
    want = min(max_relevant, max_entries)
    found = mem.search(
        Query(
            text=query,
            limit=min(1000, 2 * want + 10),
            kinds=recipe.relevant_kinds,
            exclude_sessions=(session_id,) if session_id else (),
            statuses=(Status.ACTIVE,),
            min_score=floor,
            seat_page=want,  # the vector lane's seats where the block reads, not past it
        )
    )
    out: list[Memory] = []
    seen: set[str] = set()
    for hit in found:
        if hit.memory.content_hash not in seen:
            seen.add(hit.memory.content_hash)
            out.append(hit.memory)
    return out


def _add_relevant(block: _Block, hits: list[Memory], title: str, max_relevant: int) -> None:
    shown = {e.memory.id for e in block.entries}
    seen = {e.memory.content_hash for e in block.entries}  # one line per distinct text
    added = 0
    for memory in hits:
        if added >= max_relevant or block.full():
            break
        if memory.id in shown or memory.content_hash in seen:
            continue
        text = bullet(memory, dated=True)
        cost = block.cost(title, text)
        if block.fits(cost):
            block.add(title, text, memory, cost)
            seen.add(memory.content_hash)
            added += 1


def _reflection_title(reflection: Memory) -> str:
    return f"Latest reflection ({reflection.created_at.date().isoformat()})"


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _add_reflection(block: _Block, reflection: Memory) -> None:
    """The latest reflection, without its lines that repeat a memory the block already
    shows (an extractive reflection lists facts, often the pinned ones); left out when
    nothing of its own remains."""
    held = {_norm(e.memory.content) for e in block.entries}
    lines = [
        line
        for line in reflection.content.strip().splitlines()
        if _norm(line.lstrip("-• ").strip()) not in held
    ]
    own = [line for line in lines if line.strip() and not line.lstrip().startswith("- …")]
    if not any(line.lstrip().startswith("- ") for line in own) and any(
        line.lstrip().startswith("- ") for line in reflection.content.splitlines()
    ):
        lines = own  # every listed item is already shown: keep only its summary lines
    text = "\n".join(lines).strip()
    if not text:
        return
    title = _reflection_title(reflection)
    cost = block.cost(title, text)
    if block.fits(cost):
        block.add(title, text, reflection, cost)


# ----------------------------------------------------------------------------- provider


class ContextProvider:
    """What an agent loop calls before each turn: ``provider(query, session_id)`` is the
    memory block for the system prompt (``build_context`` with this provider's budget).

    The constructor only checks and keeps its arguments (no I/O), so build one per agent
    and call it every turn. ``messages(history)`` is the whole chat request in OpenAI
    message format, with the block in the system message.
    """

    def __init__(
        self,
        mem: ScopedHandle,
        max_entries: int = 50,
        max_tokens: int | None = None,
        *,
        max_relevant: int | None = None,
        count_tokens: TokenCounter | None = None,
        profile: str | None = None,
    ) -> None:
        self.profile, recipe = recipe_of(mem, profile)
        self.max_entries, self.max_tokens, self.max_relevant = _limits(
            recipe, max_entries, max_tokens, max_relevant
        )
        if count_tokens is not None and not callable(count_tokens):
            raise InvalidInput("count_tokens", "expected a callable text -> int")
        self.mem = mem
        self.count_tokens = count_tokens

    def __repr__(self) -> str:
        return (
            f"<hivemem.ContextProvider {self.mem.name!r} max_entries={self.max_entries} "
            f"max_tokens={self.max_tokens}>"
        )

    def __call__(self, query: str | None = None, session_id: str | None = None) -> str:
        return build_context(
            self.mem,
            query=query,
            session_id=session_id,
            max_entries=self.max_entries,
            max_tokens=self.max_tokens,
            max_relevant=self.max_relevant,
            count_tokens=self.count_tokens,
            profile=self.profile,
        )

    def system_message(
        self,
        query: str | None = None,
        session_id: str | None = None,
        *,
        instructions: str | None = None,
    ) -> dict[str, str]:
        """``{"role": "system", "content": instructions + block}``."""
        instructions = arguments.text(instructions, "instructions")
        parts = [p.strip() for p in (instructions, self(query, session_id)) if p and p.strip()]
        return {"role": "system", "content": "\n\n".join(parts)}

    def messages(
        self,
        history: Sequence[Mapping[str, Any]],
        *,
        session_id: str | None = None,
        instructions: str | None = None,
    ) -> list[dict[str, Any]]:
        """``history`` (OpenAI-style messages) with one system message in front that holds
        ``instructions``, the text of any system messages in ``history``, and the memory
        block for the last user message (the query). ``history`` is not changed."""
        instructions = arguments.text(instructions, "instructions")
        system_texts = [instructions] if instructions else []
        rest: list[dict[str, Any]] = []
        query = None
        for message in arguments.batch(history, "history"):
            if not isinstance(message, Mapping) or "role" not in message:
                raise InvalidInput("history", "expected messages with a role and content")
            text = _message_text(message.get("content"))
            if message["role"] == "system":
                system_texts.append(text)
                continue
            if message["role"] == "user":
                query = text
            rest.append(dict(message))
        system = self.system_message(query, session_id, instructions="\n\n".join(system_texts))
        return [system, *rest]


def _message_text(content: object) -> str:
    """The text of a message's content: a string, or OpenAI content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return " ".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "text"
        )
    return ""
