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


def _in_source(item: Any, home: Any) -> str:
    """The node id the same run has in the source module: the backends module's path
    replaced by the source's, the ``sqlite`` parameter dropped."""
    path = Path(home.__file__).relative_to(item.config.rootpath).as_posix()
    callspec = getattr(item, "callspec", None)
    if callspec is None or callspec.id == "sqlite":
        return f"{path}::{item.originalname}"
    rest = callspec.id
    if rest.startswith("sqlite-"):
        rest = rest.removeprefix("sqlite-")
    elif rest.endswith("-sqlite"):
        rest = rest.removesuffix("-sqlite")
    else:
        rest = rest.replace("-sqlite-", "-", 1)
    return f"{path}::{item.originalname}[{rest}]"


def _runs_already(item: Any, modules: dict[str, Any], nodeids: set[str]) -> bool:
    """Whether ``item`` is a test a ``test_backends_*`` module imported (``from test_x
    import *``) in a run that its own module makes in this session too: the SQLite
    parameter (the backends module's ``db_path`` is the same ``tmp_path / "memory.db"``
    there) or a test that takes no backend at all. Only when that very node id is
    collected: the PostgreSQL runs, and every run without its twin, stay."""
    if getattr(item, "function", None) is None or getattr(item, "module", None) is None:
        return False
    home = _home(item, modules)
    if home is None or home == item.module.__name__:
        return False  # a test of the module's own, or its module is not in this run
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "postgres" in callspec.params.values():
        return False
    return _in_source(item, modules[home]) in nodeids


@pytest.hookimpl(trylast=True)  # after -k / -m deselected theirs: count only what runs
def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    modules = {i.module.__name__: i.module for i in items if getattr(i, "module", None)}
    nodeids = {item.nodeid for item in items}
    repeated = [item for item in items if _runs_already(item, modules, nodeids)]
    if repeated:
        config.hook.pytest_deselected(items=repeated)
        kept = set(map(id, repeated))
        items[:] = [item for item in items if id(item) not in kept]
