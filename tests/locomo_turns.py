"""LoCoMo's dialogue turns for tests that compare a faster write-path pass with the one
it replaces on real text (the evaluation data, where it is on disk: ``HIVEMEM_EVAL_DIR``,
the checkout's ``../shared/eval`` or ``/work/shared/eval``; the test is skipped
otherwise)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

_EVAL_DIRS = [
    os.environ.get("HIVEMEM_EVAL_DIR", ""),
    str(Path(__file__).resolve().parents[1] / ".." / "shared" / "eval"),
    "/work/shared/eval",
]


def locomo_turns() -> list[str]:
    for folder in filter(None, _EVAL_DIRS):
        path = Path(folder) / "locomo10.json"
        if path.is_file():
            data = json.loads(path.read_text(encoding="utf-8"))
            return [
                turn["text"]
                for conversation in data
                for value in conversation["conversation"].values()
                if isinstance(value, list)
                for turn in value
                if isinstance(turn, dict) and "text" in turn
            ]
    pytest.skip("locomo10.json not found (set HIVEMEM_EVAL_DIR)")
