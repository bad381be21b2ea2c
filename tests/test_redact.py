"""Credential shapes in memory content: redacted (default), refused or allowed on every
write path; the scrubber and the log filter."""

from __future__ import annotations

import logging

import pytest
import sqlean as sqlite3  # the SQLite library the store uses (tests/test_project_rules.py)

import hivemem
from hivemem import InvalidInput, Settings
from hivemem.write.redact import (
    REDACTED,
    Scrubber,
    find_credentials,
    install_log_filter,
    redact_credentials,
)

# Fakes of the right shape (none of them is a real credential).
CREDENTIALS = {
    "openai-key": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    "github-token": "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "aws-access-key": "AKIAIOSFODNN7EXAMPLE",
    "slack-token": "xoxb-123456789012-abcdefABCDEF",
    "stripe-key": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "google-api-key": "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "jwt": (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    ),
    "private-key": (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabc==\n-----END RSA PRIVATE KEY-----"
    ),
}


@pytest.mark.parametrize("kind", sorted(CREDENTIALS))
def test_each_credential_shape_is_found_and_redacted_whole(kind):
    value = CREDENTIALS[kind]
    text = f"config: {value} (rotate monthly)"
    found = find_credentials(text)
    assert [(f.kind, text[f.start : f.end]) for f in found] == [(kind, value)]
    clean, _ = redact_credentials(text)
    assert clean == f"config: [REDACTED:{kind}] (rotate monthly)"


def test_bearer_token_keeps_the_word_and_loses_the_token():
    text = "curl -H 'Authorization: Bearer abcdef0123456789ABCDEFghij.kl' https://x"
    clean, found = redact_credentials(text)
    assert [f.kind for f in found] == ["bearer-token"]
    assert clean == "curl -H 'Authorization: Bearer [REDACTED:bearer-token]' https://x"


def test_private_key_without_end_line_is_redacted_to_the_end():
    clean, _ = redact_credentials("key:\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0")
    assert clean == "key:\n[REDACTED:private-key]"


@pytest.mark.parametrize(
    "text",
    [
        "Never deploy on Fridays",
        "the task-assessment runs at 9; ask-me-anything about risk-management",
        "AKIA is a prefix of AWS keys; sk- prefixes OpenAI keys",
        "a bearer of bad news",
        "eyJ alone is not a token",
        "-----BEGIN PUBLIC KEY----- is public",
    ],
)
def test_ordinary_text_has_no_credentials(text):
    assert find_credentials(text) == []


def _count_rows(path) -> int:
    if str(path).startswith("postgresql"):  # the server's rows, through a connection of its own
        import psycopg

        with psycopg.connect(str(path)) as conn:
            return conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]


def _stored_bytes(path, store) -> bytes:
    """Everything the database holds: the SQLite file's bytes, or every row as text."""
    if not str(path).startswith("postgresql"):
        return path.read_bytes()
    rows = store._backend._read(
        "SELECT t::text FROM memories t UNION ALL SELECT t::text FROM chunks t", []
    )
    return " ".join(r[0] for r in rows).encode()


def test_default_policy_redacts_on_save_with_a_warning(mem, db_path, caplog):
    key = CREDENTIALS["openai-key"]
    with caplog.at_level(logging.WARNING, logger="hivemem"):
        saved = mem.save(f"the staging key is {key}", key="staging")
    assert saved.content == "the staging key is [REDACTED:openai-key]"
    assert any("openai-key" in r.getMessage() for r in caplog.records)
    assert all(key not in r.getMessage() for r in caplog.records)
    # Never stored, so never indexed: the raw file does not hold it anywhere.
    mem._store.flush()
    assert key.encode() not in _stored_bytes(db_path, mem._store)
    assert all(key not in h.memory.content + h.snippet for h in mem.search(key))


def test_reject_policy_refuses_and_writes_nothing(db_path, clock):
    settings = Settings().replace(credential_policy="reject")
    with hivemem.open(db_path, settings=settings, clock=clock, embedder="hash") as store:
        mem = store.scope("a")
        with pytest.raises(InvalidInput) as err:
            mem.save(f"aws {CREDENTIALS['aws-access-key']}")
        assert err.value.field == "content"
        assert "aws-access-key" in str(err.value)
        assert CREDENTIALS["aws-access-key"] not in str(err.value)
        with pytest.raises(InvalidInput):  # a batch is all or nothing
            mem.add_episodes(
                [
                    {"content": "hello", "session_id": "s", "role": "user"},
                    {"content": CREDENTIALS["jwt"], "session_id": "s", "role": "user"},
                ]
            )
        ok = mem.save("no secrets here", key="k")
        with pytest.raises(InvalidInput):
            mem.correct(ok.id, f"now with {CREDENTIALS['github-token']}")
        assert mem.get("k").content == "no secrets here"
    assert _count_rows(db_path) == 1


def test_allow_policy_stores_content_as_given(db_path, clock):
    settings = Settings().replace(credential_policy="allow")
    with hivemem.open(db_path, settings=settings, clock=clock, embedder="hash") as store:
        saved = store.scope("a").save(f"token {CREDENTIALS['slack-token']}")
    assert saved.content == f"token {CREDENTIALS['slack-token']}"


def test_unknown_policy_is_a_clear_error():
    with pytest.raises(InvalidInput) as err:  # at the edge that read it, before any write
        Settings().replace(credential_policy="shred")
    assert err.value.field == "credential_policy"
    assert "redact, reject, allow" in str(err.value)


def test_episodes_and_corrections_are_redacted_too(mem):
    turn = mem.add_episode(f"my key: {CREDENTIALS['stripe-key']}", "s1", "user")
    assert turn.content == "my key: [REDACTED:stripe-key]"
    fact = mem.save("plain", key="k")
    fixed = mem.correct(fact.id, f"use {CREDENTIALS['google-api-key']}")
    assert fixed.content == "use [REDACTED:google-api-key]"


def test_scrubber_redacts_longest_secret_first_and_ignores_short_values():
    scrubber = Scrubber()
    scrubber.add("hunter2-long")
    scrubber.add("hunter2-long-and-longer")
    scrubber.add("abc")  # too short to redact safely: ignored (the vault refuses it)
    text = "a hunter2-long-and-longer b hunter2-long c abc"
    assert scrubber.scrub(text) == f"a {REDACTED} b {REDACTED} c abc"
    assert scrubber.count == 2
    scrubber.discard("hunter2-long")
    assert scrubber.scrub("hunter2-long") == "hunter2-long"
    scrubber.close()


def test_log_filter_scrubs_hivemem_records_of_any_child_logger(store, caplog):
    store.vault("a").set("pw", "correct-horse-battery", secret=True)
    install_log_filter()
    with caplog.at_level(logging.INFO, logger="hivemem"):
        logging.getLogger("hivemem.retrieval.pipeline").warning(
            "failed with %s", "correct-horse-battery"
        )
        logging.getLogger("hivemem").info("plain correct-horse-battery")
        late = logging.getLogger("hivemem.created-after-open")
        store.vault("a").set("pw2", "another-secret-value", secret=True)
        late.error("oops another-secret-value and correct-horse-battery")
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        f"failed with {REDACTED}",
        f"plain {REDACTED}",
        f"oops {REDACTED} and {REDACTED}",
    ]


def test_log_filter_scrubs_exception_text(store, caplog):
    store.vault("a").set("pw", "exception-secret-1", secret=True)
    with caplog.at_level(logging.ERROR, logger="hivemem"):
        try:
            raise RuntimeError("boom exception-secret-1")
        except RuntimeError:
            logging.getLogger("hivemem.lifecycle.indexer").exception("failed")
    assert "exception-secret-1" not in caplog.text
    assert REDACTED in caplog.text


class _Down:
    """A store whose vault cannot be read now (PostgreSQL down): ``load`` raises."""

    def __init__(self) -> None:
        self.values = ["known-secret-123"]
        self.down = False
        self.stale = False
        self.loads = 0

    def load(self) -> list[str]:
        self.loads += 1
        if self.down:
            raise hivemem.TryAgain("PostgreSQL failed: try again", reason="connection")
        return list(self.values)

    def changed(self) -> bool:
        stale, self.stale = self.stale, False  # says "changed" once, as a listener does
        return stale


def test_an_error_path_never_asks_the_store_that_failed():
    from hivemem.write.redact import scrubs_output

    store = _Down()
    scrubber = Scrubber(store.load, store.changed)
    assert scrubber.scrub("a known-secret-123 b") == "a [REDACTED] b"

    class Facade:
        def __init__(self) -> None:
            self.store = type("S", (), {"scrubber": scrubber})()

        @scrubs_output
        def read(self, exc: Exception) -> None:
            raise exc

    store.down, store.stale = True, True  # the database went away, the listener too
    with pytest.raises(hivemem.TryAgain) as failed:  # the store's error, not a second one
        Facade().read(hivemem.TryAgain("gone: known-secret-123", reason="connection"))
    assert failed.value.message == "gone: [REDACTED]"  # with the secrets known before
    assert store.loads == 1  # the error path did not ask
    # another error asks the store as any output does; when it cannot answer, the
    # secrets known before stand and the caller gets its own error
    with pytest.raises(hivemem.NotFound) as missing:
        Facade().read(hivemem.NotFound("no known-secret-123"))
    assert missing.value.message == "no [REDACTED]"
    # a reload that failed leaves the values unloaded: the next output reads them,
    # though the listener said "changed" only once
    store.down, store.values = False, ["known-secret-123", "new-secret-4567"]
    assert scrubber.scrub("new-secret-4567") == "[REDACTED]"


def test_a_reload_that_finds_the_same_values_keeps_their_pattern(monkeypatch):
    """With the read pool a store's own writes count as changes, so the write path
    reloads the values every few milliseconds: finding the same ones, it must not
    build their pattern again (that cost more than the write's row), yet a new value
    is seen and a logger made since gets the filter."""
    builds: list[frozenset[str]] = []
    build = Scrubber._set
    monkeypatch.setattr(
        Scrubber, "_set", lambda self, values: (builds.append(values), build(self, values))
    )
    store = _Down()
    scrubber = Scrubber(store.load, store.changed)
    assert scrubber.scrub("a known-secret-123") == "a [REDACTED]"
    assert builds == [frozenset(store.values)]
    store.stale = True
    late = logging.getLogger("hivemem.made-before-an-unchanged-reload")
    assert scrubber.scrub("b known-secret-123") == "b [REDACTED]"
    assert store.loads == 2 and len(builds) == 1
    assert install_log_filter() in late.filters
    store.stale, store.values = True, ["known-secret-123", "new-secret-4567"]
    assert scrubber.scrub("new-secret-4567") == "[REDACTED]"
    assert len(builds) == 2
    scrubber.close()
