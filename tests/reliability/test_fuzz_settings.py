"""Property: any value for any setting, given to ``Settings`` or through its
``HIVEMEM_*`` variable, is either refused with an ``InvalidInput`` naming that setting
(or variable) or accepted — and a store opened with accepted settings saves, searches,
embeds and closes, raising nothing but a ``HiveMemError`` (a limit the value sets).
Found on main: settings were not range-checked, so a huge ``embed_batch_size`` made the
embedding worker retry forever and a negative limit broke every write."""

from __future__ import annotations

import dataclasses
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

import hivemem
from hivemem import HiveMemError, InvalidInput, Settings

from .hostile import FUZZ, cli_text, hostile_value, tally

NAMES = [f.name for f in dataclasses.fields(Settings)]
# A store is opened with these: they start no server and call no network.
OPENED = set(NAMES) - {"embedder", "llm", "reranker", "embed_base_url", "llm_base_url"}

plausible = st.one_of(
    st.integers(-5, 5_000),
    st.floats(-1.0, 2.0, allow_nan=False),
    st.sampled_from(["minmax", "rrf", "step", "power", "created", "allow", "reject"]),
    st.booleans(),
    st.just({"manual": 1}),
)


def _use(settings: Settings, path) -> None:
    """Open a store with ``settings`` and do the usual things, within a minute."""
    outcome: list[BaseException | None] = []

    def work() -> None:
        try:
            with hivemem.open(path, settings=settings, embedder="hash") as store:
                mem = store.scope("fuzz")
                mem.save("Alice keeps the deploy notes in Berlin", key="notes")
                mem.add_episode("we moved the deploy to Tuesday", "s1", "user")
                mem.add_episode("new session starts here", "s2", "user")
                store.flush()
                mem.search("deploy notes")
                store.session_worker.wait()
            outcome.append(None)
        except BaseException as exc:  # reported below, in the test's thread
            outcome.append(exc)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(60)
    assert outcome, f"a store with {settings!r:.200} did not finish in 60 s"
    if outcome[0] is not None and not isinstance(outcome[0], HiveMemError):
        raise outcome[0]


@FUZZ
@given(name=st.sampled_from(NAMES), value=st.one_of(plausible, hostile_value()))
def test_any_value_of_any_setting_is_refused_by_name_or_works(tmp_path_factory, name, value):
    try:
        settings = Settings(**{name: value})
    except InvalidInput as exc:
        tally("settings", "InvalidInput")
        assert exc.field == name
        return
    tally("settings", "ok")
    if name in OPENED:
        _use(settings, tmp_path_factory.mktemp("settings") / "s.db")


@FUZZ
@given(name=st.sampled_from(NAMES), raw=st.one_of(cli_text(), st.integers().map(str)))
def test_any_environment_value_is_refused_by_its_variable_or_read(name, raw):
    variable = "HIVEMEM_" + name.upper()
    try:
        Settings.from_env({variable: raw})
    except InvalidInput as exc:
        tally("settings env", "InvalidInput")
        assert exc.field == variable
        return
    tally("settings env", "ok")


@pytest.mark.parametrize("size", [4096, 1])
def test_the_batch_size_edges_embed_and_return(tmp_path, size):
    _use(Settings(embed_batch_size=size), tmp_path / "edge.db")
