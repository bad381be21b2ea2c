"""Every code block of README.md and docs/*.md runs as pasted (issue 12, item 1).

Python blocks run one by one, each in a fresh interpreter in an empty folder (so each
must be complete: imports, a store, the names it uses). Shell blocks (bash, console,
and the ``$ hivemem`` lines of text blocks) run line by line, in order, in a folder of
their own per document, with this install's ``hivemem`` first on PATH; every command must
exit 0. JSON blocks must parse. A line or block that needs what a test cannot have (a
server that runs until stopped, an LLM endpoint, a network install) is skipped with its
reason, listed in ``SKIP``; a documented measurement runs at a test's size
(``SHRINK_LINES``): each entry must still match something, so none goes stale.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import platformdirs
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELLS = {"bash", "sh", "shell", "console"}

# (document, text the block or line contains) -> why it is not run
SKIP_BLOCKS = {
    ("README.md", "make demo"): "the set-up commands: tests/test_demo.py runs the demo and "
    "`make test` is this suite",
    ("llm.md", "get_llm("): "needs a running LLM endpoint (Ollama, vLLM, llama.cpp) or an API key",
    ("llm.md", "schema=person"): "needs a running LLM endpoint (it continues the block above)",
    ("postgres.md", "hivemem postgres start"): "tests/test_postgres_local.py runs it as pasted, "
    "in a home outside pytest's basetemp (which a concurrent pytest makes private again: "
    "the server, run by root as a user of its own, would lose its folder)",
    ("inspector.md", "HIVEMEM_SCREENSHOTS"): "a developer's step: the browser tests take the "
    "screenshots (tests/test_ui_browser.py)",
}
SKIP_LINES = {
    "serve-http": "starts a server that runs until stopped (tests/test_http.py serves it)",
    "serve-mcp": "starts a server that runs until stopped (tests/test_mcp.py serves it)",
    " ui ": "starts the inspector's server until stopped (tests/test_ui.py serves it)",
    "curl ": "needs the HTTP server of the line above",
    "--watch": "runs until Ctrl-C (tests/test_notes.py watches a folder)",
    "pip install": "an install step: the test environment has every extra",
}
# A documented measurement runs as pasted but at a test's size: the same command, options
# and code path on a smaller corpus (text in the command -> what replaces it, and why).
SHRINK_LINES = {
    "--sizes 100000 --queries 30": (
        "--sizes 2000 --queries 3",
        "the inspector's bench at 100k memories took 52 s of the suite; the command, its "
        "options and every page it requests are the same at 2,000",
    ),
}


@dataclass(frozen=True)
class Block:
    doc: str
    line: int
    lang: str
    text: str

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}:{self.lang or 'plain'}"


def blocks() -> list[Block]:
    found = []
    for path in DOCS:
        lines = path.read_text().splitlines()
        start = None
        for n, line in enumerate(lines, start=1):
            fence = re.match(r"^```(\w*)\s*$", line)
            if fence and start is None:
                start, lang, body = n, fence.group(1), []
            elif line.startswith("```") and start is not None:
                found.append(Block(path.name, start, lang, "\n".join(body) + "\n"))
                start = None
            elif start is not None:
                body.append(line)
    return found


def _skip_reason(block: Block) -> str | None:
    for (doc, needle), reason in SKIP_BLOCKS.items():
        if block.doc == doc and needle in block.text:
            return reason
    return None


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVEMEM_")}
    cache = Path(platformdirs.user_cache_dir("hivemem")).parent  # the model's int8 copy
    env.update(
        HOME=str(home),
        XDG_CACHE_HOME=str(cache),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        TOKEN="ghp-example-token-value",
        NO_COLOR="1",
    )
    return env


def _prepare(home: Path) -> None:
    """What a reader has beside the docs: a notes folder to index."""
    notes = home / "notes"
    notes.mkdir(parents=True, exist_ok=True)
    (notes / "deploy.md").write_text("# Deploy checklist\n\nRun the tests, then deploy.\n")


PYTHON_BLOCKS = [b for b in blocks() if b.lang == "python"]
SHELL_DOCS = sorted(
    {
        b.doc
        for b in blocks()
        if b.lang in SHELLS or (b.lang == "text" and re.search(r"^\$ hivemem", b.text, re.M))
    }
)
JSON_BLOCKS = [b for b in blocks() if b.lang == "json"]


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda b: b.id)
def test_python_block_runs_as_pasted(block, tmp_path):
    reason = _skip_reason(block)
    if reason:
        pytest.skip(reason)
    _prepare(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", block.text],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        start_new_session=True,
    )
    assert done.returncode == 0, f"{block.id} failed:\n{block.text}\n{done.stderr}"


def _commands(text: str, lang: str) -> list[str]:
    """The commands of a shell block: prompts and comments dropped, continuations
    joined; in a text block only the ``$ `` lines."""
    out: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if lang in ("console", "text"):
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        out.append(pending + line)
        pending = ""
    return out


def _line_skip(command: str) -> str | None:
    return next((r for needle, r in SKIP_LINES.items() if needle in command), None)


def _shrunk(command: str) -> str:
    for needle, (smaller, _why) in SHRINK_LINES.items():
        command = command.replace(needle, smaller)
    return command


@pytest.mark.parametrize("doc", SHELL_DOCS)
def test_shell_commands_run_as_pasted(doc, tmp_path):
    _prepare(tmp_path)
    env = _env(tmp_path)
    ran, skipped = [], []
    for block in blocks():
        if block.doc != doc or not (block.lang in SHELLS or block.lang == "text"):
            continue
        if _skip_reason(block):
            skipped.append((block.id, _skip_reason(block)))
            continue
        for command in _commands(block.text, block.lang):
            reason = _line_skip(command)
            if reason is not None:
                skipped.append((command, reason))
                continue
            done = subprocess.run(
                ["bash", "-c", _shrunk(command)],
                cwd=tmp_path,
                env=env,
                input="example-secret-value\n",
                capture_output=True,
                text=True,
                timeout=300,
                start_new_session=True,
            )
            assert done.returncode == 0, f"{doc}: `{command}` exited {done.returncode}:\n" + (
                done.stderr or done.stdout
            )
            assert "Traceback" not in done.stderr, done.stderr
            ran.append(command)
    assert ran or skipped, f"{doc}: no command found"


SKIPPED_COMMANDS = [
    (block.doc, command, _line_skip(command))
    for block in blocks()
    if block.lang in SHELLS | {"text"} and not _skip_reason(block)
    for command in _commands(block.text, block.lang)
    if _line_skip(command)
]


@pytest.mark.parametrize(
    "doc, command, reason", SKIPPED_COMMANDS, ids=[f"{d}: {c}" for d, c, _ in SKIPPED_COMMANDS]
)
def test_documented_command_not_run(doc, command, reason):
    """The commands the shell test leaves out, each reported as a skip with its reason."""
    pytest.skip(f"{doc}: `{command}`: {reason}")


@pytest.mark.parametrize("block", JSON_BLOCKS, ids=lambda b: b.id)
def test_json_block_parses(block):
    json.loads(block.text)


def test_every_skip_still_matches_a_block():
    all_blocks = blocks()
    for doc, needle in SKIP_BLOCKS:
        assert any(b.doc == doc and needle in b.text for b in all_blocks), (doc, needle)
    shell_text = "\n".join(b.text for b in all_blocks if b.lang in SHELLS | {"text"})
    for needle in [*SKIP_LINES, *SHRINK_LINES]:
        assert needle in shell_text, needle


def test_readme_mcp_config_is_the_absolute_form_mcp_config_prints(tmp_path):
    readme = [b for b in JSON_BLOCKS if b.doc == "README.md" and "mcpServers" in b.text]
    assert readme, "the README shows an MCP client config"
    shown = json.loads(readme[0].text)["mcpServers"]["memory"]
    assert Path(shown["command"]).is_absolute() and shown["command"].endswith("/bin/hivemem")
    assert Path(shown["args"][1]).is_absolute()
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "hivemem"),
            "--db",
            shown["args"][1],
            "--scope",
            "agent-1",
            "--shared",
            "team",
            "mcp-config",
        ],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        check=True,
    )
    printed = json.loads(done.stdout)["mcpServers"]["memory"]
    assert printed["args"] == shown["args"]
    assert "--shared team mcp-config`" in (ROOT / "README.md").read_text()
