"""The secrets hunt (issue 11): a vault secret planted in every field of memories never
comes back out of any output surface — library, tools, MCP, HTTP and its log, CLI,
exports, maintenance results, log records — and the credential policy on save looks at
every field, not only ``content``.

The secrets are planted with ``credential_policy=allow`` (as a store written before the
secret was put in the vault would hold them), then every surface is run over a store
opened with the default policy. The fast form runs one hostile secret; the long form
(``make reliability``) runs several shapes (quotes, backslashes, non-ASCII, a credential
shape) through the same hunt.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.parse

import anyio
import httpx
import pytest
import sqlean as sqlite3  # the SQLite library the store uses (tests/test_project_rules.py)
from click.testing import CliRunner

import hivemem
from hivemem import ContextProvider, Settings, tools
from hivemem.frontends import mcp as mcp_server
from hivemem.frontends.cli import main as cli_main
from hivemem.frontends.http import create_app
from hivemem.lifecycle.maintenance import job_names, run_job, run_log
from hivemem.lifecycle.portability import export_jsonl

FAST_SECRETS = ['pa"ss\\wörd-Zq81x']
LONG_SECRETS = [
    "plainvaultsecret9931",
    "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "ключ-секрет-7781",
    "space and 'quote' 55",
]
TEXT_FIELDS = ("content", "key", "tags", "attributes", "source_ids", "session_id", "role")


def forms(secret: str) -> list[str]:
    """The secret as it would appear in any output: raw, JSON-escaped, ASCII-escaped."""
    out = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    out.add(secret.encode("unicode_escape").decode("ascii"))
    out.add(repr(secret)[1:-1])
    out |= {urllib.parse.quote(secret, safe=""), urllib.parse.quote(secret)}
    return sorted(out)


def assert_clean(text: object, secret: str, where: str) -> None:
    blob = text if isinstance(text, str) else json.dumps(text, default=str, ensure_ascii=False)
    for form in forms(secret):
        assert form not in blob, f"the secret leaked through {where}: {blob[:400]}"


def plant(db_path, clock, secret: str) -> dict[str, str]:
    """A store holding ``secret`` in the vault and in every text field of memories
    (written with credential_policy=allow). Returns the ids and keys planted."""
    settings = Settings().replace(credential_policy="allow")
    with hivemem.open(db_path, settings=settings, clock=clock, embedder="hash") as store:
        store.vault("ops").set("deploy_token", secret, secret=True)
        mem = store.scope("team-a")
        first = mem.save(
            f"The deploy token is {secret} for prod; ask Melanie Okafor",
            key=f"deploy-{secret}",
            tags=[f"tag-{secret}", "prod"],
            attributes={"note": f"token {secret}", f"k-{secret}": {"nested": [secret]}},
            source_ids=[f"src-{secret}"],
            updated_by=f"agent-{secret}",
        )
        second = mem.save(
            f"Rotated deploy token {secret} on Monday",
            key=f"deploy-{secret}",
            supersede_reason=f"rotated {secret}",
            tags=[f"tag-{secret}"],
        )
        mem.save("Deploy windows are Tuesdays; the token is in the vault", key="window")
        for turn in range(3):
            mem.add_episode(
                f"user says the deploy token {secret} works (turn {turn})",
                session_id=f"s-{secret}",
                role=f"role-{secret}",
                attributes={"raw": secret},
                tags=[f"ep-{secret}"],
            )
        return {"first": first.id, "second": second.id, "key": f"deploy-{secret}"}


class Hunt:
    """Collects every output with the surface it came from, and log records."""

    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.surfaces: list[str] = []

    def check(self, where: str, value: object) -> None:
        if hasattr(value, "to_dict"):
            value = value.to_dict()
        elif isinstance(value, list | tuple):
            value = [v.to_dict() if hasattr(v, "to_dict") else v for v in value]
        assert_clean(value if isinstance(value, str) else _json(value), self.secret, where)
        self.surfaces.append(where)


def _json(value: object) -> str:
    return json.dumps(value, default=lambda v: v.to_dict() if hasattr(v, "to_dict") else str(v))


def library_surfaces(store, ids, hunt: Hunt) -> None:
    mem = store.scope("team-a")
    secret = hunt.secret
    hunt.check("library search", mem.search("deploy token", limit=20))
    hunt.check("library search for the secret", mem.search(secret, limit=20))
    hunt.check("library get by id", mem.get(ids["first"]))
    hunt.check("library get by key", mem.get(ids["key"]))
    hunt.check("library list", mem.list(limit=100))
    hunt.check("library list superseded", mem.list(status=["superseded", "active"]))
    hunt.check("library history", mem.history(ids["key"]))
    hunt.check("library context", mem.context("deploy token"))
    hunt.check("ContextProvider", ContextProvider(mem)("deploy token"))
    question = [{"role": "user", "content": "what is the deploy token?"}]
    hunt.check("ContextProvider messages", ContextProvider(mem).messages(question))
    hunt.check("library stats", mem.stats())
    hunt.check("library sessions", [str(s) for s in mem.sessions()])
    hunt.check("library confirm", mem.confirm(ids["second"]))
    with pytest.raises(hivemem.Conflict) as conflict:
        mem.correct(ids["first"], "a correction of a superseded version")
    hunt.check("Conflict error", [conflict.value.message, conflict.value.current.to_dict()])
    with pytest.raises(hivemem.NotFound) as missing:
        mem.get(f"nothing-{secret}")
    hunt.check("NotFound error", str(missing.value))
    entity = mem.entity("Melanie Okafor")
    hunt.check("library entity", [entity[0].to_dict(), [m.to_dict() for m in entity[1]]])
    with hivemem.open(store.location, embedder="hash") as other:
        hunt.check("mem0 compat get_all", _mem0(other))


def _mem0(store) -> object:
    from hivemem.compat.mem0 import Memory as Mem0Memory

    compat = Mem0Memory(store)
    return [compat.get_all(user_id="team-a"), compat.search("deploy token", user_id="team-a")]


def maintenance_surfaces(store, ids, hunt: Hunt) -> None:
    results = []
    for name in job_names():
        results.extend(r.to_dict() for r in run_job(store, name, "team-a"))
    hunt.check("maintenance results", results)
    hunt.check("maintenance run log", [str(r) for r in run_log(store)])
    mem = store.scope("team-a")
    hunt.check("library related", mem.related(ids["second"]))
    hunt.check("library list after maintenance", mem.list(limit=500, kind=None))


def tool_surfaces(store, ids, hunt: Hunt) -> None:
    mem = store.scope("team-a")
    for name, args in [
        ("memory_search", {"query": "deploy token", "limit": 20}),
        ("memory_get", {"id": ids["first"]}),
        ("memory_list", {"limit": 100}),
        ("memory_stats", {}),
        ("get_entity_info", {"name": "Melanie Okafor"}),
    ]:
        hunt.check(f"tool {name}", tools.call(mem, name, args))


def mcp_surfaces(store, ids, hunt: Hunt) -> None:
    pytest.importorskip("mcp")
    from mcp import Client

    mem = mcp_server.bind(store, "team-a")

    async def main():
        out = []
        async with Client(mcp_server.create_server(mem)) as client:
            for name, args in [
                ("memory_search", {"query": "deploy token", "limit": 20}),
                ("memory_get", {"id": ids["first"]}),
                ("memory_list", {"limit": 100}),
            ]:
                result = await client.call_tool(name, args)
                out.append((name, [c.text for c in result.content], result.structured_content))
        return out

    for name, texts, structured in anyio.run(main):
        hunt.check(f"MCP {name}", [texts, structured])


def http_surfaces(store, ids, hunt: Hunt) -> None:
    token = store.tokens.create("hunt", {"team-a": "write"}, store.clock())[1]
    app = create_app(store)

    async def main():
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            base = "/v1/scopes/team-a"
            return [
                await client.post(f"{base}/search", json={"query": "deploy"}, headers=headers),
                await client.get(f"{base}/memories", headers=headers),
                await client.get(f"{base}/memories/{ids['first']}", headers=headers),
                await client.get(f"{base}/memories/nothing-x", headers=headers),
                await client.post(
                    f"{base}/memories",
                    json={"content": "clash", "key": ids["key"]},
                    headers=headers,
                ),
            ]

    try:
        responses = asyncio.run(main())
    finally:
        app.state.api.close()
    for response in responses:
        hunt.check(f"HTTP {response.request.method} {response.request.url.path}", response.text)


def cli_surfaces(db_path, ids, hunt: Hunt, tmp_path) -> None:
    runner = CliRunner()
    out_file = tmp_path / "export.jsonl"
    commands = [
        ["search", "deploy token"],
        ["search", "deploy token", "--json", "--explain"],
        ["list"],
        ["list", "--json"],
        ["show", ids["first"]],
        ["show", ids["key"], "--json"],
        ["history", ids["key"]],
        ["history", ids["key"], "--json"],
        ["stats"],
        ["doctor"],
        ["export"],
        ["export", str(out_file)],
        ["maintain", "--log"],
    ]
    for args in commands:
        result = runner.invoke(
            cli_main, ["--db", str(db_path), "--scope", "team-a", *args], catch_exceptions=False
        )
        hunt.check(f"CLI {' '.join(args[:2])}", result.output + (result.stderr or ""))
    hunt.check("CLI export file", out_file.read_text(encoding="utf-8"))


def hunt_everywhere(db_path, clock, tmp_path, secret: str, caplog) -> Hunt:
    ids = plant(db_path, clock, secret)
    hunt = Hunt(secret)
    caplog.set_level(logging.DEBUG)
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        library_surfaces(store, ids, hunt)
        tool_surfaces(store, ids, hunt)
        mcp_surfaces(store, ids, hunt)
        http_surfaces(store, ids, hunt)
        maintenance_surfaces(store, ids, hunt)
        buffer = io.StringIO()
        export_jsonl(store, buffer)
        hunt.check("library export", buffer.getvalue())
        raw = io.StringIO()
        export_jsonl(store, raw, include_secrets=True)
        assert any(form in raw.getvalue() for form in forms(secret))  # asked for: kept
    cli_surfaces(db_path, ids, hunt, tmp_path)
    records = [
        r.getMessage() + (logging.Formatter().formatException(r.exc_info) if r.exc_info else "")
        for r in caplog.records
    ]
    hunt.check("log records", "\n".join(records))
    return hunt


@pytest.mark.parametrize("secret", FAST_SECRETS)
def test_a_vault_secret_in_every_field_leaves_through_no_surface(
    db_path, clock, tmp_path, secret, caplog
):
    hunt = hunt_everywhere(db_path, clock, tmp_path, secret, caplog)
    assert len(hunt.surfaces) >= 40


@pytest.mark.long
@pytest.mark.parametrize("secret", LONG_SECRETS)
def test_secrets_hunt_long(db_path, clock, tmp_path, secret, caplog):
    hunt = hunt_everywhere(db_path, clock, tmp_path, secret, caplog)
    print(f"\nRELIABILITY secrets surfaces={len(hunt.surfaces)} found=0 secret={secret!r}")


@pytest.mark.long
@pytest.mark.parametrize("secret", [FAST_SECRETS[0], LONG_SECRETS[0]])
def test_the_http_access_log_of_a_real_server_holds_no_secret(db_path, clock, secret):
    """``hivemem serve-http`` on a real socket: request paths holding a key with the
    secret, bodies echoing it; the server's whole output (uvicorn's access log, HiveMem's
    own log) is hunted."""
    ids = plant(db_path, clock, secret)
    made = CliRunner().invoke(
        cli_main, ["--db", str(db_path), "token", "create", "t", "--write", "team-a"]
    )
    token = made.output.split("token: ")[1].split()[0]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from hivemem.frontends.cli import main; main()",
            "--db",
            str(db_path),
        ]
        + ["serve-http", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "HIVEMEM_EMBEDDER": "hash"},
    )
    base = f"http://127.0.0.1:{port}/v1/scopes/team-a"
    auth = {"Authorization": f"Bearer {token}"}
    answers = []
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1)
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        quoted = urllib.parse.quote(ids["key"], safe="")
        answers.append(httpx.get(f"{base}/memories/{quoted}", headers=auth))
        answers.append(httpx.get(f"{base}/memories/{ids['first']}", headers=auth))
        answers.append(httpx.post(f"{base}/search", json={"query": secret}, headers=auth))
        answers.append(httpx.get(f"{base}/entities/{quoted}", headers=auth))
    finally:
        server.terminate()
        output = server.communicate(timeout=30)[0].decode("utf-8", "replace")
    assert "GET /v1/scopes/team-a/memories/" in output  # the access log was written
    for answer in answers:
        assert_clean(answer.text, secret, f"HTTP {answer.request.url.path}")
    assert_clean(output, secret, "the server's log")


# ----------------------------------------------------------------------------- policy on save


SECRET = "s3cr3t-vault-value-77"


def _fields(secret: str) -> dict[str, dict]:
    return {
        "content": {"content": f"x {secret}"},
        "key": {"key": f"k-{secret}"},
        "tags": {"tags": [f"t-{secret}"]},
        "attributes": {"attributes": {"a": {"b": [f"v-{secret}"]}}},
        "attributes (names)": {"attributes": {f"n-{secret}": 1}},
        "source_ids": {"source_ids": [secret]},
        "session_id": {"session_id": f"s-{secret}"},
        "role": {"role": f"r-{secret}"},
        "updated_by": {"updated_by": f"u-{secret}"},
    }


@pytest.mark.parametrize("field", sorted(_fields(SECRET)))
def test_the_reject_policy_refuses_a_secret_in_any_field(db_path, clock, field):
    settings = Settings().replace(credential_policy="reject")
    with hivemem.open(db_path, settings=settings, clock=clock, embedder="hash") as store:
        store.vault("ops").set("token", SECRET, secret=True)
        mem = store.scope("team-a")
        args = {"content": "plain text"} | _fields(SECRET)[field]
        with pytest.raises(hivemem.InvalidInput) as refused:
            mem.save(args.pop("content"), **args)
        assert refused.value.field == field.split()[0]
        assert SECRET not in str(refused.value)
        assert mem.list() == []


@pytest.mark.parametrize("field", sorted(_fields(SECRET)))
def test_the_redact_policy_stores_no_secret_in_any_field(db_path, clock, field):
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        store.vault("ops").set("token", SECRET, secret=True)
        mem = store.scope("team-a")
        args = {"content": "plain text"} | _fields(SECRET)[field]
        saved = mem.save(args.pop("content"), **args)
        assert SECRET not in json.dumps(saved.to_dict())
        mem.save("another", key="k2")
        mem.save("again", key="k2", supersede_reason=f"because {SECRET}")
        credential = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
        mem.save("with a credential in the tags", tags=[credential])
    raw = sqlite3.connect(db_path)
    try:
        tables = [
            r[0]
            for r in raw.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'vault' "
                "AND sql NOT LIKE 'CREATE VIRTUAL%'"
            )
        ]
        for table in tables:
            for row in raw.execute(f"SELECT * FROM {table}"):  # noqa: S608 - our own names
                text = json.dumps(row, default=str, ensure_ascii=False)
                assert SECRET not in text, (table, text)
                assert credential not in text, (table, text)
    finally:
        raw.close()
