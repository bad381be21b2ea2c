"""A search gives the same hits in every process: no tie or float sum may depend on the
order Python's string hashing gives a set (it changes per process, PYTHONHASHSEED)."""

from __future__ import annotations

import os
import subprocess
import sys

from hivemem.retrieval.keyword import coverage, window_coverage

# Weights whose sum depends on the order it is added in (four different sums over the
# orders of the five; as (0.1 + 0.2) + 0.3 is 0.6000000000000001 and 0.1 + (0.2 + 0.3) 0.6).
WEIGHTS = {"alpha": 2.392, "beta": 2.122, "gamma": 0.986, "delta": 0.454, "epsilon": 1.108}
PROBE = (
    "from hivemem.retrieval.keyword import coverage, window_coverage\n"
    f"w = {WEIGHTS!r}\n"
    "print(repr(coverage(w, ['gamma', 'alpha', 'beta', 'epsilon', 'delta'])))\n"
    "print(repr(window_coverage({'m': ['gamma', 'alpha', 'delta'], 'n': ['beta', 'epsilon']},"
    " {'m': ['n']}, w, 1.0)['m']))\n"
)


def test_coverage_is_the_same_sum_in_every_process() -> None:
    outputs = set()
    for seed in range(12):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        done = subprocess.run(
            [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1, outputs
    # and it is the sum in the query's order
    total = sum(WEIGHTS.values())
    assert coverage(WEIGHTS, ["gamma", "beta", "alpha"]) == (2.392 + 2.122 + 0.986) / total
    assert window_coverage({"m": ["beta", "alpha"]}, {}, WEIGHTS, 1.0)["m"] == (
        (2.392 + 2.122) / total
    )
