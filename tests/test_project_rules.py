"""Tests that hold the project to its own rules."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import hivemem
from hivemem import Settings
from hivemem.settings import markdown

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "hivemem"


def test_every_setting_is_documented_with_its_default_and_help():
    page = (ROOT / "docs" / "settings.md").read_text()
    assert page == markdown(), "regenerate: python -m hivemem.settings > docs/settings.md"
    for name, _default, _help in Settings.fields_help():
        assert f"| `{name}` |" in page, name


def test_settings_from_env():
    env = {
        "HIVEMEM_MAX_CONTENT_BYTES": "10",
        "HIVEMEM_TRACK_ACCESS": "off",
        "HIVEMEM_TTL_DAYS": '{"manual": 2}',
    }
    settings = Settings.from_env(env)
    assert settings.max_content_bytes == 10 and settings.track_access is False
    assert settings.ttl_days["manual"] == 2 and settings.ttl_days["file_index"] == 30


def test_bad_env_setting_names_the_variable():
    import pytest

    with pytest.raises(hivemem.InvalidInput, match="HIVEMEM_MAX_TAGS"):
        Settings.from_env({"HIVEMEM_MAX_TAGS": "many"})


def test_only_the_store_layer_issues_sql():
    """One data-access layer: no module outside hivemem/store/ executes SQL."""
    offenders = []
    for path in SRC.rglob("*.py"):
        if "store" in path.relative_to(SRC).parts[:1]:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in {
                "execute",
                "executemany",
                "executescript",
            }:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_modules_stay_small():
    sizes = {p.relative_to(ROOT): len(p.read_text().splitlines()) for p in SRC.rglob("*.py")}
    assert {p: n for p, n in sizes.items() if n > 800} == {}


def test_public_api_is_declared():
    for name in hivemem.__all__:
        assert hasattr(hivemem, name), name
    assert (SRC / "py.typed").exists()


def test_cli_reference_is_generated_from_the_commands():
    from hivemem.frontends.cli.reference import markdown as cli_markdown

    page = (ROOT / "docs" / "cli.md").read_text()
    assert page == cli_markdown(), (
        "regenerate: python -m hivemem.frontends.cli.reference > docs/cli.md"
    )


def _lint_imports(cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the project's contracts, on the package importable from
    ``pythonpath`` (the installed one when None)."""
    pytest.importorskip("importlinter", reason="import-linter is a dev dependency: make install")
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    command = Path(sys.executable).parent / "lint-imports"
    return subprocess.run(
        [str(command), "--config", str(ROOT / ".importlinter"), "--no-cache"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_imports_follow_the_layers_and_only_the_store_names_a_backend():
    """The contracts of .importlinter (docs/architecture.md): imports point down the
    layers (frontends → tools|compat → evaluation → facade → lifecycle → write → retrieval → store →
    providers → base), no module outside store/ imports store.sqlite or
    store.postgres, and only store.factory imports a backend module (SQLite's helpers
    share the handle of store/sqlite/database.py instead: no import loop), and no two
    modules or packages of one package import each other, annotations included."""
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "5 kept, 0 broken" in done.stdout


def test_the_import_contracts_catch_a_violation(tmp_path):
    """The same contracts over a copy of the package in which the store imports the
    facade, a lifecycle module names the SQLite backend, a SQLite helper imports the
    backend back, two write services import each other, and (for annotations only,
    under ``TYPE_CHECKING``) a write service names the facade's ``ScopedMemory`` and a
    PostgreSQL helper its backend: the linter names each (the contracts are not vacuous,
    and hold for annotations too)."""
    copy = tmp_path / "src"
    shutil.copytree(SRC, copy / "hivemem", ignore=shutil.ignore_patterns("__pycache__"))
    annotation = "if TYPE_CHECKING:\n    {}  # noqa"
    for module, line in [
        ("store/rows.py", "from ..facade import database  # noqa"),
        ("lifecycle/indexer.py", "from ..store.sqlite import backend  # noqa"),
        ("store/sqlite/entities.py", "from . import backend  # noqa"),
        ("write/facts.py", annotation.format("from ..facade.memory import ScopedMemory")),
        ("store/postgres/vectors.py", annotation.format("from .backend import PostgresBackend")),
        ("write/rules.py", "from . import purge  # noqa"),  # purge imports rules: a loop
    ]:
        path = copy / "hivemem" / module
        path.write_text(path.read_text() + f"\n{line}\n")
    done = _lint_imports(tmp_path, copy)
    assert done.returncode == 1, done.stdout[-4000:]
    assert "hivemem.store.rows -> hivemem.facade.database" in done.stdout
    assert "hivemem.lifecycle.indexer -> hivemem.store.sqlite.backend" in done.stdout
    assert "hivemem.store.sqlite.entities -> hivemem.store.sqlite.backend" in done.stdout
    assert "hivemem.write.facts -> hivemem.facade.memory" in done.stdout
    assert "hivemem.store.postgres.vectors -> hivemem.store.postgres.backend" in done.stdout
    assert "No cycles are allowed in hivemem.write" in done.stdout
    assert ", 0 broken" not in done.stdout


def test_the_store_keeps_its_backend_private(tmp_path):
    """Services reach the database through the store's named protocols; the old public
    ``store.backend`` says where to look instead of handing out the whole backend."""
    with hivemem.open(tmp_path / "m.db", embedder="none") as store:
        with pytest.raises(AttributeError, match="store.memories"):
            store.backend  # noqa: B018
        mem = store.scope("team-a")
        saved = mem.save("the seam holds", key="seam")
        assert store.memories.get(["team-a"], saved.id) == saved
        assert store.health.schema_version() == store.known_migrations()
        assert store.tokens.list() == []


def test_one_sqlite_library_per_process():
    """Python's own ``sqlite3`` and ``sqlean`` (the store's driver) each carry a copy of
    SQLite. Two copies opening one live WAL file in one process break each other: POSIX
    locks belong to the process, so the second copy believes it is alone, truncates the
    WAL index the first one has mapped (a thread of the store then dies with SIGBUS:
    CI's "Bus error"), and its close() drops the first copy's locks. Tests and examples
    read a store's file through ``sqlean`` only; the library falls back to ``sqlite3``
    only where sqlean is missing (then it is the only copy)."""
    offenders = []
    for path in [
        *(ROOT / "tests").rglob("*.py"),
        *(ROOT / "examples").rglob("*.py"),
        *SRC.rglob("*.py"),
    ]:
        tree = ast.parse(path.read_text())
        fallbacks = {
            id(node)
            for handler in ast.walk(tree)
            if isinstance(handler, ast.ExceptHandler)
            and isinstance(handler.type, ast.Name)
            and handler.type.id == "ImportError"
            and SRC in path.parents
            for node in ast.walk(handler)
        }
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if "sqlite3" in names and id(node) not in fallbacks:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, f"import sqlean (as sqlite3) instead: {offenders}"


def test_every_test_docs_seeds_cites_exists():
    """docs/seeds.md proves each rule with a test (``tests/test_x.py::test_name``, or
    ``test_x.py::test_name``): every one named there is a test function of that file."""
    text = (ROOT / "docs" / "seeds.md").read_text(encoding="utf-8")
    cited = set(re.findall(r"(?:tests/)?(test_\w+\.py)::(test_\w+)", text))
    assert len(cited) >= 20  # the page cites its proofs
    missing = [
        f"{path}::{name}"
        for path, name in sorted(cited)
        if not (ROOT / "tests" / path).exists()
        or not re.search(
            rf"^def {name}\(", (ROOT / "tests" / path).read_text(encoding="utf-8"), re.M
        )
    ]
    assert missing == []
