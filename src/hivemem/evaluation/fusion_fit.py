"""Fit the coefficients of ``hivemem.retrieval.learned`` (the ``learned_order`` model).

Command (the one that produced the constants in ``learned.py``; stores are built once and
kept in DIR, see ``hivemem eval all --keep``)::

    python -m hivemem.evaluation.fusion_fit --locomo ../shared/eval/locomo10.json \\
        --longmemeval ../shared/eval/longmemeval_s_dev120.json.gz --keep DIR

Data: every question of LoCoMo episodes (categories 1-4) and LongMemEval dev is searched
at its suite's limit with ``learned_order`` on, and the pool handed to
``learned.reorder`` is recorded: the features of its episodes (``learned.features``, the
very code search runs) and whether each is an answer. Fit: on LoCoMo's conversations 1,
3, 5, 7, 9 (scopes in sorted order) and the first 40 LongMemEval questions, the latter
weighted x10 (one LongMemEval question per 14 LoCoMo ones otherwise), a listwise
softmax loss (−log of the answers' share of each question's softmax) with L2 1e-3, by
Adam over 600 steps, in numpy. Printed: the coefficients, and hit@1/5/10 (LoCoMo) or
turn@1/5/10 (LongMemEval) of the pool's order and the model's on the held-out questions.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..facade.database import open as open_store
from ..retrieval import learned
from ..settings import Settings
from ..types import Kind
from .suites import (
    Suite,
    kept_store,
    locomo_suite,
    longmemeval_suite,
)

Question = tuple[np.ndarray, np.ndarray]  # features of the pool's episodes, is-answer


def collect(suite: Suite, keep: Path, settings: Settings) -> dict[str, Question]:
    """Per question text: the features of its pool's episodes and which are answers."""
    settings = settings.replace(track_access=False, learned_order=True)
    keep.mkdir(parents=True, exist_ok=True)
    db, labels, _ = kept_store(str(keep), suite, settings, lambda stage, done, total: None)
    seen: list[tuple[list[Any], int]] = []
    original = learned.reorder

    def record(pool: list[Any], query_terms: int) -> list[Any]:
        seen.append((list(pool), query_terms))
        return list(pool)  # the pipeline's own order: features are read, not acted on

    out: dict[str, Question] = {}
    learned.reorder = record
    try:
        with open_store(db, settings=settings) as store:
            for unit in suite.units:
                mem = store.scope(unit.scope)
                for item in unit.items:
                    if not item.headline:
                        continue
                    seen.clear()
                    mem.search(item.text, limit=suite.limit)
                    if not seen:
                        continue
                    pool, terms = seen[0]
                    places = [i for i, r in enumerate(pool) if r.memory.kind is Kind.EPISODE]
                    rows = learned.features(pool, terms)[places]
                    gold = set(item.gold)
                    answers = np.array(
                        [bool(gold & set(labels[pool[i].memory.id].labels)) for i in places]
                    )
                    out[f"{unit.scope}\n{item.text}"] = (rows, answers)
    finally:
        learned.reorder = original
    return out


def fit(questions: Sequence[Question], *, l2: float = 1e-3, steps: int = 600) -> np.ndarray:
    """Listwise softmax fit (module docstring); questions without an answer in the pool
    teach nothing and are skipped."""
    usable = [(x, y) for x, y in questions if y.any() and len(y) > 1]
    x = np.concatenate([q[0] for q in usable])
    y = np.concatenate([q[1] for q in usable]).astype(np.float64)
    seg = np.repeat(np.arange(len(usable)), [len(q[1]) for q in usable])
    n = len(usable)
    w = np.zeros(x.shape[1])
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t in range(1, steps + 1):
        s = x @ w
        top = np.full(n, -np.inf)
        np.maximum.at(top, seg, s)
        e = np.exp(s - top[seg])
        p = e / np.bincount(seg, e, n)[seg]
        share = np.bincount(seg, p * y, n)
        g = (p - p * y / share[seg]) @ x / n + l2 * w
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w -= 0.05 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return w


def hit_rates(questions: Sequence[Question], w: np.ndarray | None) -> str:
    """hit@1/5/10 of the pool's order (``w`` None: the first feature, the score) or the
    model's."""
    found = {1: 0, 5: 0, 10: 0}
    for x, y in questions:
        s = x[:, 0] if w is None else x @ w
        order = np.argsort(-s, kind="stable")
        for k in found:
            found[k] += bool(y[order[:k]].any())
    return "/".join(f"{found[k] / max(1, len(questions)):.3f}" for k in found)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", required=True)
    parser.add_argument("--longmemeval", required=True)
    parser.add_argument("--keep", required=True, type=Path)
    args = parser.parse_args(argv)
    settings = Settings()
    locomo = collect(locomo_suite(args.locomo), args.keep, settings)
    lme = collect(longmemeval_suite(args.longmemeval), args.keep, settings)
    first40 = {
        i.text
        for u in longmemeval_suite(args.longmemeval, limit_questions=40).units
        for i in u.items
    }
    scopes = sorted({key.split("\n")[0] for key in locomo})
    train_scopes = set(scopes[::2])
    loc_train = [q for k, q in locomo.items() if k.split("\n")[0] in train_scopes]
    loc_test = [q for k, q in locomo.items() if k.split("\n")[0] not in train_scopes]
    lme_train = [q for k, q in lme.items() if k.split("\n", 1)[1] in first40]
    lme_test = [q for k, q in lme.items() if k.split("\n", 1)[1] not in first40]
    w = fit(loc_train + lme_train * 10)
    print("FEATURES =", learned.FEATURES)
    print("COEFFICIENTS =", [round(float(c), 3) for c in w])
    for name, held in (("LoCoMo held-out", loc_test), ("LongMemEval held-out", lme_test)):
        print(
            f"{name} ({len(held)}): pool order {hit_rates(held, None)}, model {hit_rates(held, w)}"
        )
    if not math.isfinite(float(np.abs(w).sum())):
        raise SystemExit("the fit diverged")


if __name__ == "__main__":  # pragma: no cover - a developer's command
    main()
