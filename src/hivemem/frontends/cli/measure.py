"""Commands that measure HiveMem: ``bench`` (latency and throughput on a generated
corpus) and ``eval`` (retrieval quality on public benchmarks). Their figures are the ones
quoted in the README."""

from __future__ import annotations

import contextlib
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from ...errors import InvalidInput
from ...evaluation import entities as entity_eval
from ...evaluation.bench import format_table, run_bench
from ...evaluation.bench_long import LongBenchReport, format_long, run_long_bench
from ...evaluation.bench_postgres import format_side_by_side, run_pg_bench
from ...evaluation.bench_real_long import RealLongReport, format_real_long, run_real_long_bench
from ...evaluation.decay_sim import PROFILES, simulate
from ...evaluation.decay_sim import format_table as format_decay_table
from ...evaluation.locomo import SYSTEM_PROMPT_PREAMBLE, eval_locomo, format_report
from ...evaluation.longmemeval import eval_longmemeval, format_lme_report
from ...evaluation.silence import format_silence, run_silence
from ...evaluation.suites import format_suite, paraphrase_suite, run_suite, suites_for
from ...store.factory import is_url
from .common import EMBED_API_KEY_ENV, Env, echo_json, json_option, pass_env
from .progress import sizes as _sizes
from .progress import stage_printer as _stage_printer

# The default is quick (seconds); --full is the README's bench (minutes).
QUICK: dict[str, Any] = {
    "sizes": (1_000,),
    "queries": 50,
    "writes": 200,
    "model_sentences": 256,
    "model_queries": 20,
}
FULL: dict[str, Any] = {
    "sizes": (10_000, 100_000),
    "queries": 200,
    "writes": 2000,
    "model_sentences": 1000,
    "model_queries": 100,
}
# Disk per loaded memory: its store with vectors (~3.9 kB) and the keyword-only copy
# (~1.6 kB; none with --bulk-load), as the README's bench measured.
BYTES_PER_MEMORY = 5_500
KEYWORD_COPY_BYTES_PER_MEMORY = 1_600


@click.command()
@click.option(
    "--full",
    is_flag=True,
    help="The README's bench: sizes 10000,100000, 200 queries, 2000 writes (minutes, "
    "~0.5 GB of temporary files).",
)
@click.option(
    "--sizes",
    default=None,
    callback=_sizes,
    help="Corpus sizes (memories), comma-separated; e.g. 1000000 for 1M "
    "[default: 1000; with --full 10000,100000].",
)
@click.option(
    "--queries", type=int, help="Searches per size and mode [default: 50; --full/--sizes 200]."
)
@click.option(
    "--writes", type=int, help="Single writes per size [default: 200; --full/--sizes 2000]."
)
@click.option("--batch", default=100, show_default=True, help="Episodes per batched write.")
@click.option(
    "--no-model",
    "skip_model",
    is_flag=True,
    help="Skip the embedding model's figures (load, sentences/s, query latency).",
)
@click.option(
    "--embedder",
    "embedders",
    multiple=True,
    metavar="NAME",
    help="Also time this embedder beside the bundled models, with the same figures "
    "(repeatable): a name the embedder setting takes (local-mpnet, sentence-transformers, "
    "onnx, openai …), its HIVEMEM_EMBED_* settings applying. One not installed or "
    "failing is one line naming the fix.",
)
@click.option(
    "--keep",
    "keep_folder",
    type=click.Path(file_okay=False),
    help="Keep the generated stores in this folder (default: a temporary folder).",
)
@click.option(
    "--long-scopes",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="Also time the long-memory corpus: this many scopes of ~1 kB turns (0: skip; "
    "the README's figures use 20).",
)
@click.option(
    "--long-turns",
    default=500,
    show_default=True,
    type=click.IntRange(min=1),
    help="Turns per scope of the long-memory corpus.",
)
@click.option(
    "--longmemeval",
    "long_path",
    type=click.Path(exists=True, dir_okay=False),
    help="With --long-scopes: real turns instead, one scope per question of this "
    "LongMemEval file (plain or .gz), timed beside plain FTS5 on the same texts.",
)
@click.option(
    "--bulk-load",
    is_flag=True,
    help="Load each corpus once, without an embedder, then embed its vectors in one flush "
    "(the set-up of a large size in half the time or less; the timed writes and searches "
    "are the same, on the same rows and vectors). The load rows are then the keyword-only "
    "load's.",
)
@click.option(
    "--no-sqlite",
    "skip_sqlite",
    is_flag=True,
    help="With --db postgresql://…: the server's bench alone, without SQLite's beside it.",
)
@click.option("--quiet", is_flag=True, help="No progress on stderr.")
@click.option(
    "--ui",
    "ui_pages",
    is_flag=True,
    help="Time the web inspector's pages instead (list, search, memory, overview …; "
    "--queries requests per page; needs the http extra).",
)
@click.option(
    "--write-path",
    "write_path",
    is_flag=True,
    help="Time the write path instead, each beside a plain SQLite insert of the same rows "
    "(row + FTS5 row) in the same run: add_episode one per transaction (--writes rows, "
    "default 5000), add_episodes of --batch per transaction, and (without --no-model) "
    "ingest with embeddings beside the default model's sentences/s. With --db "
    "postgresql://…: both paths on that server beside a plain INSERT (row + tsvector, GIN) "
    "in databases created and dropped.",
)
@click.option(
    "--load",
    "load",
    is_flag=True,
    help="Load a real serve-http process instead: --clients HTTP clients mixing searches "
    "and writes for --seconds, then check every acknowledged write is found (a fresh "
    "SQLite file; with --db postgresql://… that server too, in a database of its own, "
    "created and dropped, where the user may).",
)
@click.option(
    "--clients",
    default=16,
    show_default=True,
    type=click.IntRange(min=1),
    help="--load: HTTP clients (threads), each sending one request after another.",
)
@click.option(
    "--seconds",
    default=30.0,
    show_default=True,
    type=click.FloatRange(min=0.1),
    help="--load: how long the clients run.",
)
@click.option(
    "--write-share",
    default=0.2,
    show_default=True,
    type=click.FloatRange(0, 1),
    help="--load: the share of requests that are writes (the rest are searches).",
)
@click.option(
    "--preload",
    default=2000,
    show_default=True,
    type=click.IntRange(min=1),
    help="--load: memories in the scope before the clients start.",
)
@click.option(
    "--compare",
    is_flag=True,
    help="--load: also run SQLite with read_connections=0 (the single connection), in the "
    "same run.",
)
@click.option(
    "--baseline-src",
    type=click.Path(file_okay=False, exists=True),
    help="--load: also run a server from another checkout's src folder (e.g. a git "
    "worktree of an earlier commit), as a baseline in the same run (on SQLite, and with "
    "--db postgresql://… on PostgreSQL too, with --workers).",
)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="--load: also run SQLite (and PostgreSQL) with serve-http --workers N, in the "
    "same run (when N > 1).",
)
@click.option(
    "--bare",
    is_flag=True,
    help="--load: also run the bare stack first (FastAPI + uvicorn, same --workers, one "
    "plain FTS5 MATCH per search and one INSERT per write) and print each target's req/s "
    "against it.",
)
@click.option(
    "--mcp",
    is_flag=True,
    help="--load: also load serve-mcp over streamable HTTP (memory_search, memory_save), "
    "on SQLite and PostgreSQL.",
)
@click.option(
    "--many-scopes",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="--load: also spread the preload over N small scopes, each request on a random "
    "one (a hive of tenants), on SQLite and PostgreSQL.",
)
@json_option
@pass_env
def bench(
    env: Env,
    full: bool,
    sizes: tuple[int, ...] | None,
    queries: int | None,
    writes: int | None,
    batch: int,
    skip_model: bool,
    embedders: tuple[str, ...],
    keep_folder: str | None,
    long_scopes: int,
    long_turns: int,
    long_path: str | None,
    bulk_load: bool,
    skip_sqlite: bool,
    quiet: bool,
    ui_pages: bool,
    write_path: bool,
    load: bool,
    clients: int,
    seconds: float,
    write_share: float,
    preload: int,
    compare: bool,
    baseline_src: str | None,
    workers: int,
    bare: bool,
    mcp: bool,
    many_scopes: int,
    as_json: bool,
) -> None:
    """Time writes, vector indexing and searches on generated data.

    By default a quick run (1,000 memories, 50 queries, seconds); --full is the
    README's bench (10,000 and 100,000 memories, 200 queries, minutes), and so is any
    --sizes unless --queries and --writes say otherwise. For each size, a fresh store is
    filled with generated episodes while the embedding worker runs, and the vectors still
    queued are flushed; then single and batched writes and the same natural-language questions are
    timed (p50/p95/p99) keyword only, hybrid, and in the vector lane alone. The vectors
    come from the hash embedder at the default model's dimension (the index costs the
    same); each bundled model is timed once per run: load, sentences/s, ingest with
    embeddings (memories stored and embedded per second), query embedding; so is each
    --embedder NAME beside them (local-mpnet: its first use, conversion included).
    Progress goes to stderr (--quiet: none). HIVEMEM_* settings apply. With
    --long-scopes, the long-memory corpus too: scopes of ~1 kB turns, searched at limit
    10 and 50, the first query of each scope and warm ones; with --longmemeval PATH,
    real turns instead (one scope per question's haystack), beside plain FTS5 on the
    same texts. Each size also prints the SQL statements and CPU ms per hybrid search,
    by stage of the pipeline.

    With --write-path, the write path is timed beside plain SQLite instead (the same
    rows into a table and its FTS5 index, one transaction per row, then per batch) and
    the ratio printed; and ingest with embeddings beside the default model's own
    sentences/s on this machine (README, "Benchmarks").

    With --ui, the same corpus is loaded and the inspector's pages are timed instead,
    through the whole HTTP app in process (see docs/inspector.md).

    With --load, a real serve-http process is loaded by --clients HTTP clients
    (--write-share of writes, the rest searches) for --seconds: requests/s, p50/p95 per
    kind, errors, and whether every acknowledged write is found, through the server and
    after it stopped. --compare adds SQLite's single connection and --workers N a server
    of N processes, in the same run; the CPU the clients and the server used, in all and
    per request, is printed beside them, and the server's CPU per request by stage
    (parse, auth, library, serialise, and the framework's rest).

    With --db postgresql://…, SQLite's bench of the same sizes runs first, then the
    server's (a database hivemem_bench_SIZE per size, created and dropped: the user
    needs CREATEDB; kept with --keep), and the figures are printed side by side
    (docs/postgres.md; --no-sqlite: the server's alone).
    """
    if embedders and (write_path or load or ui_pages or (env.db and is_url(env.db))):
        raise click.UsageError("--embedder: not with --write-path, --load, --ui or --db URL")
    if write_path:
        from ...evaluation.bench_write import format_write, run_write_bench

        try:
            written = run_write_bench(
                5_000 if writes is None else writes,
                batch,
                settings=env.settings,
                model=not skip_model,
                progress=_stage_printer(quiet),
                url=env.db if env.db and is_url(env.db) else None,
            )
        except ValueError as exc:
            raise InvalidInput("bench", str(exc)) from None
        if as_json:
            echo_json(written.to_dict())
        else:
            click.echo(format_write(written))
        return
    if load:
        from ...evaluation.bench_load import load_targets

        found = load_targets(
            env.db if env.db and is_url(env.db) else None,
            keep_folder,
            compare=compare,
            baseline_src=baseline_src,
            workers=workers,
            bare=bare,
            mcp=mcp,
            many_scopes=many_scopes,
            clients=clients,
            seconds=seconds,
            preload=preload,
            write_share=write_share,
            progress=None if quiet else lambda line: click.echo(line, err=True),
        )
        if as_json:
            echo_json([r.to_dict() for r in found])
        else:
            from ...evaluation.bench_load import format_load

            click.echo(format_load(found))
        return
    if ui_pages:
        from ...evaluation.bench_ui import format_ui_table, run_ui_bench
        from ..http import create_app

        try:
            pages = run_ui_bench(
                create_app,
                sizes or QUICK["sizes"],
                queries or QUICK["queries"],
                keep_folder,
                _stage_printer(quiet),
                settings=env.settings,
            )
        except ValueError as exc:
            raise InvalidInput("bench", str(exc)) from None
        if as_json:
            echo_json([r.to_dict() for r in pages])
        else:
            click.echo(format_ui_table(pages))
        return
    # --sizes asks for a measurement: the full bench's queries and writes, as the README's
    # figures (`hivemem bench --sizes 10000,100000`) were taken.
    plan = FULL if full or sizes else QUICK
    sizes = sizes or plan["sizes"]
    if (full or sum(sizes) >= 10_000) and not quiet:
        where = keep_folder or "a temporary folder, removed at the end"
        per_memory = BYTES_PER_MEMORY - (KEYWORD_COPY_BYTES_PER_MEMORY if bulk_load else 0)
        size_mb = sum(sizes) * per_memory / 1e6
        click.echo(
            f"note: the full bench loads {' and '.join(f'{n:,}' for n in sizes)} memories: "
            f"minutes on 2 cores, about {size_mb:,.1f} MB written to {where}",
            err=True,
        )
    if env.db and is_url(env.db):  # --db postgresql://…: that server beside SQLite
        counts = (
            plan["queries"] if queries is None else queries,
            plan["writes"] if writes is None else writes,
            batch,
        )
        try:
            lite = (
                None
                if skip_sqlite
                else run_bench(
                    sizes,
                    *counts,
                    path=keep_folder,
                    progress=_stage_printer(quiet),
                    settings=env.settings,
                    model=False,
                    bulk_load=bulk_load,
                )
            )
        except ValueError as exc:
            raise InvalidInput("bench", str(exc)) from None
        pg = run_pg_bench(
            env.db,
            sizes,
            *counts,
            _stage_printer(quiet),
            settings=env.settings,
            keep=keep_folder is not None,
            bulk_load=bulk_load,
        )
        if as_json:
            echo_json({"postgresql": pg, "sqlite": lite.to_dict() if lite else None})
        else:
            click.echo(format_side_by_side(pg, lite))
        return
    try:
        report = run_bench(
            sizes,
            plan["queries"] if queries is None else queries,
            plan["writes"] if writes is None else writes,
            batch,
            path=keep_folder,
            progress=_stage_printer(quiet),
            settings=env.settings,
            model=not skip_model,
            model_sentences=plan["model_sentences"],
            model_queries=plan["model_queries"],
            bulk_load=bulk_load,
            embedders=embedders,
            embed_api_key=os.environ.get(EMBED_API_KEY_ENV) or None,
        )
    except ValueError as exc:
        raise InvalidInput("bench", str(exc)) from None
    long: LongBenchReport | RealLongReport | None = None
    if long_scopes and long_path:
        long = run_real_long_bench(
            long_path, long_scopes, settings=env.settings, progress=_stage_printer(quiet)
        )
    elif long_scopes:
        long = run_long_bench(
            long_scopes, long_turns, settings=env.settings, progress=_stage_printer(quiet)
        )
    if as_json:
        echo_json({**report.to_dict(), "long_memories": long.to_dict() if long else None})
    else:
        click.echo(format_table(report))
        if isinstance(long, RealLongReport):
            click.echo("\n" + format_real_long(long))
        elif long is not None:
            click.echo("\n" + format_long(long))


@click.group(name="eval")
def eval_() -> None:
    """Retrieval quality benchmarks, and the decay simulation."""


@eval_.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--limit", default=10, show_default=True, help="Hits fetched per question.")
@click.option(
    "--system-prompt",
    is_flag=True,
    help="Put a 2 kB system prompt before every question (what agents often send).",
)
@json_option
@pass_env
def locomo(env: Env, path: str, limit: int, system_prompt: bool, as_json: bool) -> None:
    """Score retrieval on LoCoMo (hit@k, recall@k by category).

    Each conversation goes into its own scope of a temporary store, every turn an
    episode with its session and date; every question is searched and its hits are
    scored against the annotated evidence turns. Categories 1-4 make the headline.
    PATH is LoCoMo's locomo10.json (not shipped: data/locomo10.json of the
    snap-research/locomo repository on GitHub, CC BY-NC 4.0; see the README).
    """
    preamble = SYSTEM_PROMPT_PREAMBLE if system_prompt else ""
    report = eval_locomo(path, limit=limit, settings=env.settings, preamble=preamble)
    if as_json:
        echo_json(report.to_dict())
    else:
        click.echo(format_report(report))


@eval_.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--limit-questions",
    type=click.IntRange(min=1),
    metavar="N",
    help="Score only the first N questions that are not abstentions (default: all).",
)
@json_option
@pass_env
def longmemeval(env: Env, path: str, limit_questions: int | None, as_json: bool) -> None:
    """Score retrieval on LongMemEval (recall_any@k by question type).

    Each question's haystack goes into its own scope of a temporary store, every turn an
    episode with its session and date; the question is searched (top 50) and scored at
    turn level (any has_answer turn in the top k) and session level (any answer session
    in the top k). Abstention questions are skipped. PATH is LongMemEval's JSON (not
    shipped: longmemeval_s_cleaned.json of the xiaowu0162/longmemeval-cleaned dataset
    on Hugging Face, MIT; see the README).
    """
    report = eval_longmemeval(
        path, limit_questions=limit_questions, settings=env.settings, progress=_progress()
    )
    if as_json:
        echo_json(report.to_dict())
    else:
        click.echo(format_lme_report(report))


@eval_.command()
@click.option("--days", default=365, show_default=True, type=click.IntRange(min=1))
@click.option("--facts-per-day", default=3, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--decay-every", default=7, show_default=True, type=click.IntRange(min=1),
    help="Days between runs of the decay job.",
)  # fmt: skip
@click.option(
    "--profile", "names", multiple=True, metavar="NAME",
    help="Only these profiles (repeatable; default: all).",
)  # fmt: skip
@json_option
@pass_env
def decay(
    env: Env, days: int, facts_per_day: int, decay_every: int, names: tuple[str, ...], as_json: bool
) -> None:
    """Simulate a year of use under each confidence-decay profile: what is pruned and
    what a search still finds (docs/maintenance.md explains the workload).

    Profiles: the seeds' configurations (rate 0.1 from last access, the ADR's power
    formula) beside HiveMem's default. Runs in temporary stores; a few minutes.
    """
    chosen = tuple(p for p in PROFILES if not names or p.name in names)
    unknown = set(names) - {p.name for p in PROFILES}
    if unknown:
        raise click.BadParameter(
            f"unknown {sorted(unknown)}; valid: {', '.join(p.name for p in PROFILES)}",
            param_hint="--profile",
        )
    printer = _stage_printer()
    outcomes = simulate(
        chosen,
        days=days,
        facts_per_day=facts_per_day,
        decay_every=decay_every,
        settings=env.settings,
        progress=(lambda name, done, total: printer(name, done, total)) if printer else None,
    )
    if as_json:
        echo_json([o.to_dict() for o in outcomes])
    else:
        click.echo(format_decay_table(outcomes))


@eval_.command()
@json_option
@pass_env
def entities(env: Env, as_json: bool) -> None:
    """Score the write path's entity typing on a labelled sample of real dialogue.

    The sample ships with HiveMem: 300 sentences of LongMemEval user turns (MIT), every
    entity mention labelled with its type, and the spans that are no entity. Prints, for
    the regex pass on the dev half, the held-out half and both: asserted precision (right
    among the mentions given a type other than `other`: issue #22's target), entity
    precision (entities not mistyped among all mentions: false spans count against it),
    and precision and recall per type; spaCy's too where a trained pipeline is installed
    (setting enrich_spacy_model), else the reason it was not measured.
    """
    report = entity_eval.run(env.settings.enrich_spacy_model or "en_core_web_sm")
    if as_json:
        echo_json(report)
    else:
        click.echo(entity_eval.format_report(report))


@eval_.command(name="all")
@click.option(
    "--locomo",
    "locomo_path",
    type=click.Path(exists=True, dir_okay=False),
    help="LoCoMo JSON (locomo10.json): the episodes and mixed suites.",
)
@click.option(
    "--longmemeval",
    "lme_path",
    type=click.Path(exists=True, dir_okay=False),
    help="LongMemEval JSON, plain or .gz (e.g. longmemeval_s_dev120.json.gz).",
)
@click.option(
    "--suite",
    "only",
    type=click.Choice(["longmemeval", "locomo", "locomo-mixed", "paraphrase", "paraphrase-b"]),
    multiple=True,
    help="Run only these suites (repeatable; default: every suite a file was given for; "
    "the held-out paraphrase-b only when named).",
)
@click.option(
    "--limit-questions",
    type=click.IntRange(min=1),
    metavar="N",
    help="About N questions per suite (a quick run; every document is still stored).",
)
@click.option(
    "--ablation",
    is_flag=True,
    help="Also score each stage turned off in turn (and a 2 kB system prompt).",
)
@click.option(
    "--keep",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Keep each suite's store in DIR and reuse it on the next run with the same data "
    "and embedder (only the searches run again; a build stopped while embedding is "
    "finished, not begun again; delete DIR to rebuild).",
)
@click.option(
    "--dump",
    type=click.Path(dir_okay=False, writable=True),
    metavar="FILE",
    help="Write each question's ranked memory ids and scores to FILE (JSON lines); "
    "compare two runs over the same --keep DIR with python -m hivemem.evaluation.dumps.",
)
@click.option(
    "--now",
    type=click.DateTime(formats=["%Y-%m-%dT%H:%M:%S"]),
    metavar="TIME",
    help="Search as of this UTC time (YYYY-MM-DDTHH:MM:SS), not the clock's: decay and "
    "recency then score alike on every run (for --dump comparisons).",
)
@json_option
@pass_env
def all_(
    env: Env,
    locomo_path: str | None,
    lme_path: str | None,
    only: tuple[str, ...],
    limit_questions: int | None,
    ablation: bool,
    keep: str | None,
    dump: str | None,
    now: datetime | None,
    as_json: bool,
) -> None:
    """Score retrieval on LongMemEval, LoCoMo episodes, LoCoMo mixed and the bundled
    paraphrase suite, each beside plain BM25 over the same documents, with search
    p50/p95 and the right answer's score.

    LoCoMo mixed stores the turns plus the data set's observations as facts (no session)
    and its session summaries; a hit is an evidence turn or an observation citing one.
    The paraphrase suite ships with HiveMem and always runs (see `hivemem eval
    paraphrase`); the others run when their file is given; its held-out set B only
    with --suite paraphrase-b.
    """
    names = {"LongMemEval": "longmemeval", "LoCoMo episodes": "locomo"}
    names["LoCoMo mixed"] = "locomo-mixed"
    names.update({"Paraphrase": "paraphrase", "Paraphrase B": "paraphrase-b"})
    reports = []
    printer = _stage_printer()
    with contextlib.ExitStack() as stack:
        dumped = stack.enter_context(open(dump, "w", encoding="utf-8")) if dump else None
        set_b = "paraphrase-b" in only
        for suite in suites_for(locomo_path, lme_path, limit_questions, paraphrase_b=set_b):
            if only and names[suite.name] not in only:
                continue
            report = run_suite(
                suite,
                env.settings,
                ablation=ablation,
                progress=printer,
                keep=Path(keep) if keep else None,
                dump=dumped,
                now=now.replace(tzinfo=UTC) if now else None,
            )
            reports.append(report)
            if not as_json:
                click.echo(format_suite(report) + "\n")
    if as_json:
        echo_json([r.to_dict() for r in reports])


_KEEP_SUITE = click.option(
    "--keep",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Keep the suite's store in DIR and reuse it on the next run with the same "
    "embedder (only the searches run again).",
)


@eval_.command()
@_KEEP_SUITE
@json_option
@pass_env
def paraphrase(env: Env, keep: str | None, as_json: bool) -> None:
    """Score retrieval by meaning: 222 questions whose answer shares no content word
    with them, each hidden among ~2,000 real dialogue turns in one scope (bundled with
    HiveMem; hit@1/5/10 per domain, beside plain BM25, which scores 0 by construction).
    """
    _paraphrase(env, keep, as_json, set_b=False)


@eval_.command("paraphrase-b")
@_KEEP_SUITE
@json_option
@pass_env
def paraphrase_b(env: Env, keep: str | None, as_json: bool) -> None:
    """Score retrieval by meaning on the paraphrase suite's held-out set B: 200 more
    questions in 20 other domains among the same turns, written to confirm what the
    first set chose (hit@1/5/10 per domain, beside plain BM25).
    """
    _paraphrase(env, keep, as_json, set_b=True)


def _paraphrase(env: Env, keep: str | None, as_json: bool, *, set_b: bool) -> None:
    report = run_suite(
        paraphrase_suite(set_b),
        env.settings,
        progress=_stage_printer(),
        keep=Path(keep) if keep else None,
    )
    if as_json:
        echo_json(report.to_dict())
    else:
        click.echo(format_suite(report))


@eval_.command()
@click.option(
    "--locomo",
    "locomo_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="LoCoMo JSON (locomo10.json): its turns fill the scope first.",
)
@click.option(
    "--longmemeval",
    "lme_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="LongMemEval JSON, plain or .gz: its user turns fill the rest.",
)
@click.option(
    "--size",
    default=10_000,
    show_default=True,
    type=click.IntRange(min=100),
    help="Memories in the scope.",
)
@click.option(
    "--keep",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Keep the store in DIR and reuse it on the next run with the same embedder.",
)
@json_option
@pass_env
def silence(
    env: Env, locomo_path: str, lme_path: str, size: int, keep: str | None, as_json: bool
) -> None:
    """Measure the match floors: 100 bundled questions on subjects no memory is about,
    over one scope of SIZE real dialogue turns; how many get any hit (target 0), the
    floor that would silence them all, and how many of each question's words no memory
    holds (how the per-model match and unknown floors were calibrated).
    """
    report = run_silence(
        locomo_path,
        lme_path,
        env.settings,
        size=size,
        keep=Path(keep) if keep else None,
        progress=_stage_printer(),
    )
    if as_json:
        echo_json(report.to_dict())
    else:
        click.echo(format_silence(report))


def _progress() -> Any:
    """Questions done, on stderr (rewritten in place on a terminal)."""
    printer = _stage_printer()
    if printer is None:
        return None
    return lambda done, total: printer("questions", done, total)


COMMANDS = (bench, eval_)
