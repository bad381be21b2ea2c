"""HiveMemMemoryTool through the real anthropic SDK (pinned in requirements-dev.lock).

The SDK ships its own file-backed memory tool (``BetaLocalFilesystemMemoryTool``), whose
texts are those of the tool's documentation: the same commands run against it and
against HiveMem must give the same answers (directory sizes aside: a database has no
inode sizes). Then what HiveMem adds: every edit a version, paths confined to the root,
a vault secret, and the SDK's tool runner against a real local HTTP server.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

import anthropic
import pytest
from anthropic.lib.tools import ToolError
from anthropic.tools.memory import BetaLocalFilesystemMemoryTool

from hivemem.integrations.claude import HiveMemAsyncMemoryTool, HiveMemMemoryTool
from scripted_server import ScriptedServer


@pytest.fixture
def tool(mem):
    return HiveMemMemoryTool(mem)


def _answer(tool, command):
    try:
        return ("ok", tool.call(command))
    except ToolError as exc:
        return ("error", str(exc))


def _listing_paths(text):
    """A directory view without its sizes."""
    head, *rows = text.split("\n")
    return [head] + [row.split("\t", 1)[1] for row in rows]


SCRIPT = [
    {"command": "view", "path": "/memories/missing"},
    {"command": "create", "path": "/memories/notes.md", "file_text": "one\ntwo\nthree\ntwo\n"},
    {"command": "create", "path": "/memories/notes.md", "file_text": "again"},
    {"command": "view", "path": "/memories/notes.md"},
    {"command": "view", "path": "/memories/notes.md", "view_range": [2, 3]},
    {"command": "view", "path": "/memories/notes.md", "view_range": [3, -1]},
    {"command": "str_replace", "path": "/memories/notes.md", "old_str": "zzz", "new_str": "x"},
    {"command": "str_replace", "path": "/memories/notes.md", "old_str": "two", "new_str": "x"},
    {"command": "str_replace", "path": "/memories/notes.md", "old_str": "three", "new_str": "3"},
    {"command": "str_replace", "path": "/memories/gone.md", "old_str": "a", "new_str": "b"},
    {"command": "insert", "path": "/memories/notes.md", "insert_line": 0, "insert_text": "zero\n"},
    {"command": "insert", "path": "/memories/notes.md", "insert_line": 99, "insert_text": "x"},
    {"command": "insert", "path": "/memories/notes.md", "insert_line": 5, "insert_text": "end"},
    {"command": "view", "path": "/memories/notes.md"},
    {"command": "create", "path": "/memories/work/a/deep.md", "file_text": "deep"},
    {"command": "create", "path": "/memories/work/todo.md", "file_text": "- ship it\n"},
    {"command": "create", "path": "/memories/.hidden", "file_text": "secret place"},
    {"command": "view", "path": "/memories/work"},
    {"command": "str_replace", "path": "/memories/work", "old_str": "a", "new_str": "b"},
    {"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/work/todo.md"},
    {"command": "rename", "old_path": "/memories/none.md", "new_path": "/memories/n2.md"},
    {"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/archive/n.md"},
    {"command": "view", "path": "/memories/archive/n.md", "view_range": [1, 2]},
    {"command": "view", "path": "/memories/notes.md"},
    {"command": "rename", "old_path": "/memories/work", "new_path": "/memories/done"},
    {"command": "view", "path": "/memories/done/todo.md"},
    {"command": "rename", "old_path": "/memories", "new_path": "/memories/x"},
    {"command": "delete", "path": "/memories/done/todo.md"},
    {"command": "delete", "path": "/memories/done/todo.md"},
    {"command": "delete", "path": "/memories/done"},
    {"command": "view", "path": "/memories/done/a/deep.md"},
    {"command": "delete", "path": "/memories"},
    {"command": "view", "path": "/memories/../etc/passwd"},
    {"command": "create", "path": "/memories/a/../../escape.md", "file_text": "x"},
    {"command": "create", "path": "/etc/passwd", "file_text": "x"},
    {"command": "view", "path": "memories/notes.md"},
    {"command": "view", "path": "/memories"},
]


def test_every_answer_is_the_sdk_file_tools_answer(tool, tmp_path):
    reference = BetaLocalFilesystemMemoryTool(str(tmp_path / "files"))
    for command in SCRIPT:
        ours, theirs = _answer(tool, command), _answer(reference, command)
        if command["command"] == "view" and theirs[1].startswith("Here're the files"):
            assert _listing_paths(ours[1]) == _listing_paths(theirs[1]), command
        else:
            assert ours == theirs, command


def test_every_edit_is_a_version_and_rename_names_its_source(mem, tool):
    tool.call({"command": "create", "path": "/memories/coffee.md", "file_text": "black\n"})
    tool.call(
        {
            "command": "str_replace",
            "path": "/memories/coffee.md",
            "old_str": "black",
            "new_str": "oat",
        }
    )
    tool.call(
        {
            "command": "insert",
            "path": "/memories/coffee.md",
            "insert_line": 1,
            "insert_text": "no sugar",
        }
    )
    chain = mem.history("/memories/coffee.md")
    assert [m.content for m in chain] == ["black\n", "oat\n", "oat\nno sugar\n"]
    assert [m.status.value for m in chain] == ["superseded", "superseded", "active"]
    tool.call(
        {
            "command": "rename",
            "old_path": "/memories/coffee.md",
            "new_path": "/memories/drinks/coffee.md",
        }
    )
    moved = mem.get("/memories/drinks/coffee.md")
    assert (
        moved.source_ids == (chain[-1].id,)
        and moved.attributes["renamed_from"] == "/memories/coffee.md"
    )
    assert mem.get(chain[-1].id).status.value == "deleted"
    # a file is searchable memory like any other
    assert mem.search("sugar")[0].memory.key == "/memories/drinks/coffee.md"


@pytest.mark.parametrize(
    "path",
    [
        "/memories/../etc/passwd",
        "/memories/a/../../b",
        "/memories/./../x",
        "/etc/passwd",
        "memories/x",
        "/memoriesX/y",
        "/memories/..",
        "../memories/x",
        "//memories/../x",
        "",
    ],
)
def test_paths_outside_the_root_are_refused(tool, mem, path):
    for command in [
        {"command": "create", "path": path, "file_text": "x"},
        {"command": "view", "path": path},
        {"command": "rename", "old_path": "/memories/a.md", "new_path": path},
    ]:
        with pytest.raises(ToolError, match=r"Path .*(must start with /memories|would escape)"):
            tool.call(command)
    assert mem.list() == []


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("/memories/a/../b.md", "/memories/b.md"),
        ("/memories//x/./y.md", "/memories/x/y.md"),
        ("/memories/%2e%2e/z.md", "/memories/%2e%2e/z.md"),  # not decoded: a plain name
        ("/memories/..\\..\\w.md", "/memories/..\\..\\w.md"),  # a backslash is a character
        ("/memories/link -> /etc/passwd", "/memories/link -> /etc/passwd"),
    ],
)
def test_odd_but_confined_paths_stay_names_under_the_root(tool, mem, path, key):
    tool.call({"command": "create", "path": path, "file_text": "x"})
    assert [m.key for m in mem.list()] == [key]


def test_bad_commands_are_tool_errors_not_tracebacks(tool):
    for command, message in [
        ({"command": "view"}, "Parameter `path` is required for command: view"),
        ({"command": "format", "path": "/memories"}, "Unknown command: format"),
        ({"path": "/memories"}, "Unknown command"),
        ({"command": "create", "path": "/memories/a"}, "`file_text` is required"),
        (
            {"command": "insert", "path": "/memories/a", "insert_line": "one", "insert_text": "x"},
            "`insert_line` is required",
        ),
        ({"command": "create", "path": "/memories/e.md", "file_text": ""}, "content: is empty"),
        ({"command": "create", "path": "/memories/n\x00.md", "file_text": "x"}, "key"),
    ]:
        with pytest.raises(ToolError, match=message):
            tool.call(command)
    tool.call({"command": "create", "path": "/memories/f", "file_text": "a file"})
    with pytest.raises(ToolError, match="below the file /memories/f"):
        tool.call({"command": "create", "path": "/memories/f/g", "file_text": "x"})


def test_a_vault_secret_never_comes_back(store, mem, tool):
    secret = "hunter2-Zq8v-very-secret"
    store.vault(mem.name).set("db", secret, secret=True)
    tool.call(
        {"command": "create", "path": "/memories/db.md", "file_text": f"password: {secret}\n"}
    )
    shown = tool.call({"command": "view", "path": "/memories/db.md"})
    assert secret not in shown and "REDACTED" in shown
    assert all(secret not in m.content for m in store.iter_memories())


def test_clear_all_memory_deletes_only_the_files(mem, tool):
    mem.save("not a file", key="other")
    tool.call({"command": "create", "path": "/memories/a.md", "file_text": "a"})
    assert tool.clear_all_memory() == "All memory cleared"
    assert [m.key for m in mem.list()] == ["other"]


def test_the_async_tool_gives_the_same_answers(mem):
    tool = HiveMemAsyncMemoryTool(mem)

    async def run():
        await tool.call({"command": "create", "path": "/memories/a.md", "file_text": "hi\n"})
        with pytest.raises(ToolError, match="already exists"):
            await tool.call({"command": "create", "path": "/memories/a.md", "file_text": "x"})
        return await tool.call({"command": "view", "path": "/memories/a.md"})

    assert (
        asyncio.run(run())
        == "Here's the content of /memories/a.md with line numbers:\n     1\thi\n     2\t"
    )


def _message(content, stop_reason):
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def test_the_sdk_tool_runner_drives_the_tool_over_http(mem):
    use = {"command": "create", "path": "/memories/coffee.md", "file_text": "black, no sugar\n"}
    server = ScriptedServer(
        _message(
            [{"type": "tool_use", "id": "toolu_1", "name": "memory", "input": use}], "tool_use"
        ),
        _message(
            [
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "memory",
                    "input": {"command": "view", "path": "/etc"},
                }
            ],
            "tool_use",
        ),
        _message([{"type": "text", "text": "Noted."}], "end_turn"),
    )
    try:
        client = anthropic.Anthropic(api_key="test", base_url=server.url, max_retries=0)
        runner = client.beta.messages.tool_runner(
            model="claude-test",
            max_tokens=256,
            tools=[HiveMemMemoryTool(mem)],
            messages=[{"role": "user", "content": "I take my coffee black, no sugar"}],
        )
        final = runner.until_done()
    finally:
        server.close()
    assert final.content[0].text == "Noted."
    assert server.requests[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    first = server.requests[1]["messages"][-1]["content"][0]
    assert first["tool_use_id"] == "toolu_1"
    assert "File created successfully at: /memories/coffee.md" in str(first["content"])
    second = server.requests[2]["messages"][-1]["content"][0]
    assert second["is_error"] is True and "Path must start with /memories" in str(second["content"])
    assert mem.get("/memories/coffee.md").content == "black, no sugar\n"


def test_without_anthropic_the_import_names_the_extra():
    code = (
        "import sys; sys.modules['anthropic'] = None\n"
        "import hivemem\n"
        "try:\n"
        "    import hivemem.integrations.claude\n"
        "except hivemem.MissingDependency as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'hivemem[anthropic]'" in done.stdout, done.stderr
