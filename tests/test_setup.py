"""`make demo` installs the runtime only; `make test` installs everything (issue 12,
item 6)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEV_ONLY = {"pytest", "ruff", "hypothesis", "schemathesis", "spacy", "httpx", "fastapi", "mcp"}


def _pins(name: str) -> dict[str, str]:
    pins = {}
    for line in (ROOT / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            package, version = line.split("==")
            pins[_norm(package)] = version
    return pins


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _dependency_name(spec: str) -> str:
    return _norm(re.split(r"[<>=!~\[ ;]", spec, maxsplit=1)[0])


def test_runtime_lock_pins_every_runtime_dependency_and_no_dev_tool():
    runtime, dev = _pins("requirements.lock"), _pins("requirements-dev.lock")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for spec in project["dependencies"]:
        assert _dependency_name(spec) in runtime, spec
    assert not DEV_ONLY & set(runtime), DEV_ONLY & set(runtime)
    assert not set(runtime) & set(dev), "pinned twice"
    for extra, specs in project["optional-dependencies"].items():
        for spec in specs:
            assert _dependency_name(spec) in runtime | dev, (extra, spec)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_demo_installs_the_runtime_only_and_make_test_everything():
    def planned(target: str) -> str:
        done = subprocess.run(
            ["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True
        )
        return done.stdout

    demo, test = planned("demo"), planned("test")
    assert "-r requirements.lock" in demo and "requirements-dev.lock" not in demo
    assert "-r requirements.lock" in test and "-r requirements-dev.lock" in test
    assert "pytest" in test and "ruff check src tests examples" in test
