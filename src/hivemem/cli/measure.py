"""Commands that measure HiveMem: ``bench`` (latency and throughput on a generated
corpus) and ``eval`` (retrieval quality on public benchmarks). Their figures are the ones
quoted in the README."""

from __future__ import annotations

import sys
from typing import Any

import click

from hivemem.bench import format_table, run_bench
from hivemem.bench_long import format_long, run_long_bench
from hivemem.errors import InvalidInput
from hivemem.evaluation import SYSTEM_PROMPT_PREAMBLE, eval_locomo, format_report
from hivemem.longmemeval import eval_longmemeval, format_lme_report
from hivemem.suites import format_suite, run_suite, suites_for

from .common import Env, echo_json, json_option, pass_env


def _sizes(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part.replace("_", "")) for part in value.split(",") if part.strip())
    except ValueError:
        raise click.BadParameter(f"expected comma-separated whole numbers, got {value!r}") from None
    if not sizes or any(n < 1 for n in sizes):
        raise click.BadParameter("sizes must be whole numbers >= 1")
    return sizes


def _stage_printer() -> Any:
    """Progress on stderr: one line per stage, rewritten in place on a terminal."""
    if not sys.stderr.isatty():
        return None

    def report(stage: str, done: int, total: int) -> None:
        click.echo(f"\r{stage}: {done}/{total}", err=True, nl=done >= total)

    return report


@click.command()
@click.option(
    "--sizes",
    default="10000,100000",
    show_default=True,
    callback=_sizes,
    help="Corpus sizes (memories), comma-separated; e.g. 1000000 for 1M.",
)
@click.option("--queries", default=200, show_default=True, help="Searches per size and mode.")
@click.option("--writes", default=2000, show_default=True, help="Single writes measured per size.")
@click.option("--batch", default=100, show_default=True, help="Episodes per batched write.")
@click.option(
    "--no-model",
    "skip_model",
    is_flag=True,
    help="Skip the embedding model's figures (load, sentences/s, query latency).",
)
@click.option(
    "--keep",
    "keep_folder",
    type=click.Path(file_okay=False),
    help="Keep the generated stores in this folder (default: a temporary folder).",
)
@click.option(
    "--long-scopes",
    default=20,
    show_default=True,
    type=click.IntRange(min=0),
    help="Scopes of the long-memory corpus (turns of ~1 kB; 0 skips it).",
)
@click.option(
    "--long-turns",
    default=500,
    show_default=True,
    type=click.IntRange(min=1),
    help="Turns per scope of the long-memory corpus.",
)
@json_option
@pass_env
def bench(
    env: Env,
    sizes: tuple[int, ...],
    queries: int,
    writes: int,
    batch: int,
    skip_model: bool,
    keep_folder: str | None,
    long_scopes: int,
    long_turns: int,
    as_json: bool,
) -> None:
    """Time writes, vector indexing and searches on generated data.

    For each size, a fresh store is filled with generated episodes while the embedding
    worker runs, and the vectors still queued are flushed; then single and batched
    writes and the same natural-language questions are timed (p50/p95/p99) keyword only,
    hybrid, and in the vector lane alone. The vectors come from the hash embedder at the
    default model's dimension (the index costs the same); the real model is timed once
    per run: load, sentences/s, query embedding. Then the long-memory corpus: scopes of
    500 turns of ~1 kB, searched at limit 10 and 50, the first query of each scope and
    warm ones. HIVEMEM_* settings apply.
    """
    try:
        report = run_bench(
            sizes,
            queries,
            writes,
            batch,
            path=keep_folder,
            progress=_stage_printer(),
            settings=env.settings,
            model=not skip_model,
        )
    except ValueError as exc:
        raise InvalidInput("bench", str(exc)) from None
    long = (
        run_long_bench(long_scopes, long_turns, settings=env.settings, progress=_stage_printer())
        if long_scopes
        else None
    )
    if as_json:
        echo_json({**report.to_dict(), "long_memories": long.to_dict() if long else None})
    else:
        click.echo(format_table(report))
        if long is not None:
            click.echo("\n" + format_long(long))


@click.group(name="eval")
def eval_() -> None:
    """Retrieval quality on public long-memory benchmarks."""


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
    in the top k). Abstention questions are skipped.
    """
    report = eval_longmemeval(
        path, limit_questions=limit_questions, settings=env.settings, progress=_progress()
    )
    if as_json:
        echo_json(report.to_dict())
    else:
        click.echo(format_lme_report(report))


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
    type=click.Choice(["longmemeval", "locomo", "locomo-mixed"]),
    multiple=True,
    help="Run only these suites (repeatable; default: every suite a file was given for).",
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
@json_option
@pass_env
def all_(
    env: Env,
    locomo_path: str | None,
    lme_path: str | None,
    only: tuple[str, ...],
    limit_questions: int | None,
    ablation: bool,
    as_json: bool,
) -> None:
    """Score retrieval on LongMemEval, LoCoMo episodes and LoCoMo mixed, each beside
    plain BM25 over the same documents, with search p50/p95 and the right answer's score.

    LoCoMo mixed stores the turns plus the data set's observations as facts (no session)
    and its session summaries; a hit is an evidence turn or an observation citing one.
    """
    if locomo_path is None and lme_path is None:
        raise InvalidInput("path", "give --locomo PATH and/or --longmemeval PATH")
    names = {"LongMemEval": "longmemeval", "LoCoMo episodes": "locomo"}
    names["LoCoMo mixed"] = "locomo-mixed"
    reports = []
    printer = _stage_printer()
    for suite in suites_for(locomo_path, lme_path, limit_questions):
        if only and names[suite.name] not in only:
            continue
        report = run_suite(suite, env.settings, ablation=ablation, progress=printer)
        reports.append(report)
        if not as_json:
            click.echo(format_suite(report) + "\n")
    if as_json:
        echo_json([r.to_dict() for r in reports])


def _progress() -> Any:
    """Questions done, on stderr, rewritten in place on a terminal."""
    printer = _stage_printer()
    if printer is None:
        return None
    return lambda done, total: printer("questions", done, total)


COMMANDS = (bench, eval_)
