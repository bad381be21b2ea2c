"""Every function the library takes from a caller (a clock, progress hooks, ``on_start``,
``on_report``, ``count_tokens``) is checked where it is handed over (issue #25, item
14): a value that is not callable is an ``InvalidInput`` naming the parameter, before
any work, instead of a ``TypeError`` from deep inside a write, a job or an import after
part of it was done. ``None`` still means "no hook"."""

from __future__ import annotations

import io

import pytest

import hivemem
from hivemem import ContextProvider, InvalidInput, index_folder, run_job, watch_folder
from hivemem.lifecycle.copying import copy_store
from hivemem.lifecycle.portability import export_jsonl, import_jsonl
from hivemem.lifecycle.rescue import rescue_jsonl

NOT_CALLABLE = ["yes", 3, {"on": True}]


@pytest.fixture
def filled(tmp_path):
    store = hivemem.open(tmp_path / "a.db", embedder="hash")
    store.scope("team-a").save("deploy on Mondays", key="deploy-rule", kind="fact")
    yield store
    store.close()


@pytest.mark.parametrize("bad", NOT_CALLABLE)
def test_a_clock_that_is_not_callable_is_refused_before_the_file_is_made(bad, tmp_path):
    with pytest.raises(InvalidInput) as err:
        hivemem.open(tmp_path / "m.db", clock=bad)
    assert err.value.field == "clock" and not (tmp_path / "m.db").exists()


@pytest.mark.parametrize("bad", NOT_CALLABLE)
def test_progress_hooks_are_checked_at_the_call(bad, filled, tmp_path):
    export = io.StringIO()
    export_jsonl(filled, export)
    calls = {
        "flush": lambda: filled.flush(bad),
        "reindex": lambda: filled.reindex(bad, force=True),
        "run_job": lambda: run_job(filled, "decay", progress=bad),
        "export": lambda: export_jsonl(filled, io.StringIO(), progress=bad),
        "rescue": lambda: rescue_jsonl(filled.location, io.StringIO(), progress=bad),
    }
    for name, call in calls.items():
        with pytest.raises(InvalidInput) as err:
            call()
        assert err.value.field == "progress", name
    assert filled.run_log.runs(None, None, 10) == []  # the job never started


@pytest.mark.parametrize("hook", ["progress", "checked"])
def test_an_import_with_a_bad_hook_writes_nothing(hook, filled, tmp_path):
    export = io.StringIO()
    export_jsonl(filled, export)
    with hivemem.open(tmp_path / "b.db", embedder="none") as target:
        with pytest.raises(InvalidInput) as err:
            import_jsonl(target, io.StringIO(export.getvalue()), **{hook: "yes"})
        assert err.value.field == hook
        assert target.stats()["total"] == 0


def test_a_copy_with_a_bad_hook_copies_nothing(filled, tmp_path):
    with hivemem.open(tmp_path / "b.db", embedder="none") as target:
        with pytest.raises(InvalidInput) as err:
            copy_store(filled, target, progress=7)
        assert err.value.field == "progress" and target.stats()["total"] == 0


@pytest.mark.parametrize("hook", ["progress", "on_start"])
def test_the_notes_index_checks_its_hooks(hook, filled, tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\n\ntext\n")
    mem = filled.scope("team-a")
    with pytest.raises(InvalidInput) as err:
        index_folder(mem, tmp_path / "notes", **{hook: "yes"})
    assert err.value.field == hook
    assert [m.key for m in mem.list()] == ["deploy-rule"]  # no note indexed


def test_watch_checks_on_report_before_it_starts(filled, tmp_path):
    with pytest.raises(InvalidInput) as err:
        watch_folder(filled.scope("team-a"), tmp_path, on_report="print")
    assert err.value.field == "on_report"


def test_none_still_means_no_hook(filled, tmp_path):
    assert export_jsonl(filled, io.StringIO(), progress=None) == 1
    assert run_job(filled, "decay", progress=None)[0].status == "ok"
    with pytest.raises(InvalidInput):
        ContextProvider(filled.scope("team-a"), count_tokens="words")


class _Broken:
    """Has every attribute a provider protocol names, but the method is a value."""

    name = identity = "broken:1"
    dimension = 1
    score = embed_batch = complete = "not a function"


@pytest.mark.parametrize("provider", ["embedder", "reranker", "llm"])
def test_a_provider_whose_method_is_not_callable_is_refused_at_open(provider, tmp_path):
    with pytest.raises(InvalidInput) as err:
        hivemem.open(tmp_path / "m.db", **{provider: _Broken()})
    assert err.value.field == provider and "callable" in str(err.value)
    assert not (tmp_path / "m.db").exists()
