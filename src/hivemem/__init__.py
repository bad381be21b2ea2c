"""HiveMem: long-term memory for AI agents, on one SQLite file.

import hivemem
store = hivemem.open("memory.db")
mem = store.scope("team-a", shared=["swarm"])
mem.save("Never deploy on Fridays", key="deploy-lesson", type="warning")
hits = mem.search("when can we deploy?")
"""

from .errors import (
    Conflict,
    Forbidden,
    HiveMemError,
    InvalidInput,
    MissingDependency,
    NotAStore,
    NotFound,
    StoreError,
    StoreFull,
    TryAgain,
)
from .facade.database import Store, default_path, open
from .facade.memory import ScopedMemory
from .lifecycle.context import ContextProvider
from .lifecycle.maintenance import JobResult, run_job
from .lifecycle.notes import IndexReport, index_folder, watch_folder
from .settings import Settings
from .types import (
    Entity,
    Explanation,
    Hit,
    Kind,
    Memory,
    MemoryType,
    Query,
    Related,
    Source,
    Status,
)
from .write.vault import Vault, VaultEntry

__version__ = "0.1.0"

__all__ = [
    "Conflict",
    "ContextProvider",
    "Entity",
    "Explanation",
    "Forbidden",
    "Hit",
    "HiveMemError",
    "IndexReport",
    "InvalidInput",
    "JobResult",
    "Kind",
    "Memory",
    "MemoryType",
    "MissingDependency",
    "NotAStore",
    "NotFound",
    "Query",
    "Related",
    "ScopedMemory",
    "Settings",
    "Source",
    "Status",
    "Store",
    "StoreError",
    "StoreFull",
    "TryAgain",
    "Vault",
    "VaultEntry",
    "__version__",
    "default_path",
    "index_folder",
    "open",
    "run_job",
    "watch_folder",
]
