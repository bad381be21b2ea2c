"""Tests that hold the project to its own rules."""

from __future__ import annotations

import ast
from pathlib import Path

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
