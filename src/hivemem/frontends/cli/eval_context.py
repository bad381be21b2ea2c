"""``hivemem eval context`` and ``hivemem eval access``: the context block and access
counting, measured on the evaluation suites (registered on ``measure.eval_``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ...errors import InvalidInput
from ...evaluation.suites import suites_for
from .common import Env, echo_json, json_option, pass_env
from .measure import _stage_printer, eval_


def _suite_options(command: Callable[..., None]) -> Callable[..., None]:
    """The suite files, ``--suite`` and ``--limit-questions`` of both commands."""
    options = (
        click.option(
            "--locomo",
            "locomo_path",
            type=click.Path(exists=True, dir_okay=False),
            help="LoCoMo JSON (locomo10.json): the episodes and mixed suites.",
        ),
        click.option(
            "--longmemeval",
            "lme_path",
            type=click.Path(exists=True, dir_okay=False),
            help="LongMemEval JSON, plain or .gz.",
        ),
        click.option(
            "--suite",
            "only",
            type=click.Choice(["longmemeval", "locomo", "locomo-mixed", "paraphrase"]),
            multiple=True,
            help="Run only these suites (repeatable; default: every suite a file was given "
            "for, and the bundled paraphrase suite).",
        ),
        click.option(
            "--limit-questions", type=click.IntRange(min=1), metavar="N", help="About N per suite."
        ),
    )
    for option in reversed(options):
        command = option(command)
    return command


@eval_.command(name="context")
@_suite_options
@click.option(
    "--min-score",
    "floors",
    type=click.FloatRange(0, 1),
    multiple=True,
    help="Relevance floor; repeatable, one column each (default: context's, 0.05).",
)
@click.option("--max-entries", default=50, show_default=True, type=int, help="Block entries.")
@click.option("--max-tokens", type=int, help="Block tokens (default: no cap).")
@click.option("--max-relevant", type=int, help="Relevance section entries (default: 10).")
@click.option(
    "--keep", type=click.Path(file_okay=False), metavar="DIR", help="As `eval all --keep`."
)
@json_option
@pass_env
def context_(
    env: Env,
    locomo_path: str | None,
    lme_path: str | None,
    only: tuple[str, ...],
    limit_questions: int | None,
    floors: tuple[float, ...],
    max_entries: int,
    max_tokens: int | None,
    max_relevant: int | None,
    keep: str | None,
    as_json: bool,
) -> None:
    """Share of questions whose evidence is in the context block, beside BM25.

    The block mem.context(question) builds at the budget given, scored against the
    suite's evidence; beside it, plain BM25's top hits in the same tokens.
    """
    from ...evaluation.context_eval import format_context, run_context_suite

    reports = []
    for suite in _chosen(locomo_path, lme_path, limit_questions, only):
        report = run_context_suite(
            suite,
            env.settings,
            max_entries=max_entries,
            max_tokens=max_tokens,
            max_relevant=max_relevant,
            progress=_stage_printer(),
            keep=Path(keep) if keep else None,
            **({"floors": floors} if floors else {}),
        )
        reports.append(report)
        if not as_json:
            click.echo(format_context(report) + "\n")
    if as_json:
        echo_json([r.to_dict() for r in reports])


@eval_.command(name="access")
@_suite_options
@click.option(
    "--keep", type=click.Path(file_okay=False), metavar="DIR", help="As `eval all --keep`."
)
@json_option
@pass_env
def access_(
    env: Env,
    locomo_path: str | None,
    lme_path: str | None,
    only: tuple[str, ...],
    limit_questions: int | None,
    keep: str | None,
    as_json: bool,
) -> None:
    """Every question searched twice, with searches counted as accesses or not.

    Measures whether an access boost earned by being found lets a ranking reinforce
    itself (the access_counts setting); a kept store is copied, never changed.
    """
    from ...evaluation.access_eval import format_access, run_access_suite

    reports = []
    for suite in _chosen(locomo_path, lme_path, limit_questions, only):
        report = run_access_suite(
            suite, env.settings, progress=_stage_printer(), keep=Path(keep) if keep else None
        )
        reports.append(report)
        if not as_json:
            click.echo(format_access(report) + "\n")
    if as_json:
        echo_json([r.to_dict() for r in reports])


_NAMES = {
    "LongMemEval": "longmemeval",
    "LoCoMo episodes": "locomo",
    "LoCoMo mixed": "locomo-mixed",
    "Paraphrase": "paraphrase",
}


def _chosen(
    locomo_path: str | None, lme_path: str | None, limit: int | None, only: tuple[str, ...]
) -> list[Any]:
    """The suites of the files given and the bundled paraphrase suite (as ``eval all``
    runs them), or those of ``--suite``. The paraphrase suite alone needs no file, but
    only when asked for: a bare command is more likely a forgotten path than a wish to
    store its 2,222 turns."""
    if locomo_path is None and lme_path is None and "paraphrase" not in only:
        raise InvalidInput(
            "path", "give --locomo PATH and/or --longmemeval PATH, or --suite paraphrase"
        )
    return [
        suite
        for suite in suites_for(locomo_path, lme_path, limit)
        if not only or _NAMES[suite.name] in only
    ]
