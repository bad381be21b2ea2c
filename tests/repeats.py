"""Each test once (pytest plugin, loaded by conftest.py).

A ``test_backends_*`` module imports another module's tests (``from test_x import *``)
and gives them a ``db_path`` on SQLite and on PostgreSQL (tests/pg.py). Its SQLite run is
the very run that ``test_x`` makes (the same ``tmp_path / "memory.db"``, the same
fixtures), and so is a test of ``test_x`` that takes no backend at all: when ``test_x``
is in the run too, those repeats are deselected and only the PostgreSQL runs stay the
backends module's own (800 of 3,557 tests, Nov 2026). A backends module run without its
source module keeps every run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest


def _home(item: Any, modules: dict[str, Any]) -> str | None:
    """The collected module that defines ``item``'s test function: its ``__module__``, or
    for a plugin's wrapper (schemathesis) the collected module whose source defines it."""
    function = item.function
    if function.__module__ in modules:
        return function.__module__
    definition = re.compile(rf"^(async )?def {re.escape(item.originalname)}\(", re.M)
    for name, module in modules.items():
        defines = getattr(module, item.originalname, None) is function
        if defines and definition.search(Path(module.__file__).read_text()):
            return name
    return None


def _runs_already(item: Any, modules: dict[str, Any]) -> bool:
    """Whether ``item`` is a test a ``test_backends_*`` module imported (``from test_x
    import *``) from a module this session also collects, in a run that its own module
    makes already: the SQLite parameter (the backends module's ``db_path`` is the same
    ``tmp_path / "memory.db"`` there) or a test that takes no backend at all. Only the
    PostgreSQL runs are the backends module's own."""
    if getattr(item, "function", None) is None or getattr(item, "module", None) is None:
        return False
    home = _home(item, modules)
    if home is None or home == item.module.__name__:
        return False  # a test of the module's own, or its module is not in this run
    callspec = getattr(item, "callspec", None)
    return callspec is None or "postgres" not in callspec.params.values()


@pytest.hookimpl(trylast=True)  # after -k / -m deselected theirs: count only what runs
def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    modules = {i.module.__name__: i.module for i in items if getattr(i, "module", None)}
    repeated = [item for item in items if _runs_already(item, modules)]
    if repeated:
        config.hook.pytest_deselected(items=repeated)
        kept = set(map(id, repeated))
        items[:] = [item for item in items if id(item) not in kept]
